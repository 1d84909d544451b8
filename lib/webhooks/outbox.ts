// The webhook outbox (tables webhook_deliveries and webhook_attempts, migration 0015) and its
// schedule. recordEvent (lib/events.ts) enqueues one delivery per matching endpoint in the event's
// own transaction, with the exact body every attempt will send; the deliverer (deliverer.ts) sends
// them. Retries follow the Standard Webhooks schedule, docs/api/webhooks.md.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { matchesFilters } from '../event-kinds.js';
import type { EventJson } from '../events.js';

/** Waits after the 1st, 2nd, … failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const retryDelaysMs: readonly number[] = [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400].map((s) => s * 1000);
/** The first attempt and one per retry: about three days and four hours in all. */
export const maxAttempts = retryDelaysMs.length + 1;
/** An endpoint that has failed every attempt for this long is disabled. */
export const disableAfterFailingMs = 5 * 86_400_000;
/** Up to this fraction is added to each wait, so endpoints that failed together are not retried together. */
const jitter = 0.1;

/**
 * The wait before the next attempt after `failed` failed attempts, or undefined when they were the
 * last. A Retry-After longer than the schedule's wait is honoured (up to a day).
 */
export function retryDelayMs(failed: number, retryAfterMs?: number, random: () => number = Math.random): number | undefined {
  const base = retryDelaysMs[failed - 1];
  if (base === undefined) return undefined;
  const wait = Math.round(base * (1 + jitter * random()));
  return Math.min(Math.max(wait, retryAfterMs ?? 0), 86_400_000);
}

/** A Retry-After header's wait in ms (delta-seconds or an HTTP date), or undefined. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/** The body of a delivery: Standard Webhooks' `type`, `timestamp` and `data` (the event as GET /events answers it). */
export function deliveryBody(event: EventJson): string {
  return JSON.stringify({ type: event.type, timestamp: event.created_at, data: event });
}

export const newDeliveryId = (): string => `msg_${randomBytes(12).toString('base64url')}`;

/** Inserts a delivery of `event` for every enabled endpoint of the account whose filters it passes. */
export async function enqueueDeliveries(tx: Knex.Transaction, accountId: string, event: EventJson): Promise<number> {
  // Under the account's event lock (recordEvent holds it), which disabling an endpoint takes too
  // (deliverer.ts): an endpoint is either disabled before this reads it, or cancels this delivery.
  const endpoints = await tx('webhooks').where({ account_id: accountId }).whereNull('disabled_at').select<
    Array<{
      id: string;
      event_types: string[];
    }>
  >('id', 'event_types');
  const matching = endpoints.filter((w) => matchesFilters(event.type, w.event_types));
  if (!matching.length) return 0;
  const payload = deliveryBody(event);
  await tx('webhook_deliveries').insert(
    matching.map((w) => ({
      id: newDeliveryId(),
      webhook_id: w.id,
      account_id: accountId,
      event_id: event.id,
      event_type: event.type,
      payload,
      // Never tried: due at once, whatever clock the deliverer keeps (see deliverer.ts).
      next_attempt_at: event.created_at,
      created_at: event.created_at,
    })),
  );
  return matching.length;
}
