// Attack: a hostile machine against ingress-auth's upstream client (ingress-auth/upstream/upstream.ts)
// and the proxy in front of it. Raw TCP servers on loopback play the machine: they smuggle a second
// answer after the first, answer with ambiguous framing, never finish a head, close keep-alive
// connections under the client; a request must never receive an answer meant for another one, a
// header we were handed must never split a line, and what is legitimate (keep-alive, limits, bodies
// of either framing, backpressure) must keep working.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import net, { type AddressInfo, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { Proxy } from '../../ingress-auth/proxy.js';
import { sendableValue, Upstream, type UpstreamError, type UpstreamRequest } from '../../ingress-auth/upstream/upstream.js';
import { createLogger } from '../../lib/logger.js';

interface Answer {
  status: number;
  headers: string[];
  body: Buffer;
}

/** One exchange through `up`, as a promise: the answer, or the error's code. */
function send(up: Upstream, r: Partial<UpstreamRequest> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let head: Omit<Answer, 'body'> | undefined;
    const chunks: Buffer[] = [];
    up.request(
      { method: 'GET', path: '/', headers: [], ...r },
      {
        onHead: (status, _reason, headers) => (head = { status, headers }),
        onBody: (chunk) => chunks.push(Buffer.from(chunk)),
        onEnd: () => resolve({ ...head!, body: Buffer.concat(chunks) }),
        onError: (err: UpstreamError) => reject(Object.assign(new Error(err.message), { code: err.code })),
      },
    );
  });
}

const servers: Array<Server | HttpServer> = [];
after(async () => {
  for (const s of servers) {
    if ('closeAllConnections' in s) s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A raw machine: `onRequest` gets each request head (as text) and the socket it came on. */
async function machine(onRequest: (head: string, socket: Socket, n: number) => void): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  let n = 0;
  const s = net.createServer((socket) => {
    connections++;
    let buf = '';
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      let end: number;
      while ((end = buf.indexOf('\r\n\r\n')) !== -1) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        onRequest(head, socket, n++);
      }
    });
  });
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  servers.push(s);
  return { port: (s.address() as AddressInfo).port, connections: () => connections };
}

const upstream = (port: number, opts: Partial<ConstructorParameters<typeof Upstream>[2]> = {}) =>
  new Upstream('127.0.0.1', port, { connections: 4, headersTimeoutMs: 5_000, ...opts });

