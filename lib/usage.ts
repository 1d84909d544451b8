// Metered usage, summed from usage_records. Meters (docs/api/usage.md):
//   machine_seconds  seconds app machines ran         (metered from their Pods: api/usage/machine-meter.ts)
//   build_seconds    seconds build Jobs ran           (written by the Build controller)
//   sandbox_seconds  seconds sandboxes were open      (recorded by the API when one ends: api/sandboxes/recorder.ts)
//   stored_bytes     bytes stored now: the latest sample of each subject (databases' volumes, by their size)
//   data_requests    requests to HTML apps' data bindings (a row per app and minute, from ingress-auth/data/usage.ts)
//   data_bytes       HTML apps' records now: the latest sample of each app (ingress-auth/data/usage.ts)
//   domain_registrations  domain orders bought (registrations and renewals), each with its price: a
//                    charge (api/registrar/store.ts, in the order's transaction)
import type { Db } from './db/connection.js';

export const meters = [
  'machine_seconds',
  'build_seconds',
  'sandbox_seconds',
  'stored_bytes',
  'data_requests',
  'data_bytes',
  'domain_registrations',
] as const;
/** Meters whose latest sample of each subject is the amount (the others sum their intervals). */
const sampledMeters = ['stored_bytes', 'data_bytes'] as const;
/** Meters of charges: a row per thing bought, at one instant, with its price; counted in the period it falls in. */
export const chargeMeters = ['domain_registrations'] as const;
export type Meter = (typeof meters)[number];
export type ChargeMeter = (typeof chargeMeters)[number];
export type MeterTotals = Record<Meter, number>;
/** What a charge meter's rows cost in a period, in minor units (cents) by ISO currency: `{USD: 2598}`. */
export type ChargeTotals = Record<ChargeMeter, Record<string, number>>;

export interface UsagePeriod {
  start: Date;
  end: Date;
  meters: MeterTotals;
  charges: ChargeTotals;
}

export function monthStart(d: Date, monthsBack = 0): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - monthsBack, 1));
}

/** Usage in [start, end): time meters sum the seconds of their intervals that fall in the period. */
export async function usageBetween(db: Db, accountId: string, start: Date, end: Date): Promise<MeterTotals> {
  const totals = Object.fromEntries(meters.map((m) => [m, 0])) as MeterTotals;
  const timed = await db('usage_records')
    .where({ account_id: accountId })
    .whereNotIn('meter', [...sampledMeters, ...chargeMeters])
    .where('started_at', '<', end)
    .where('ended_at', '>', start)
    .groupBy('meter')
    .select('meter')
    .select<Array<{ meter: Meter; total: string | number | null }>>(
      db.raw(
        'sum(quantity * extract(epoch from (least(ended_at, ?) - greatest(started_at, ?))) / nullif(extract(epoch from (ended_at - started_at)), 0)) as total',
        [end, start],
      ),
    );
  for (const row of timed) totals[row.meter] = Math.round(Number(row.total ?? 0) * 1000) / 1000;
  for (const meter of sampledMeters) {
    const stored = await db
      .from(
        db('usage_records')
          .where({ account_id: accountId, meter })
          .where('started_at', '<', end)
          .distinctOn('subject')
          .orderBy([{ column: 'subject' }, { column: 'started_at', order: 'desc' }])
          .select('quantity')
          .as('latest'),
      )
      .sum<Array<{ total: string | number | null }>>({ total: 'quantity' });
    totals[meter] = Number(stored[0]?.total ?? 0);
  }
  const charged = await chargeRows(db, accountId, start, end)
    .groupBy('meter')
    .select('meter')
    .sum<Array<{ meter: ChargeMeter; total: string | number | null }>>({ total: 'quantity' });
  for (const row of charged) totals[row.meter] = Number(row.total ?? 0);
  return totals;
}

