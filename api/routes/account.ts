// The account group: the caller's account, its API tokens, usage, webhooks and events.
import { z } from 'zod';
import { unknownFiltersMessage } from '../../lib/event-kinds.js';
import { parseDuration } from '../../lib/duration.js';
import { actions, type Restriction } from '../../lib/tokens/token.js';
import { monthStart, meters } from '../../lib/usage.js';
import { WebhookDisabledError, WebhookExistsError, type Delivery, type Webhook } from '../../lib/webhooks/store.js';
import { resolverFor, webhookUrlProblemResolved } from '../../lib/webhooks/url-guard.js';
import { conflict, invalid, notFound } from '../errors.js';
import { within } from '../quotas.js';
import { op, type Operation } from '../operation.js';
import type { Services } from '../services.js';
import { dnsLabel } from '../../lib/contract.js';

const maxTokenLifetimeMs = 366 * 86400e3;
const appName = z.string().regex(dnsLabel, 'must be an app name (a DNS label)');

const createTokenBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100).optional(),
    apps: z.array(appName).min(1).max(100).optional(),
    actions: z.array(z.enum(actions)).min(1).optional(),
    expires_in: z
      .string()
      .refine((v) => parseDuration(v) !== undefined, 'must be a duration like 30m, 12h or 90d')
      .optional(),
    expires_at: z.iso.datetime({ offset: true }).optional(),
  })
  .refine((b) => !(b.expires_in && b.expires_at), { message: 'give expires_in or expires_at, not both', path: ['expires_at'] });

const createWebhookBody = z.strictObject({
  url: z.string().min(1).max(2048),
  events: z
    .array(z.string().regex(/^[a-z_]+(\.[a-z_]+)*(\.\*)?$|^\*$/, 'must be an event kind like deploy.live or deploy.*'))
    .max(100)
    .default([]),
  description: z.string().max(500).optional(),
});

const eventsQuery = z.strictObject({
  after: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  type: z.string().max(500).optional(),
});

const historyQuery = z
  .strictObject({
    bucket: z.enum(['month', 'day']).default('month').describe('One entry per calendar month (default) or per day, UTC'),
    months: z.coerce.number().int().min(1).max(24).optional().describe('How many months (bucket=month; default 6)'),
    days: z.coerce.number().int().min(1).max(93).optional().describe('How many days (bucket=day; default 30)'),
  })
  .refine(
    (q) => !(q.bucket === 'month' && q.days !== undefined) && !(q.bucket === 'day' && q.months !== undefined),
    'months goes with bucket=month, days with bucket=day',
  );

const iso = (d: Date | null) => (d ? d.toISOString() : null);

