// The TLS session-ticket key of ingress-auth, kept in PostgreSQL and shared by every worker and
// replica (docs/decisions/0028-https.md), so a ticket one process issued resumes on any other, as
// nginx's workers share theirs. Modelled on the assertion keys (lib/identity/assertion-keys.ts).
//
// Node takes exactly one 48-byte key set (name | HMAC key | AES key, `setTicketKeys`) and keeps no
// older key to decrypt with, so there is one key at a time, and every process must switch to the
// next at the same moment or tickets of one are refused by the other. A key's life, from its row:
//
//   created_at   written leadMs before it is used, so every process (re-reading every refreshMs) holds it
//   active_from  every process switches to it at this time, by a timer: within clock skew of each other
//   active_from of its successor + retainMs   deleted (kept that long for processes whose clocks run late)
//
// Creating and deleting keys happens in one transaction under a PostgreSQL advisory lock, so
// replicas that decide to rotate at the same moment create one key.
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/connection.js';
import type { Logger } from '../logger.js';

/** The size of the key set `tls.Server#setTicketKeys` takes: a 16-byte name, then 16 bytes each of HMAC and AES key. */
export const ticketKeyBytes = 48;

export interface TicketKeyTimes {
  /** The key's name (its first 16 bytes) in hex: public, every ticket carries it in the clear. */
  id: string;
  createdAt: number;
  activeFrom: number;
}

export interface TicketKey extends TicketKeyTimes {
  key: Buffer;
}

export interface TicketKeyPolicy {
  /** How long one key is used before the next takes over. */
  rotationMs: number;
  /** The next key is written this long before it is used. */
  leadMs: number;
  /** A key is deleted this long after its successor took over. */
  retainMs: number;
}

export interface TicketKeyPlan {
  /** A key to write, used from this time on. */
  create?: { activeFrom: number };
  /** Ids of keys to delete. */
  delete: string[];
}

