// The client half of the registry's token authentication (distribution's token spec), for the
// platform's own registry calls (api/builds/image.ts pushes a built service's image): a 401 names
// the token service (`WWW-Authenticate: Bearer realm=...,service=...`), the token service is asked
// with a credential for the scopes needed, and its token goes with every call after.
import { z } from 'zod';
import { DomainError } from '../errors.js';

export interface BearerChallenge {
  realm: string;
  service: string | undefined;
}

/** The realm and service of a `WWW-Authenticate: Bearer ...` header; undefined for any other header. */
export function parseBearerChallenge(header: string | null | undefined): BearerChallenge | undefined {
  const m = /^\s*Bearer\s+(.*)$/i.exec(header ?? '');
  if (!m) return undefined;
  const params = new Map<string, string>();
  for (const p of m[1]!.matchAll(/([a-zA-Z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g))
    params.set(p[1]!.toLowerCase(), p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3]!);
  const realm = params.get('realm');
  if (!realm || !/^https?:\/\//.test(realm)) return undefined;
  return { realm, service: params.get('service') };
}

/** `repository:<name>:<actions>`: the scope of a token for `actions` on one repository. */
export function repositoryScope(name: string, actions: ReadonlyArray<'pull' | 'push'>): string {
  return `repository:${name}:${actions.join(',')}`;
}

const tokenAnswer = z.object({ token: z.string().min(1).optional(), access_token: z.string().min(1).optional() });

export interface RegistryCredential {
  username: string;
  password: string;
}

/** A token for `scopes` from the token service `challenge` names, asked with `credential` (HTTP Basic, as docker and skopeo ask). */
export async function fetchRegistryToken(
  challenge: BearerChallenge,
  scopes: readonly string[],
  credential: RegistryCredential,
  timeoutMs = 10_000,
): Promise<string> {
  const url = new URL(challenge.realm);
  if (challenge.service) url.searchParams.set('service', challenge.service);
  for (const scope of scopes) url.searchParams.append('scope', scope);
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { authorization: `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString('base64')}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new DomainError('unavailable', `the registry's token service cannot be reached: ${(err as Error).message}`, err);
  }
  const text = (await res.text()).slice(0, 64 * 1024);
  if (!res.ok)
    throw new DomainError(
      'unavailable',
      `the registry's token service refused ${credential.username}: ${res.status} ${text.slice(0, 300)}`,
    );
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new DomainError('unavailable', "the registry's token service answered no JSON");
  }
  const parsed = tokenAnswer.safeParse(body);
  const token = parsed.success ? (parsed.data.token ?? parsed.data.access_token) : undefined;
  if (!token) throw new DomainError('unavailable', "the registry's token service answered no token");
  return token;
}