/** Charges in [start, end) (a charge is at one instant, `started_at`), in minor units by currency. */
export async function chargesBetween(db: Db, accountId: string, start: Date, end: Date): Promise<ChargeTotals> {
  const totals = Object.fromEntries(chargeMeters.map((m) => [m, {}])) as ChargeTotals;
  const rows = await chargeRows(db, accountId, start, end)
    .groupBy('meter', 'currency')
    .select('meter', 'currency')
    .sum<Array<{ meter: ChargeMeter; currency: string; total: string | number }>>({ total: 'amount_cents' });
  for (const row of rows) totals[row.meter][row.currency] = Number(row.total);
  return totals;
}

const chargeRows = (db: Db, accountId: string, start: Date, end: Date) =>
  db('usage_records')
    .where({ account_id: accountId })
    .whereIn('meter', chargeMeters)
    .where('started_at', '>=', start)
    .where('started_at', '<', end);

export function dayStart(d: Date, daysBack = 0): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - daysBack));
}

export type Bucket = 'month' | 'day';

/** The last `count` calendar months or days (UTC) up to now, newest first; the current one ends now. */
export async function usageHistory(db: Db, accountId: string, now: Date, count: number, bucket: Bucket = 'month'): Promise<UsagePeriod[]> {
  const startOf = bucket === 'month' ? monthStart : dayStart;
  const bounds = Array.from({ length: count }, (_, i) => ({ start: startOf(now, i), end: i === 0 ? now : startOf(now, i - 1) }));
  return Promise.all(
    bounds.map(async ({ start, end }) => {
      const [totals, charges] = await Promise.all([usageBetween(db, accountId, start, end), chargesBetween(db, accountId, start, end)]);
      return { start, end, meters: totals, charges };
    }),
  );
}

/**
 * A stored_bytes sample: `subject` holds `bytes` from `at` on (until its next sample; 0 when it
 * is gone). Databases sample their volume's size when created and 0 when dropped.
 */
export async function recordStorageSample(
  db: Db,
  accountId: string,
  subject: string,
  bytes: number,
  at: Date,
  meter: (typeof sampledMeters)[number] = 'stored_bytes',
): Promise<void> {
  await db('usage_records')
    .insert({ account_id: accountId, meter, subject, quantity: bytes, started_at: at, ended_at: at })
    .onConflict(['account_id', 'meter', 'subject', 'started_at'])
    .merge(['quantity']);
}

/**
 * A charge: `subject` was bought at `at` for `amount` (minor units). Written in the transaction of
 * the purchase it records (`db` a transaction), so it exists exactly when the purchase is recorded.
 */
export async function recordCharge(
  db: Db,
  accountId: string,
  meter: ChargeMeter,
  subject: string,
  amount: { cents: number; currency: string },
  at: Date,
): Promise<void> {
  await db('usage_records')
    .insert({
      account_id: accountId,
      meter,
      subject,
      quantity: 1,
      amount_cents: amount.cents,
      currency: amount.currency,
      started_at: at,
      ended_at: at,
    })
    .onConflict(['account_id', 'meter', 'subject', 'started_at'])
    .ignore();
}

/** machine_seconds in [start, end) per app (the usage rows' subject is `<app>/<pod>`). */
export async function machineSecondsByApp(db: Db, accountId: string, start: Date, end: Date): Promise<Record<string, number>> {
  const rows = await db('usage_records')
    .where({ account_id: accountId, meter: 'machine_seconds' })
    .where('started_at', '<', end)
    .where('ended_at', '>', start)
    .groupByRaw("split_part(subject, '/', 1)")
    .select(db.raw("split_part(subject, '/', 1) as app"))
    .select<Array<{ app: string; total: string | number | null }>>(
      db.raw(
        'sum(quantity * extract(epoch from (least(ended_at, ?) - greatest(started_at, ?))) / nullif(extract(epoch from (ended_at - started_at)), 0)) as total',
        [end, start],
      ),
    );
  return Object.fromEntries(rows.map((r) => [r.app, Math.round(Number(r.total ?? 0) * 1000) / 1000]));
}
