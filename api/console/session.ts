// The console's session as the browser holds it (docs/decisions/0031-console.md): an ordinary API
// token, minted for the account with a 12-hour expiry, kept in an HttpOnly, SameSite=Strict,
// host-only cookie that no script can read. A cookie rides along on requests a browser makes for
// other sites' pages, so the API accepts it only with two CSRF defences: the custom header
// `X-Svc-Console: 1` (a page of another origin cannot send it without a CORS preflight, which the API
// never grants), and, on anything that may change something, an Origin equal to the API's own.
import { cookieValue, platformSetCookie } from '../../lib/http/cookies.js';
import { ApiError } from '../errors.js';

/** How long a console session's token lives (its `expires` restriction). */
export const sessionLifetimeMs = 12 * 3600_000;

/** The request header the console's own script sends on every API call. */
export const consoleHeader = 'x-svc-console';

/**
 * The cookie's name: `__Host-` over https (the browser then keeps it only when it is Secure,
 * host-only and Path=/, so no sibling host can plant one), plain `svc-console` on http (locally),
 * where a `__Host-` cookie would be refused. As ingress-auth names its session cookie.
 */
export function sessionCookieName(secure: boolean): string {
  return secure ? '__Host-svc-console' : 'svc-console';
}

export function sessionCookie(name: string, value: string, opts: { secure: boolean; maxAgeSeconds: number }): string {
  // Strict: a link from another site (the mail itself) opens the console without the cookie; the
  // console's own page then calls the API same-site, where the cookie is sent.
  return platformSetCookie(name, value, { ...opts, sameSite: 'Strict' });
}

export function clearSessionCookie(name: string, secure: boolean): string {
  return sessionCookie(name, '', { secure, maxAgeSeconds: 0 });
}

/** Both names' cookies cleared: sign-out ends whichever the browser holds, however the API is reached now. */
export function clearSessionCookies(): string[] {
  return [clearSessionCookie(sessionCookieName(false), false), clearSessionCookie(sessionCookieName(true), true)];
}

/**
 * The cookie binding a mailed sign-in link to the browser that asked for it (codes.ts): a random
 * value set by POST /api/console/sign-in, for as long as a code lives, named as the session's is.
 */
export function signInCookieName(secure: boolean): string {
  return secure ? '__Host-svc-console-sign-in' : 'svc-console-sign-in';
}

/** The value of cookie `name` in a Cookie header; the first one wins; undefined when absent or empty. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  return (header && cookieValue(header, name)) || undefined;
}

/** What the authenticator reads of a request that may carry the console's cookie. */
export interface BrowserRequest {
  method: string;
  /** The Cookie header. */
  cookie: string | undefined;
  /** The X-Svc-Console header. */
  consoleHeader: string | undefined;
  /** The Origin header. */
  origin: string | undefined;
  /** Whether the API is reached over https here (the connection, or SVC_AUTH_SECURE_COOKIES behind a TLS-terminating proxy). */
  secure: boolean;
  /** The Host header the request was sent to (X-Forwarded-Host behind trusted proxies, SVC_API_PROXY_HOPS). */
  host: string;
  /** The API's configured public origin (config api.publicUrl). */
  publicOrigin: string;
}

/** The API's own origin as this request reached it. */
export function ownOrigin(r: Pick<BrowserRequest, 'secure' | 'host'>): string {
  return `${r.secure ? 'https' : 'http'}://${r.host}`;
}

/**
 * Whether an Origin is the API's own: its configured public origin (what people open, whatever a
 * proxy in front makes of Host), or the origin this request reached. A browser sets both Origin
 * and Host itself, so a page of another origin matches neither.
 */
export function isOwnOrigin(r: Pick<BrowserRequest, 'secure' | 'host' | 'publicOrigin' | 'origin'>): boolean {
  return r.origin !== undefined && (r.origin === r.publicOrigin || r.origin === ownOrigin(r));
}

/** Methods that change nothing, which need no Origin check (a GET still needs the header). */
const safeMethods = new Set(['GET', 'HEAD']);

/**
 * Why a request carrying the console cookie is refused, in words naming the defence it lacks;
 * undefined when it passes both.
 */
export function csrfRefusal(r: BrowserRequest): string | undefined {
  if (r.consoleHeader !== '1') {
    return 'the console session cookie is accepted only with the header X-Svc-Console: 1 (a defence against cross-site requests)';
  }
  if (!safeMethods.has(r.method.toUpperCase()) && !isOwnOrigin(r)) {
    return `the console session cookie is accepted on ${r.method.toUpperCase()} only with Origin: ${r.publicOrigin} (a defence against cross-site requests); this request's Origin is ${r.origin ?? 'missing'}`;
  }
  return undefined;
}

/** The CSRF checks of a public console call (sign-in): the console's header and the API's own Origin, whatever the method. */
export function consoleOnly(browser: BrowserRequest, what: string): void {
  const refusal = csrfRefusal({ ...browser, method: 'POST' });
  if (refusal) throw new ApiError('forbidden', refusal.replace('the console session cookie is accepted', `${what} is accepted`));
}

/** The headers of a sign-in that worked: the session's cookie set, the sign-in binding cookie cleared, nothing cached. */
export function signedInHeaders(secure: boolean, session: { token: string; maxAgeSeconds: number }): Record<string, string | string[]> {
  return {
    'Cache-Control': 'no-store',
    'Set-Cookie': [
      sessionCookie(sessionCookieName(secure), session.token, { secure, maxAgeSeconds: session.maxAgeSeconds }),
      sessionCookie(signInCookieName(secure), '', { secure, maxAgeSeconds: 0 }),
    ],
  };
}
