// Who holds an app hostname. App names are unique per account (namespace) but the hostname
// `<name>.<apps domain>` is global, so every App name is claimed here by its namespace before the App
// is created, and stays held for that namespace for a hold period after the App goes: no other
// account can create it meanwhile (docs/decisions/0013-hostname-reservation.md).
import type { Knex } from 'knex';

export type Claim = { ok: true; fresh: boolean } | { ok: false; reason: 'taken' } | { ok: false; reason: 'held'; until: Date };

interface Row {
  name: string;
  namespace: string;
  released_at: Date | null;
}

export class HostnameStore {
  constructor(
    private readonly db: Knex,
    private readonly holdMs: number,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * Claims `name` for `namespace`: free, already this namespace's, or released by another longer
   * than the hold period ago. One statement, so of two namespaces claiming at once exactly one wins.
   * `fresh` says the row is new (forget() it if the App is then not created).
   */
  async claim(namespace: string, name: string): Promise<Claim> {
    const now = this.clock();
    const expired = new Date(now.getTime() - this.holdMs);
    const won = await this.db('hostnames')
      .insert({ name, namespace, claimed_at: now, released_at: null })
      .onConflict('name')
      .merge({ namespace, claimed_at: now, released_at: null })
      .where((w) => {
        w.where('hostnames.namespace', namespace).orWhere('hostnames.released_at', '<', expired);
      })
      .returning<Array<{ name: string; fresh: boolean }>>(['name', this.db.raw('(xmax = 0) as fresh')]);
    if (won.length) return { ok: true, fresh: won[0]!.fresh };
    const row = (await this.db('hostnames').where({ name }).first()) as Row | undefined;
    if (row?.released_at) return { ok: false, reason: 'held', until: new Date(row.released_at.getTime() + this.holdMs) };
    return { ok: false, reason: 'taken' };
  }

  /** Drops a fresh claim whose App was never created (no hold for what never existed). */
  async forget(namespace: string, name: string): Promise<void> {
    await this.db('hostnames').where({ name, namespace }).whereNull('released_at').delete();
  }

  /** The App named `name` in `namespace` went: its hold starts now. */
  async release(namespace: string, name: string): Promise<void> {
    await this.db('hostnames').where({ name, namespace }).whereNull('released_at').update({ released_at: this.clock() });
  }

  /**
   * Brings the table in line with the Apps that exist in this platform's accounts (`live`, as
   * [namespace, name]; Apps of namespaces no account of this database owns are left out): each is
   * held by its namespace (Apps made before this table, or by kubectl), and a held name with no App
   * any more (deleted while no API ran) starts its hold.
   */
  async reconcile(live: ReadonlyArray<readonly [string, string]>): Promise<{ claimed: number; released: number }> {
    const ours = new Set((await this.db('accounts').select<Array<{ namespace: string }>>('namespace')).map((a) => a.namespace));
    const apps = live.filter(([ns]) => ours.has(ns));
    const now = this.clock();
    let claimed = 0;
    for (const chunk of chunks(apps, 500)) {
      const rows = chunk.map(([namespace, name]) => ({ name, namespace, claimed_at: now, released_at: null }));
      const inserted = (await this.db('hostnames').insert(rows).onConflict('name').ignore().returning('name')) as unknown[];
      claimed += inserted.length;
    }
    const alive = new Set(apps.map(([ns, name]) => `${ns}/${name}`));
    const rows = await this.db('hostnames')
      .whereIn('namespace', [...ours])
      .select<Row[]>('name', 'namespace', 'released_at');
    let released = 0;
    for (const r of rows) {
      const exists = alive.has(`${r.namespace}/${r.name}`);
      if (!exists && r.released_at === null) {
        await this.release(r.namespace, r.name);
        released++;
      } else if (exists && r.released_at !== null) {
        // Released while its App was being created (a sweep between claim and create): held again.
        await this.db('hostnames').where({ name: r.name, namespace: r.namespace }).update({ released_at: null });
      }
    }
    return { claimed, released };
  }
}

function* chunks<T>(list: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size);
}