const accountSchema = z.object({ id: z.string(), email: z.string(), name: z.string(), namespace: z.string(), created_at: z.string() });
const tokenSchema = z.object({
  nonce: z.string(),
  name: z.string().nullable(),
  restrictions: z.array(z.string()),
  created_at: z.string(),
  expires_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked: z.boolean(),
});
const meterSchema = z.object(Object.fromEntries(meters.map((m) => [m, z.number()])));
const periodSchema = z.object({ start: z.string(), end: z.string(), meters: meterSchema });
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
const eventSchema = z.object({
  id: z.number(),
  type: z.string(),
  subject: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
  created_at: z.string(),
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

export function accountOperations(s: Services): Operation[] {
  return [
    op({
      method: 'GET',
      path: '/account',
      operationId: 'getAccount',
      tag: 'account',
      summary: 'Get the current account',
      action: 'read',
      response: accountSchema,
      handler: async ({ caller: { account } }) => ({
        body: {
          id: account.id,
          email: account.email,
          name: account.name,
          namespace: account.namespace,
          created_at: iso(account.createdAt),
        },
      }),
    }),
    op({
      method: 'GET',
      path: '/account/events',
      operationId: 'listAccountEvents',
      accountWide: true,
      tag: 'account',
      summary: 'List events',
      action: 'read',
      query: eventsQuery,
      response: z.object({ events: z.array(eventSchema), next_after: z.number().nullable() }),
      handler: async ({ caller, query }) => {
        const events = await s.events.list(caller.account.id, {
          after: query.after,
          limit: query.limit,
          types: query.type?.split(',').filter(Boolean),
        });
        return {
          body: {
            events: events.map((e) => ({ id: e.id, type: e.type, subject: e.subject, data: e.data, created_at: iso(e.createdAt) })),
            next_after: events.length === query.limit ? events[events.length - 1]!.id : null,
          },
        };
      },
    }),
    op({
      method: 'GET',
      path: '/account/tokens',
      operationId: 'listTokens',
      accountWide: true,
      tag: 'account',
      summary: 'List tokens',
      action: 'admin',
      response: z.object({ tokens: z.array(tokenSchema) }),
      handler: async ({ caller }) => ({
        body: {
          tokens: (await s.tokens.list(caller.account.id)).map((t) => ({
            nonce: t.nonce,
            name: t.name,
            restrictions: t.restrictions,
            created_at: iso(t.createdAt),
            expires_at: iso(t.expiresAt),
            last_used_at: iso(t.lastUsedAt),
            revoked: t.revoked,
          })),
        },
      }),
    }),
    op({
      method: 'POST',
      path: '/account/tokens',
      operationId: 'createToken',
      accountWide: true,
      tag: 'account',
      summary: 'Create an API token',
      action: 'admin',
      status: 201,
      body: createTokenBody,
      response: tokenSchema.omit({ revoked: true, last_used_at: true }).extend({ token: z.string() }),
      handler: async ({ caller, body }) => {
        const now = s.clock().getTime();
        const expiresAt = body.expires_at
          ? new Date(body.expires_at)
          : body.expires_in
            ? new Date(now + parseDuration(body.expires_in)!)
            : undefined;
        if (expiresAt && expiresAt.getTime() <= now) throw invalid('expires_at: must be in the future');
        if (expiresAt && expiresAt.getTime() - now > maxTokenLifetimeMs) throw invalid('expires_at: at most 366 days ahead');
        const restrictions: Restriction[] = [];
        if (body.apps) restrictions.push({ kind: 'apps', apps: body.apps });
        if (body.actions) restrictions.push({ kind: 'actions', actions: body.actions });
        // A token minted with a restricted token keeps the caller's restrictions: no escalation.
        const inherited = caller.principal.restrictions;
        // And its lineage: revoking the caller's token (or any it came from) revokes this one.
        const { token, record } = await s.accountLock.hold(caller.account.id, async () => {
          const live = (await s.tokens.list(caller.account.id)).filter(
            (t) => !t.revoked && (!t.expiresAt || t.expiresAt.getTime() > now),
          ).length;
          within(live, 1, s.config.quotas.tokensPerAccount, 'live tokens', 'revoke one first (DELETE /tokens/{id})');
          return s.tokens.issue(caller.account.id, {
            name: body.name,
            restrictions,
            inherited,
            lineage: caller.principal.lineage,
            expiresAt,
          });
        });
        return {
          status: 201,
          body: {
            token,
            nonce: record.nonce,
            name: record.name,
            restrictions: record.restrictions,
            created_at: iso(record.createdAt),
            expires_at: iso(record.expiresAt),
          },
        };
      },
    }),
    op({
      method: 'DELETE',
      path: '/account/tokens/{nonce}',
      operationId: 'deleteToken',
      accountWide: true,
      tag: 'account',
      summary: 'Delete token',
      action: 'admin',
      status: 204,
      handler: async ({ caller, params }) => {
        if (!(await s.tokens.revoke(caller.account.id, params.nonce!))) throw notFound(`token ${params.nonce}`);
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'GET',
      path: '/account/usage',
      operationId: 'getUsage',
      accountWide: true,
      tag: 'account',
      summary: 'Get usage',
      action: 'read',
      response: periodSchema.extend({ apps: z.record(z.string(), z.object({ machine_seconds: z.number() })) }),
      handler: async ({ caller }) => {
        const now = s.clock();
        const start = monthStart(now);
        const [totals, byApp] = await Promise.all([
          s.usage.between(caller.account.id, start, now),
          s.usage.byApp(caller.account.id, start, now),
        ]);
        const apps = Object.fromEntries(Object.entries(byApp).map(([app, seconds]) => [app, { machine_seconds: seconds }]));
        return { body: { start: start.toISOString(), end: now.toISOString(), meters: totals, apps } };
      },
    }),
    op({
      method: 'GET',
      path: '/account/usage/history',
      operationId: 'getUsageHistory',
      accountWide: true,
      tag: 'account',
      summary: 'Get history',
      action: 'read',
      query: historyQuery,
      response: z.object({ history: z.array(periodSchema) }),
      handler: async ({ caller, query }) => {
        const count = query.bucket === 'day' ? (query.days ?? 30) : (query.months ?? 6);
        const periods = await s.usage.history(caller.account.id, s.clock(), count, query.bucket);
        return { body: { history: periods.map((p) => ({ start: p.start.toISOString(), end: p.end.toISOString(), meters: p.meters })) } };
      },
    }),
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
