// ingress-auth's routing core without a cluster: host parsing, header scrubbing in every spelling,
// the JSON/HTML choice of error answers, which failures are retried, the hostname rule for two Apps
// of one name, EndpointSlice readiness, and the proxy against local upstream servers.
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { prefersJson, errorPage } from '../../ingress-auth/errors.js';
import { downstreamHeaders, isPlatformHeader, upstreamHeaders } from '../../ingress-auth/headers.js';
import { appOfHost } from '../../ingress-auth/host.js';
import { Proxy, type Outcome } from '../../ingress-auth/proxy.js';
import { hasBody, retryable } from '../../ingress-auth/retry.js';
import { backendsOfSlice, EndpointIndex, HostIndex, type Backend } from '../../ingress-auth/routes.js';
import { platformPath } from '../../ingress-auth/server.js';
import { ConfigError, loadConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { eventually } from '../support/wait.js';

const fwd = { requestId: 'rid-1', clientIp: '10.0.0.9', proto: 'http' as const, host: 'shop.apps.localhost:8081' };

describe('ingress-auth: configuration', () => {
  it('listens on 0.0.0.0:8081 by default; settings are validated', () => {
    const c = loadConfig({}, { exists: () => false });
    assert.deepEqual(
      { ...c.proxy },
      {
        host: '0.0.0.0',
        port: 8081,
        upstreamConnections: 256,
        upstreamTimeoutMs: 60_000,
        workers: availableParallelism(),
        tlsPort: undefined,
        tlsPublicPort: 443,
      },
    );
    assert.equal(loadConfig({ SVC_PROXY_TLS_PORT: '8443' }, { exists: () => false }).proxy.tlsPort, 8443);
    assert.equal(loadConfig({ SVC_PROXY_WORKERS: '3' }, { exists: () => false }).proxy.workers, 3);
    assert.throws(() => loadConfig({ SVC_PROXY_WORKERS: '0' }, { exists: () => false }), /SVC_PROXY_WORKERS: must be 1-64/);
    assert.equal(loadConfig({ SVC_PROXY_PORT: '9000', SVC_PROXY_HOST: '127.0.0.1' }, { exists: () => false }).proxy.port, 9000);
    assert.throws(() => loadConfig({ SVC_PROXY_PORT: '0' }, { exists: () => false }), ConfigError);
    assert.throws(() => loadConfig({ SVC_PROXY_UPSTREAM_TIMEOUT_MS: 'soon' }, { exists: () => false }), /SVC_PROXY_UPSTREAM_TIMEOUT_MS/);
  });
});

describe('ingress-auth: host parsing', () => {
  const d = 'apps.localhost';
  it('finds the app in <app>.<domain>, any case, any port, trailing dot', () => {
    assert.equal(appOfHost('shop.apps.localhost', d), 'shop');
    assert.equal(appOfHost('shop.apps.localhost:8081', d), 'shop');
    assert.equal(appOfHost('SHOP.Apps.LocalHost:80', d), 'shop');
    assert.equal(appOfHost('shop.apps.localhost.', d), 'shop');
    assert.equal(appOfHost('shop--pr-7.apps.localhost', d), 'shop--pr-7', 'previews route like apps');
  });
  it('refuses anything else', () => {
    for (const h of [
      undefined,
      '',
      'apps.localhost',
      '.apps.localhost',
      'a.b.apps.localhost',
      'shop.apps.localhost.evil',
      'shopapps.localhost',
      '127.0.0.1:8081',
      '[::1]:8081',
      'shop.apps.localhost:x',
      '-shop.apps.localhost',
      'sh_op.apps.localhost',
      `${'a'.repeat(64)}.apps.localhost`,
    ]) {
      assert.equal(appOfHost(h, d), undefined, String(h));
    }
  });
});

describe('ingress-auth: headers', () => {
  it('recognises the platform namespace in every spelling', () => {
    for (const n of [
      'X-Svc-Auth-Subject',
      'x-svc-auth-email',
      'X_SVC_AUTH_EMAIL',
      'x_svc_auth_subject',
      'x-Svc_auth-Provider',
      'X-SVC',
      'x_svc',
      'x-svc-',
    ])
      assert.ok(isPlatformHeader(n), n);
    for (const n of ['x-svcx', 'svc-auth', 'x-service', 'accept']) assert.ok(!isPlatformHeader(n), n);
  });

  it('removes spoofed x-svc headers (duplicates too), hop-by-hop and forwarding headers; sets ours', () => {
    const raw = [
      'Host',
      'shop.apps.localhost:8081',
      'X-Svc-Auth-Subject',
      'admin',
      'x-svc-auth-subject',
      'admin2',
      'X_SVC_AUTH_EMAIL',
      'a@b.c',
      'x_Svc-auth-provider',
      'idp',
      'X-Forwarded-For',
      '1.2.3.4',
      'x-forwarded-for',
      '5.6.7.8',
      'X-Forwarded-Proto',
      'https',
      'X-Forwarded-Host',
      'evil.example',
      'Forwarded',
      'for=1.2.3.4',
      'X-Request-Id',
      'client-chosen',
      'Connection',
      'keep-alive, X-Custom-Hop',
      'X-Custom-Hop',
      'x',
      'Keep-Alive',
      'timeout=5',
      'Transfer-Encoding',
      'chunked',
      'Accept',
      'text/html',
      'Cookie',
      'a=1',
      'Cookie',
      'b=2',
    ];
    const out = upstreamHeaders(raw, fwd);
    const names = out.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    assert.ok(!names.some((n) => n.replace(/_/g, '-').startsWith('x-svc')), names.join());
    for (const gone of ['connection', 'keep-alive', 'transfer-encoding', 'x-custom-hop', 'forwarded'])
      assert.ok(!names.includes(gone), gone);
    const values = (name: string) => out.filter((_, i) => i % 2 === 1 && out[i - 1]!.toLowerCase() === name);
    assert.deepEqual(values('x-forwarded-for'), ['10.0.0.9'], 'replaced, not appended');
    assert.deepEqual(values('x-forwarded-proto'), ['http']);
    assert.deepEqual(values('x-forwarded-host'), ['shop.apps.localhost:8081']);
    assert.deepEqual(values('x-request-id'), ['rid-1']);
    assert.deepEqual(values('host'), ['shop.apps.localhost:8081']);
    assert.deepEqual(values('cookie'), ['a=1', 'b=2']);
    assert.deepEqual(values('accept'), ['text/html']);
  });

  it('keeps Upgrade for a WebSocket handshake', () => {
    const out = upstreamHeaders(['Connection', 'Upgrade', 'Upgrade', 'websocket', 'X-Svc-Auth-Subject', 'x'], fwd, true);
    assert.deepEqual(out.slice(0, 4), ['Upgrade', 'websocket', 'connection', 'upgrade']);
    assert.ok(!out.some((v) => /svc-auth/i.test(v)));
  });

  it('drops hop-by-hop response headers and adds the request id', () => {
    const raw = [
      'Connection',
      'keep-alive, X-Hop',
      'X-Hop',
      '1',
      'Keep-Alive',
      'timeout=5',
      'Transfer-Encoding',
      'chunked',
      'Set-Cookie',
      'a=1',
      'set-cookie',
      'svc-session=planted',
      'Set-Cookie',
      'b=2',
      'Content-Type',
      'text/plain',
      'X-Request-Id',
      'app-chosen',
    ].map((v) => Buffer.from(v, 'latin1'));
    assert.deepEqual(downstreamHeaders(raw, 'rid'), [
      'Set-Cookie',
      'a=1',
      'Set-Cookie',
      'b=2',
      'Content-Type',
      'text/plain',
      'x-request-id',
      'rid',
    ]);
    assert.deepEqual(downstreamHeaders([Buffer.from('Cache-Control'), Buffer.from('public, max-age=60')], 'rid', true), [
      'x-request-id',
      'rid',
      'cache-control',
      'private, no-store',
    ]);
  });
});

describe('ingress-auth: error answers', () => {
  it('answers JSON only to clients that rank JSON above HTML', () => {
    assert.equal(prefersJson('application/json'), true);
    assert.equal(prefersJson('application/json, text/plain, */*'), true);
    assert.equal(prefersJson('application/problem+json'), true);
    assert.equal(prefersJson('text/html;q=0.5, application/json'), true);
    assert.equal(prefersJson(undefined), false);
    assert.equal(prefersJson('*/*'), false);
    assert.equal(prefersJson('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'), false, 'a browser navigation');
    assert.equal(prefersJson('application/json;q=0.5, text/html'), false);
    assert.equal(prefersJson('text/*, application/json;q=0.9'), false);
    assert.equal(prefersJson('application/json;q=0'), false);
    assert.equal(prefersJson('application/json;q=0, */*'), false);
    assert.equal(prefersJson('application/*'), true);
  });
  it('renders {error} or an escaped HTML page, never cached', () => {
    const j = errorPage(503, 'not yet', 'application/json', 'r1');
    assert.deepEqual(JSON.parse(j.body), { error: 'not yet' });
    assert.match(String(j.headers['content-type']), /^application\/json/);
    const h = errorPage(404, 'no app at <x>', 'text/html', 'r2');
    assert.match(h.body, /^<!doctype html>/);
    assert.match(h.body, /no app at &#60;x&#62;/);
    assert.equal(h.headers['cache-control'], 'no-store');
    assert.equal(h.headers['x-request-id'], 'r2');
  });
});

describe('ingress-auth: retry rule', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const closed = Object.assign(new Error('the connection to the machine closed'), { code: 'UPSTREAM_CLOSED' });
  const timeout = Object.assign(new Error('the machine did not answer in time'), { code: 'UPSTREAM_HEADERS_TIMEOUT' });
  it('retries idempotent requests without a body whose connection failed before any response', () => {
    for (const m of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'get']) assert.equal(retryable(m, false, refused, false), true, m);
    assert.equal(retryable('GET', false, closed, false), true);
    assert.equal(retryable('GET', false, { cause: { code: 'ECONNRESET' } }, false), true, 'the code of a wrapped cause');
  });
  it('does not retry otherwise', () => {
    assert.equal(retryable('POST', false, refused, false), false, 'not idempotent');
    assert.equal(retryable('PATCH', false, refused, false), false);
    assert.equal(retryable('PUT', true, refused, false), false, 'a body cannot be sent again');
    assert.equal(retryable('GET', false, refused, true), false, 'the response had started');
    assert.equal(retryable('GET', false, timeout, false), false, 'the app may be working on it');
    assert.equal(retryable('GET', false, new Error('boom'), false), false);
  });
  it('sees a body in a length or a chunked encoding', () => {
    assert.equal(hasBody({}), false);
    assert.equal(hasBody({ 'content-length': '0' }), false);
    assert.equal(hasBody({ 'content-length': '5' }), true);
    assert.equal(hasBody({ 'transfer-encoding': 'chunked' }), true);
  });
});

