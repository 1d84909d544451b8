// How an app's custom domain reads in a terminal (docs/api/domains.md): its status, the DNS records
// to publish exactly as they must be published, and what to do next. Shared by \`svc domains\`'s app
// commands and the registrar's (a name bought for an app).
import { apiPath, type paths } from '../lib/client/index.js';
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
export function describeDomain(
  d: DomainBody,
  /** What `add` answers besides: whether the platform wrote the records at the registrar (a name bought here). */
  added?: { records_published: boolean; records_error: string | null },
): string[] {
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
  if (added?.records_published && d.status === 'pending')
    lines.push(
      `the records are written in the registrar's DNS (the name was bought here): it verifies once DNS answers them; check: ${verify}`,
    );
  else {
    if (added?.records_error) lines.push(`writing the records at the registrar failed (${added.records_error}): publish them yourself`);
    const then = next[d.status];
    if (then) lines.push(then);
  }
  return lines;
}
