// The visitor's identity as the runtime hands it to HTML pages, Markdown and handlers: only what an
// identity assertion signed by the platform proves. ingress-auth strips client-supplied `X-Svc-*`
// headers and adds the verified visitor's, but a request that reaches the machine another way (a
// neighbour on the pod network, a misrouted balancer) can carry any header. So every request's
// platform headers are removed here, and put back only from a verified assertion: signature from the
// platform's JWKS (EdDSA), `iss`, `aud` = one of this app's hostnames, `exp`, and `sub`/`email`/
// `provider`/`name` equal to the headers that came with it. An unverifiable identity is no identity.
//
// Env (written by the App controller): SVC_AUTH_JWKS_URL, SVC_AUTH_ISSUER, SVC_AUTH_AUDIENCE
// (comma-separated hostnames). Without them every request is anonymous.
import type { IncomingMessage } from 'node:http';
import { createRemoteJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { verifyAssertion, type AssertionClaims } from '../lib/identity/assertion.js';
import type { Logger } from '../lib/logger.js';
import { viewerHeaders } from './viewer.js';
import { identityHeaders } from '../lib/contract.js';

export interface IdentityOptions {
  /** The platform's public keys: a URL to fetch (and cache) them from, or a key set. */
  jwks: string | JSONWebKeySet | JWTVerifyGetKey;
  issuer: string;
  /** The app's hostnames; an assertion must be made out to one of them. */
  audiences: readonly string[];
  log?: Logger;
  now?: () => Date;
}

const assertionHeader = identityHeaders.assertion.toLowerCase();
/** `x-svc-...` in any case, with `-` or `_` (CGI would read `X_Svc_Auth_Email` as the real one). */
const platformHeader = /^x[-_]svc([-_]|$)/i;
/** Verified assertions kept until they expire, so a page's many requests verify once. */
const cacheMax = 2_000;

export interface IdentityCheck {
  /** Removes every platform header of `req`; puts back the verified identity's, if any. */
  apply(req: IncomingMessage): Promise<void>;
}

/** Strips platform headers and trusts none: for a machine with no verification settings. */
export const anonymousOnly: IdentityCheck = {
  apply: async (req) => void stripPlatformHeaders(req),
};

export function identityCheckFromEnv(env: NodeJS.ProcessEnv, log?: Logger): IdentityCheck {
  const { SVC_AUTH_JWKS_URL: jwks, SVC_AUTH_ISSUER: issuer, SVC_AUTH_AUDIENCE: audience } = env;
  if (!jwks || !issuer || !audience) {
    log?.warn('SVC_AUTH_JWKS_URL, SVC_AUTH_ISSUER or SVC_AUTH_AUDIENCE is not set: every visitor is anonymous');
    return anonymousOnly;
  }
  const audiences = audience
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  return new AssertionCheck({ jwks, issuer, audiences, ...(log ? { log } : {}) });
}

export class AssertionCheck implements IdentityCheck {
  private readonly keys: JSONWebKeySet | JWTVerifyGetKey;
  private readonly verified = new Map<string, AssertionClaims>();

  constructor(private readonly opts: IdentityOptions) {
    // jose caches the fetched key set and refetches it (rate-limited) when a new `kid` shows up.
    this.keys =
      typeof opts.jwks === 'string'
        ? createRemoteJWKSet(new URL(opts.jwks), { cacheMaxAge: 10 * 60_000, cooldownDuration: 30_000 })
        : opts.jwks;
  }

  async apply(req: IncomingMessage): Promise<void> {
    const claimed = stripPlatformHeaders(req);
    const assertion = claimed?.get(assertionHeader);
    if (!assertion) return;
    const claims = await this.verify(assertion);
    if (!claims) return;
    const name = claimed!.get(viewerHeaders.name);
    const agrees =
      claimed!.get(viewerHeaders.id) === claims.sub &&
      (claimed!.get(viewerHeaders.email) ?? '') === claims.email &&
      claimed!.get(viewerHeaders.provider) === claims.provider &&
      (name === undefined ? claims.name === undefined : safeDecode(name) === claims.name);
    if (!agrees) {
      this.opts.log?.warn({ sub: claims.sub }, 'Identity headers disagree with their assertion: treated as anonymous');
      return;
    }
    const headers: Array<[string, string]> = [
      [viewerHeaders.id, claims.sub],
      [viewerHeaders.email, claims.email],
      [viewerHeaders.provider, claims.provider],
      [assertionHeader, assertion],
    ];
    if (claims.name !== undefined) headers.push([viewerHeaders.name, encodeURIComponent(claims.name)]);
    if (claims.email) headers.push([viewerHeaders.verified, 'true']);
    if (claims.owner) headers.push([viewerHeaders.owner, 'true']);
    for (const [k, v] of headers) {
      req.headers[k] = v;
      req.rawHeaders.push(k, v);
    }
  }

  private async verify(assertion: string): Promise<AssertionClaims | undefined> {
    const now = this.opts.now?.() ?? new Date();
    const hit = this.verified.get(assertion);
    if (hit && hit.exp * 1000 > now.getTime()) return hit;
    try {
      // No clock tolerance on expiry beyond jose's default of 30 s: assertions live minutes.
      const claims = await verifyAssertion(assertion, this.keys, { audience: this.opts.audiences, issuer: this.opts.issuer, now });
      if (this.verified.size >= cacheMax) this.verified.clear();
      this.verified.set(assertion, claims);
      return claims;
    } catch (err) {
      this.opts.log?.warn({ err: (err as Error).message }, 'Identity assertion rejected: treated as anonymous');
      return undefined;
    }
  }
}

function safeDecode(v: string): string | undefined {
  try {
    return decodeURIComponent(v);
  } catch {
    return undefined;
  }
}

/**
 * Removes every platform header from `req.headers` and `req.rawHeaders` (any case, `-` or `_`);
 * returns the lowercase `-` spelling of those that came with the request (the first of a repeat).
 */
export function stripPlatformHeaders(req: IncomingMessage): Map<string, string> | undefined {
  let found: Map<string, string> | undefined;
  for (const name of Object.keys(req.headers)) {
    if (!platformHeader.test(name)) continue;
    const value = req.headers[name];
    const key = name.toLowerCase().replace(/_/g, '-');
    // Only the proxy's own spelling counts as a claim; look-alikes are dropped unread.
    if (key === name && !(found ??= new Map()).has(key)) found.set(key, Array.isArray(value) ? value[0]! : String(value));
    delete req.headers[name];
  }
  if (found || req.rawHeaders.some((h, i) => i % 2 === 0 && platformHeader.test(h))) {
    const kept: string[] = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2)
      if (!platformHeader.test(req.rawHeaders[i]!)) kept.push(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
    req.rawHeaders.splice(0, req.rawHeaders.length, ...kept);
  }
  return found;
}
