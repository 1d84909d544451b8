// Webhook endpoints of an account. Secrets follow the Standard Webhooks format (`whsec_` and
// base64 of 32 random bytes) and leave the platform once, in the answer that creates them.
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/connection.js';
import { recordEvent } from '../events.js';

export interface Webhook {
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  createdAt: Date;
  disabledAt: Date | null;
}

interface WebhookRow {
  id: string;
  url: string;
  event_types: string[];
  description: string | null;
  created_at: Date;
  disabled_at: Date | null;
}

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  url: r.url,
  eventTypes: r.event_types,
  description: r.description,
  createdAt: r.created_at,
  disabledAt: r.disabled_at,
});

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
    secret: `whsec_${randomBytes(32).toString('base64')}`,
    event_types: JSON.stringify(input.eventTypes),
    description: input.description ?? null,
  };
  const [created] = (await db
    .transaction(async (trx) => {
      const inserted = await trx('webhooks').insert(row).returning('*');
      await recordEvent(trx, accountId, 'webhook.created', row.id, { url: row.url });
      return inserted;
    })
    .catch((err: { code?: string }) => {
      throw err.code === '23505' ? new WebhookExistsError(input.url) : err;
    })) as WebhookRow[];
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
