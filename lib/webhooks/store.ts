// Webhook endpoints of an account. Secrets follow the Standard Webhooks format (`whsec_` and
// base64 of 32 random bytes) and leave the platform once, in the answer that creates them.
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/connection.js';
import { eventsChannel, recordEvent } from '../events.js';

export interface Webhook {
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  createdAt: Date;
  disabledAt: Date | null;
  disabledReason: string | null;
  /** When every attempt since began failing (null while the last one succeeded). */
  failingSince: Date | null;
}

interface WebhookRow {
  id: string;
  url: string;
  event_types: string[];
  description: string | null;
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
  failing_since: Date | null;
}

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  url: r.url,
  eventTypes: r.event_types,
  description: r.description,
  createdAt: r.created_at,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
  failingSince: r.failing_since,
});

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export class WebhookExistsError extends Error {
  constructor(url: string) {
    super(`a webhook for ${url} already exists`);
    this.name = 'WebhookExistsError';
  }
}

export async function createWebhook(
  db: Db,
  accountId: string,
  input: { url: string; eventTypes: string[]; description?: string | undefined },
): Promise<{ webhook: Webhook; secret: string }> {
  const row = {
    id: `wh_${randomBytes(9).toString('base64url')}`,
    account_id: accountId,
    url: input.url,
    secret: newSecret(),
    event_types: JSON.stringify(input.eventTypes),
    description: input.description ?? null,
  };
  const [created] = await db
    .transaction(async (trx) => {
      const inserted = await trx('webhooks').insert(row).returning<WebhookRow[]>('*');
      await recordEvent(trx, accountId, 'webhook.created', row.id, { url: row.url });
      return inserted;
    })
    .catch((err: unknown) => {
      throw (err as { code?: string }).code === '23505' ? new WebhookExistsError(input.url) : err;
    });
  return { webhook: toWebhook(created!), secret: row.secret };
}

export async function listWebhooks(db: Db, accountId: string): Promise<Webhook[]> {
  const rows = (await db('webhooks').where({ account_id: accountId }).orderBy('created_at', 'asc')) as WebhookRow[];
  return rows.map(toWebhook);
}

/** Returns false when the account has no such webhook. */
export async function deleteWebhook(db: Db, accountId: string, id: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const n = await trx('webhooks').where({ account_id: accountId, id }).delete();
    if (n > 0) await recordEvent(trx, accountId, 'webhook.deleted', id);
    return n > 0;
  });
}

/** How long the previous secret keeps signing after a rotation (receivers switch over meanwhile). */
export const rotationOverlapMs = 24 * 3600_000;

/** A new secret for the endpoint; the old one signs too until the overlap ends. Undefined: no such webhook. */
export async function rotateSecret(
  db: Db,
  accountId: string,
  id: string,
  now: Date,
): Promise<{ webhook: Webhook; secret: string; previousUntil: Date } | undefined> {
  const secret = newSecret();
  const previousUntil = new Date(now.getTime() + rotationOverlapMs);
  const [row] = (await db('webhooks')
    .where({ account_id: accountId, id })
    .update({ previous_secret: db.ref('secret'), previous_secret_until: previousUntil, secret })
    .returning('*')) as WebhookRow[];
  return row && { webhook: toWebhook(row), secret, previousUntil };
}

/** Enables a disabled endpoint again (its failure streak forgotten). Undefined: no such webhook. */
export async function enableWebhook(db: Db, accountId: string, id: string): Promise<Webhook | undefined> {
  const [row] = (await db('webhooks')
    .where({ account_id: accountId, id })
    .update({ disabled_at: null, disabled_reason: null, failing_since: null })
    .returning('*')) as WebhookRow[];
  return row && toWebhook(row);
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'canceled';

export interface Delivery {
  id: string;
  eventId: number;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: Date;
}

export interface Attempt {
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  status: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date;
  last_attempt_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
  payload: string;
}

const toDelivery = (r: DeliveryRow): Delivery => ({
  id: r.id,
  eventId: Number(r.event_id),
  eventType: r.event_type,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.status === 'pending' ? r.next_attempt_at : null,
  lastAttemptAt: r.last_attempt_at,
  lastStatus: r.last_status,
  lastError: r.last_error,
  createdAt: r.created_at,
});

/** The endpoint's deliveries, newest first, before the cursor `before` (a delivery's created_at and id). */
export async function listDeliveries(
  db: Db,
  accountId: string,
  webhookId: string,
  opts: { limit: number; status?: DeliveryStatus | undefined; beforeEventId?: number | undefined },
): Promise<Delivery[] | undefined> {
  if (!(await db('webhooks').where({ account_id: accountId, id: webhookId }).first('id'))) return undefined;
  const q = db('webhook_deliveries').where({ webhook_id: webhookId }).orderBy('event_id', 'desc').limit(opts.limit);
  if (opts.status) q.where({ status: opts.status });
  if (opts.beforeEventId !== undefined) q.where('event_id', '<', opts.beforeEventId);
  return ((await q.select('*')) as DeliveryRow[]).map(toDelivery);
}

/** One delivery with its body and every attempt. Undefined: not the account's, or no such delivery. */
export async function getDelivery(
  db: Db,
  accountId: string,
  webhookId: string,
  id: string,
): Promise<{ delivery: Delivery; payload: string; attempts: Attempt[] } | undefined> {
  const row = (await db('webhook_deliveries').where({ account_id: accountId, webhook_id: webhookId, id }).first()) as
    DeliveryRow | undefined;
  if (!row) return undefined;
  const attempts = (await db('webhook_attempts').where({ delivery_id: id }).orderBy('id', 'asc')) as Array<{
    attempt: number;
    attempted_at: Date;
    duration_ms: number;
    status: number | null;
    error: string | null;
    response_excerpt: string | null;
  }>;
  return {
    delivery: toDelivery(row),
    payload: row.payload,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      attemptedAt: a.attempted_at,
      durationMs: a.duration_ms,
      status: a.status,
      error: a.error,
      responseExcerpt: a.response_excerpt,
    })),
  };
}

export class WebhookDisabledError extends Error {
  constructor(reason: string | null) {
    super(`the webhook is disabled (${reason ?? 'by its owner'}); enable it first`);
    this.name = 'WebhookDisabledError';
  }
}

/**
 * Sends a delivery again, with its own webhook-id and body, as a new series of attempts (the ones
 * before stay recorded). Undefined: no such delivery.
 */
export async function redeliver(db: Db, accountId: string, webhookId: string, id: string, now: Date): Promise<Delivery | undefined> {
  return db.transaction(async (trx) => {
    const endpoint = await trx('webhooks')
      .where({ account_id: accountId, id: webhookId })
      .first<{ disabled_at: Date | null; disabled_reason: string | null } | undefined>('disabled_at', 'disabled_reason');
    if (!endpoint) return undefined;
    const [row] = (await trx('webhook_deliveries')
      .where({ account_id: accountId, webhook_id: webhookId, id })
      .update({ status: 'pending', attempts: 0, next_attempt_at: now, locked_until: null })
      .returning('*')) as DeliveryRow[];
    if (row && endpoint.disabled_at) throw new WebhookDisabledError(endpoint.disabled_reason);
    // The deliverers wake on the events channel (api/events/hub.ts).
    if (row) await trx.raw('select pg_notify(?, ?)', [eventsChannel, accountId]);
    return row && toDelivery(row);
  });
}
