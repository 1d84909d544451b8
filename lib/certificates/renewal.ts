// When a certificate is renewed, and whether a domain needs one now (docs/decisions/0028-https.md):
// at a third of its lifetime left, less a random jitter of up to a tenth of it, so that a fleet's
// certificates issued in one minute are not all renewed in one minute. Pure: the random source and
// the clock are the caller's.

/**
 * When to renew a certificate valid from `notBefore` to `notAfter`: `notAfter − lifetime/3 − jitter`,
 * the jitter uniform in [0, lifetime/10) from `random` (a number in [0, 1), as Math.random answers).
 * Drawn once, when the certificate is issued, and kept with it: drawn again on every look it would
 * be the earliest of many draws.
 */
export function renewAfterOf(notBefore: Date, notAfter: Date, random: () => number = Math.random): Date {
  const lifetime = Math.max(0, notAfter.getTime() - notBefore.getTime());
  const r = Math.min(Math.max(random(), 0), 1);
  return new Date(notAfter.getTime() - lifetime / 3 - r * (lifetime / 10));
}

export type CertificateNeed = { need: false; why: 'unverified' | 'fresh' } | { need: true; why: 'missing' | 'renewal' };

/**
 * Whether a domain needs a certificate ordered now: never for a name that is not verified (nobody
 * vouched for it); for a verified one without a certificate (or whose certificate cannot be read:
 * `renewAfter` undefined), and for one whose certificate is due its renewal.
 */
export function needsCertificate(o: { verified: boolean; secret: boolean; renewAfter: Date | undefined; now: Date }): CertificateNeed {
  if (!o.verified) return { need: false, why: 'unverified' };
  if (!o.secret || o.renewAfter === undefined) return { need: true, why: 'missing' };
  if (o.now.getTime() >= o.renewAfter.getTime()) return { need: true, why: 'renewal' };
  return { need: false, why: 'fresh' };
}
