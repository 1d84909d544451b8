// `svc domains search|register|renew|autorenew` and `svc domains ls` without an app: the account's
// domains bought through the registrar (docs/api/registrar.md). register asks before it buys (with
// the price the registrar quotes now) unless --yes; each purchase sends its own Idempotency-Key, so
// the API never buys twice for one command.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { body, type paths } from '../lib/client/index.js';
import { confirm, GroupUsageError, type CommandContext } from './command.js';
import type { ApiClient } from '../lib/client/index.js';
import { describeDomain } from './domain-view.js';
import { moneyText, table } from './table.js';

type SearchBody = paths['/domains/search']['get']['responses'][200]['content']['application/json'];
type ListBody = paths['/domains']['get']['responses'][200]['content']['application/json'];
type RegisterBody = paths['/domains']['post']['responses'][201]['content']['application/json'];
type OutcomeBody = paths['/domains/{domain}/renew']['post']['responses'][200]['content']['application/json'];
type Contact = NonNullable<paths['/domains']['post']['requestBody']>['content']['application/json']['contact'];
type Money = { amount: number; currency: string };

export const registrarUsage = `  svc domains search NAME... | --word WORD [--json]
                                               availability and a year's price of names (or of
                                               WORD under every TLD offered)
  svc domains register NAME --contact FILE [--years N] [--no-auto-renew] [--app APP] [--yes] [--json]
                                               buy NAME at the price quoted now (asks first);
                                               FILE: the registrant as JSON (docs/api/registrar.md);
                                               --app: serve it from APP, its records written for you
  svc domains ls [--json]                      the account's domains: expiry, auto-renew, lock
  svc domains renew NAME [--years N] [--json]  renew from its current expiry (once per expiry)
  svc domains autorenew NAME on|off [--json]   the platform renews it before it expires, or not`;

/** Dollars and cents as people read them: `15.00 USD`. */
export const priceText = (m: Money | null | undefined) => (m ? moneyText(m.amount, m.currency) : '-');

/** `svc domains search`: one line a name. */
export function searchTable(found: SearchBody['results']): string[] {
  return table([
    ['NAME', 'AVAILABLE', 'YEAR', 'RENEWAL', 'NOTE'],
    ...found.map((f) => [
      f.name,
      f.available ? 'yes' : 'no',
      priceText(f.registration),
      priceText(f.renewal),
      f.available ? (f.premium ? 'premium' : '') : (f.reason ?? ''),
    ]),
  ]);
}

/** `svc domains ls` without an app: the account's names, then registrations under way. */
export function accountDomainsTable(l: ListBody): string[] {
  if (l.domains.length === 0 && l.pending.length === 0) return ['no domains bought yet; find one: svc domains search --word WORD'];
  const lines = table([
    ['NAME', 'STATE', 'EXPIRES', 'AUTO-RENEW', 'LOCKED', 'RENEWAL'],
    ...l.domains.map((d) => [
      d.name,
      d.state,
      d.expires_at.slice(0, 10),
      d.auto_renew ? (d.auto_renew_failure ? 'failing' : 'on') : 'off',
      d.locked ? 'yes' : 'no',
      priceText(d.renewal),
    ]),
  ]);
  for (const d of l.domains)
    if (d.auto_renew_failure)
      lines.push(
        `${d.name}: renewing it failed ${d.auto_renew_failure.failures} time${d.auto_renew_failure.failures > 1 ? 's' : ''} (${d.auto_renew_failure.message ?? 'no reason given'}); next try ${d.auto_renew_failure.next_attempt_at ?? 'soon'}, or renew now: svc domains renew ${d.name}`,
      );
  for (const o of l.pending) lines.push(`${o.domain}: registration ${o.id} pending (${priceText(o.amount)})`);
  return lines;
}

/** What a registration or a renewal came to, in a line or two. */
export function describeOutcome(o: OutcomeBody & Partial<Pick<RegisterBody, 'app_domain' | 'app_domain_error'>>): string[] {
  if (o.order.state === 'pending' || !o.domain)
    return [`${o.order.domain}: order ${o.order.id} is pending: the registrar has not answered yet; see it settle: svc domains ls`];
  const d = o.domain;
  const lines = [
    `${d.name}: ${o.order.kind === 'register' ? 'registered' : 'renewed'} for ${o.order.years} year${o.order.years > 1 ? 's' : ''} (${priceText(o.order.amount)}), expires ${d.expires_at.slice(0, 10)}`,
    `auto-renew ${d.auto_renew ? 'on' : 'off'}; lock ${d.locked ? 'on' : 'off'}; registry: ${d.registry_statuses.join(', ')}`,
  ];
  if (o.app_domain) lines.push(...describeDomain(o.app_domain.domain, o.app_domain));
  if (o.app_domain_error) lines.push(`not added to the app: ${o.app_domain_error}; add it: svc domains add APP ${d.name}`);
  return lines;
}

