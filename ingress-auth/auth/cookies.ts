// The platform's cookies on app hostnames. They are host-only (no Domain attribute), so a session
// set on one app's hostname is never sent to another's. Names start with `svc-` (`__Host-svc-`
// over https); the proxy removes every such cookie from requests before they reach the app and
// drops any Set-Cookie of such a name in the app's responses, so an app can neither read a
// session secret nor plant one.

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

/** The value of cookie `name` in the request's Cookie header(s); the first one wins. */
export function readCookie(header: string | string[] | undefined, name: string): string | undefined {
  if (!header) return undefined;
  const all = Array.isArray(header) ? header.join('; ') : header;
  if (!all.includes(name)) return undefined;
  for (const part of all.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A Cookie header without the platform's cookies; undefined when nothing is left. */
export function withoutPlatformCookies(value: string): string | undefined {
  // Most requests carry none of ours: skip the split.
  if (!/svc[-_]/i.test(value)) return value;
  const kept = value
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && !isPlatformCookie(p.slice(0, p.includes('=') ? p.indexOf('=') : p.length)));
  return kept.length ? kept.join('; ') : undefined;
}

/** An app's Set-Cookie values without those that name a platform cookie. */
export function withoutPlatformSetCookies(values: string | string[]): string[] {
  const list = Array.isArray(values) ? values : [values];
  return list.filter((v) => {
    const eq = v.indexOf('=');
    return !isPlatformCookie(eq === -1 ? v : v.slice(0, eq));
  });
}

export function setCookie(name: string, value: string, opts: { secure: boolean; maxAgeSeconds: number }): string {
  // Lax: the cookie comes along when a person follows a link to the app (a mailed link, another
  // site), but not on cross-site POSTs.
  return `${name}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${Math.max(0, Math.floor(opts.maxAgeSeconds))}${opts.secure ? '; Secure' : ''}`;
}

export function clearCookie(name: string, secure: boolean): string {
  return setCookie(name, '', { secure, maxAgeSeconds: 0 });
}
