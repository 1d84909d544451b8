// Where a webhook may point (SSRF guard). Deliveries leave the platform's network, so a URL naming
// loopback, a private, link-local, shared or reserved network, a local-only name, or a name that
// resolves to any of those, is refused when the webhook is made; and again at every connection
// (lib/webhooks/guarded-dispatcher.ts), against the very addresses the connection then uses, so a
// name that answers differently later (DNS rebinding) gains nothing.
import { promises as dns } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { isNoRecords } from '../dns/answers.js';

// Two lists: node's BlockList matches IPv4 addresses against IPv6 rules through their mapped form
// (::ffff:a.b.c.d), so one list blocking the mapped range would block every IPv4 address.
const blocked4 = new BlockList();
const blocked6 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked4.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback and IPv4-compatible (::a.b.c.d, deprecated)
  ['::ffff:0:0', 96], // IPv4-mapped
  ['::ffff:0:0:0', 96], // IPv4-translated
  ['64:ff9b::', 96], // NAT64: embeds an IPv4 address the gateway reaches
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 32], // Teredo: tunnels to an embedded IPv4 address
  ['2001:2::', 48], // benchmarking
  ['2001:10::', 28], // ORCHID
  ['2001:20::', 28], // ORCHIDv2
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: embeds an IPv4 address
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed by some)
  ['ff00::', 8], // multicast
] as const) {
  blocked6.addSubnet(net, prefix, 'ipv6');
}

/** Whether a literal address is one a webhook may reach (any spelling node:net understands). */
export function isPublicAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(a);
  if (family === 0) return false;
  return family === 4 ? !blocked4.check(a, 'ipv4') : !blocked6.check(a, 'ipv6');
}

/** Names that never leave the machine or the site, whatever a resolver says. */
function isLocalName(host: string): boolean {
  return (
    host === 'localhost' ||
    /\.(localhost|local|internal|intranet|lan|localdomain|home\.arpa|corp|private)$/.test(host) ||
    !host.includes('.')
  );
}

/** Returns why the URL is refused, or undefined when its form is acceptable (no DNS asked). */
export function webhookUrlProblem(raw: string, opts: { allowPrivate: boolean }): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(opts.allowPrivate && url.protocol === 'http:')) return 'url must use https';
  if (url.username || url.password) return 'url must not carry credentials';
  if (opts.allowPrivate) return undefined;
  // The WHATWG parser has already turned 2130706433, 0x7f.1 and 0177.0.0.1 into 127.0.0.1.
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (isIP(host))
    return isPublicAddress(host) ? undefined : `url must not point at a loopback, private, link-local or reserved address (${host})`;
  if (isLocalName(host)) return `url must name a public host (${host} is local)`;
  return undefined;
}

/** What resolves a webhook host: a DNS resolver (node:dns Resolver or one pointed at test servers). */
export interface HostResolver {
  resolve4(host: string): Promise<string[]>;
  resolve6(host: string): Promise<string[]>;
}

export const systemResolver: HostResolver = new dns.Resolver({ timeout: 3_000, tries: 2 });

/** A resolver asking these servers (`address` or `address:port`), or the system's when none are given. */
export function resolverFor(servers: readonly string[] | undefined): HostResolver {
  if (!servers?.length) return systemResolver;
  const r = new dns.Resolver({ timeout: 3_000, tries: 2 });
  r.setServers([...servers]);
  return r;
}

/**
 * Every address `host` resolves to (A and AAAA), refusing the lot when any one is not public: a
 * name must not be able to point at a private service even as one of several answers.
 */
export async function publicAddressesOf(
  host: string,
  resolver: HostResolver = systemResolver,
  isAllowed: (address: string) => boolean = isPublicAddress,
): Promise<string[]> {
  if (isIP(host)) {
    if (!isAllowed(host)) throw new WebhookAddressError(`${host} is not a public address`, 'private');
    return [host];
  }
  const settle = (p: Promise<string[]>) =>
    p.catch((err: unknown) => {
      if (isNoRecords(err)) return [];
      throw err;
    });
  const [v4, v6] = await Promise.all([settle(resolver.resolve4(host)), settle(resolver.resolve6(host))]);
  const all = [...v4, ...v6];
  if (!all.length) throw new WebhookAddressError(`${host} does not resolve`, 'unresolved');
  const bad = all.filter((a) => !isAllowed(a));
  if (bad.length) throw new WebhookAddressError(`${host} resolves to an address that is not public (${bad.join(', ')})`, 'private');
  return all;
}

export class WebhookAddressError extends Error {
  readonly code = 'ERR_WEBHOOK_ADDRESS';
  constructor(
    message: string,
    readonly kind: 'private' | 'unresolved',
  ) {
    super(message);
    this.name = 'WebhookAddressError';
  }
}

/**
 * The URL problem, including what its name resolves to now (for the API's 400 at creation). A name
 * that does not resolve yet (or a resolver that does not answer) is accepted: every delivery checks
 * again at connect time, which is the defence; this only turns a certain refusal into an early one.
 */
export async function webhookUrlProblemResolved(
  raw: string,
  opts: { allowPrivate: boolean; resolver?: HostResolver },
): Promise<string | undefined> {
  const problem = webhookUrlProblem(raw, opts);
  if (problem || opts.allowPrivate) return problem;
  const host = new URL(raw).hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (isIP(host)) return undefined;
  try {
    await publicAddressesOf(host, opts.resolver);
    return undefined;
  } catch (err) {
    if (err instanceof WebhookAddressError && err.kind === 'private') return `url must name a public host: ${err.message}`;
    return undefined;
  }
}