export interface RegistrarOptions {
  json: boolean;
  yes: boolean;
  word: string | undefined;
  contact: string | undefined;
  years: string | undefined;
  autoRenew: boolean;
  /** register: the app to serve the name from. */
  app: string | undefined;
}

/** The registrar's commands of `svc domains`; undefined when `command` is not one of them. */
export async function runRegistrar(
  ctx: CommandContext,
  api: () => ApiClient,
  command: string,
  args: string[],
  o: RegistrarOptions,
  print: (answer: unknown, lines: string[]) => void,
): Promise<number | undefined> {
  const years = () => {
    const n = o.years === undefined ? 1 : Number(o.years);
    if (!Number.isInteger(n) || n < 1 || n > 10) throw new GroupUsageError('--years is a whole number from 1 to 10', registrarUsage);
    return n;
  };
  switch (command) {
    case 'search': {
      if (!args.length && o.word === undefined) throw new GroupUsageError('svc domains search NAME... | --word WORD', registrarUsage);
      const found = await body(
        api().GET('/domains/search', {
          params: { query: { ...(args.length ? { name: args } : {}), ...(o.word ? { word: o.word } : {}) } },
        }),
      );
      print(found, searchTable(found.results));
      return 0;
    }
    case 'register': {
      const [name] = args;
      if (!name || !o.contact) throw new GroupUsageError('svc domains register NAME --contact FILE', registrarUsage);
      let contact: Contact;
      try {
        contact = JSON.parse(readFileSync(o.contact, 'utf8')) as Contact;
      } catch (err) {
        throw new GroupUsageError(`--contact ${o.contact}: not a JSON file of the registrant (${(err as Error).message})`, registrarUsage);
      }
      const n = years();
      const [quote] = (await body(api().GET('/domains/search', { params: { query: { name: [name] } } }))).results;
      if (!quote?.available || !quote.registration) {
        ctx.err(`svc: ${name} cannot be bought: ${quote?.reason ?? 'not available'}`);
        return 1;
      }
      const total = { amount: quote.registration.amount * n, currency: quote.registration.currency };
      const asked = `buy ${quote.name} for ${n} year${n > 1 ? 's' : ''} at ${priceText(quote.registration)} a year (${priceText(total)}${quote.premium ? ', a premium name' : ''}), renewing at ${priceText(quote.renewal)}?`;
      if (!(await confirm(ctx, asked, o.yes))) {
        ctx.err('svc: not bought');
        return 1;
      }
      const bought = await body(
        api().POST('/domains', {
          body: {
            name: quote.name,
            years: n,
            contact,
            price: quote.registration,
            auto_renew: o.autoRenew,
            ...(o.app ? { app: o.app } : {}),
          },
          headers: { 'idempotency-key': `svc-cli-${randomUUID()}` },
        }),
      );
      print(bought, describeOutcome(bought));
      return 0;
    }
    case 'renew': {
      const [name] = args;
      if (!name) throw new GroupUsageError('svc domains renew NAME', registrarUsage);
      const held = (await body(api().GET('/domains'))).domains.find((d) => d.name === name.toLowerCase());
      if (!held) {
        ctx.err(`svc: ${name} is not one of the account's domains (svc domains ls)`);
        return 1;
      }
      const renewed = await body(
        api().POST('/domains/{domain}/renew', {
          params: { path: { domain: held.name } },
          body: { years: years(), expires_at: held.expires_at },
          headers: { 'idempotency-key': `svc-cli-${randomUUID()}` },
        }),
      );
      print(renewed, describeOutcome(renewed));
      return 0;
    }
    case 'autorenew': {
      const [name, state] = args;
      if (!name || (state !== 'on' && state !== 'off')) throw new GroupUsageError('svc domains autorenew NAME on|off', registrarUsage);
      const d = await body(
        api().POST('/domains/{domain}/autorenew', { params: { path: { domain: name } }, body: { enabled: state === 'on' } }),
      );
      print(d, [
        `${d.name}: auto-renew ${d.auto_renew ? 'on: the platform renews it before it expires' : 'off: renew it yourself (svc domains renew)'}`,
      ]);
      return 0;
    }
    default:
      return undefined;
  }
}
