// Forwarding to an app's machines: one undici keep-alive Pool per machine (chosen over http-proxy-3
// by measurement, docs/benchmarks.md "bench/proxy"), round robin over the ready ones, one retry on
// another machine when that is safe (retry.ts), and WebSocket handshakes spliced onto a raw
// connection to the machine.
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { Pool } from 'undici';
import type { Logger } from '../lib/logger.js';
import { errorPage, sendError } from './errors.js';
import { downstreamHeaders, upstreamHeaders, type Forwarded } from './headers.js';
import { errorCode, hasBody, retryable } from './retry.js';
import type { Backend } from './routes.js';

export interface ProxyOptions {
  connectionsPerUpstream: number;
  headersTimeoutMs: number;
  log: Logger;
}

/** What became of a forwarded request, for the access log. */
export interface Outcome {
  backend?: string;
  retried?: boolean;
  error?: string;
}

export class Proxy {
  private readonly pools = new Map<string, Pool>();
  private readonly next = new Map<string, number>();

  constructor(private readonly opts: ProxyOptions) {}

  private pool(origin: string): Pool {
    let p = this.pools.get(origin);
    if (!p) {
      p = new Pool(origin, {
        connections: this.opts.connectionsPerUpstream,
        headersTimeout: this.opts.headersTimeoutMs,
        // Server-sent events and long downloads have no deadline once the response started.
        bodyTimeout: 0,
        keepAliveTimeout: 4_000,
      });
      this.pools.set(origin, p);
    }
    return p;
  }

  /** Round robin per app; `avoid` is skipped when there is another choice. */
  pick(key: string, backends: readonly Backend[], avoid?: string): Backend | undefined {
    if (backends.length === 0) return undefined;
    const i = this.next.get(key) ?? 0;
    this.next.set(key, (i + 1) % 1_000_000);
    const b = backends[i % backends.length]!;
    if (b.origin === avoid && backends.length > 1) return backends[(i + 1) % backends.length];
    return b;
  }

  /** Closes the pools of machines no EndpointSlice names any more (in-flight requests finish first). */
  prune(live: Set<string>): void {
    for (const [origin, p] of this.pools) {
      if (live.has(origin)) continue;
      this.pools.delete(origin);
      p.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.close().catch(() => undefined)));
  }

  /**
   * Sends the request to one of `backends()` (read again for a retry, the caches may have moved on)
   * and streams the answer back. Answers 502/504 itself when no machine answers.
   */
  async forward(req: IncomingMessage, res: ServerResponse, key: string, backends: () => readonly Backend[], fwd: Forwarded, outcome: Outcome = {}): Promise<Outcome> {
    const method = req.method ?? 'GET';
    const withBody = hasBody(req.headers);
    const headers = upstreamHeaders(req.rawHeaders, fwd);
    const ac = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) ac.abort();
    };
    res.once('close', onClose);
    // stream() hands the machine's answer straight to `res` (no intermediate Readable): measurably
    // faster than request() (docs/benchmarks.md). `started` tells a retryable failure from a broken answer.
    let started = false;
    const send = (b: Backend) =>
      new Promise<void>((resolve, reject) => {
        outcome.backend = b.origin;
        this.pool(b.origin).stream(
          { method: method as 'GET', path: req.url ?? '/', headers, body: withBody ? req : null, signal: ac.signal },
          ({ statusCode, headers: answer }) => {
            started = true;
            res.writeHead(statusCode, downstreamHeaders(answer as Record<string, string | string[]>, fwd.requestId, fwd.personal));
            return res;
          },
          (err) => (err ? reject(err) : resolve()),
        );
      });
    const first = this.pick(key, backends());
    if (!first) {
      sendError(res, 503, 'no machine of this app is ready', req.headers.accept, fwd.requestId);
      return outcome;
    }
    try {
      try {
        await send(first);
      } catch (err) {
        if (ac.signal.aborted || !retryable(method, withBody, err, started)) throw err;
        const again = this.pick(key, backends(), first.origin) ?? first;
        outcome.retried = true;
        this.opts.log.debug({ reqId: fwd.requestId, err: errorCode(err), from: first.origin, to: again.origin }, 'Retrying on another machine');
        await send(again);
      }
    } catch (err) {
      if (ac.signal.aborted) {
        outcome.error = 'client went away';
        return outcome;
      }
      const code = errorCode(err) ?? String(err);
      outcome.error = code;
      if (started) {
        this.opts.log.warn({ reqId: fwd.requestId, upstream: outcome.backend, err: code }, 'Upstream response broke off');
        res.destroy();
        return outcome;
      }
      this.opts.log.warn({ reqId: fwd.requestId, upstream: outcome.backend, err: code, host: fwd.host }, 'Upstream request failed');
      if (code === 'UND_ERR_HEADERS_TIMEOUT') sendError(res, 504, 'the app did not answer in time', req.headers.accept, fwd.requestId);
      else sendError(res, 502, "the app's machine did not answer", req.headers.accept, fwd.requestId);
      return outcome;
    } finally {
      res.off('close', onClose);
    }
    return outcome;
  }

  /**
   * A WebSocket (or other Upgrade) handshake: the request head goes to a machine over a fresh
   * connection, then bytes flow both ways untouched until either side closes.
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, backend: Backend, fwd: Forwarded, done: (status: number, error?: string) => void): void {
    const upstream = net.connect(backend.port, backend.address);
    let connected = false;
    const lines = [`${req.method} ${req.url} HTTP/1.1`];
    const headers = upstreamHeaders(req.rawHeaders, fwd, true);
    for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
    upstream.once('connect', () => {
      connected = true;
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
      done(101);
    });
    upstream.on('error', (err) => {
      if (!connected) {
        this.opts.log.warn({ reqId: fwd.requestId, upstream: backend.origin, err: errorCode(err) }, 'Upstream upgrade failed');
        writeRaw(socket, errorPage(502, 'the app\'s machine did not answer', req.headers.accept, fwd.requestId), 502);
        done(502, errorCode(err));
      } else socket.destroy();
    });
    socket.on('error', () => upstream.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  }
}

const reasons: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 502: 'Bad Gateway', 503: 'Service Unavailable' };

/** An HTTP response written on a socket that left the HTTP server (after an Upgrade request). */
export function writeRaw(socket: Duplex, page: { headers: Record<string, string | number>; body: string }, status: number): void {
  if (!socket.writable) return;
  const head = [`HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}`, ...Object.entries(page.headers).map(([k, v]) => `${k}: ${v}`), 'connection: close'];
  socket.end(`${head.join('\r\n')}\r\n\r\n${page.body}`);
}
