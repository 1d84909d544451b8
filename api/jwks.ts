// GET /_svc/auth/jwks.json on the API: the public keys of identity assertions, where machines fetch
// them to verify the X-Svc-Auth-* headers ingress-auth adds (runtime/identity.ts, and container
// services that check for themselves). The same set ingress-auth serves on every app hostname; here
// because a machine reaches the API (as it does for artifacts), not the app hostnames' proxy.
import type Koa from 'koa';
import type { JSONWebKeySet } from 'jose';

export const jwksPath = '/_svc/auth/jwks.json';

export function jwksEndpoint(keys: { jwks(): Promise<JSONWebKeySet> }): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path !== jwksPath) return next() as Promise<void>;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.body = { error: `method ${ctx.method} not allowed on ${ctx.path}` };
      return;
    }
    ctx.body = await keys.jwks();
    ctx.type = 'application/jwk-set+json';
    // Keys are published 15 minutes before they sign (lib/identity/assertion-keys.ts).
    ctx.set('Cache-Control', 'public, max-age=300');
  };
}