describe('security: the upstream client against a hostile machine', () => {
  it('an answer smuggled after the first is never taken for the next request', async () => {
    const m = await machine((head, socket) => {
      const path = head.split(' ')[1];
      // Every answer carries a forged second one, which would answer the next request on this connection.
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${path!.length}\r\n\r\n${path}HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged`);
    });
    const up = upstream(m.port, { connections: 1 });
    for (const path of ['/a', '/bb', '/ccc']) assert.equal((await send(up, { path })).body.toString(), path);
    assert.equal(m.connections(), 3, 'a connection that carried extra bytes is never used again');
    await up.close();
  });

  it('ambiguous framing is a 502 for the client, and the next client is answered by the machine, not by leftovers', async () => {
    let n = 0;
    const m = await machine((_head, socket) => {
      if (n++ === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHTTP/\r\n0\r\n\r\n');
      else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nreal');
    });
    const proxy = new Proxy({ connectionsPerUpstream: 1, headersTimeoutMs: 5_000, log: createLogger('test', 'silent') });
    const backend = { address: '127.0.0.1', port: m.port, origin: `http://127.0.0.1:${m.port}` };
    const front = createHttpServer(
      (req, res) => void proxy.forward(req, res, 'k', () => [backend], { requestId: 'r', clientIp: '127.0.0.1', proto: 'http', host: 'x' }),
    );
    front.listen(0, '127.0.0.1');
    await once(front, 'listening');
    servers.push(front);
    const url = `http://127.0.0.1:${(front.address() as AddressInfo).port}/`;
    const first = await fetch(url);
    assert.equal(first.status, 502);
    await first.text();
    const second = await fetch(url);
    assert.deepEqual([second.status, await second.text()], [200, 'real']);
    await proxy.close();
  });

  it('a head that never ends fails with a headers timeout; a head over the limit fails at once', async () => {
    const slow = await machine((_head, socket) => {
      socket.write('HTTP/1.1 200 OK\r\n');
      const drip = setInterval(() => (socket.writable ? socket.write('X: y\r\n') : clearInterval(drip)), 50);
      socket.on('close', () => clearInterval(drip));
    });
    const up = upstream(slow.port, { headersTimeoutMs: 400 });
    const started = Date.now();
    await assert.rejects(send(up), { code: 'UPSTREAM_HEADERS_TIMEOUT' });
    const took = Date.now() - started;
    assert.ok(took >= 400 && took < 1_500, `timed out after ${took} ms`);
    await up.close();
    const big = await machine((_head, socket) => socket.write(`HTTP/1.1 200 OK\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`));
    await assert.rejects(send(upstream(big.port)), { code: 'UPSTREAM_BAD_RESPONSE' });
  });

  it('a header value or target that could end a line is never sent', async () => {
    const heads: string[] = [];
    const m = await machine((head, socket) => {
      heads.push(head);
      socket.write('HTTP/1.1 204 No Content\r\n\r\n');
    });
    const up = upstream(m.port);
    await assert.rejects(send(up, { headers: ['x-svc-auth-name', 'Eve\r\nX-Svc-Auth-Email: admin@corp'] }), {
      code: 'UPSTREAM_BAD_REQUEST',
    });
    await assert.rejects(send(up, { headers: ['x-a', 'a\nb'] }), { code: 'UPSTREAM_BAD_REQUEST' });
    await assert.rejects(send(up, { path: '/a HTTP/1.1\r\nHost: evil\r\n\r\nGET /b' }), { code: 'UPSTREAM_BAD_REQUEST' });
    assert.equal((await send(up, { headers: ['x-a', 'caf\xe9\tok'] })).status, 204);
    assert.deepEqual(heads, ['GET / HTTP/1.1\r\nx-a: caf\xe9\tok\r\nhost: 127.0.0.1:' + m.port], 'only the sendable request went out');
    await up.close();
  });

  it("skips only the entries it is told were checked: node's HTTP parser refuses exactly the bytes it would", async () => {
    // The premise of UpstreamRequest.checked: a value ingress-auth passes on unchecked was read by
    // node's HTTP parser from the client, which answers 400 to every byte sendableValue refuses.
    const server = createHttpServer((req, res) => res.end(req.headers['x-a']));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const disagree: number[] = [];
    for (let byte = 0; byte < 256; byte++) {
      const sock = net.connect(port, '127.0.0.1');
      await once(sock, 'connect');
      const head = Buffer.concat([
        Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nX-A: a'),
        Buffer.from([byte]),
        Buffer.from('b\r\nConnection: close\r\n\r\n'),
      ]);
      sock.end(head);
      const chunks: Buffer[] = [];
      for await (const chunk of sock) chunks.push(chunk as Buffer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'))?.[1]);
      if ((status === 200) !== sendableValue(`a${String.fromCharCode(byte)}b`)) disagree.push(byte);
    }
    assert.deepEqual(disagree, [], 'bytes the parser and sendableValue judge differently');

    const heads: string[] = [];
    const m = await machine((head, socket) => {
      heads.push(head);
      socket.write('HTTP/1.1 204 No Content\r\n\r\n');
    });
    const up = upstream(m.port);
    // An entry at or after `checked` is still checked.
    await assert.rejects(send(up, { headers: ['x-a', 'ok', 'x-request-id', 'r\r\nX-Svc-Auth-Owner: true'], checked: 2 }), {
      code: 'UPSTREAM_BAD_REQUEST',
    });
    assert.equal((await send(up, { headers: ['x-a', 'ok', 'x-b', 'fine'], checked: 2 })).status, 204);
    assert.deepEqual(heads, ['GET / HTTP/1.1\r\nx-a: ok\r\nx-b: fine\r\nhost: 127.0.0.1:' + m.port]);
    await up.close();
  });

  it('a handler that throws on an answer ends that exchange, not the process', async () => {
    const m = await machine((_head, socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    const up = upstream(m.port);
    const err = await new Promise<UpstreamError>((resolve) => {
      up.request(
        { method: 'GET', path: '/', headers: [] },
        {
          onHead: () => {
            throw new Error('boom');
          },
          onBody: () => undefined,
          onEnd: () => undefined,
          onError: resolve,
        },
      );
    });
    assert.equal(err.code, 'UPSTREAM_HANDLER_FAILED');
    assert.equal((await send(up)).body.toString(), 'ok', 'the next exchange is served');
    await up.close();
  });

  it('a keep-alive connection the machine closed is not reused; an answer cut short is an error, not an answer', async () => {
    const m = await machine((head, socket, n) => {
      if (head.includes('/cut')) return socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf');
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      // The machine's own idle timeout, shorter than ours.
      if (n === 0) setTimeout(() => socket.end(), 50);
    });
    const up = upstream(m.port, { connections: 1 });
    assert.equal((await send(up)).body.toString(), 'ok');
    await new Promise((r) => setTimeout(r, 150));
    assert.equal((await send(up)).body.toString(), 'ok', 'the closed connection was dropped, a new one made');
    assert.equal(m.connections(), 2);
    await assert.rejects(send(up, { path: '/cut' }), { code: 'UPSTREAM_CLOSED' });
    await up.close();
  });
});

describe('upstream client: keep-alive, limits and bodies', () => {
  const echo = async () => {
    let connections = 0;
    const s = createHttpServer((req, res) => {
      const hash = createHash('sha256');
      let length = 0;
      req.on('data', (c: Buffer) => {
        hash.update(c);
        length += c.length;
      });
      req.on('end', () => {
        const body = JSON.stringify({
          length,
          sha: hash.digest('hex'),
          te: req.headers['transfer-encoding'] ?? null,
          cl: req.headers['content-length'] ?? null,
        });
        setTimeout(() => res.end(body), req.url === '/slow' ? 30 : 0);
      });
    });
    s.on('connection', () => connections++);
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    servers.push(s);
    return { port: (s.address() as AddressInfo).port, connections: () => connections };
  };

  it('reuses connections, opens at most `connections`, and answers every waiting request in turn', async () => {
    const m = await echo();
    const up = upstream(m.port, { connections: 2 });
    for (let i = 0; i < 5; i++) assert.equal((await send(up)).status, 200);
    assert.equal(m.connections(), 1, 'one keep-alive connection for requests in sequence');
    const answers = await Promise.all(Array.from({ length: 12 }, () => send(up, { path: '/slow' })));
    assert.ok(answers.every((a) => a.status === 200));
    assert.equal(m.connections(), 2, 'never more than the limit');
    assert.ok(up.connections <= 2);
    await up.close();
    assert.equal(up.connections, 0);
  });

  it('streams bodies of a known length as they are, and others chunked, intact, 8 MiB each', async () => {
    const m = await echo();
    const up = upstream(m.port);
    const data = Buffer.alloc(8 << 20, 'abcdefghij');
    const sha = createHash('sha256').update(data).digest('hex');
    const pieces = () =>
      Readable.from(
        (function* () {
          for (let i = 0; i < data.length; i += 65_536) yield data.subarray(i, i + 65_536);
        })(),
      );
    const known: unknown = JSON.parse(
      (
        await send(up, {
          method: 'POST',
          headers: ['content-length', String(data.length)],
          body: { stream: pieces(), length: String(data.length) },
        })
      ).body.toString(),
    );
    assert.deepEqual(known, { length: data.length, sha, te: null, cl: String(data.length) });
    const chunked: unknown = JSON.parse(
      (await send(up, { method: 'POST', body: { stream: pieces(), length: undefined } })).body.toString(),
    );
    assert.deepEqual(chunked, { length: data.length, sha, te: 'chunked', cl: null });
    await up.close();
  });

  it('pauses the machine while the reader cannot keep up, and loses nothing', async () => {
    const big = Buffer.alloc(16 << 20, 'z');
    const s = createHttpServer((_req, res) => res.end(big));
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    servers.push(s);
    const up = upstream((s.address() as AddressInfo).port);
    let got = 0;
    let paused = 0;
    await new Promise<void>((resolve, reject) => {
      const ctl = up.request(
        { method: 'GET', path: '/', headers: [] },
        {
          onHead: () => undefined,
          onBody: (chunk) => {
            got += chunk.length;
            // A slow reader: stop after every 1 MiB for a moment.
            if (got >> 20 !== (got - chunk.length) >> 20) {
              paused++;
              ctl.pause();
              setTimeout(() => ctl.resume(), 5);
            }
          },
          onEnd: resolve,
          onError: reject,
        },
      );
    });
    assert.equal(got, big.length);
    assert.ok(paused >= 15);
    assert.equal((await send(up)).body.length, big.length, 'the connection is usable after a paused answer');
    await up.close();
  });
});
