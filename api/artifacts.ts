// GET /artifacts/sha256:<hex>: where machines fetch the artifact their App names. Outside /api and
// without a token, because pods hold no API token; the digest is the capability (256 bits, shown
// only to the account that deployed it), and machines verify what they get against it.
import type Koa from 'koa';
import { digestPattern, type ArtifactStore } from '../lib/artifacts/store.js';

export const artifactPrefix = '/artifacts/';

export function artifactEndpoint(store: ArtifactStore): Koa.Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(artifactPrefix)) return next();
    const digest = decodeURIComponent(ctx.path.slice(artifactPrefix.length));
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.body = { error: `method ${ctx.method} not allowed on ${ctx.path}` };
      return;
    }
    const found = digestPattern.test(digest) ? await store.open(digest) : undefined;
    if (!found) {
      ctx.status = 404;
      ctx.body = { error: `artifact ${digest} not found` };
      return;
    }
    ctx.set('Content-Type', 'application/gzip');
    ctx.set('Content-Length', String(found.size));
    // Content-addressed: the bytes behind a digest never change.
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('ETag', `"${digest}"`);
    ctx.status = 200;
    if (ctx.method === 'HEAD') found.stream.destroy();
    else ctx.body = found.stream;
  };
}
