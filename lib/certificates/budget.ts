// Whether the issuer may place a new ACME order for a name now, from the orders recorded in
// PostgreSQL (certificate_orders, lib/certificates/orders.ts), so that the platform never exceeds the
// CA's limits (Let's Encrypt's by default: docs/decisions/0028-https.md) and never retries in a loop:
// - at most `certificatesPerDomainWeek` certificates per registered domain in 7 days,
// - at most `failedValidationsPerHour` failed orders per name in the last hour,
// - at most `ordersPer3h` new orders overall in 3 hours,
// - never before the name's last `retry_after` (the CA's Retry-After, else a back-off from 1 h).
// Pure: the rows and the clock are the caller's.

export type OrderOutcome = 'issued' | 'renewed' | 'failed' | 'refused' | 'pending';

/** One row of certificate_orders, as the decisions read it. */
export interface OrderRecord {
  domain: string;
  registeredDomain: string;
  startedAt: Date;
  finishedAt: Date | undefined;
  outcome: OrderOutcome;
  reason: string | undefined;
  retryAfter: Date | undefined;
}

export interface OrderLimits {
  certificatesPerDomainWeek: number;
  failedValidationsPerHour: number;
  ordersPer3h: number;
}

export type BudgetReason =
  /** Another replica (or an earlier pass) has an order of this name in flight: skip it, say nothing. */
  | 'OrderInFlight'
  /** A certificate of this name was issued after the caller looked at the Secrets: skip it, say nothing. */
  | 'IssuedMeanwhile'
  | 'BackingOff'
  | 'CertificatesPerDomainLimit'
  | 'FailedValidationsLimit'
  | 'OrdersLimit';

export type BudgetDecision = { allowed: true } | { allowed: false; reason: BudgetReason; message: string; until: Date };

export const hourMs = 3600_000;
export const weekMs = 7 * 24 * hourMs;
export const ordersWindowMs = 3 * hourMs;
/** A pending order older than this was abandoned (its replica died mid-order): it no longer holds the name. */
export const orderLeaseMs = 15 * 60_000;
/** The back-off after a failure without the CA's Retry-After: 1 h, doubling per consecutive failure, at most 24 h. */
export const firstBackoffMs = hourMs;
export const maxBackoffMs = 24 * hourMs;

const counted = new Set<OrderOutcome>(['issued', 'renewed']);
/** The outcomes of an order the CA created (a refused one was never made). */
const ordered = new Set<OrderOutcome>(['issued', 'renewed', 'failed', 'pending']);

const live = (r: OrderRecord, now: Date) => r.outcome !== 'pending' || now.getTime() - r.startedAt.getTime() < orderLeaseMs;
const whenDone = (r: OrderRecord) => r.finishedAt ?? r.startedAt;

/**
 * When the `limit`-th newest of `times` leaves a window of `windowMs`, if `limit` of them are inside
 * it now (undefined: there is room).
 */
function fullUntil(times: Date[], limit: number, windowMs: number, now: Date): Date | undefined {
  const inside = times
    .map((t) => t.getTime())
    // A time after `now` (another replica's clock ahead of this one's) counts too.
    .filter((t) => t > now.getTime() - windowMs)
    .sort((a, b) => a - b);
  if (inside.length < limit) return undefined;
  return new Date(inside[inside.length - limit]! + windowMs);
}

/**
 * Whether a new order for `domain` (of registered domain `registeredDomain`) is allowed at `now`,
 * from `rows` (every row of the name, of its registered domain in the last 7 days, and of anyone in
 * the last 3 hours; more rows do no harm). `observedAt`: when the caller read the certificates it
 * decided from; an issuance of the name finished since then means that decision is stale.
 */
