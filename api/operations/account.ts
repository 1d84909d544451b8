// The account group: the caller's account, its API tokens, usage and events (its webhooks: webhooks.ts).
import { z } from 'zod';
import { parseDuration } from '../../lib/duration.js';
import { actions, type Restriction } from '../../lib/tokens/token.js';
import { chargeMeters, monthStart, meters } from '../../lib/usage.js';
import { invalid, notFound } from '../errors.js';
import { issueWithinQuota } from '../issue-token.js';
import { op, type Operation } from '../operation.js';
import { eventSchema } from '../presenters/events.js';
import type { ApiDeps } from '../deps.js';
import { dnsLabel } from '../../lib/contract.js';

type Deps = Pick<ApiDeps, 'clock'> & {
  tokens: Pick<ApiDeps['tokens'], 'list' | 'issue' | 'revoke'>;
  events: Pick<ApiDeps['events'], 'list'>;
  usage: Pick<ApiDeps['usage'], 'between' | 'charges' | 'byApp' | 'history'>;
  /** The live-token quota is checked and the token issued under the account's lock. */
  accountLock: Pick<ApiDeps['accountLock'], 'hold'>;
  config: Pick<ApiDeps['config'], 'quotas'>;
};

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

const eventsQuery = z
  .strictObject({
    after: z.coerce.number().int().min(0).optional().describe('Oldest first, after this id (the default order)'),
    order: z.enum(['oldest', 'newest']).default('oldest').describe('newest: newest first, paged with before'),
    before: z.coerce
      .number()
      .int()
      .min(1)
      .optional()
      .describe('With order=newest: the events below this id (next_before of the last page)'),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    type: z.string().max(500).optional(),
  })
  .refine((q) => !(q.order === 'newest' && q.after !== undefined), 'after goes with order=oldest; use before with order=newest')
  .refine((q) => !(q.order === 'oldest' && q.before !== undefined), 'before goes with order=newest');

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
  /** Whether this is the token the request was made with (a console tells its own session apart). */
  current: z.boolean(),
});
const meterSchema = z.object(Object.fromEntries(meters.map((m) => [m, z.number()])));
const chargeSchema = z
  .object(Object.fromEntries(chargeMeters.map((m) => [m, z.record(z.string(), z.number())])))
  .describe('What was bought in the period, by meter: amounts in minor units (cents) by ISO 4217 currency, {"USD": 2598}');
const periodSchema = z.object({ start: z.string(), end: z.string(), meters: meterSchema, charges: chargeSchema });

export function accountOperations(s: Deps): Operation[] {
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
      response: z.object({ events: z.array(eventSchema), next_after: z.number().nullable(), next_before: z.number().nullable() }),
      handler: async ({ caller, query }) => {
        const newest = query.order === 'newest';
        const events = await s.events.list(caller.account.id, {
          after: query.after,
          newest: newest ? { before: query.before } : undefined,
          limit: query.limit,
          types: query.type?.split(',').filter(Boolean),
        });
        const more = events.length === query.limit ? events[events.length - 1]!.id : null;
        return {
          body: {
            events: events.map((e) => ({ id: e.id, type: e.type, subject: e.subject, data: e.data, created_at: iso(e.createdAt) })),
            next_after: newest ? null : more,
            next_before: newest ? more : null,
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
            current: t.nonce === caller.principal.nonce,
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
      response: tokenSchema.omit({ revoked: true, last_used_at: true, current: true }).extend({ token: z.string() }),
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
        const { token, record } = await issueWithinQuota(s, caller.account.id, {
          name: body.name,
          restrictions,
          inherited,
          lineage: caller.principal.lineage,
          expiresAt,
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
      // Any token may revoke itself (and what descends from it): by its own id, or by its nonce
      // when it is the token minted under it (a token narrowed offline shares its parent's nonce).
      ownCredential: (params, principal) => params.nonce === principal.id || (params.nonce === principal.nonce && principal.asMinted),
      status: 204,
      handler: async ({ caller, params }) => {
        const { principal } = caller;
        // A minted token revoking itself by its own id is revoked by its nonce: the same tokens end,
        // and the list shows it revoked.
        const id = params.nonce === principal.id && principal.asMinted ? principal.nonce : params.nonce!;
        if (!(await s.tokens.revoke(caller.account.id, id))) throw notFound(`token ${params.nonce}`);
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
        const [totals, charges, byApp] = await Promise.all([
          s.usage.between(caller.account.id, start, now),
          s.usage.charges(caller.account.id, start, now),
          s.usage.byApp(caller.account.id, start, now),
        ]);
        const apps = Object.fromEntries(Object.entries(byApp).map(([app, seconds]) => [app, { machine_seconds: seconds }]));
        return { body: { start: start.toISOString(), end: now.toISOString(), meters: totals, charges, apps } };
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
        return {
          body: {
            history: periods.map((p) => ({ start: p.start.toISOString(), end: p.end.toISOString(), meters: p.meters, charges: p.charges })),
          },
        };
      },
    }),
  ];
}
