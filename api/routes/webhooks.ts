// The account's webhooks: create, list, read, rotate the secret of, enable, and delete them, and
// their deliveries (list, read with attempts, redeliver). Sending them is lib/webhooks/deliverer.ts.
import { z } from 'zod';
import { unknownFiltersMessage } from '../../lib/event-kinds.js';
import { WebhookDisabledError, WebhookExistsError, type Delivery, type Webhook } from '../../lib/webhooks/store.js';
import { resolverFor, webhookUrlProblemResolved } from '../../lib/webhooks/url-guard.js';
import { conflict, invalid, notFound } from '../errors.js';
import { within } from '../quotas.js';
import { op, type Operation } from '../operation.js';
import type { Services } from '../services.js';

type Deps = Pick<Services, 'webhooks'> & {
  /** The webhook quota is checked and the webhook made under the account's lock. */
  accountLock: Pick<Services['accountLock'], 'hold'>;
  /** The URL guard's settings, and the webhook quota. */
  config: Pick<Services['config'], 'webhookAllowPrivate' | 'webhookDnsServers' | 'quotas'>;
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

const createWebhookBody = z.strictObject({
  url: z.string().min(1).max(2048),
  events: z
    .array(z.string().regex(/^[a-z_]+(\.[a-z_]+)*(\.\*)?$|^\*$/, 'must be an event kind like deploy.live or deploy.*'))
    .max(100)
    .default([]),
  description: z.string().max(500).optional(),
});

const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().nullable(),
  created_at: z.string(),
  disabled_at: z.string().nullable(),
  disabled_reason: z.string().nullable(),
  failing_since: z.string().nullable(),
});
const deliveryStatus = z.enum(['pending', 'succeeded', 'failed', 'canceled']);
const deliverySchema = z.object({
  id: z.string(),
  event_id: z.number(),
  event_type: z.string(),
  status: deliveryStatus,
  attempts: z.number(),
  next_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  last_status: z.number().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
});
const attemptSchema = z.object({
  attempt: z.number(),
  attempted_at: z.string(),
  duration_ms: z.number(),
  status: z.number().nullable(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable(),
});
const deliveriesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  status: deliveryStatus.optional(),
  before: z.coerce.number().int().min(0).optional().describe("Deliveries of events before this event id (a previous page's next_before)"),
});

const presentWebhook = (w: Webhook) => ({
  id: w.id,
  url: w.url,
  events: w.eventTypes,
  description: w.description,
  created_at: iso(w.createdAt),
  disabled_at: iso(w.disabledAt),
  disabled_reason: w.disabledReason,
  failing_since: iso(w.failingSince),
});

const presentDelivery = (d: Delivery) => ({
  id: d.id,
  event_id: d.eventId,
  event_type: d.eventType,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: iso(d.nextAttemptAt),
  last_attempt_at: iso(d.lastAttemptAt),
  last_status: d.lastStatus,
  last_error: d.lastError,
  created_at: iso(d.createdAt)!,
});

