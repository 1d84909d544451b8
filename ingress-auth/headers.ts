// What crosses the proxy in each direction. Towards the app: everything the client sent except
// hop-by-hop headers, the platform's own `X-Svc-*` namespace (apps trust those, so a client must never
// be able to supply one, in any spelling), the platform's cookies and forwarding headers, which we
// set ourselves; then the verified identity, if any. Towards the client: the app's response minus
// hop-by-hop headers and any attempt to set a platform cookie.
import { appSetCookie, withoutPlatformCookies } from './auth/cookies.js';

/** Hop-by-hop (RFC 9110 7.6.1) and headers the upstream client library sets itself. */
const hopByHop = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

/** Set by us only: a client-supplied value would let it claim another address, scheme or host. */
const forwarding = new Set([
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-real-ip',
  'x-request-id',
]);

/**
 * The platform's header namespace: `x-svc-...` in any case, with `-` or `_` between the words
 * (`X_Svc_Auth_Email` reaches CGI handlers as HTTP_X_SVC_AUTH_EMAIL, exactly like the real one).
 */
export function isPlatformHeader(name: string): boolean {
  return /^x[-_]svc([-_]|$)/i.test(name);
}

export interface Forwarded {
  requestId: string;
  clientIp: string;
  proto: 'http' | 'https';
  /** The Host header as the client sent it (with its port). */
  host: string;
  /** X-Svc-Auth-* of the verified visitor, as [name, value, ...]. */
  identity?: string[] | undefined;
  /** The answer depends on who asked (a gated path, or an identity was added): never cached. */
  personal?: boolean | undefined;
  /**
   * An HTML answer (200, UTF-8, not encoded) is held whole and given to this before it goes back:
   * a data page's first render (data/first-render.ts). Undefined from it: sent as it came.
   */
  rewrite?: ((html: string) => Promise<string | undefined>) | undefined;
}

/** What upstreamHeaders does with a request header, by lowercase name; any other name is passed on (unless it is a platform header). */
const requestRule = new Map<string, 'drop' | 'cookie' | 'connection' | 'upgrade'>([
  ...[...hopByHop].map((n) => [n, 'drop'] as const),
  ...[...forwarding].map((n) => [n, 'drop'] as const),
  ['connection', 'connection'],
  ['upgrade', 'upgrade'],
  ['cookie', 'cookie'],
]);

/** Connection tokens that name no header to drop (keep-alive and upgrade are hop-by-hop anyway). */
const plainConnectionTokens = new Set(['keep-alive', 'close', 'upgrade']);

/** Lowercase header names a Connection header lists (RFC 9110 7.6.1: hop-by-hop too), added to `into`. */
function connectionTokens(value: string, into: string[] | undefined): string[] | undefined {
  // Nearly every answer says just `keep-alive` (or `close`): no list to split.
  if (plainConnectionTokens.has(value) || plainConnectionTokens.has(value.trim().toLowerCase())) return into;
  for (const t of value.split(',')) {
    const token = t.trim().toLowerCase();
    if (token && !plainConnectionTokens.has(token)) (into ??= []).push(token);
  }
  return into;
}

/** Removes the pairs whose name a Connection header listed (rare: only then a second pass). */
function dropNamed(out: string[], tokens: readonly string[]): void {
  for (let i = out.length - 2; i >= 0; i -= 2) if (tokens.includes(out[i]!.toLowerCase())) out.splice(i, 2);
}

/**
 * The request headers for the app as a flat [name, value, ...] list from the raw headers, so a
 * header sent twice stays twice (and both copies of a spoofed one are dropped). `keepUpgrade` keeps
 * `Connection: upgrade` and `Upgrade` for a WebSocket handshake. One pass and one map lookup per
 * header: this runs on every request (docs/benchmarks.md "bench/proxy"). The identity, then the
 * forwarding headers come last (forwardingEntries).
 */
export function upstreamHeaders(rawHeaders: readonly string[], fwd: Forwarded, keepUpgrade = false): string[] {
  const out: string[] = [];
  let tokens: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const lower = name.toLowerCase();
    const rule = requestRule.get(lower);
    if (rule === undefined) {
      // x-svc-..., x_svc_... (the regex only for names starting with x)
      if (lower.charCodeAt(0) === 120 && isPlatformHeader(lower)) continue;
      out.push(name, rawHeaders[i + 1]!);
    } else if (rule === 'cookie') {
      const kept = withoutPlatformCookies(rawHeaders[i + 1]!);
      if (kept !== undefined) out.push(name, kept);
    } else if (rule === 'connection') {
      tokens = connectionTokens(rawHeaders[i + 1]!, tokens);
    } else if (rule === 'upgrade' && keepUpgrade) {
      out.push(name, rawHeaders[i + 1]!);
    }
  }
  if (tokens) dropNamed(out, tokens);
  if (keepUpgrade) out.push('connection', 'upgrade');
  if (fwd.identity) for (const h of fwd.identity) out.push(h);
  out.push('x-forwarded-for', fwd.clientIp, 'x-forwarded-proto', fwd.proto, 'x-forwarded-host', fwd.host, 'x-request-id', fwd.requestId);
  return out;
}

/**
 * The entries upstreamHeaders ends with, the forwarding headers: every entry before them is a value
 * node's HTTP parser read from the client or an identity header checked where it was made
 * (SignIn.identityHeaders), which the upstream client need not check again (UpstreamRequest.checked).
 */
export const forwardingEntries = 8;

const latin1 = (v: Buffer | string): string => (typeof v === 'string' ? v : v.toString('latin1'));

/**
 * The app's response headers for the client, without hop-by-hop ones, as a flat [name, value, ...]
 * list for res.writeHead, from the raw header list the machine sent (names keep the app's spelling,
 * repeated headers stay repeated). Set-Cookie goes through appSetCookie (no platform or nameless
 * cookie, no Domain). A `personal` answer (gated, or made for a known visitor) is marked
 * `private, no-store`, whatever the app said, so no shared cache keeps one person's page for
 * another. `upgrade` keeps `Upgrade` and `Connection: upgrade` (a 101 answer needs them).
 */
export function downstreamHeaders(
  rawHeaders: readonly (Buffer | string)[],
  requestId: string,
  personal = false,
  upgrade = false,
): string[] {
  const out: string[] = [];
  let tokens: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = latin1(rawHeaders[i]!);
    const lower = name.toLowerCase();
    if (hopByHop.has(lower)) {
      if (lower === 'connection') tokens = connectionTokens(latin1(rawHeaders[i + 1]!), tokens);
      else if (upgrade && lower === 'upgrade') out.push(name, latin1(rawHeaders[i + 1]!));
      continue;
    }
    // Ours, set below.
    if (lower === 'x-request-id' || (personal && lower === 'cache-control')) continue;
    let value: string | undefined = latin1(rawHeaders[i + 1]!);
    if (lower === 'set-cookie' && (value = appSetCookie(value)) === undefined) continue;
    out.push(name, value);
  }
  if (tokens) dropNamed(out, tokens);
  if (upgrade) out.push('connection', 'upgrade');
  out.push('x-request-id', requestId);
  if (personal) out.push('cache-control', 'private, no-store');
  return out;
}

/** The client's address without the IPv4-mapped IPv6 prefix. */
export function clientAddress(remote: string | undefined): string {
  if (!remote) return '';
  return remote.startsWith('::ffff:') ? remote.slice(7) : remote;
}
