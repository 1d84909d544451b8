// The platform's cookies on app hostnames. They are host-only (no Domain attribute), so a session
// set on one app's hostname is never sent to another's. Names start with `svc-` (`__Host-svc-`
// over https); the proxy removes every such cookie from requests before they reach the app and
// drops any Set-Cookie of such a name (or of no name) in the app's responses, and the Domain
// attribute of every other, so an app can neither read a session secret nor plant one, on its own
// hostname or another app's. What the proxy cannot see, a cookie set by an app's own script for the
// parent domain, is why the apps domain belongs on the Public Suffix List (docs/security.md).
import { cookieValue, platformSetCookie } from '../../lib/http/cookies.js';

export interface CookieNames {
  session: string;
  flow: string;
}

export function cookieNames(secure: boolean): CookieNames {
  return secure ? { session: '__Host-svc-session', flow: '__Host-svc-flow' } : { session: 'svc-session', flow: 'svc-flow' };
}

/** `svc-...`/`svc_...` in any case, with or without a cookie prefix: ours. */
export function isPlatformCookie(name: string): boolean {
  return /^(__host-|__secure-)?svc[-_]/i.test(name.trim());
}

/**
 * The last answer of a pure function of one string, so a keep-alive connection sending the same
 * Cookie header on every request (a browser does) is read once, not on each (bench/https). One entry:
 * another visitor's header costs a string comparison, and nothing grows.
 */
class LastAnswer<T> {
  private input: string | undefined;
  private output: T | undefined;

  constructor(private readonly compute: (input: string) => T) {}

  get(input: string): T {
    if (input !== this.input) {
      this.output = this.compute(input);
      this.input = input;
    }
    return this.output as T;
  }
}

/** The value of cookie `name` in the request's Cookie header(s); the first one wins. */
export function readCookie(header: string | string[] | undefined, name: string): string | undefined {
  if (!header) return undefined;
  if (typeof header === 'string') return (lastRead.get(name) ?? newReader(name)).get(header);
  return cookieValue(header.join('; '), name);
}

/** Per cookie name (the session's and the flow's, over HTTP and HTTPS: a handful, never a request's choice). */
const lastRead = new Map<string, LastAnswer<string | undefined>>();

function newReader(name: string): LastAnswer<string | undefined> {
  const reader = new LastAnswer((header) => cookieValue(header, name));
  // Names come from the code (cookieNames), yet never let the map grow without end.
  if (lastRead.size >= 16) lastRead.clear();
  lastRead.set(name, reader);
  return reader;
}

/** A Cookie header without the platform's cookies; undefined when nothing is left. */
export function withoutPlatformCookies(value: string): string | undefined {
  // Most requests carry none of ours: skip the split.
  if (!/svc[-_]/i.test(value)) return value;
  return lastStripped.get(value);
}

const lastStripped = new LastAnswer(stripPlatformCookies);

function stripPlatformCookies(value: string): string | undefined {
  const kept = value
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && !isPlatformCookie(p.slice(0, p.includes('=') ? p.indexOf('=') : p.length)));
  return kept.length ? kept.join('; ') : undefined;
}

/** A platform name anywhere a lenient parser might start a cookie: first, or after a comma. */
const platformNameInPair = /(^|,)\s*(__host-|__secure-)?svc[-_]/i;

/**
 * An app's Set-Cookie value as it may reach the browser, or undefined to drop it. Dropped: a
 * nameless cookie (`=svc-session=x` or `svc-session`: a browser stores the empty name and sends the
 * value back as `svc-session=x`, a platform cookie), and any platform name, also after a comma where
 * old parsers split one header into two. Every `Domain` attribute is removed, so an app's cookie is
 * host-only: it can never reach another app's hostname.
 */
export function appSetCookie(value: string): string | undefined {
  const semi = value.indexOf(';');
  const pair = semi === -1 ? value : value.slice(0, semi);
  const eq = pair.indexOf('=');
  // RFC 6265bis 5.6: no `=` makes the whole pair the value of a nameless cookie.
  const name = eq === -1 ? '' : pair.slice(0, eq).trim();
  if (!name || isPlatformCookie(name) || platformNameInPair.test(pair)) return undefined;
  if (semi === -1 || !/domain/i.test(value)) return value;
  const attributes = value
    .slice(semi + 1)
    .split(';')
    .filter((a) => a.split('=', 1)[0]!.trim().toLowerCase() !== 'domain');
  return [pair, ...attributes].join(';');
}

/** An app's Set-Cookie values as they may reach the browser (appSetCookie on each). */
export function withoutPlatformSetCookies(values: string | string[]): string[] {
  return (Array.isArray(values) ? values : [values]).flatMap((v) => appSetCookie(v) ?? []);
}

export function setCookie(name: string, value: string, opts: { secure: boolean; maxAgeSeconds: number }): string {
  // Lax: the cookie comes along when a person follows a link to the app (a mailed link, another
  // site), but not on cross-site POSTs.
  return platformSetCookie(name, value, { ...opts, sameSite: 'Lax' });
}

export function clearCookie(name: string, secure: boolean): string {
  return setCookie(name, '', { secure, maxAgeSeconds: 0 });
}