describe('ingress-auth: platform paths', () => {
  it('reserves /_svc however it is spelled', () => {
    for (const p of ['/_svc', '/_svc/health', '/_SVC/auth/login?next=/', '/%5Fsvc/health', '//_svc/x', '/%5fSvc/'])
      assert.ok(platformPath(p), p);
    for (const p of ['/', '/_svcx', '/a/_svc/', '/_sv', '/?/_svc/']) assert.equal(platformPath(p), undefined, p);
  });
});

const app = (ns: string, name: string, uid: string, created: string, deleting = false): App => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: {
    namespace: ns,
    name,
    uid,
    creationTimestamp: created as unknown as Date,
    ...(deleting ? { deletionTimestamp: new Date() } : {}),
  },
  spec: {},
});

describe('ingress-auth: route indexes', () => {
  it('gives a hostname to the oldest App of its name; the next takes over when it goes', () => {
    const idx = new HostIndex();
    const a = app('acct-a', 'shop', 'uid-b', '2026-01-01T00:00:00Z');
    const b = app('acct-b', 'shop', 'uid-a', '2026-01-02T00:00:00Z');
    idx.upsert(b);
    idx.upsert(a);
    assert.equal(idx.holder('shop')?.metadata.namespace, 'acct-a');
    // Same second: the smaller uid, so every replica agrees.
    const c = app('acct-c', 'same', 'uid-2', '2026-01-01T00:00:00Z');
    const d = app('acct-d', 'same', 'uid-1', '2026-01-01T00:00:00Z');
    idx.upsert(c);
    idx.upsert(d);
    assert.equal(idx.holder('same')?.metadata.namespace, 'acct-d');
    idx.upsert(app('acct-a', 'shop', 'uid-b', '2026-01-01T00:00:00Z', true));
    assert.equal(idx.holder('shop')?.metadata.namespace, 'acct-b', 'an App being deleted holds nothing');
    idx.remove(a);
    idx.remove(b);
    assert.equal(idx.holder('shop'), undefined);
  });

  const slice = (
    name: string,
    endpoints: k8s.V1Endpoint[],
    ports: k8s.DiscoveryV1EndpointPort[] = [{ name: 'http', port: 8080 }],
    service = 'shop',
  ): k8s.V1EndpointSlice => ({
    addressType: 'IPv4',
    metadata: { name, namespace: 'acct-a', labels: { 'kubernetes.io/service-name': service } },
    endpoints,
    ports,
  });

  it('routes to ready endpoints on the port named http, draining ones only when none is ready', () => {
    const s = slice('shop-1', [
      { addresses: ['10.244.0.2'], conditions: { ready: true } },
      { addresses: ['10.244.0.3'], conditions: {} },
      { addresses: ['10.244.0.4'], conditions: { ready: false, serving: true, terminating: true } },
      { addresses: ['10.244.0.5'], conditions: { ready: false, serving: false } },
    ]);
    const b = backendsOfSlice(s);
    assert.deepEqual(
      b.ready.map((x) => x.origin),
      ['http://10.244.0.2:8080', 'http://10.244.0.3:8080'],
    );
    assert.deepEqual(
      b.draining.map((x) => x.origin),
      ['http://10.244.0.4:8080'],
    );
    assert.deepEqual(
      backendsOfSlice(slice('x', [{ addresses: ['10.244.0.2'] }], [{ name: 'metrics', port: 9090 }])).ready,
      [],
      'no http port',
    );

    const idx = new EndpointIndex();
    idx.upsert(s);
    idx.upsert(slice('shop-2', [{ addresses: ['10.244.1.9'], conditions: { ready: true } }]));
    assert.deepEqual(
      idx.backends('acct-a', 'shop').map((x) => x.address),
      ['10.244.0.2', '10.244.0.3', '10.244.1.9'],
    );
    idx.upsert(slice('shop-1', [{ addresses: ['10.244.0.4'], conditions: { ready: false, serving: true, terminating: true } }]));
    idx.remove(slice('shop-2', []));
    assert.deepEqual(
      idx.backends('acct-a', 'shop').map((x) => x.address),
      ['10.244.0.4'],
      'a draining machine still answers',
    );
    assert.deepEqual([...idx.origins()], ['http://10.244.0.4:8080']);
    assert.deepEqual(idx.backends('acct-a', 'other'), []);
  });

  it("lets a request wait for an app's first ready endpoint: woken by the slice that brings one, not by one that brings none", async () => {
    const idx = new EndpointIndex();
    const started = Date.now();
    const waiting = idx.whenBackends('acct-a', 'shop', 5_000);
    // Another app's slice, then this app's slice with no ready endpoint: still waiting.
    idx.upsert(slice('other-1', [{ addresses: ['10.244.0.7'], conditions: { ready: true } }], undefined, 'other'));
    idx.upsert(slice('shop-1', [{ addresses: ['10.244.0.8'], conditions: { ready: false } }]));
    setTimeout(() => idx.upsert(slice('shop-1', [{ addresses: ['10.244.0.8'], conditions: { ready: true } }])), 50);
    assert.deepEqual(
      (await waiting).map((b) => b.address),
      ['10.244.0.8'],
    );
    assert.ok(Date.now() - started < 1_000, 'woken by the slice, not the deadline');
    assert.deepEqual(
      (await idx.whenBackends('acct-a', 'shop', 5_000)).map((b) => b.address),
      ['10.244.0.8'],
      'at once when there are some',
    );
    const t = Date.now();
    assert.deepEqual(await idx.whenBackends('acct-a', 'none', 100), [], 'none by the deadline');
    assert.ok(Date.now() - t >= 90);
  });
});

