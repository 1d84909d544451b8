// The proxy's held answers (ingress-auth/proxy.ts, fwd.rewrite): an HTML page the ingress fills in
// (a data page's first render) is held whole, rewritten and sent with its new length and without
// the machine's validators; anything else, a page too large to hold, or a rewrite that fails, goes
// as the machine wrote it. Real sockets on loopback, a machine of plain node:http.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, get, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Proxy, rewriteHoldMs, rewriteMaxBytes, rewriteWaitMs } from '../../ingress-auth/proxy.js';
import type { Backend } from '../../ingress-auth/routes.js';
import { createLogger } from '../../lib/logger.js';

describe('ingress: answers held for a rewrite', () => {
  const proxy = new Proxy({ connectionsPerUpstream: 4, headersTimeoutMs: 2_000, log: createLogger('test', 'silent') });
  let machine: Server;
  let front: Server;
  let frontUrl: string;
  let backend: Backend;
  const rewrites: string[] = [];
  const big = `<p>${'x'.repeat(rewriteMaxBytes)}FILL</p>`;

  before(async () => {
    machine = createServer((req, res) => {
      const page = (type: string, body: string, headers: Record<string, string> = {}) => {
        res.writeHead(200, { 'content-type': type, etag: '"machine"', 'last-modified': 'Sun, 29 Nov 2026 00:00:00 GMT', ...headers });
        res.end(body);
      };
      switch (req.url) {
        case '/page':
          return page('text/html; charset=utf-8', '<p>FILL é</p>');
        case '/chunked':
          // Written in pieces, no length: held until the end all the same.
          res.writeHead(200, { 'content-type': 'text/html' });
          res.write('<p>FI');
          setTimeout(() => res.end('LL</p>'), 20);
          return;
        case '/text':
          return page('text/plain', 'FILL');
        case '/latin1':
          return page('text/html; charset=iso-8859-1', 'FILL');
        case '/gzip':
          return page('text/html', 'FILL', { 'content-encoding': 'gzip' });
        case '/missing':
          res.writeHead(404, { 'content-type': 'text/html' });
          return res.end('FILL');
        case '/big':
          return page('text/html', big);
        case '/conditional':
          // What the machine was asked: a page that may be filled is asked for whole and fresh.
          return page('text/html', `FILL ${String(req.headers['if-none-match'] ?? '-')} ${String(req.headers.range ?? '-')}`);
        case '/streamed':
          // A page made as it goes, its end long after its start.
          res.writeHead(200, { 'content-type': 'text/html' });
          res.write('<p>first</p>');
          setTimeout(() => res.end('<p>last FILL</p>'), rewriteHoldMs + 500);
          return;
        case '/slow':
          return page('text/html', 'SLOW FILL');
        case '/broken':
          // The head, part of the body, then the connection cut.
          res.writeHead(200, { 'content-type': 'text/html', 'content-length': '100' });
          res.write('<p>FILL');
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        default:
          return page('text/html', 'FAIL');
      }
    });
    machine.listen(0, '127.0.0.1');
    await once(machine, 'listening');
    const port = (machine.address() as AddressInfo).port;
    backend = { address: '127.0.0.1', port, origin: `http://127.0.0.1:${port}` };
    front = createServer(
      (req, res) =>
        void proxy.forward(req, res, 'k', () => [backend], {
          requestId: 'rid-1',
          clientIp: '127.0.0.1',
          proto: 'http',
          host: 'page.apps.localhost',
          rewrite: (html) => {
            rewrites.push(req.url!);
            if (html.includes('FAIL')) return Promise.reject(new Error('no'));
            if (html.includes('SLOW')) return new Promise((r) => setTimeout(() => r('too late'), rewriteWaitMs + 500));
            return Promise.resolve(html.includes('FILL') ? html.replace('FILL', 'filled & sent') : undefined);
          },
        }),
    );
    front.listen(0, '127.0.0.1');
    await once(front, 'listening');
    frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  });
  after(async () => {
    await proxy.close();
    for (const s of [front, machine]) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('rewrites a whole HTML page, with its new length and without the machine’s ETag and Last-Modified', async () => {
    for (const path of ['/page', '/chunked']) {
      const res = await fetch(frontUrl + path);
      const body = await res.text();
      assert.equal(res.status, 200);
      assert.match(body, /^<p>filled & sent( é)?<\/p>$/, path);
      assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(body)), path);
      assert.equal(res.headers.get('etag'), null, path);
      assert.equal(res.headers.get('last-modified'), null, path);
      assert.equal(res.headers.get('x-request-id'), 'rid-1');
    }
  });

  it('passes anything else as the machine wrote it: other types, charsets, encodings, statuses', async () => {
    rewrites.length = 0;
    for (const path of ['/text', '/latin1', '/gzip', '/missing']) {
      // node:http, which leaves a body as it came (fetch would try to gunzip the gzip one).
      const res = await new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) =>
        get(frontUrl + path, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve({ status: r.statusCode!, headers: r.headers, body: Buffer.concat(chunks).toString('latin1') }));
        }).on('error', reject),
      );
      assert.equal(res.body, 'FILL', path);
      if (res.status === 200) assert.equal(res.headers.etag, '"machine"', path);
    }
    assert.deepEqual(rewrites, [], 'never held');
  });

  it('streams a page too large to hold, and sends a page whose rewrite failed as it was', async () => {
    const res = await fetch(`${frontUrl}/big`);
    assert.equal(await res.text(), big);
    assert.equal(res.headers.get('etag'), '"machine"');
    const failed = await fetch(`${frontUrl}/fail`);
    assert.equal(failed.status, 200);
    assert.equal(await failed.text(), 'FAIL');
    assert.equal(failed.headers.get('etag'), '"machine"');
  });

  it('asks the machine without conditionals or ranges, streams a page still coming after a second, and waits at most a moment for the fill', async () => {
    const conditional = await fetch(`${frontUrl}/conditional`, { headers: { 'if-none-match': '"machine"', range: 'bytes=0-3' } });
    assert.equal(conditional.status, 200);
    assert.equal(await conditional.text(), 'filled & sent - -');
    const started = Date.now();
    const streamed = await fetch(`${frontUrl}/streamed`);
    assert.equal(await streamed.text(), '<p>first</p><p>last FILL</p>', 'as the machine wrote it');
    assert.ok(Date.now() - started >= rewriteHoldMs, 'whole, after its end');
    const slow = await fetch(`${frontUrl}/slow`);
    assert.equal(await slow.text(), 'SLOW FILL', 'the fill was too slow: the page as written');
    assert.equal(slow.headers.get('etag'), '"machine"');
  });

  it('answers a whole 502 when the machine breaks off a held page (nothing of it was sent)', async () => {
    const res = await fetch(`${frontUrl}/broken`);
    assert.equal(res.status, 502);
    await res.text();
  });
});
