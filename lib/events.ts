// The append-only event log. Every state change a tenant should be able to follow is recorded here,
// in the same transaction as the change when there is one.
import type { Knex } from 'knex';

export interface EventRecord {
  id: number;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
}

interface EventRow {
  id: string;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

export async function recordEvent(
  db: Knex | Knex.Transaction,
  accountId: string,
  type: string,
  subject: string | null,
  data: Record<string, unknown> = {},
): Promise<void> {
  await db('events').insert({ account_id: accountId, type, subject, data: JSON.stringify(data) });
}

/** The account's events in id order, after the cursor `after`. */
export async function listEvents(
  db: Knex,
  accountId: string,
  opts: { after?: number; limit: number; types?: string[] },
): Promise<EventRecord[]> {
  const q = db('events').where({ account_id: accountId }).orderBy('id', 'asc').limit(opts.limit);
  if (opts.after !== undefined) q.where('id', '>', opts.after);
  if (opts.types?.length) q.whereIn('type', opts.types);
  const rows = (await q.select('id', 'type', 'subject', 'data', 'created_at')) as EventRow[];
  return rows.map((r) => ({ id: Number(r.id), type: r.type, subject: r.subject, data: r.data, createdAt: r.created_at }));
}
