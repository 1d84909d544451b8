// Sign-in with the platform's OpenID Connect provider (`idp` policies), over openid-client.
//
// - One redirect URI for every app: the platform's sign-in host (config.auth.host); the caller
//   passes it in, so a proxy in front of that host (another scheme or port) does not change what
//   the provider was registered with.
// - Authorization code with PKCE (S256), `state` and `nonce`: the three values stay with the
//   caller between start() and finish() (a sign-in flow row), never in the browser.
// - The identity comes from the ID token openid-client validated (issuer, audience, signature,
//   expiry, nonce). A provider that puts no address in its ID token (the claims go to userinfo
//   when an access token is issued, as oidc-provider's default does) is asked at userinfo, with
//   the same subject enforced; `hd` is taken from the signed ID token only (an unsigned `hd` would
//   let anyone holding a userinfo response claim a domain).
import * as client from 'openid-client';
import { z } from 'zod';
import type { Logger } from '../logger.js';

export interface OidcSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

export interface OidcOptions {
  /** Each request to the provider (discovery, token, userinfo, keys). Default 10 s. */
  timeoutMs?: number;
  log?: Logger;
}

/** What the caller keeps between start() and finish(). */
export interface OidcSaved {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface OidcIdentity {
  /** `sub`: stable at this issuer. */
  subject: string;
  /** Absent when the provider released no address. */
  email?: string;
  /** `email_verified` was the boolean true; anything else (absent, "true", false) is unverified. */
  emailVerified: boolean;
  /** The signed `hd` claim (Google Workspace and the like), lowercased. */
  hostedDomain?: string;
  name?: string;
}

/**
 * Why a sign-in failed: `unavailable` (the provider could not be reached or answered with a
 * server error: try later), `denied` (the provider answered the authorization with an error, e.g.
 * the person declined), `invalid` (the callback or the provider's answer failed a check: wrong
 * state or nonce, a code already used, a bad ID token).
 */
export type OidcFailure = 'unavailable' | 'denied' | 'invalid';

export class OidcError extends Error {
  override readonly name = 'OidcError';
  constructor(
    readonly reason: OidcFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const oidcScope = 'openid email profile';

// The claims we read; anything else in the token is ignored. Types are checked, values are not
// trusted beyond what the provider signed.
const claimsShape = z.object({
  sub: z.string().min(1),
  email: z.string().min(1).optional(),
  email_verified: z.unknown().optional(),
  hd: z.string().min(1).optional(),
  name: z.string().optional(),
});

/** openid-client refuses http; a provider on loopback (tests, local development) is let through. */
export function isLoopbackIssuer(issuer: URL): boolean {
  const host = issuer.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

export class OidcClient {
  private readonly issuer: URL;
  private readonly timeoutMs: number;
  private discovered: Promise<client.Configuration> | undefined;

  constructor(
    private readonly settings: OidcSettings,
    private readonly options: OidcOptions = {},
  ) {
    this.issuer = new URL(settings.issuer);
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** The authorization URL to send the browser to, and what finish() needs to check the callback. */
  async start({ redirectUri }: { redirectUri: string }): Promise<{ url: URL; state: OidcSaved }> {
    const config = await this.configuration();
    const saved: OidcSaved = { state: client.randomState(), nonce: client.randomNonce(), codeVerifier: client.randomPKCECodeVerifier() };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: oidcScope,
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(saved.codeVerifier),
      code_challenge_method: 'S256',
      state: saved.state,
      nonce: saved.nonce,
    });
    return { url, state: saved };
  }

  /**
   * Checks the callback against what start() returned, exchanges the code and returns who signed
   * in. `callbackUrl` is the request as received; only its query is used, on `redirectUri`.
   */
  async finish(callbackUrl: URL, saved: OidcSaved, redirectUri: string): Promise<OidcIdentity> {
    const config = await this.configuration();
    const current = new URL(redirectUri);
    current.search = callbackUrl.search;
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, current, {
        expectedState: saved.state,
        expectedNonce: saved.nonce,
        pkceCodeVerifier: saved.codeVerifier,
        idTokenExpected: true,
      });
    } catch (err) {
      throw this.failure('sign-in', err);
    }
    const idToken = claimsShape.safeParse(tokens.claims());
    if (!idToken.success)
      throw new OidcError(
        'invalid',
        `OpenID provider ${this.settings.issuer}: ID token claims: ${idToken.error.issues[0]?.message ?? 'malformed'}`,
      );
    let { email, email_verified: verified, name } = idToken.data;
    if (email === undefined) {
      try {
        const info = claimsShape.safeParse(await client.fetchUserInfo(config, tokens.access_token, idToken.data.sub));
        if (info.success) {
          email = info.data.email;
          verified = info.data.email_verified;
          name ??= info.data.name;
        }
      } catch (err) {
        throw this.failure('userinfo', err);
      }
    }
    const hd = idToken.data.hd?.toLowerCase();
    return {
      subject: idToken.data.sub,
      ...(email !== undefined ? { email } : {}),
      emailVerified: email !== undefined && verified === true,
      ...(hd !== undefined ? { hostedDomain: hd } : {}),
      ...(name ? { name } : {}),
    };
  }

