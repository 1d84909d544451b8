// The append-only event log. Every state change a tenant should be able to follow is recorded here,
// in the same transaction as the change when there is one (docs/api/events.md).
//
// Ids are a cursor: a follower that has read up to id N asks for "after N". For that to skip
// nothing, one account's events must become visible in id order, which concurrent transactions
// would not guarantee (id 10 can commit after id 11). So an insert takes a per-account advisory
// lock held until commit, which orders the account's inserts by commit, and notifies the channel
// (delivered at commit) that the API's followers listen on (api/events/hub.ts).
import type { Knex } from 'knex';
import { enqueueDeliveries } from './webhooks/outbox.js';

/** The PostgreSQL channel an account's new events are announced on (the payload: its id). */
export const eventsChannel = 'svc_events';
/** The advisory-lock class of event inserts (the second key is the account's). */
const eventLockClass = 0x5e7e;

export interface EventRecord {
  id: number;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** An event as the API answers it and webhooks carry it (docs/api/events.md). */
export interface EventJson {
  id: number;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  created_at: string;
}

export function eventJson(e: EventRecord): EventJson {
  return { id: e.id, type: e.type, subject: e.subject, data: e.data, created_at: e.createdAt.toISOString() };
}

interface EventRow {
  id: string;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

/** Holds the account's event log until `tx` ends: its events, and what must not interleave with them. */
export async function lockEventLog(tx: Knex.Transaction, accountId: string): Promise<void> {
  await tx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [eventLockClass, accountId]);
}

const toRecord = (r: EventRow): EventRecord => ({
  id: Number(r.id),
  type: r.type,
  subject: r.subject,
  data: r.data,
  createdAt: r.created_at,
});

export async function recordEvent(
  db: Knex | Knex.Transaction,
  accountId: string,
  type: string,
  subject: string | null,
  data: Record<string, unknown> = {},
): Promise<void> {
  const write = async (tx: Knex.Transaction) => {
    await lockEventLog(tx, accountId);
    const [row] = await tx('events')
      .insert({ account_id: accountId, type, subject, data: JSON.stringify(data) })
      .returning<EventRow[]>(['id', 'type', 'subject', 'data', 'created_at']);
    // The webhook outbox is written with the event: a delivery exists exactly when its event does.
    await enqueueDeliveries(tx, accountId, eventJson(toRecord(row!)));
    await tx.raw('select pg_notify(?, ?)', [eventsChannel, accountId]);
  };
  if ((db as Knex.Transaction).isTransaction) await write(db as Knex.Transaction);
  else await db.transaction(write);
}

/** The account's events in id order, after the cursor `after`, of the kinds `types` (exact, `prefix.*`, `*`). */
export async function listEvents(
  db: Knex,
  accountId: string,
  opts: {
    after?: number;
    /** Newest first, below this id when it is given (from the newest when it is not): the other way from `after`. */
    newest?: { before?: number | undefined } | undefined;
    limit: number;
    types?: string[] | undefined;
    app?: string | undefined;
  },
): Promise<EventRecord[]> {
  const q = db('events')
    .where({ account_id: accountId })
    .orderBy('id', opts.newest ? 'desc' : 'asc')
    .limit(opts.limit);
  if (opts.app !== undefined) q.where({ subject: opts.app });
  if (opts.after !== undefined) q.where('id', '>', opts.after);
  if (opts.newest?.before !== undefined) q.where('id', '<', opts.newest.before);
  if (opts.types?.length && !opts.types.includes('*')) {
    const exact = opts.types.filter((t) => !t.endsWith('.*'));
    const prefixes = opts.types.filter((t) => t.endsWith('.*')).map((t) => `${t.slice(0, -1).replace(/[%_\\]/g, '\\$&')}%`);
    q.where((w) => {
      if (exact.length) w.orWhereIn('type', exact);
      for (const p of prefixes) w.orWhereLike('type', p);
    });
  }
  const rows = await q.select<EventRow[]>('id', 'type', 'subject', 'data', 'created_at');
  return rows.map(toRecord);
}

/**
 * Deletes events recorded before `before` and remembers, per account, the highest id deleted
 * (event_horizons). Safe to run from every API replica at once. Returns how many went.
 */
export async function purgeEvents(db: Knex, before: Date, batch = 10_000): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await db.raw<{ rows: Array<{ n: number }> }>(
      `WITH gone AS (
         DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
         RETURNING account_id, id),
       horizons AS (
         INSERT INTO event_horizons (account_id, purged_through, purged_at)
         SELECT account_id, max(id), now() FROM gone GROUP BY account_id
         ON CONFLICT (account_id) DO UPDATE SET purged_through = greatest(event_horizons.purged_through, excluded.purged_through), purged_at = excluded.purged_at)
       SELECT count(*)::int AS n FROM gone`,
      [before, batch],
    );
    const n = result.rows[0]?.n ?? 0;
    total += n;
    if (n < batch) return total;
  }
}

/** The highest id purged from the account's log (0: nothing yet): a cursor below it has lost events. */
export async function eventHorizon(db: Knex, accountId: string): Promise<number> {
  const row = await db('event_horizons').where({ account_id: accountId }).first<{ purged_through: string } | undefined>('purged_through');
  return row ? Number(row.purged_through) : 0;
}
