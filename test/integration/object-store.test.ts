// Artifacts in an S3-compatible object store (lib/artifacts/s3-store.ts) against the local one
// (versitygw, hack/dev.sh's `s3` component): the store's whole contract on a bucket of its own,
// the API process starting on a bucket it makes, and the move of a directory of artifacts into a
// bucket (api/migrate-artifacts.ts), run as operators run it. Every other integration test keeps
// its test API's artifacts there too (test/support/api.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { S3ArtifactStore } from '../../lib/artifacts/s3-store.js';
import { UploadTooLarge } from '../../lib/artifacts/store.js';
import { repoRoot } from '../../lib/paths.js';
import { dropBucket, freshBucketEnv, localObjectStore, objectStoreConfigOf } from '../support/object-store.js';

const digestOf = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const read = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};
/** api/migrate-artifacts.js DIR run as an operator runs it, with `env` only; its exit code and output. */
const migrateArtifacts = (args: string | string[], env: Record<string, string>) =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = execFile(process.execPath, [path.join(repoRoot, 'dist/api/migrate-artifacts.js'), ...[args].flat()], {
      env: { PATH: process.env.PATH, SVC_LOG_LEVEL: 'info', ...env },
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });

describe('the object store of artifacts', () => {
  const buckets: string[] = [];
  const dirs: string[] = [];
  let client: S3Client;
  const bucketEnv = () => {
    const env = freshBucketEnv();
    buckets.push(env.SVC_ARTIFACT_S3_BUCKET!);
    return env;
  };
  const dir = async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'svc-object-store-'));
    dirs.push(d);
    return d;
  };
  before(() => {
    const store = localObjectStore()!;
    client = new S3Client({ endpoint: store.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: store });
  });
  after(async () => {
    client?.destroy();
    for (const b of buckets) await dropBucket(b).catch(() => undefined);
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('keeps, answers, lists and removes artifacts by digest; the cache and staging stay local', async () => {
    const env = bucketEnv();
    const cache = await dir();
    const store = new S3ArtifactStore(objectStoreConfigOf(env), cache);
    await store.ensureBucket();
    await store.ensureBucket(); // a second time: the bucket is there, nothing to do
    const bytes = Buffer.from('a tree, as bytes');
    const staged = await store.stage(Readable.from([bytes]), 1024);
    assert.equal(staged.digest, digestOf(bytes));
    assert.equal(await store.has(staged.digest), false);
    await store.put(staged);
    await store.put(await store.stageBytes(bytes)); // the same bytes again: kept once
    assert.equal(await store.size(staged.digest), bytes.length);
    const listed = await store.list();
    assert.deepEqual(
      listed.map((a) => [a.digest, a.bytes]),
      [[staged.digest, bytes.length]],
    );
    assert.ok(Date.now() - listed[0]!.writtenAt.getTime() < 60_000, `written at ${listed[0]!.writtenAt.toISOString()}`);
    // In the bucket under the directory store's layout, where any S3 tool finds it.
    const object = await client.send(
      new GetObjectCommand({ Bucket: env.SVC_ARTIFACT_S3_BUCKET!, Key: `sha256/${staged.digest.slice(7)}` }),
    );
    assert.deepEqual(await read(object.Body as Readable), bytes);
    // Another replica (another cache) reads it from the bucket, and gets a local file of it.
    const otherCache = await dir();
    const other = new S3ArtifactStore(objectStoreConfigOf(env), otherCache);
    const opened = await other.open(staged.digest);
    assert.equal(opened?.size, bytes.length);
    assert.deepEqual(await read(opened.stream), bytes);
    const file = await other.localFile(staged.digest);
    assert.ok(file.startsWith(otherCache), file);
    // Too large is refused while staging, and nothing is left of it.
    await assert.rejects(store.stage(Readable.from([Buffer.alloc(2048)]), 1024), UploadTooLarge);
    assert.deepEqual(await readdir(path.join(cache, 'tmp')), []);
    // Removed from one replica: gone for every one, cached copies included.
    await store.remove(staged.digest);
    assert.equal(await other.open(staged.digest), undefined);
    assert.equal(await other.size(staged.digest), undefined);
    assert.deepEqual(await store.list(), []);
    await assert.rejects(other.localFile(staged.digest), /not in the store/);
    // Cached copies go once not read for the collector's grace; the bucket keeps the artifact.
    const kept = await store.stageBytes(Buffer.from('kept in the bucket'));
    await store.put(kept);
    await other.localFile(kept.digest);
    assert.equal((await readdir(path.join(otherCache, 'sha256'))).length, 1);
    await other.removeStaleStaged(new Date(Date.now() + 60_000));
    assert.deepEqual(await readdir(path.join(otherCache, 'sha256')), []);
    assert.equal(await other.size(kept.digest), 'kept in the bucket'.length);
    store.close();
    other.close();
  });

  it('lists past one page of the bucket', async () => {
    const env = bucketEnv();
    const store = new S3ArtifactStore(objectStoreConfigOf(env), await dir());
    await store.ensureBucket();
    const digests = [];
    // More than ListObjectsV2's 1,000 a page.
    for (let i = 0; i < 1005; i += 1) {
      const bytes = Buffer.from(`artifact ${i}`);
      digests.push(digestOf(bytes));
      await client.send(
        new PutObjectCommand({ Bucket: env.SVC_ARTIFACT_S3_BUCKET!, Key: `sha256/${digestOf(bytes).slice(7)}`, Body: bytes }),
      );
    }
    const listed = await store.list();
    assert.equal(listed.length, 1005);
    assert.deepEqual(listed.map((a) => a.digest).sort(), digests.sort());
    store.close();
  });

  it('checks the configuration at the edge, says what is wrong with a store it cannot use, and makes a missing bucket', async () => {
    const env = bucketEnv();
    const run = (extra: Record<string, string>) => migrateArtifacts('/nonexistent', { SVC_STATE_DIR: tmpdir(), ...extra });
    // Half a configuration is refused, naming what is missing.
    const half = await run({
      SVC_ARTIFACT_S3_ENDPOINT: env.SVC_ARTIFACT_S3_ENDPOINT!,
      SVC_ARTIFACT_S3_BUCKET: env.SVC_ARTIFACT_S3_BUCKET!,
    });
    assert.equal(half.code, 1, half.out);
    assert.match(half.out, /SVC_ARTIFACT_S3_ACCESS_KEY_ID: required with SVC_ARTIFACT_S3_ENDPOINT, SVC_ARTIFACT_S3_BUCKET/);
    const badBucket = await run({ ...env, SVC_ARTIFACT_S3_BUCKET: 'Not_A_Bucket' });
    assert.equal(badBucket.code, 1, badBucket.out);
    assert.match(badBucket.out, /SVC_ARTIFACT_S3_BUCKET: must be an S3 bucket name/);
    // A wrong secret: the store refuses, and the message says so.
    const wrong = await run({ ...env, SVC_ARTIFACT_S3_SECRET_ACCESS_KEY: 'not-the-secret' });
    assert.equal(wrong.code, 1, wrong.out);
    assert.match(
      wrong.out,
      /the bucket svc-test-[0-9a-f]+ at http:\/\/127\.0\.0\.1:\d+ cannot be used: refused \(HTTP 403: the key pair is wrong or may not use this bucket\)/,
    );
    // A path that is not a directory store (mistyped, a claim not mounted) is an error, not "nothing to copy".
    const notAStore = await run(env);
    assert.equal(notAStore.code, 1, notAStore.out);
    assert.match(notAStore.out, /\/nonexistent is not a directory of artifacts/);
    // Right: the bucket is made, and an empty directory store moves nothing.
    const empty = await dir();
    await mkdir(path.join(empty, 'sha256'));
    const right = await migrateArtifacts(empty, { SVC_STATE_DIR: tmpdir(), SVC_ARTIFACT_DIR: path.join(empty, 'cache'), ...env });
    assert.equal(right.code, 0, right.out);
    assert.match(right.out, /0 copied, 0 there already, 0 refused/);
  });

  it('moves a directory of artifacts into a bucket: copies each once, refuses a file whose bytes are not its name, runs again', async () => {
    const env = bucketEnv();
    const legacy = await dir();
    await mkdir(path.join(legacy, 'sha256'));
    const good = [Buffer.from('first tree'), Buffer.from('second tree')];
    for (const b of good) await writeFile(path.join(legacy, 'sha256', digestOf(b).slice(7)), b);
    // A file that lies about its content: never copied under the name it claims.
    await writeFile(path.join(legacy, 'sha256', digestOf(Buffer.from('what it claims')).slice(7)), 'something else');
    await writeFile(path.join(legacy, 'sha256', 'not-a-digest'), 'ignored');
    const cache = await dir();
    const migrate = (...flags: string[]) => migrateArtifacts([...flags, legacy], { SVC_STATE_DIR: cache, SVC_ARTIFACT_DIR: cache, ...env });
    const first = await migrate();
    assert.equal(first.code, 1, 'a refused file fails the run');
    assert.match(first.out, /2 copied, 0 there already, 1 refused/);
    assert.match(first.out, /its bytes are sha256:/);
    // Nothing written beside the source (the chart mounts the old claim read-only), nothing left staged.
    assert.deepEqual((await readdir(legacy)).sort(), ['sha256']);
    assert.deepEqual(await readdir(path.join(cache, 'tmp')), []);
    const store = new S3ArtifactStore(objectStoreConfigOf(env), await dir());
    assert.deepEqual((await store.list()).map((a) => a.digest).sort(), good.map(digestOf).sort());
    // Again, as the chart's init container runs it: what is there is skipped, and the refused file
    // is logged without keeping the API from starting.
    const again = await migrate('--allow-refused');
    assert.equal(again.code, 0, again.out);
    assert.match(again.out, /0 copied, 2 there already, 1 refused/);
    store.close();
  });
});
