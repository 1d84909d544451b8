// `svc domains ls|add|verify|rm`: an app's custom domains (docs/api/domains.md). add and verify print
// the domain's status, the DNS records to publish exactly as they must be published, and what to do
// next; --json prints the API's answer as it came.
import { apiPath, body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { accountDomainsTable, registrarUsage, runRegistrar } from './registrar.js';
import { table } from './table.js';

/** A domain as the API answers it (GET /apps/{appID}/domains/{domain}), from the generated types. */
export type DomainBody = paths['/apps/{appID}/domains/{domain}']['get']['responses'][200]['content']['application/json']['domain'];
export type DomainRecordBody = DomainBody['records'][number];

/** A word for the shell: as it is when it is plain, in single quotes when it holds anything else (a wildcard's `*`). */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9._:/@%+=-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A domain in a request's path: URL-encoded, a wildcard's `*` as `%2A`. */
export const domainPath = (app: string, name: string) => apiPath('/apps/{appID}/domains/{domain}', { appID: app, domain: name });

const shown = (d: DomainBody) => (d.unicode_name && d.unicode_name !== d.name ? `${d.name} (${d.unicode_name})` : d.name);

/** `svc domains ls`: NAME, STATUS, and why it is not routing, or where it routes. */
export function domainsTable(app: string, domains: DomainBody[]): string[] {
  if (domains.length === 0) return [`app ${app} has no domains; add one: svc domains add ${shellWord(app)} NAME`];
  return table([
    ['NAME', 'STATUS', 'HTTPS', 'REASON'],
    ...domains.map((d) => [d.name, d.status, httpsCell(d), d.status === 'verified' ? `routes to ${d.app}` : (d.reason ?? '-')]),
  ]);
}

/** The certificate in a word or two: `until 2027-02-25`, `pending`, `failed`, `-` before verification. */
const httpsCell = (d: DomainBody) => {
  // Absent from an API older than HTTPS, whatever the document says now.
  const c = d.certificate;
  if (!c) return '-';
  if (c.status === 'issued' && c.expires_at) return `until ${c.expires_at.slice(0, 10)}`;
  return c.status;
};

/** What `add` and `verify` say of the certificate once the domain is verified. */
function describeCertificate(d: DomainBody): string | undefined {
  const c = d.certificate;
  if (d.status !== 'verified') return undefined;
  if (!c) return 'https: no certificate yet: it is ordered within seconds of verification';
  if (c.status === 'issued') return `https: served, certificate valid until ${c.expires_at ?? '?'}, renewed after ${c.renews_after ?? '?'}`;
  return `https: ${c.status}${c.reason ? `: ${c.reason}` : ''}`;
}

const okCell = (r: DomainRecordBody) => {
  if (r.ok === null) return '-';
  if (r.ok) return 'yes';
  return r.observed && r.observed.length > 0 ? `no (found ${r.observed.join(', ')})` : 'no (none found)';
};

/** `svc domains add` and `verify`: the status, the records to publish (VALUE exactly the record's value), and the next step. */
export function describeDomain(d: DomainBody): string[] {
  const status: Record<DomainBody['status'], string> = {
    pending: 'pending: the records have not been seen yet',
    verified: `verified: routes to ${d.app}`,
    misconfigured: 'misconfigured: not routing until the records are right again',
    failed: 'failed: no right records in 7 days, the name was released',
  };
  const verify = `svc domains verify ${shellWord(d.app)} ${shellWord(d.name)}`;
  const next: Record<DomainBody['status'], string | null> = {
    pending: `publish the records above, then run: ${verify}`,
    verified: null,
    misconfigured: `put the records marked "no" right again, then run: ${verify}`,
    failed: `publish the records above, then add it again: svc domains add ${shellWord(d.app)} ${shellWord(d.name)}`,
  };
  const lines = [`${shown(d)}: ${status[d.status]}`];
  if (d.reason) lines.push(d.reason);
  const https = describeCertificate(d);
  if (https) lines.push(https);
  lines.push(...table([['TYPE', 'NAME', 'VALUE', 'OK'], ...d.records.map((r) => [r.type, r.name, r.value, okCell(r)])]));
  const then = next[d.status];
  if (then) lines.push(then);
  return lines;
}

const usage = `usage:
  svc domains ls APP [--json]                  the app's custom domains: status, HTTPS, and why one
                                               does not route (without APP: the account's, below)
  svc domains add APP NAME [--json]            add NAME (shop.example.com, or '*.shop.example.com'
                                               quoted) and print the DNS records to publish
  svc domains verify APP NAME [--json]         check the records now, and say what is wrong
  svc domains rm APP NAME                      stop routing NAME to the app, and free it
the account's domains, bought through the platform's registrar:
${registrarUsage}
example:
  svc domains add shop shop.example.com && svc domains verify shop shop.example.com
  svc domains search --word adalovelace && svc domains register adalovelace.dev --contact ada.json`;

export const domainsGroup: CommandGroup = {
  name: 'domains',
  synopsis: `  svc domains ls APP [--json] | add APP NAME [--json] | verify APP NAME [--json] | rm APP NAME
                                              an app's custom domains (NAME: shop.example.com, or
                                              '*.shop.example.com' quoted); add prints the DNS records
                                              to publish, verify checks them now and says what is wrong
  svc domains search | register | ls | renew | autorenew ...
                                              the account's domains, bought through the registrar`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      yes: { type: 'boolean', short: 'y' },
      word: { type: 'string' },
      contact: { type: 'string' },
      years: { type: 'string' },
      'no-auto-renew': { type: 'boolean' },
    });
    const [command, app, name] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const needBoth = () => {
      if (!app || !name) throw new GroupUsageError(`svc domains ${command} APP NAME`, usage);
      return { app, name };
    };
    const api = () => connect(ctx, values.token);
    const print = (answer: { domain: DomainBody }) => show(ctx, json, answer, (a) => describeDomain(a.domain));
    const registrar = await runRegistrar(
      ctx,
      api,
      command,
      positionals.slice(1),
      {
        json,
        yes: values.yes === true,
        word: values.word,
        contact: values.contact,
        years: values.years,
        autoRenew: values['no-auto-renew'] !== true,
      },
      (answer, lines) => show(ctx, json, answer, () => lines),
    );
    if (registrar !== undefined) return registrar;
    switch (command) {
      case 'ls': {
        if (!app) {
          show(ctx, json, await body(api().GET('/domains')), accountDomainsTable);
          return 0;
        }
        show(ctx, json, await body(api().GET('/apps/{appID}/domains', { params: { path: { appID: app } } })), (a) =>
          domainsTable(app, a.domains),
        );
        return 0;
      }
      case 'add': {
        const a = needBoth();
        print(await body(api().POST('/apps/{appID}/domains', { params: { path: { appID: a.app } }, body: { name: a.name } })));
        return 0;
      }
      case 'verify': {
        const a = needBoth();
        print(await body(api().POST('/apps/{appID}/domains/{domain}/verify', { params: { path: { appID: a.app, domain: a.name } } })));
        return 0;
      }
      case 'rm': {
        const a = needBoth();
        await api().DELETE('/apps/{appID}/domains/{domain}', { params: { path: { appID: a.app, domain: a.name } } });
        // The API answers 204, no body: --json prints nothing.
        if (!json) ctx.out(`${a.name} removed from ${a.app}: it no longer routes there, and the name is free`);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown domains command: ${command}`, usage);
    }
  },
};
