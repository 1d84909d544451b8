// Identity assertions: the X-Svc-Auth-Assertion header ingress-auth adds to a proxied request, a
// compact JWS (EdDSA over Ed25519) that lets an app verify the identity headers came from the
// platform. Claims: iss (the platform's issuer), aud (the app's hostname), sub, email, provider,
// name (when known), owner (true for the app's owner through the platform), iat and exp (iat + a few
// minutes). docs/api/identity-assertion.md is the contract.
import type { KeyObject } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, SignJWT, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';

export const assertionAlgorithm = 'EdDSA';
export const defaultAssertionLifetimeSeconds = 300;

export interface AssertedIdentity {
  sub: string;
  email: string;
  provider: string;
  name?: string | undefined;
  /** The visitor owns the app (signed in through the platform as its account). */
  owner?: true | undefined;
}

export interface AssertionClaims extends AssertedIdentity {
  iss: string;
  /** The request's hostname; on a custom domain, that name and the app's own hostname (decision 0028). */
  aud: string | string[];
  iat: number;
  exp: number;
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
}

/** The audience of a request's Host header: the hostname, lowercased, without port or trailing dot. */
export function audienceOf(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[')) h = h.slice(0, h.indexOf(']') + 1);
  else if (h.includes(':')) h = h.slice(0, h.indexOf(':'));
  return h.replace(/\.$/, '');
}

/**
 * Signs one assertion with `key`; `now` is the issuing time (iat), exp is iat + lifetimeSeconds.
 * Several audiences (a custom domain and its app's hostname) make `aud` an array (RFC 7519 4.1.3):
 * an app checking either name accepts it.
 */
export async function signAssertion(
  key: SigningKey,
  identity: AssertedIdentity,
  audienceHost: string | readonly string[],
  opts: { issuer: string; now?: Date; lifetimeSeconds?: number },
): Promise<string> {
  const iat = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  const lifetime = opts.lifetimeSeconds ?? defaultAssertionLifetimeSeconds;
  const claims: JWTPayload & Record<string, unknown> = { email: identity.email, provider: identity.provider };
  if (identity.name !== undefined) claims.name = identity.name;
  if (identity.owner) claims.owner = true;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: assertionAlgorithm, kid: key.kid, typ: 'JWT' })
    .setIssuer(opts.issuer)
    .setAudience(audiencesOf(audienceHost))
    .setSubject(identity.sub)
    .setIssuedAt(iat)
    .setExpirationTime(iat + lifetime)
    .sign(key.privateKey);
}

/** One audience as a string (what apps verified before custom domains), several as an array. */
function audiencesOf(hosts: string | readonly string[]): string | string[] {
  const all = [...new Set((typeof hosts === 'string' ? [hosts] : hosts).map(audienceOf))];
  return all.length === 1 ? all[0]! : all;
}

/** Signs with whatever key the store says signs now. */
export class AssertionSigner {
  constructor(
    private readonly keys: { signingKey(): Promise<SigningKey> },
    private readonly opts: { issuer: string; lifetimeSeconds?: number; clock?: () => Date },
  ) {}

  async sign(identity: AssertedIdentity, audienceHost: string | readonly string[], now?: Date): Promise<string> {
    const key = await this.keys.signingKey();
    return signAssertion(key, identity, audienceHost, {
      issuer: this.opts.issuer,
      now: now ?? this.opts.clock?.() ?? new Date(),
      ...(this.opts.lifetimeSeconds === undefined ? {} : { lifetimeSeconds: this.opts.lifetimeSeconds }),
    });
  }
}

export class AssertionInvalid extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'AssertionInvalid';
  }
}

/**
 * Verifies an assertion as an app should: against the JWKS (a key set, or jose's remote key set
 * that fetches and caches one), EdDSA only, for this audience (or one of these) and issuer, at
 * `now` (default the real time) with `clockToleranceSeconds` (default 30) of leeway.
 */
export async function verifyAssertion(
  token: string,
  jwks: JSONWebKeySet | JWTVerifyGetKey,
  opts: { audience: string | readonly string[]; issuer: string; now?: Date; clockToleranceSeconds?: number },
): Promise<AssertionClaims> {
  try {
    const { payload } = await jwtVerify(token, typeof jwks === 'function' ? jwks : createLocalJWKSet(jwks), {
      algorithms: [assertionAlgorithm],
      audience: typeof opts.audience === 'string' ? audienceOf(opts.audience) : opts.audience.map(audienceOf),
      issuer: opts.issuer,
      typ: 'JWT',
      requiredClaims: ['sub', 'iat', 'exp', 'email', 'provider'],
      clockTolerance: opts.clockToleranceSeconds ?? 30,
      ...(opts.now ? { currentDate: opts.now } : {}),
    });
    const { iss, aud, sub, iat, exp, email, provider, name, owner } = payload;
    if (
      typeof email !== 'string' ||
      typeof provider !== 'string' ||
      !(typeof aud === 'string' || (Array.isArray(aud) && aud.length > 0 && aud.every((a) => typeof a === 'string'))) ||
      (name !== undefined && typeof name !== 'string') ||
      (owner !== undefined && owner !== true)
    ) {
      throw new AssertionInvalid('assertion claims have the wrong types', 'ERR_JWT_CLAIM_VALIDATION_FAILED');
    }
    const nowSeconds = Math.floor((opts.now ?? new Date()).getTime() / 1000);
    if (iat! > nowSeconds + (opts.clockToleranceSeconds ?? 30)) {
      throw new AssertionInvalid('assertion issued in the future', 'ERR_JWT_CLAIM_VALIDATION_FAILED');
    }
    return {
      iss: iss!,
      aud,
      sub: sub!,
      iat: iat!,
      exp: exp!,
      email,
      provider,
      ...(name === undefined ? {} : { name }),
      ...(owner ? { owner } : {}),
    };
  } catch (err) {
    if (err instanceof AssertionInvalid) throw err;
    const code = (err as { code?: string }).code ?? 'ERR_JOSE_GENERIC';
    throw new AssertionInvalid(`assertion rejected: ${(err as Error).message}`, code);
  }
}
