// The bearer secrets of sign-in (session cookies, email links, handoffs, flow bindings): 32 random
// bytes, base64url; only their SHA-256 is ever stored.
import { createHash, randomBytes } from 'node:crypto';

export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A secret as it may arrive from a browser: base64url of 32 bytes, nothing else. */
export function isSecretShape(value: unknown): value is string {
  return typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value);
}