/** Latest first by active_from, ties (which the table's unique active_from forbids) by id: every process picks the same. */
function byActivation(a: TicketKeyTimes, b: TicketKeyTimes): number {
  return a.activeFrom - b.activeFrom || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The key used at time `t`: the latest whose active_from is not after `t`. */
export function activeKeyAt<K extends TicketKeyTimes>(keys: readonly K[], t: number): K | undefined {
  let active: K | undefined;
  for (const k of [...keys].sort(byActivation)) if (k.activeFrom <= t) active = k;
  return active;
}

/** When, after `t`, the key in use changes next: the earliest active_from later than `t`. */
export function nextSwitchAt(keys: readonly TicketKeyTimes[], t: number): number | undefined {
  let next: number | undefined;
  for (const k of keys) if (k.activeFrom > t && (next === undefined || k.activeFrom < next)) next = k.activeFrom;
  return next;
}

/** Keys whose successor took over more than retainMs before `t`: nobody uses them any more. */
export function keysToDelete(keys: readonly TicketKeyTimes[], t: number, retainMs: number): string[] {
  const sorted = [...keys].sort(byActivation);
  const gone: string[] = [];
  for (let i = 0; i + 1 < sorted.length; i++) {
    const successorFrom = sorted[i + 1]!.activeFrom;
    if (successorFrom + retainMs < t) gone.push(sorted[i]!.id);
  }
  return gone;
}

/**
 * What to write at `t`: the first key (used at once: no process holds another yet), a key now when
 * none is in use, the next one leadMs ahead once the latest has been used rotationMs - leadMs, or,
 * `force`d, the next one leadMs ahead unless one is already waiting. Run under the advisory lock, a
 * second replica sees the first one's key and writes nothing.
 */
export function planTicketKeys(keys: readonly TicketKeyTimes[], t: number, policy: TicketKeyPolicy, force = false): TicketKeyPlan {
  const plan: TicketKeyPlan = { delete: keysToDelete(keys, t, policy.retainMs) };
  const latest = [...keys].sort(byActivation).at(-1);
  if (!activeKeyAt(keys, t)) {
    plan.create = { activeFrom: t };
  } else if (latest && latest.activeFrom <= t && (force || latest.activeFrom + policy.rotationMs - policy.leadMs <= t)) {
    plan.create = { activeFrom: Math.max(latest.activeFrom + (force ? 0 : policy.rotationMs), t + policy.leadMs) };
  }
  return plan;
}

/** What the HTTPS listener follows (ingress-auth/server.ts): it is handed the key set to use now and at every switch. */
export interface TicketKeySource {
  /**
   * Reads the keys (creating the first if none) and calls `apply` with the one in use, then again at
   * every switch until stop. Never rejects: a key that cannot be read leaves the current one (Node's
   * own random one until the first read) and is tried again at the next refresh.
   */
  start(apply: (keys: Buffer) => void): Promise<void>;
  stop(): Promise<void>;
}

export interface TicketKeyStoreOptions {
  log: Logger;
  /** Default 12 h. */
  rotationMs?: number;
  /** Default 10 min, at most half of rotationMs; should be well above refreshMs. */
  leadMs?: number;
  /** How often a process re-reads the keys. Default 60 s. */
  refreshMs?: number;
  /** Default leadMs: far beyond clock skew. */
  retainMs?: number;
  clock?: () => number;
}

interface KeyRow {
  id: string;
  key: Buffer;
  created_at: Date;
  active_from: Date;
}

type Queryable = Db | Parameters<Parameters<Db['transaction']>[0]>[0];

/** Keys of one PostgreSQL advisory lock: pg_advisory_xact_lock(classid, objid); the assertion keys hold another. */
const lockKey = [0x5376_6331, 0x746b_6b31] as const;

/** Node's timers take at most 2^31 - 1 ms; a later switch is waited for in steps. */
const maxTimerMs = 2 ** 31 - 1;

export class TicketKeyStore implements TicketKeySource {
  private keys: TicketKey[] = [];
  private applied: TicketKey | undefined;
  private apply: ((keys: Buffer) => void) | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private switchTimer: NodeJS.Timeout | undefined;
  /** Reads and rotations one after another: a rotation never races a refresh's view of the table. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly policy: TicketKeyPolicy;
  private readonly refreshMs: number;
  private readonly log: Logger;
  private readonly clock: () => number;

  constructor(
    private readonly db: Db,
    opts: TicketKeyStoreOptions,
  ) {
    const rotationMs = opts.rotationMs ?? 12 * 3600_000;
    if (!(rotationMs > 0)) throw new Error('rotationMs must be positive');
    const leadMs = Math.min(opts.leadMs ?? 10 * 60_000, Math.floor(rotationMs / 2));
    this.policy = { rotationMs, leadMs, retainMs: opts.retainMs ?? leadMs };
    this.refreshMs = opts.refreshMs ?? 60_000;
    this.log = opts.log;
    this.clock = opts.clock ?? Date.now;
  }

  async start(apply: (keys: Buffer) => void): Promise<void> {
    if (this.apply) throw new Error('the ticket key store is already started');
    this.apply = apply;
    await this.refresh();
    this.refreshTimer = setInterval(() => void this.refresh(), this.refreshMs);
    this.refreshTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.refreshTimer);
    clearTimeout(this.switchTimer);
    this.refreshTimer = this.switchTimer = undefined;
    this.apply = undefined;
    await this.queue.catch(() => undefined);
  }

  /** The key in use by this process (its id and times), if one was read. */
  current(): TicketKeyTimes | undefined {
    const k = this.applied;
    return k && { id: k.id, createdAt: k.createdAt, activeFrom: k.activeFrom };
  }

  /**
   * Writes the next key now, used leadMs from now by every process (or returns the one already
   * waiting); with `immediate`, used at once here and by the others at their next refresh, for a
   * suspected leak: until then tickets do not resume across processes.
   */
  async rotate(opts: { immediate?: boolean } = {}): Promise<TicketKeyTimes> {
    return this.enqueue(async () => {
      await this.ensure(opts.immediate ? 'immediate' : 'force');
      this.follow();
      const now = this.clock();
      const next = opts.immediate ? activeKeyAt(this.keys, now) : this.keys.find((k) => k.activeFrom > now);
      if (!next) throw new Error('no TLS ticket key was written');
      return { id: next.id, createdAt: next.createdAt, activeFrom: next.activeFrom };
    });
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Re-reads the keys, writes or deletes what is due, and applies the key in use; a failure is logged and waits for the next refresh. */
  private refresh(): Promise<void> {
    return this.enqueue(async () => {
      try {
        this.keys = await read(this.db);
        const plan = planTicketKeys(this.keys, this.clock(), this.policy);
        if (plan.create || plan.delete.length) await this.ensure('due');
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'Could not read the TLS ticket keys; the current key stays in use');
      }
      this.follow();
    });
  }

  /** Under the advisory lock: plans again on what is there now (another replica may have done it) and writes it. */
  private async ensure(mode: 'due' | 'force' | 'immediate'): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?, ?)', [lockKey[0], lockKey[1]]);
      let keys = await read(trx);
      const now = this.clock();
      if (mode === 'immediate') {
        // A key nobody used yet is simply replaced by the one used now.
        await trx('tls_ticket_keys').where('active_from', '>', new Date(now)).delete();
        keys = keys.filter((k) => k.activeFrom <= now);
      }
      const plan = planTicketKeys(keys, now, this.policy, mode !== 'due');
      if (mode === 'immediate') plan.create = { activeFrom: Math.max(now, (activeKeyAt(keys, now)?.activeFrom ?? now) + 1) };
      if (plan.delete.length) await trx('tls_ticket_keys').whereIn('id', plan.delete).delete();
      if (plan.create) {
        const key = randomBytes(ticketKeyBytes);
        await trx('tls_ticket_keys').insert({
          id: key.subarray(0, 16).toString('hex'),
          key,
          created_at: new Date(now),
          active_from: new Date(plan.create.activeFrom),
        });
        this.log.info(
          { ticketKey: key.subarray(0, 16).toString('hex'), activeFrom: new Date(plan.create.activeFrom) },
          'Wrote a TLS ticket key',
        );
      }
      this.keys = await read(trx);
    });
  }

  /** Applies the key in use now if it is not the applied one, and sets the timer for the next switch. */
  private follow(): void {
    if (!this.apply) return;
    const now = this.clock();
    const active = activeKeyAt(this.keys, now);
    if (active && active.id !== this.applied?.id) {
      this.apply(Buffer.from(active.key));
      this.log.info({ ticketKey: active.id, activeFrom: new Date(active.activeFrom) }, 'TLS ticket key in use');
      this.applied = active;
    }
    clearTimeout(this.switchTimer);
    this.switchTimer = undefined;
    const next = nextSwitchAt(this.keys, now);
    if (next === undefined) return;
    // A timer may fire a little early by the wall clock; follow() then simply waits the rest.
    this.switchTimer = setTimeout(() => this.follow(), Math.min(next - now, maxTimerMs));
    this.switchTimer.unref();
  }
}

async function read(db: Queryable): Promise<TicketKey[]> {
  const rows = (await db('tls_ticket_keys').orderBy([{ column: 'active_from' }, { column: 'id' }])) as KeyRow[];
  return rows
    .filter((r) => r.key.length === ticketKeyBytes)
    .map((r) => ({ id: r.id, key: r.key, createdAt: r.created_at.getTime(), activeFrom: r.active_from.getTime() }));
}
