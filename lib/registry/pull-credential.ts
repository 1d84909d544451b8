// An account's pull credential: a random password the kubelet shows the token service when it pulls
// for the account's pods. The kubelet needs it in clear (a kubernetes.io/dockerconfigjson Secret in
// the account's namespace, which tenants' pods never mount); the token service needs only its
// SHA-256, kept on the namespace. 32 random bytes: nothing to guess, and a hash without a salt or a
// slow function is enough for a secret of that strength (no dictionary covers it).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/** A new password: 256 random bits, base64url. */
export function newPullPassword(): string {
  return randomBytes(32).toString('base64url');
}

/** The hex SHA-256 of a credential's password, what the platform stores and compares. */
export function credentialHash(password: string): string {
  return createHash('sha256').update(password, 'utf8').digest('hex');
}

/** Whether `password` is the one `storedHash` was made of (constant time in the hash). */
export function matchesHash(password: string, storedHash: string | undefined): boolean {
  if (!storedHash || !/^[0-9a-f]{64}$/.test(storedHash)) return false;
  return timingSafeEqual(Buffer.from(credentialHash(password), 'hex'), Buffer.from(storedHash, 'hex'));
}

/** The `.dockerconfigjson` of a pull Secret: one credential for `registry` (`host[:port]`). */
export function dockerConfigJson(registry: string, username: string, password: string): string {
  return JSON.stringify({ auths: { [registry]: { username, password, auth: Buffer.from(`${username}:${password}`).toString('base64') } } });
}

const dockerConfigSchema = z.object({ auths: z.record(z.string(), z.object({ username: z.string(), password: z.string() }).partial()) });

/** The user name and password a `.dockerconfigjson` holds for `registry`, if it holds one. */
export function credentialOf(configJson: string, registry: string): { username: string; password: string } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(configJson);
  } catch {
    return undefined;
  }
  const config = dockerConfigSchema.safeParse(parsed);
  const entry = config.success ? config.data.auths[registry] : undefined;
  return entry?.username && entry.password ? { username: entry.username, password: entry.password } : undefined;
}
