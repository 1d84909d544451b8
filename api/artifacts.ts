// GET /artifacts/sha256:<hex>: where machines fetch the artifact their App names. Outside /api,
// because pods hold no API token; instead the machine shows an artifact credential the App
// controller minted for exactly this digest, valid for an hour (lib/artifacts/credential.ts,
// docs/decisions/0012-artifact-credentials.md). The digest alone opens nothing: it appears in
// deploy records, App specs and logs, and an artifact holds the whole tree, gated pages and handler
// source included. Machines still verify the bytes they get against the digest.
import type Koa from 'koa';
import { bearerOf, checkArtifactCredential } from '../lib/artifacts/credential.js';
import { ArtifactCorrupt } from '../lib/artifacts/s3-store.js';
import { digestPattern, type ArtifactStore } from '../lib/artifacts/store.js';

export const artifactPrefix = '/artifacts/';

export function artifactEndpoint(store: ArtifactStore, key: Buffer | undefined, clock: () => Date = () => new Date()): Koa.Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(artifactPrefix)) return next() as Promise<void>;
    const fail = (status: number, error: string) => {
      ctx.status = status;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { error };
    };
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      return fail(405, `method ${ctx.method} not allowed on ${ctx.path}`);
    }
    let digest: string;
    try {
      digest = decodeURIComponent(ctx.path.slice(artifactPrefix.length));
    } catch {
      return fail(400, 'the artifact path has a malformed percent-escape');
    }
    if (!digestPattern.test(digest)) return fail(400, 'an artifact is named sha256:<64 lowercase hex>');
    if (!key) return fail(503, 'artifact credentials are not configured on this API (SVC_ARTIFACT_KEY)');
    const check = checkArtifactCredential(key, digest, bearerOf(ctx.get('Authorization')), clock());
    if (!check.ok) {
      if (check.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="artifacts"');
      return fail(check.status, check.error);
    }
    let found;
    try {
      found = await store.open(digest);
    } catch (err) {
      // The object store holds other bytes under the name: never served as the artifact.
      if (err instanceof ArtifactCorrupt) return fail(502, `artifact ${digest} is damaged in the object store`);
      throw err;
    }
    if (!found) return fail(404, `artifact ${digest} not found`);
    ctx.set('Content-Type', 'application/gzip');
    ctx.set('Content-Length', String(found.size));
    // Content-addressed, but only for its credential's holder: no shared cache may keep it.
    ctx.set('Cache-Control', 'private, max-age=3600, immutable');
    ctx.set('ETag', `"${digest}"`);
    ctx.status = 200;
    if (ctx.method === 'HEAD') found.stream.destroy();
    else ctx.body = found.stream;
  };
}
