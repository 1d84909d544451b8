// The static-site server of runtime/ against a real directory over real HTTP.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cacheControl, createStaticSite, parseRange } from '../../runtime/static-site.js';
import { scratchDir } from '../support/scratch.js';

describe('runtime static site', () => {
  let server: Server;
  let base: string;
  before(async () => {
    const root = scratchDir('svc-site-');
    const put = (rel: string, content: string) => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), content);
    };
    put('index.html', '<h1>home</h1>');
    put('about.html', '<h1>about</h1>');
    put('docs/index.html', '<h1>docs</h1>');
    put('404.html', '<h1>lost</h1>');
    put('app.3f9a1c2e.js', 'console.log(1)');
    put('data.txt', '0123456789');
    writeFileSync(path.join(path.dirname(root), 'secret.txt'), 'outside');
    const site = createStaticSite(root);
    server = createServer((req, res) => void site(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server?.close());

  const get = (p: string, headers: Record<string, string> = {}, method = 'GET') => fetch(base + p, { headers, method, redirect: 'manual' });

  it('serves index files and clean URLs with content types', async () => {
    for (const [p, body] of [
      ['/', '<h1>home</h1>'],
      ['/about', '<h1>about</h1>'],
      ['/about.html', '<h1>about</h1>'],
      ['/docs/', '<h1>docs</h1>'],
    ]) {
      const res = await get(p!);
      assert.equal(res.status, 200, p);
      assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(await res.text(), body);
    }
    const dir = await get('/docs?x=1');
    assert.equal(dir.status, 308);
    assert.equal(dir.headers.get('location'), '/docs/?x=1');
  });

  it('answers unknown paths with the site’s 404.html and status 404', async () => {
    const res = await get('/nope');
    assert.equal(res.status, 404);
    assert.equal(await res.text(), '<h1>lost</h1>');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
  });

  it('never serves outside the site root', async () => {
    for (const p of ['/../secret.txt', '/%2e%2e/secret.txt', '/..%2fsecret.txt', '/%00', '/%E0%A4%A']) {
      const res = await fetch(base + p);
      const text = await res.text();
      assert.notEqual(text, 'outside', p);
      assert.ok(res.status === 404 || res.status === 400, `${p}: ${res.status}`);
    }
  });

  it('sends ETags and answers If-None-Match with 304; caches by kind of file', async () => {
    const first = await get('/data.txt');
    const etag = first.headers.get('etag')!;
    assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
    assert.equal((await get('/data.txt', { 'if-none-match': etag })).status, 304);
    assert.equal((await get('/data.txt', { 'if-none-match': `W/${etag}` })).status, 304);
    assert.equal((await get('/data.txt', { 'if-none-match': '"other"' })).status, 200);
    assert.equal((await get('/')).headers.get('cache-control'), 'public, max-age=0, must-revalidate');
    assert.equal((await get('/app.3f9a1c2e.js')).headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(cacheControl('logo.png'), 'public, max-age=300');
  });

  it('serves byte ranges, refuses unsatisfiable ones with 416', async () => {
    const part = await get('/data.txt', { range: 'bytes=2-5' });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), 'bytes 2-5/10');
    assert.equal(await part.text(), '2345');
    assert.equal(await (await get('/data.txt', { range: 'bytes=7-' })).text(), '789');
    assert.equal(await (await get('/data.txt', { range: 'bytes=-3' })).text(), '789');
    const bad = await get('/data.txt', { range: 'bytes=20-30' });
    assert.equal(bad.status, 416);
    assert.equal(bad.headers.get('content-range'), 'bytes */10');
    assert.equal((await get('/data.txt', { range: 'bytes=0-1,4-5' })).status, 200, 'several ranges: the whole file');
    assert.deepEqual(parseRange('bytes=0-100', 10), { start: 0, end: 9 });
  });

  it('answers HEAD without a body and refuses other methods with 405', async () => {
    const head = await get('/data.txt', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), '10');
    assert.equal(await head.text(), '');
    const post = await get('/', {}, 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
  });
});

describe('runtime process', () => {
  it('serves SVC_SITE_ROOT on $HOST:$PORT and stops on SIGTERM', async () => {
    const { spawn } = await import('node:child_process');
    const { repoRoot } = await import('../../lib/paths.js');
    const root = scratchDir('svc-site-');
    writeFileSync(path.join(root, 'index.html'), 'served by the runtime');
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/runtime/main.js')], {
      env: { ...process.env, SVC_SITE_ROOT: root, HOST: '127.0.0.1', PORT: String(port), SVC_LOG_LEVEL: 'silent', SVC_DRAIN_MS: '0' },
      stdio: 'ignore',
    });
    // Listened for from the start: a runtime that fails at once (dist/ not built) fails the test, not hangs it.
    const exited = new Promise((r) => child.once('exit', r));
    try {
      let text = '';
      for (let i = 0; i < 100 && !text; i++) {
        text = await fetch(`http://127.0.0.1:${port}/`).then(
          (r) => r.text(),
          () => '',
        );
        if (!text) await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(text, 'served by the runtime');
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});
