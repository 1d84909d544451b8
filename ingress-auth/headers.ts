// What crosses the proxy in each direction. Towards the app: everything the client sent except
// hop-by-hop headers, the platform's own `X-Svc-*` namespace (apps trust those, so a client must never
// be able to supply one, in any spelling), the platform's cookies and forwarding headers, which we
// set ourselves; then the verified identity, if any. Towards the client: the app's response minus
// hop-by-hop headers and any attempt to set a platform cookie.
import type { IncomingHttpHeaders } from 'node:http';
import { withoutPlatformCookies, withoutPlatformSetCookies } from './auth/cookies.js';

/** Hop-by-hop (RFC 9110 7.6.1) and headers the upstream client library sets itself. */
const hopByHop = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect']);

/** Set by us only: a client-supplied value would let it claim another address, scheme or host. */
const forwarding = new Set(['forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'x-forwarded-prefix', 'x-real-ip', 'x-request-id']);

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
}

/**
 * The request headers for the app as a flat [name, value, ...] list from the raw headers, so a
 * header sent twice stays twice (and both copies of a spoofed one are dropped). `keepUpgrade` keeps
 * `Connection: upgrade` and `Upgrade` for a WebSocket handshake.
 */
export function upstreamHeaders(rawHeaders: readonly string[], fwd: Forwarded, keepUpgrade = false): string[] {
  const connectionTokens = new Set<string>();
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === 'connection') {
      for (const t of rawHeaders[i + 1]!.split(',')) connectionTokens.add(t.trim().toLowerCase());
    }
  }
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const lower = name.toLowerCase();
    if (keepUpgrade && lower === 'upgrade') {
      out.push(name, rawHeaders[i + 1]!);
      continue;
    }
    if (hopByHop.has(lower) || forwarding.has(lower) || connectionTokens.has(lower) || isPlatformHeader(lower)) continue;
    if (lower === 'cookie') {
      const kept = withoutPlatformCookies(rawHeaders[i + 1]!);
      if (kept !== undefined) out.push(name, kept);
      continue;
    }
    out.push(name, rawHeaders[i + 1]!);
  }
  if (keepUpgrade) out.push('connection', 'upgrade');
  out.push('x-forwarded-for', fwd.clientIp, 'x-forwarded-proto', fwd.proto, 'x-forwarded-host', fwd.host, 'x-request-id', fwd.requestId);
  if (fwd.identity) for (const h of fwd.identity) out.push(h);
  return out;
}

/**
 * The app's response headers for the client, without hop-by-hop ones or platform cookies. A
 * `personal` answer (gated, or made for a known visitor) is marked `private, no-store`, whatever
 * the app said, so no shared cache keeps one person's page for another.
 */
export function downstreamHeaders(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>, requestId: string, personal = false): Record<string, string | string[]> {
  const connectionTokens = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || hopByHop.has(name) || connectionTokens.has(name)) continue;
    if (name === 'set-cookie') {
      const kept = withoutPlatformSetCookies(value);
      if (kept.length) out[name] = kept;
      continue;
    }
    out[name] = value;
  }
  out['x-request-id'] = requestId;
  if (personal) out['cache-control'] = 'private, no-store';
  return out;
}

/** The client's address without the IPv4-mapped IPv6 prefix. */
export function clientAddress(remote: string | undefined): string {
  if (!remote) return '';
  return remote.startsWith('::ffff:') ? remote.slice(7) : remote;
}
