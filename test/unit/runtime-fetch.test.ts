// The machine init container's fetch against a real local HTTP server: verified downloads,
// refusals, retries of transient failures, idempotence; and the compiled entry point itself.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { packTree } from '../../lib/artifacts/tarball.js';
import { repoRoot } from '../../lib/paths.js';
import { downloadVerified, fetchArtifact, FetchError, optionsFromEnv, presentDigest } from '../../runtime/fetch.js';
import { scratchDir } from '../support/scratch.js';

const work = scratchDir('svc-fetch-');
let n = 0;
const fresh = () => path.join(work, `root-${n++}`);
const fast = { backoffMs: 20, maxBackoffMs: 50, deadlineMs: 3000 };

describe('runtime fetch', () => {
  let server: Server;
  let base: string;
  let artifact: Buffer;
  let digest: string;
  const hits = new Map<string, number>();

  before(async () => {
    artifact = await packTree({ 'index.html': '<h1>fetched</h1>', 'css/a.css': 'a{}' });
    digest = `sha256:${createHash('sha256').update(artifact).digest('hex')}`;
    server = createServer((req, res) => {
      const p = req.url ?? '/';
      const count = (hits.get(p) ?? 0) + 1;
      hits.set(p, count);
      if (p === '/good') return void res.writeHead(200, { 'Content-Length': artifact.length }).end(artifact);
      if (p === '/flaky' && count <= 2) return void res.writeHead(503).end('busy');
      if (p === '/flaky') return void res.writeHead(200).end(artifact);
      if (p === '/always-500') return void res.writeHead(500).end('broken');
      if (p === '/cut') {
        // Promises the whole artifact, sends half, hangs up.
        res.writeHead(200, { 'Content-Length': artifact.length });
        res.write(artifact.subarray(0, artifact.length >> 1));
        return void setTimeout(() => res.destroy(), 10);
      }
      res.writeHead(404).end('no such artifact');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server?.close());

  it('downloads, verifies and extracts, marking the root with the digest', async () => {
    const root = fresh();
    assert.equal(await fetchArtifact({ url: `${base}/good`, digest, root, ...fast }), 'fetched');
    assert.equal(readFileSync(path.join(root, 'index.html'), 'utf8'), '<h1>fetched</h1>');
    assert.equal(await presentDigest(root), digest);
    assert.deepEqual(readdirSync(root).sort(), ['.svc-artifact', 'css', 'index.html'], 'no download left behind');
  });

  it('is idempotent: a root holding the digest is left alone without a request', async () => {
    const root = fresh();
    await fetchArtifact({ url: `${base}/good`, digest, root, ...fast });
    const before = hits.get('/good');
    assert.equal(await fetchArtifact({ url: `${base}/good`, digest, root, ...fast }), 'present');
    assert.equal(hits.get('/good'), before);
  });

  it('kept (a machine’s runtime): a tree changed since is built again from the verified archive, without a request', async () => {
    const root = fresh();
    assert.equal(await fetchArtifact({ url: `${base}/good`, digest, root, ...fast, keep: true }), 'fetched');
    const before = hits.get('/good');
    // What handler code could do to its own tree: change a page, add one.
    writeFileSync(path.join(root, 'index.html'), '<h1>defaced</h1>');
    writeFileSync(path.join(root, 'planted.html'), 'x');
    assert.equal(await fetchArtifact({ url: `${base}/good`, digest, root, ...fast, keep: true }), 'restored');
    assert.equal(readFileSync(path.join(root, 'index.html'), 'utf8'), '<h1>fetched</h1>');
    assert.equal(existsSync(path.join(root, 'planted.html')), false);
    assert.equal(hits.get('/good'), before, 'no download');
    assert.deepEqual(readdirSync(root).sort(), ['.svc-archive', '.svc-artifact', 'css', 'index.html']);
    // The archive itself changed: not trusted, fetched again.
    writeFileSync(path.join(root, '.svc-archive'), 'not the archive');
    assert.equal(await fetchArtifact({ url: `${base}/good`, digest, root, ...fast, keep: true }), 'fetched');
    assert.equal(readFileSync(path.join(root, 'index.html'), 'utf8'), '<h1>fetched</h1>');
  });

  it('replaces a partial or different tree', async () => {
    const root = fresh();
    await fetchArtifact({ url: `${base}/good`, digest, root, ...fast });
    writeFileSync(path.join(root, 'stale.html'), 'old');
    writeFileSync(path.join(root, '.svc-artifact'), `sha256:${'0'.repeat(64)}\n`);
    assert.equal(await fetchArtifact({ url: `${base}/good`, digest, root, ...fast }), 'fetched');
    assert.equal(existsSync(path.join(root, 'stale.html')), false);
  });

  it('refuses bytes that do not match the digest, naming both digests', async () => {
    const root = fresh();
    const wrong = `sha256:${'a'.repeat(64)}`;
    await assert.rejects(fetchArtifact({ url: `${base}/good`, digest: wrong, root, ...fast }), (err: unknown) => {
      assert.ok(err instanceof FetchError);
      assert.match(err.message, new RegExp(`expected ${wrong}, got ${digest}`));
      return true;
    });
    assert.deepEqual(readdirSync(root), [], 'nothing extracted, nothing left');
  });

  it('does not retry a 404', async () => {
    hits.delete('/missing');
    await assert.rejects(fetchArtifact({ url: `${base}/missing`, digest, root: fresh(), ...fast }), /answered 404/);
    assert.equal(hits.get('/missing'), 1);
  });

  it('retries 5xx and a cut-off body, then succeeds', async () => {
    hits.delete('/flaky');
    const root = fresh();
    assert.equal(await fetchArtifact({ url: `${base}/flaky`, digest, root, ...fast }), 'fetched');
    assert.equal(hits.get('/flaky'), 3);
    await assert.rejects(
      downloadVerified({ url: `${base}/cut`, digest, root, ...fast, deadlineMs: 200 }, path.join(work, 'cut')),
      /broke off|gave up/,
    );
    assert.ok((hits.get('/cut') ?? 0) >= 2, 'retried');
  });

  it('retries a refused connection until the deadline, then gives up', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const started = Date.now();
    await assert.rejects(
      fetchArtifact({ url: `http://127.0.0.1:${port}/x`, digest, root: fresh(), ...fast, deadlineMs: 300 }),
      (err: unknown) => err instanceof FetchError && /cannot reach .*gave up after \d+ attempts/.test(err.message),
    );
    assert.ok(Date.now() - started >= 150, 'backed off and retried');
    hits.delete('/always-500');
    await assert.rejects(
      fetchArtifact({ url: `${base}/always-500`, digest, root: fresh(), ...fast, deadlineMs: 300 }),
      /answered 500.*gave up/,
    );
    assert.ok(hits.get('/always-500')! >= 3);
  });

  it('reads and checks its environment', () => {
    assert.deepEqual(
      optionsFromEnv({ SVC_ARTIFACT_URL: 'http://10.244.0.1:8080/a', SVC_ARTIFACT_DIGEST: digest, SVC_SITE_ROOT: '/site' }),
      {
        url: 'http://10.244.0.1:8080/a',
        digest,
        root: '/site',
      },
    );
    assert.throws(
      () => optionsFromEnv({ SVC_ARTIFACT_URL: 'file:///etc/passwd', SVC_ARTIFACT_DIGEST: 'md5:x' }),
      /SVC_ARTIFACT_URL.*SVC_ARTIFACT_DIGEST.*SVC_SITE_ROOT/,
    );
  });

  const run = (env: Record<string, string>, argv = [path.join(repoRoot, 'dist/runtime/fetch.js')]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, argv, {
        env: { PATH: process.env.PATH ?? '', SVC_LOG_LEVEL: 'info', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('exit', (code) => resolve({ code, out }));
    });

  it('runs as the init container: exit 0 with progress lines, exit 1 on a mismatch', async () => {
    const root = fresh();
    const ok = await run({ SVC_ARTIFACT_URL: `${base}/good`, SVC_ARTIFACT_DIGEST: digest, SVC_SITE_ROOT: root });
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /"bytes":\d+,"ms":\d+/);
    assert.equal(readFileSync(path.join(root, 'index.html'), 'utf8'), '<h1>fetched</h1>');
    const again = await run({ SVC_ARTIFACT_URL: `${base}/good`, SVC_ARTIFACT_DIGEST: digest, SVC_SITE_ROOT: root });
    assert.equal(again.code, 0);
    assert.match(again.out, /already in place/);
    const bad = await run({ SVC_ARTIFACT_URL: `${base}/good`, SVC_ARTIFACT_DIGEST: `sha256:${'b'.repeat(64)}`, SVC_SITE_ROOT: fresh() });
    assert.equal(bad.code, 1);
    assert.match(bad.out, new RegExp(`expected sha256:b{64}, got ${digest}`));
    const viaImage = fresh();
    const image = await run({ SVC_ARTIFACT_URL: `${base}/good`, SVC_ARTIFACT_DIGEST: digest, SVC_SITE_ROOT: viaImage }, [
      path.join(repoRoot, 'dist/runtime/main.js'),
      'fetch',
    ]);
    assert.equal(image.code, 0, `the runtime image's entry point with args [fetch]: ${image.out}`);
    assert.equal(await presentDigest(viaImage), digest);
    const unset = await run({});
    assert.equal(unset.code, 1);
    assert.match(unset.out, /SVC_ARTIFACT_URL/);
  });
});