export function webhookOperations(s: Deps): Operation[] {
  return [
    op({
      method: 'GET',
      path: '/account/webhooks',
      operationId: 'listWebhooks',
      accountWide: true,
      tag: 'account',
      summary: 'List webhooks',
      action: 'read',
      response: z.object({ webhooks: z.array(webhookSchema) }),
      handler: async ({ caller }) => ({
        body: {
          webhooks: (await s.webhooks.list(caller.account.id)).map(presentWebhook),
        },
      }),
    }),
    op({
      method: 'POST',
      path: '/account/webhooks',
      operationId: 'createWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Create webhook',
      action: 'admin',
      status: 201,
      body: createWebhookBody,
      response: webhookSchema.extend({ secret: z.string() }),
      handler: async ({ caller, body }) => {
        const unknownKinds = unknownFiltersMessage(body.events);
        if (unknownKinds) throw invalid(`invalid body: events: ${unknownKinds}`);
        const problem = await webhookUrlProblemResolved(body.url, {
          allowPrivate: s.config.webhookAllowPrivate,
          resolver: resolverFor(s.config.webhookDnsServers),
        });
        if (problem) throw invalid(problem);
        const { webhook, secret } = await s.accountLock
          .hold(caller.account.id, async () => {
            within(
              (await s.webhooks.list(caller.account.id)).length,
              1,
              s.config.quotas.webhooksPerAccount,
              'webhooks',
              'delete one first',
            );
            return s.webhooks.create(caller.account.id, { url: body.url, eventTypes: body.events, description: body.description });
          })
          .catch((err: unknown) => {
            throw err instanceof WebhookExistsError ? conflict(err.message) : err;
          });
        return { status: 201, body: { ...presentWebhook(webhook), secret } };
      },
    }),
    op({
      method: 'DELETE',
      path: '/account/webhooks/{webhookID}',
      operationId: 'deleteWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Delete webhook',
      action: 'admin',
      status: 204,
      handler: async ({ caller, params }) => {
        if (!(await s.webhooks.delete(caller.account.id, params.webhookID!))) throw notFound(`webhook ${params.webhookID}`);
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'POST',
      path: '/account/webhooks/{webhookID}/secret',
      operationId: 'rotateWebhookSecret',
      accountWide: true,
      tag: 'account',
      summary: 'Rotate a webhook secret',
      action: 'admin',
      response: webhookSchema.extend({ secret: z.string(), previous_secret_valid_until: z.string() }),
      handler: async ({ caller, params }) => {
        const rotated = await s.webhooks.rotateSecret(caller.account.id, params.webhookID!);
        if (!rotated) throw notFound(`webhook ${params.webhookID}`);
        return {
          body: {
            ...presentWebhook(rotated.webhook),
            secret: rotated.secret,
            previous_secret_valid_until: rotated.previousUntil.toISOString(),
          },
        };
      },
    }),
    op({
      method: 'POST',
      path: '/account/webhooks/{webhookID}/enable',
      operationId: 'enableWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Enable a disabled webhook',
      action: 'admin',
      response: webhookSchema,
      handler: async ({ caller, params }) => {
        const webhook = await s.webhooks.enable(caller.account.id, params.webhookID!);
        if (!webhook) throw notFound(`webhook ${params.webhookID}`);
        return { body: presentWebhook(webhook) };
      },
    }),
    op({
      method: 'GET',
      path: '/account/webhooks/{webhookID}/deliveries',
      operationId: 'listWebhookDeliveries',
      accountWide: true,
      tag: 'account',
      summary: 'List deliveries of a webhook',
      action: 'read',
      query: deliveriesQuery,
      response: z.object({ deliveries: z.array(deliverySchema), next_before: z.number().nullable() }),
      handler: async ({ caller, params, query }) => {
        const deliveries = await s.webhooks.deliveries(caller.account.id, params.webhookID!, {
          limit: query.limit,
          status: query.status,
          beforeEventId: query.before,
        });
        if (!deliveries) throw notFound(`webhook ${params.webhookID}`);
        const last = deliveries.length === query.limit ? deliveries[deliveries.length - 1] : undefined;
        return { body: { deliveries: deliveries.map(presentDelivery), next_before: last?.eventId ?? null } };
      },
    }),
    op({
      method: 'GET',
      path: '/account/webhooks/{webhookID}/deliveries/{deliveryID}',
      operationId: 'getWebhookDelivery',
      accountWide: true,
      tag: 'account',
      summary: 'Get a delivery and its attempts',
      action: 'read',
      response: deliverySchema.extend({ payload: z.string(), attempt_log: z.array(attemptSchema) }),
      handler: async ({ caller, params }) => {
        const found = await s.webhooks.delivery(caller.account.id, params.webhookID!, params.deliveryID!);
        if (!found) throw notFound(`delivery ${params.deliveryID} of webhook ${params.webhookID}`);
        return {
          body: {
            ...presentDelivery(found.delivery),
            payload: found.payload,
            attempt_log: found.attempts.map((a) => ({
              attempt: a.attempt,
              attempted_at: a.attemptedAt.toISOString(),
              duration_ms: a.durationMs,
              status: a.status,
              error: a.error,
              response_excerpt: a.responseExcerpt,
            })),
          },
        };
      },
    }),
    op({
      method: 'POST',
      path: '/account/webhooks/{webhookID}/deliveries/{deliveryID}/redeliver',
      operationId: 'redeliverWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Send a delivery again',
      action: 'admin',
      status: 202,
      response: deliverySchema,
      handler: async ({ caller, params }) => {
        const delivery = await s.webhooks.redeliver(caller.account.id, params.webhookID!, params.deliveryID!).catch((err: unknown) => {
          throw err instanceof WebhookDisabledError ? conflict(err.message) : err;
        });
        if (!delivery) throw notFound(`delivery ${params.deliveryID} of webhook ${params.webhookID}`);
        return { status: 202, body: presentDelivery(delivery) };
      },
    }),
  ];
}
