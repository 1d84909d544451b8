// Artifact credentials: what a machine shows the API's artifact endpoint to download the one artifact
// its App names. An artifact holds a whole tree (gated pages and handler source included), so the
// digest alone must not open it: a credential is an HMAC-SHA256, under a key only the platform holds
// (the controllers mint, the API verifies), over the digest and an expiry. It opens that digest only,
// until then. Format: `v1.<expiry, unix seconds>.<base64url MAC>`, sent as `Authorization: Bearer`.
// The same construction, under other purposes, lets a database's backup Job add backups of that
// one database and nothing else (backup credentials), and a Build's Job send that build's plan and
// output and nothing else (build credentials).
import { createHmac, timingSafeEqual } from 'node:crypto';

/** How long a credential the controller writes into a new machine stays valid. */
export const artifactCredentialTtlSeconds = 3600;

const shape = /^v1\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

type Purpose = 'artifact' | 'backup' | 'build';

function mac(purpose: Purpose, key: Buffer, subject: string, expiry: number): Buffer {
  return createHmac('sha256', key).update(`svc-${purpose}\n${subject}\n${expiry}`).digest();
}

function mint(purpose: Purpose, key: Buffer, subject: string, expiresAt: Date): string {
  const expiry = Math.floor(expiresAt.getTime() / 1000);
  return `v1.${expiry}.${mac(purpose, key, subject, expiry).toString('base64url')}`;
}

export type CredentialCheck = { ok: true } | { ok: false; status: 401 | 403; error: string };

function check(purpose: Purpose, key: Buffer, subject: string, credential: string | undefined, now: Date, what: string): CredentialCheck {
  if (!credential)
    return {
      ok: false,
      status: 401,
      error: `${/^[aeiou]/.test(what) ? 'an' : 'a'} ${what} credential is required (Authorization: Bearer v1.<expiry>.<mac>)`,
    };
  const m = shape.exec(credential);
  if (!m) return { ok: false, status: 401, error: `the ${what} credential is malformed` };
  const expiry = Number(m[1]);
  const given = Buffer.from(m[2]!, 'base64url');
  const want = mac(purpose, key, subject, expiry);
  // Constant time, and the MAC before the expiry: an answer never says which part was wrong first.
  if (given.length !== want.length || !timingSafeEqual(given, want))
    return { ok: false, status: 403, error: `the ${what} credential does not open this ${what}` };
  if (expiry * 1000 <= now.getTime()) return { ok: false, status: 403, error: `the ${what} credential has expired` };
  return { ok: true };
}

/** A credential for `digest` that expires at `expiresAt`. */
export function mintArtifactCredential(key: Buffer, digest: string, expiresAt: Date): string {
  return mint('artifact', key, digest, expiresAt);
}

/** Whether `credential` opens `digest` at `now`. */
export function checkArtifactCredential(key: Buffer, digest: string, credential: string | undefined, now: Date): CredentialCheck {
  return check('artifact', key, digest, credential, now, 'artifact');
}

/** A credential that adds backups of database `database` of `namespace` (and does nothing else) until `expiresAt`. */
export function mintBackupCredential(key: Buffer, namespace: string, database: string, expiresAt: Date): string {
  return mint('backup', key, `${namespace}/${database}`, expiresAt);
}

export function checkBackupCredential(
  key: Buffer,
  namespace: string,
  database: string,
  credential: string | undefined,
  now: Date,
): CredentialCheck {
  return check('backup', key, `${namespace}/${database}`, credential, now, 'backup');
}

/** A credential that sends the plan and output of build `build` of `namespace` (and does nothing else) until `expiresAt`. */
export function mintBuildCredential(key: Buffer, namespace: string, build: string, expiresAt: Date): string {
  return mint('build', key, `${namespace}/${build}`, expiresAt);
}

export function checkBuildCredential(
  key: Buffer,
  namespace: string,
  build: string,
  credential: string | undefined,
  now: Date,
): CredentialCheck {
  return check('build', key, `${namespace}/${build}`, credential, now, 'build');
}

/** The bearer value of an Authorization header, if it has one. */
export function bearerOf(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}