describe('ingress-auth: proxy against local upstreams', () => {
  const servers: Server[] = [];
  const seen: Array<{ who: string; method: string; headers: IncomingHttpHeaders; body: string }> = [];
  let a: Backend;
  let b: Backend;
  let refused: Backend;
  let front: Server;
  let frontUrl: string;
  let backends: Backend[] = [];
  const proxy = new Proxy({ connectionsPerUpstream: 8, headersTimeoutMs: 2_000, log: createLogger('test', 'silent') });

  const upstream = async (who: string): Promise<Backend> => {
    const s = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ who, method: req.method!, headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': who });
        res.end(`${who}:${body}`);
      });
    });
    s.on('upgrade', (req, socket) => {
      // The head in two writes (the proxy must collect it), with cookies the app may and may not set.
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${req.headers.upgrade}\r\nconnection: upgrade\r\nSet-Cookie: svc-session=planted; Path=/\r\n`,
      );
      setTimeout(
        () =>
          socket.write(
            `set-cookie: theme=dark\r\nSET-COOKIE: __Host-svc_flow=x\r\nx-saw-subject: ${String(req.headers['x-svc-auth-subject'] ?? 'none')}\r\n\r\n`,
          ),
        20,
      );
      socket.on('data', (d: Buffer) => socket.write(`${who} echo ${d.toString()}`));
      socket.on('end', () => socket.end());
    });
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    servers.push(s);
    const port = (s.address() as AddressInfo).port;
    return { address: '127.0.0.1', port, origin: `http://127.0.0.1:${port}` };
  };

  before(async () => {
    a = await upstream('a');
    b = await upstream('b');
    // A port nothing listens on: a machine that went away.
    const tmp = net.createServer().listen(0, '127.0.0.1');
    await once(tmp, 'listening');
    const port = (tmp.address() as AddressInfo).port;
    await new Promise((r) => tmp.close(r));
    refused = { address: '127.0.0.1', port, origin: `http://127.0.0.1:${port}` };
    front = createServer((req, res) => void proxy.forward(req, res, 'k', () => backends, { ...fwd, host: req.headers.host ?? '' }));
    front.on('upgrade', (req, socket, head) =>
      proxy.upgrade(req, socket, head, backends[0]!, { ...fwd, host: req.headers.host ?? '' }, () => undefined),
    );
    front.listen(0, '127.0.0.1');
    await once(front, 'listening');
    frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  });
  after(async () => {
    await proxy.close();
    front.closeAllConnections();
    for (const s of [front, ...servers]) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('balances round robin and passes status, headers and body', async () => {
    backends = [a, b];
    const who = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${frontUrl}/x?y=1`, { headers: { 'x-svc-auth-subject': 'spoof' } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-request-id'), 'rid-1');
      who.push(res.headers.get('x-upstream'));
      await res.text();
    }
    assert.deepEqual(who.sort(), ['a', 'a', 'b', 'b']);
    assert.ok(seen.every((s) => s.headers['x-svc-auth-subject'] === undefined));
    const post = await fetch(`${frontUrl}/p`, { method: 'POST', body: 'hello' });
    assert.match(await post.text(), /^[ab]:hello$/);
  });

  it('retries an idempotent request once on another machine when the connection is refused', async () => {
    for (let i = 0; i < 4; i++) {
      backends = [refused, a];
      const res = await fetch(`${frontUrl}/r`, { method: i % 2 ? 'DELETE' : 'GET' });
      assert.equal(res.status, 200, `attempt ${i}`);
      assert.equal(await res.text(), 'a:');
    }
  });

  it('does not retry a POST, and answers 502 (JSON or HTML) when no machine answers', async () => {
    backends = [refused, a];
    const statuses = [];
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${frontUrl}/p`, { method: 'POST', body: 'x', headers: { accept: 'application/json' } });
      statuses.push(res.status);
      if (res.status === 502) assert.deepEqual(await res.json(), { error: "the app's machine did not answer" });
      else await res.text();
    }
    assert.deepEqual(statuses.sort(), [200, 502], 'the POST that met the refused machine failed');
    backends = [refused];
    const res = await fetch(`${frontUrl}/g`);
    assert.equal(res.status, 502);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await res.text(), /Bad gateway/);
  });

  it('passes a WebSocket-style upgrade through, without spoofed headers, and the app cannot set a platform cookie in its answer', async () => {
    backends = [b];
    const port = Number(new URL(frontUrl).port);
    const sock = net.connect(port, '127.0.0.1');
    await once(sock, 'connect');
    sock.write('GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Svc-Auth-Subject: spoof\r\n\r\n');
    try {
      let got = '';
      sock.on('data', (d: Buffer) => (got += d.toString()));
      await eventually('the 101 and its headers', () => got.includes('\r\n\r\n'), { timeoutMs: 5000, intervalMs: 5 });
      assert.match(got, /^HTTP\/1.1 101/);
      assert.match(got, /x-saw-subject: none/);
      assert.match(got, /set-cookie: theme=dark\r\n/);
      assert.doesNotMatch(got, /svc-session|svc_flow|planted/i);
      sock.write('ping');
      await eventually('the echo', () => /b echo ping/.test(got), { timeoutMs: 5000, intervalMs: 5 });
    } finally {
      // Even when an assertion fails: an open socket would keep the front server from closing.
      sock.destroy();
    }
  });

  it('lets go of the machine when the client leaves mid-answer, whether the caller listens for the close (dispatch) or not (forward)', async () => {
    // A machine that sends its head and one chunk, then holds the answer open.
    let opened = 0;
    let closed = 0;
    const slow = createServer((_req, res) => {
      opened += 1;
      res.socket?.on('close', () => (closed += 1));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first chunk');
    });
    slow.listen(0, '127.0.0.1');
    await once(slow, 'listening');
    servers.push(slow);
    const sport = (slow.address() as AddressInfo).port;
    const machine: Backend = { address: '127.0.0.1', port: sport, origin: `http://127.0.0.1:${sport}` };
    const outcomes: Outcome[] = [];
    const dispatching = createServer((req, res) => {
      const outcome: Outcome = {};
      outcomes.push(outcome);
      res.on('close', () => outcome.exchange?.clientGone());
      proxy.dispatch(req, res, 'slow', () => [machine], { ...fwd, host: req.headers.host ?? '' }, outcome);
    });
    dispatching.listen(0, '127.0.0.1');
    await once(dispatching, 'listening');
    servers.push(dispatching);
    const fronts = [(dispatching.address() as AddressInfo).port, Number(new URL(frontUrl).port)];
    backends = [machine];
    for (const [i, port] of fronts.entries()) {
      const client = net.connect(port, '127.0.0.1');
      await once(client, 'connect');
      client.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
      let got = '';
      client.on('data', (d: Buffer) => (got += d.toString()));
      await eventually('the first chunk', () => got.includes('first chunk'), { timeoutMs: 5000, intervalMs: 5 });
      client.destroy();
      await eventually(`the machine's connection closed (${i ? 'forward' : 'dispatch'})`, () => closed === i + 1, {
        timeoutMs: 5000,
        intervalMs: 5,
      });
    }
    assert.equal(opened, 2);
    assert.equal(outcomes[0]!.error, 'client went away');
  });

  it('reaches the upstream with the HTTP client of node as well (Host kept)', async () => {
    backends = [a];
    const port = Number(new URL(frontUrl).port);
    const body = await new Promise<string>((resolve, reject) => {
      const r = httpRequest({ port, host: '127.0.0.1', path: '/h', headers: { host: 'shop.apps.localhost:8081' } }, (res) => {
        let t = '';
        res.on('data', (c: Buffer) => (t += c.toString()));
        res.on('end', () => resolve(t));
      });
      r.on('error', reject);
      r.end();
    });
    assert.equal(body, 'a:');
    assert.equal(seen.at(-1)?.headers.host, 'shop.apps.localhost:8081');
    assert.equal(seen.at(-1)?.headers['x-forwarded-host'], 'shop.apps.localhost:8081');
  });
});
