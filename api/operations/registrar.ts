// The account's domains bought through the registrar (docs/api/registrar.md, decision 0035):
// search, register, list, renew and the platform's auto-renew. Account-wide: a token restricted to
// apps holds none of them, and buying or renewing needs `write`.
import { z } from 'zod';
import type { Money } from '../../lib/registrar/registrar.js';
import { actorOf } from '../actor.js';
import { resolveApp, type AppLookup } from '../app-access.js';
import type { ApiDeps } from '../deps.js';
import { addedSchema, presentDomain as presentAppDomain } from '../presenters/domains.js';
import { publishedRecords } from '../registrar/records.js';
import { ApiError } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { Outcome, RegistrarActions } from '../registrar/actions.js';
import type { AccountDomain, DomainOrder } from '../registrar/store.js';

const moneySchema = z
  .object({ amount: z.number().int().describe("In the currency's minor units (cents)"), currency: z.string() })
  .describe('An amount of money');
const moneyIn = z.strictObject({
  amount: z.number().int().min(1).max(100_000_000).describe("In the currency's minor units (cents), as search showed it"),
  currency: z.string().regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as USD'),
});
const money = (m: Money) => ({ amount: m.cents, currency: m.currency });

const availabilitySchema = z.object({
  name: z.string(),
  available: z.boolean(),
  premium: z.boolean(),
  registration: moneySchema.nullable().describe("A year's registration"),
  renewal: moneySchema.nullable().describe("A year's renewal"),
  reason: z.string().nullable().describe('Why it cannot be bought'),
});

const domainSchema = z.object({
  name: z.string(),
  state: z.enum(['registered', 'expired']),
  registered_at: z.string(),
  expires_at: z.string(),
  auto_renew: z.boolean().describe('The platform renews it before it expires'),
  locked: z.boolean().describe('Transfer lock (clientTransferProhibited)'),
  registry_statuses: z.array(z.string()).describe('EPP statuses, as the registrar reports them'),
  renewal: moneySchema.nullable().describe("A year's renewal, as last quoted"),
  auto_renew_failure: z
    .object({
      failures: z.number().int().describe('Automatic renewals of this expiry that failed in a row'),
      message: z.string().nullable(),
      next_attempt_at: z.string().nullable(),
    })
    .nullable()
    .describe('Set while the automatic renewal is failing; cleared when one succeeds or auto-renew is set again'),
});

const orderSchema = z.object({
  id: z.string(),
  kind: z.enum(['register', 'renew']),
  domain: z.string(),
  state: z.enum(['pending', 'succeeded', 'failed']),
  reason: z.enum(['unavailable', 'price_changed', 'payment_refused', 'registrar_error']).nullable(),
  years: z.number().int(),
  amount: moneySchema.describe('The whole order (a year times years)'),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});

const contactSchema = z.strictObject({
  first_name: z.string().min(1).max(100),
  last_name: z.string().min(1).max(100),
  organization: z.string().max(200).optional(),
  address1: z.string().min(1).max(200),
  address2: z.string().max(200).optional(),
  city: z.string().min(1).max(100),
  state: z.string().max(100).optional(),
  postal_code: z.string().min(1).max(20),
  country: z.string().regex(/^[A-Z]{2}$/, 'an ISO 3166-1 alpha-2 code such as GB'),
  phone: z.string().regex(/^\+[1-9]\d{6,14}$/, 'E.164: + then the country code and number, digits only'),
  email: z.email(),
});

const presentDomain = (d: AccountDomain, now: Date) => ({
  name: d.name,
  state: d.expiresAt <= now ? ('expired' as const) : ('registered' as const),
  registered_at: d.registeredAt.toISOString(),
  expires_at: d.expiresAt.toISOString(),
  auto_renew: d.autoRenew,
  locked: d.locked,
  registry_statuses: d.statuses,
  renewal: d.renewal ? money(d.renewal) : null,
  auto_renew_failure:
    d.renewFailures > 0 ? { failures: d.renewFailures, message: d.renewError, next_attempt_at: d.renewAfter?.toISOString() ?? null } : null,
});
const presentOrder = (o: DomainOrder) => ({
  id: o.id,
  kind: o.kind,
  domain: o.domain,
  state: o.state,
  reason: o.reason,
  years: o.years,
  amount: money(o.amount),
  created_at: o.createdAt.toISOString(),
  finished_at: o.finishedAt?.toISOString() ?? null,
});

const idempotencyKey = (headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined => {
  const v = headers['idempotency-key'];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(v))
    throw new ApiError('invalid_request', 'Idempotency-Key: 1 to 200 visible ASCII characters');
  return v;
};

type Deps = AppLookup & {
  registrar: RegistrarActions | undefined;
  domainActions: Pick<ApiDeps['domainActions'], 'check' | 'add'>;
  log: ApiDeps['log'];
  clock: () => Date;
};

