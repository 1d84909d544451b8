// The object store keeps artifacts but is not trusted for their integrity
// (docs/decisions/0038-object-store.md): whoever can write the bucket (a leaked key, another
// service sharing it) and swaps an object's bytes does not get them read as the artifact the name
// says. Machines verify what they fetch against the digest (runtime); the API verifies what it
// reads in place: a build's output made into an image, a stored tree deployed again.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { S3ArtifactStore } from '../../lib/artifacts/s3-store.js';
import { dropBucket, freshBucketEnv, localObjectStore, objectStoreConfigOf } from '../support/object-store.js';

describe('attack: bytes swapped in the object store', () => {
  const env = freshBucketEnv();
  const dirs: string[] = [];
  after(async () => {
    await dropBucket(env.SVC_ARTIFACT_S3_BUCKET!).catch(() => undefined);
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('an object whose bytes are not its name is never served nor read in place as that artifact, nor cached', async () => {
    const cache = await mkdtemp(path.join(tmpdir(), 'svc-object-store-attack-'));
    dirs.push(cache);
    const store = new S3ArtifactStore(objectStoreConfigOf(env), cache);
    await store.ensureBucket();
    const real = Buffer.from('the tree the deploy named');
    const digest = `sha256:${createHash('sha256').update(real).digest('hex')}`;
    // The attacker writes the bucket directly, under the real artifact's name.
    const s = localObjectStore()!;
    const attacker = new S3Client({ endpoint: s.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s });
    await attacker.send(
      new PutObjectCommand({ Bucket: env.SVC_ARTIFACT_S3_BUCKET!, Key: `sha256/${digest.slice(7)}`, Body: 'planted bytes' }),
    );
    attacker.destroy();
    await assert.rejects(store.localFile(digest), /other bytes/);
    // Nor served (to a machine, or to a database restore, which does not check).
    await assert.rejects(store.open(digest), /other bytes/);
    assert.deepEqual(await readdir(path.join(cache, 'sha256')).catch(() => []), [], 'nothing cached under the name');
    assert.deepEqual(await readdir(path.join(cache, 'tmp')), [], 'nothing staged left');
    store.close();
  });
});
