// The platform's own cookies as both of its HTTP faces write and read them: ingress-auth's session on
// app hostnames (SameSite=Lax) and the console's on the API (SameSite=Strict). Always host-only (no
// Domain), Path=/ and HttpOnly, so a `__Host-` name holds over https.

/** A Set-Cookie value for one of the platform's cookies; a Max-Age of 0 clears it. */
export function platformSetCookie(
  name: string,
  value: string,
  opts: { secure: boolean; maxAgeSeconds: number; sameSite: 'Lax' | 'Strict' },
): string {
  const maxAge = Math.max(0, Math.floor(opts.maxAgeSeconds));
  return `${name}=${value}; Path=/; HttpOnly; SameSite=${opts.sameSite}; Max-Age=${maxAge}${opts.secure ? '; Secure' : ''}`;
}

/** The value of cookie `name` in a Cookie header (possibly empty); the first one wins; undefined when absent. */
export function cookieValue(header: string, name: string): string | undefined {
  if (!header.includes(name)) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
