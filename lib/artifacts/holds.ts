// Which stored artifacts each account holds (table artifact_holds, migration 0021): the one place
// that reads and writes it. An account holds a digest once however many deploys, builds or backups
// name it, and pays for its bytes once; two accounts holding the same bytes each pay for them (an
// account never learns what another stored). The artifact store's files are shared by digest: one is
// deleted once no account holds it (api/storage/collector.ts).
import type { Knex } from 'knex';

export interface Hold {
  accountId: string;
  digest: string;
  bytes: number;
  /** The last time the account stored or reused it. */
  usedAt: Date;
}

interface Row {
  account_id: string;
  digest: string;
  bytes: string | number;
  used_at: Date;
}

const holdOf = (r: Row): Hold => ({ accountId: r.account_id, digest: r.digest, bytes: Number(r.bytes), usedAt: new Date(r.used_at) });

export class ArtifactHolds {
  constructor(private readonly db: Knex) {}

  /** The bytes of every artifact the account holds, each once. */
  async bytes(accountId: string): Promise<number> {
    const row = (await this.db('artifact_holds').where({ account_id: accountId }).sum({ total: 'bytes' }).first()) as
      { total: string | number | null } | undefined;
    return Number(row?.total ?? 0);
  }

  async has(accountId: string, digest: string, trx: Knex = this.db): Promise<boolean> {
    return (await trx('artifact_holds').where({ account_id: accountId, digest }).first('digest')) !== undefined;
  }

  /** Whether any account holds `digest` (its file must stay). */
  async held(digest: string, trx: Knex = this.db): Promise<boolean> {
    return (await trx('artifact_holds').where({ digest }).first('digest')) !== undefined;
  }

  /** Takes a hold of `digest` for the account, or marks the one it has as used now. */
  async take(accountId: string, digest: string, bytes: number, now: Date, trx: Knex = this.db): Promise<void> {
    await trx('artifact_holds')
      .insert({ account_id: accountId, digest, bytes, held_at: now, used_at: now })
      .onConflict(['account_id', 'digest'])
      .merge({ used_at: now });
  }

  /** Every hold, of every account or of one. */
  async list(accountId?: string): Promise<Hold[]> {
    const q = this.db('artifact_holds').select('account_id', 'digest', 'bytes', 'used_at');
    if (accountId) q.where({ account_id: accountId });
    return ((await q) as Row[]).map(holdOf);
  }

  /** Releases the account's hold of `digest` unless it was used at or after `usedBefore`; says whether it did. */
  async release(accountId: string, digest: string, usedBefore: Date): Promise<boolean> {
    const n = await this.db('artifact_holds').where({ account_id: accountId, digest }).where('used_at', '<', usedBefore).delete();
    return n > 0;
  }
}