export function decideOrder(o: {
  domain: string;
  registeredDomain: string;
  rows: readonly OrderRecord[];
  limits: OrderLimits;
  now: Date;
  observedAt?: Date;
}): BudgetDecision {
  const { domain, now, limits } = o;
  const rows = o.rows.filter((r) => live(r, now));
  const mine = rows.filter((r) => r.domain === domain);
  const pending = mine.find((r) => r.outcome === 'pending');
  if (pending)
    return {
      allowed: false,
      reason: 'OrderInFlight',
      message: `an order of ${domain} is in flight since ${pending.startedAt.toISOString()}`,
      until: new Date(pending.startedAt.getTime() + orderLeaseMs),
    };
  const observedAt = o.observedAt;
  if (observedAt && mine.some((r) => counted.has(r.outcome) && whenDone(r).getTime() >= observedAt.getTime()))
    return { allowed: false, reason: 'IssuedMeanwhile', message: `a certificate of ${domain} was just issued`, until: now };

  const retryAfter = mine.map((r) => r.retryAfter?.getTime() ?? 0).reduce((a, b) => Math.max(a, b), 0);
  if (retryAfter > now.getTime())
    return {
      allowed: false,
      reason: 'BackingOff',
      message: `the last order of ${domain} did not succeed; the next one is not before ${new Date(retryAfter).toISOString()}`,
      until: new Date(retryAfter),
    };

  // The CA's limits count an abandoned order too (its replica died mid-order, perhaps after the CA
  // issued): past its lease it no longer holds the name, but it stays in these windows.
  const week = fullUntil(
    o.rows.filter((r) => r.registeredDomain === o.registeredDomain && (counted.has(r.outcome) || r.outcome === 'pending')).map(whenDone),
    limits.certificatesPerDomainWeek,
    weekMs,
    now,
  );
  if (week)
    return {
      allowed: false,
      reason: 'CertificatesPerDomainLimit',
      message: `${limits.certificatesPerDomainWeek} certificates were issued under ${o.registeredDomain} in the last 7 days, the CA's limit; the next one is not before ${week.toISOString()}`,
      until: week,
    };

  const failed = fullUntil(mine.filter((r) => r.outcome === 'failed').map(whenDone), limits.failedValidationsPerHour, hourMs, now);
  if (failed)
    return {
      allowed: false,
      reason: 'FailedValidationsLimit',
      message: `${limits.failedValidationsPerHour} orders of ${domain} failed in the last hour, the CA's limit; the next one is not before ${failed.toISOString()}`,
      until: failed,
    };

  const orders = fullUntil(
    o.rows.filter((r) => ordered.has(r.outcome)).map((r) => r.startedAt),
    limits.ordersPer3h,
    ordersWindowMs,
    now,
  );
  if (orders)
    return {
      allowed: false,
      reason: 'OrdersLimit',
      message: `the platform placed ${limits.ordersPer3h} orders in the last 3 hours, the CA's limit; the next one is not before ${orders.toISOString()}`,
      until: orders,
    };
  return { allowed: true };
}

/**
 * How many orders of the name failed or were refused in a row, newest first, since its last
 * certificate (the back-off doubles with each).
 */
export function consecutiveFailures(rows: readonly OrderRecord[], domain: string): number {
  const mine = rows
    .filter((r) => r.domain === domain && r.outcome !== 'pending')
    .sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime());
  let n = 0;
  for (const r of mine) {
    if (counted.has(r.outcome)) break;
    n += 1;
  }
  return n;
}

/**
 * When a name may be ordered again after a failure that is its `failures`-th in a row (1 for the
 * first): the CA's Retry-After if it gave one in the future, else 1 h doubling per failure, at most 24 h.
 */
export function retryAfterFailure(failures: number, now: Date, caRetryAfter?: Date): Date {
  if (caRetryAfter && caRetryAfter.getTime() > now.getTime()) return caRetryAfter;
  const n = Math.max(1, Math.floor(failures));
  const wait = Math.min(maxBackoffMs, firstBackoffMs * 2 ** Math.min(n - 1, 30));
  return new Date(now.getTime() + wait);
}