export function registrarOperations(s: Deps): Operation[] {
  const actions = (): RegistrarActions => {
    if (!s.registrar) throw new ApiError('unavailable', 'domain registration is not set up on this platform (SVC_REGISTRAR)');
    return s.registrar;
  };
  const outcome = (o: Outcome) => ({
    status: o.status,
    body: { order: presentOrder(o.order), domain: o.domain ? presentDomain(o.domain, s.clock()) : null },
  });
  const outcomeSchema = z.object({ order: orderSchema, domain: domainSchema.nullable().describe('Once bought') });
  return [
    op({
      method: 'GET',
      path: '/domains/search',
      operationId: 'searchDomains',
      tag: 'domains',
      summary: 'Search domains',
      action: 'read',
      accountWide: true,
      query: z.object({
        name: z
          .union([z.string(), z.array(z.string())])
          .optional()
          .describe('A name to check; repeat for several (at most 20)'),
        word: z.string().optional().describe('Or a word, checked under every TLD offered'),
      }),
      response: z.object({ results: z.array(availabilitySchema) }),
      handler: async ({ query }) => {
        const names = query.name === undefined ? [] : Array.isArray(query.name) ? query.name : [query.name];
        const found = await actions().search({ names, word: query.word });
        return {
          body: {
            results: found.map((f) => ({
              name: f.name,
              available: f.available,
              premium: f.premium,
              registration: f.registration ? money(f.registration) : null,
              renewal: f.renewal ? money(f.renewal) : null,
              reason: f.reason ?? null,
            })),
          },
        };
      },
    }),
    op({
      method: 'GET',
      path: '/domains',
      operationId: 'listDomains',
      tag: 'domains',
      summary: 'List domains',
      action: 'read',
      accountWide: true,
      response: z.object({ domains: z.array(domainSchema), pending: z.array(orderSchema).describe('Registrations under way') }),
      handler: async ({ caller }) => {
        const { domains, pending } = await actions().list(actorOf(caller));
        const now = s.clock();
        return { body: { domains: domains.map((d) => presentDomain(d, now)), pending: pending.map(presentOrder) } };
      },
    }),
    op({
      method: 'POST',
      path: '/domains',
      operationId: 'createDomain',
      tag: 'domains',
      summary: 'Create domain',
      action: 'write',
      accountWide: true,
      status: 201,
      body: z.strictObject({
        name: z.string().min(1).max(253),
        years: z.number().int().min(1).max(10).default(1),
        contact: contactSchema.describe("The registrant (ICANN's): who holds the name"),
        price: moneyIn.describe("A year's registration as search showed it: a different price now is refused (409), never charged"),
        auto_renew: z.boolean().default(true).describe('The platform renews it before it expires'),
        app: z
          .string()
          .min(1)
          .optional()
          .describe(
            "An app to serve it, added once bought with its records written in the registrar's DNS: buying and serving a name in one call",
          ),
      }),
      response: outcomeSchema.extend({
        app_domain: addedSchema.nullable().describe('With `app`: the domain added to the app'),
        app_domain_error: z.string().nullable().describe('With `app`: why adding it failed after the name was bought (add it again)'),
      }),
      handler: async ({ caller, body, headers }) => {
        const c = body.contact;
        const actor = actorOf(caller);
        // Whether the app can take the name is asked before buying it: a purchase cannot be undone.
        const app = body.app === undefined ? undefined : await resolveApp(s, caller, body.app);
        const key = idempotencyKey(headers);
        // A retry of an order made already answers with it, whatever changed on the app since.
        if (app && !(key !== undefined && (await actions().ordered(actor, key))))
          await s.domainActions.check(actor, app, actions().registrable(body.name));
        const bought = outcome(
          await actions().register(
            actor,
            {
              name: body.name,
              years: body.years,
              price: { cents: body.price.amount, currency: body.price.currency },
              autoRenew: body.auto_renew,
              contact: {
                firstName: c.first_name,
                lastName: c.last_name,
                organization: c.organization,
                address1: c.address1,
                address2: c.address2,
                city: c.city,
                state: c.state,
                postalCode: c.postal_code,
                country: c.country,
                phone: c.phone,
                email: c.email,
              },
            },
            key,
          ),
        );
        if (!app) return { ...bought, body: { ...bought.body, app_domain: null, app_domain_error: null } };
        if (!bought.body.domain) {
          const pending = `the purchase is pending: once it is bought, add it: svc domains add ${app.name} ${actions().registrable(body.name)}`;
          return { ...bought, body: { ...bought.body, app_domain: null, app_domain_error: pending } };
        }
        try {
          const { view } = await s.domainActions.add(actor, app, bought.body.domain.name);
          const added = { domain: presentAppDomain(view), ...(await publishedRecords(s, actor, view)) };
          return { ...bought, body: { ...bought.body, app_domain: added, app_domain_error: null } };
        } catch (err) {
          s.log.warn({ err, domain: bought.body.domain.name, app: app.name }, 'A bought domain could not be added to its app');
          return { ...bought, body: { ...bought.body, app_domain: null, app_domain_error: (err as Error).message } };
        }
      },
    }),
    op({
      method: 'POST',
      path: '/domains/{domain}/renew',
      operationId: 'renewDomain',
      tag: 'domains',
      summary: 'Renew domain',
      action: 'write',
      accountWide: true,
      body: z.strictObject({
        years: z.number().int().min(1).max(10).default(1),
        expires_at: z.iso
          .datetime({ offset: true })
          .optional()
          .describe('The expiry you saw: a renewal from it already made is answered again, never made twice'),
      }),
      response: outcomeSchema,
      handler: async ({ caller, params, body, headers }) =>
        outcome(
          await actions().renew(
            actorOf(caller),
            { name: params.domain!, years: body.years, expiresAt: body.expires_at ? new Date(body.expires_at) : undefined },
            idempotencyKey(headers),
          ),
        ),
    }),
    op({
      method: 'POST',
      path: '/domains/{domain}/autorenew',
      operationId: 'setDomainAutorenew',
      tag: 'domains',
      summary: 'Set auto-renew for domain',
      action: 'write',
      accountWide: true,
      body: z.strictObject({ enabled: z.boolean() }),
      response: domainSchema,
      handler: async ({ caller, params, body }) => ({
        body: presentDomain(await actions().setAutoRenew(actorOf(caller), params.domain!, body.enabled), s.clock()),
      }),
    }),
  ];
}