  /** Discovery once; a failure is not cached, so the next sign-in tries again. */
  private configuration(): Promise<client.Configuration> {
    this.discovered ??= client
      .discovery(this.issuer, this.settings.clientId, undefined, client.ClientSecretBasic(this.settings.clientSecret), {
        execute: isLoopbackIssuer(this.issuer) ? [client.allowInsecureRequests] : [],
        timeout: Math.ceil(this.timeoutMs / 1000),
      })
      .catch((err: unknown) => {
        this.discovered = undefined;
        const failure = new OidcError('unavailable', `OpenID provider ${this.settings.issuer}: discovery failed: ${describe(err)}`, {
          cause: err,
        });
        this.options.log?.warn({ issuer: this.settings.issuer, err: failure.message }, 'OpenID provider discovery failed');
        throw failure;
      });
    return this.discovered;
  }

  private failure(step: string, err: unknown): OidcError {
    const where = `OpenID provider ${this.settings.issuer}: ${step}`;
    if (err instanceof client.AuthorizationResponseError) {
      return new OidcError(
        'denied',
        `${where}: the provider answered ${err.error}${err.error_description ? ` (${err.error_description})` : ''}`,
        { cause: err },
      );
    }
    if (err instanceof client.ResponseBodyError) {
      return new OidcError(
        err.status >= 500 ? 'unavailable' : 'invalid',
        `${where}: the provider refused with ${err.status} ${err.error}${err.error_description ? ` (${err.error_description})` : ''}`,
        { cause: err },
      );
    }
    if (err instanceof client.ClientError && err.code?.startsWith('OAUTH_')) {
      // Otherwise a response that arrived but failed a check: state, nonce, issuer, signature, claims.
      return new OidcError(unavailableCodes.has(err.code) ? 'unavailable' : 'invalid', `${where}: ${describe(err)}`, { cause: err });
    }
    return new OidcError('unavailable', `${where}: ${describe(err)}`, { cause: err });
  }
}

// openid-client's codes for a provider that did not answer, or answered as a broken server does.
const unavailableCodes = new Set(['OAUTH_TIMEOUT', 'OAUTH_ABORT', 'OAUTH_RESPONSE_IS_NOT_JSON', 'OAUTH_RESPONSE_IS_NOT_CONFORM']);

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}

/**
 * Whether an `idp` policy member admits this identity. `values` are the policy's normalized
 * values (lowercased; a mailbox is an account, anything else a hosted domain); 'any' is `idp: true`.
 * A mailbox needs the provider to have verified it; a domain needs the signed `hd` claim, never
 * the address's suffix (anyone can own a mailbox at a domain they do not administer, and a
 * provider verifies addresses at domains it does not host).
 */
export function idpAdmits(
  values: readonly string[] | 'any',
  identity: Pick<OidcIdentity, 'email' | 'emailVerified' | 'hostedDomain'>,
): boolean {
  if (values === 'any') return true;
  const email = identity.emailVerified ? identity.email?.toLowerCase() : undefined;
  const hd = identity.hostedDomain?.toLowerCase();
  return values.some((raw) => {
    const v = raw.toLowerCase();
    if (v.includes('@') && !v.startsWith('@')) return email !== undefined && email === v;
    return hd !== undefined && hd === v.replace(/^@/, '');
  });
}
