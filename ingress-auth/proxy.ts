// Forwarding to an app's machines: one keep-alive Upstream per machine (upstream/upstream.ts, chosen
// over undici and http-proxy-3 by measurement, docs/benchmarks.md "bench/proxy"), round robin over
// the ready ones, one retry on another machine when that is safe (retry.ts), and WebSocket handshakes
// spliced onto a raw connection to the machine.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../lib/logger.js';
import type { App } from '../lib/resources/index.js';
import { errorPage, sendError } from './errors.js';
import { downstreamHeaders, forwardingEntries, upstreamHeaders, type Forwarded } from './headers.js';
import { errorCode, hasBody, retryable } from './retry.js';
import type { Backend } from './routes.js';
import { Upstream, type ExchangeControl, type ExchangeHandler, type UpstreamError } from './upstream/upstream.js';

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
  /**
   * The exchange under way when it was started by dispatch(): the caller's own 'close' listener
   * tells it the client left, so a request has one listener, not two. Not logged.
   */
  exchange?: { clientGone(): void } | undefined;
}

/**
 * The round-robin key of an App: its uid, a string the informer's object keeps from request to
 * request (a key built per request would be hashed anew each time), else its namespace and name.
 */
export function balanceKey(app: App): string {
  return app.metadata.uid ?? `${app.metadata.namespace}/${app.metadata.name}`;
}

export class Proxy {
  private readonly pools = new Map<string, Upstream>();
  private readonly next = new Map<string, number>();

  constructor(readonly opts: ProxyOptions) {}

  /** @internal (Exchange) The machine's connections. Server-sent events and long downloads have no deadline once the answer started. */
  pool(b: Backend): Upstream {
    let p = this.pools.get(b.origin);
    if (!p) {
      p = new Upstream(b.address, b.port, { connections: this.opts.connectionsPerUpstream, headersTimeoutMs: this.opts.headersTimeoutMs });
      this.pools.set(b.origin, p);
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
   * and streams the answer back. Answers 502/504 itself when no machine answers. The promise never
   * rejects; it settles when the exchange is over.
   */
  forward(
    req: IncomingMessage,
    res: ServerResponse,
    key: string,
    backends: () => readonly Backend[],
    fwd: Forwarded,
    outcome: Outcome = {},
  ): Promise<Outcome> {
    const exchange = this.start(req, res, key, backends, fwd, outcome, true);
    return exchange ? exchange.done : Promise.resolve(outcome);
  }

  /**
   * forward() for a caller that does not wait for the end and listens to `res` 'close' itself (the
   * request handler): no promise is made, and the caller's listener calls `outcome.exchange`'s
   * clientGone(), one less allocation, listener and microtask on every request.
   */
  dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    key: string,
    backends: () => readonly Backend[],
    fwd: Forwarded,
    outcome: Outcome = {},
  ): void {
    this.start(req, res, key, backends, fwd, outcome, false);
  }

  private start(
    req: IncomingMessage,
    res: ServerResponse,
    key: string,
    backends: () => readonly Backend[],
    fwd: Forwarded,
    outcome: Outcome,
    listen: boolean,
  ): Exchange | undefined {
    const first = this.pick(key, backends());
    if (!first) {
      sendError(res, 503, 'no machine of this app is ready', req.headers.accept, fwd.requestId);
      return undefined;
    }
    const exchange = new Exchange(this, req, res, key, backends, fwd, outcome, listen);
    exchange.send(first);
    return exchange;
  }
  /**
   * A WebSocket handshake. The request head goes to a machine over a fresh connection; the client's
   * socket is spliced onto it only after the machine answers `101 Switching Protocols`. Any other
   * answer is relayed as the one response of this connection, which then closes: bytes the client
   * sent after the handshake (a second, pipelined request) never reach the app, so nothing the gate
   * did not check can ride an upgrade that did not happen.
   */
  upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    backend: Backend,
    fwd: Forwarded,
    done: (status: number, error?: string) => void,
  ): void {
    let reported = false;
    const report = (status: number, error?: string) => {
      if (reported) return;
      reported = true;
      done(status, error);
    };
    const upstream = httpRequest({
      host: backend.address,
      port: backend.port,
      method: req.method,
      path: req.url,
      headers: upstreamHeaders(req.rawHeaders, fwd, true),
      setHost: false,
      agent: false,
    });
    upstream.on('upgrade', (answer: IncomingMessage, machine: Duplex, machineHead: Buffer) => {
      machine.on('error', () => socket.destroy());
      socket.on('error', () => machine.destroy());
      socket.on('close', () => machine.destroy());
      machine.on('close', () => socket.destroy());
      if (!socket.writable) return machine.destroy();
      // The answer's head is filtered (no platform cookie may be set by the app); after it, bytes
      // pass untouched both ways.
      socket.write(responseHead(answer, downstreamHeaders(answer.rawHeaders, fwd.requestId, fwd.personal, true)), 'latin1');
      if (machineHead.length) socket.write(machineHead);
      if (head.length) machine.write(head);
      machine.pipe(socket);
      socket.pipe(machine);
      report(answer.statusCode ?? 101);
    });
    upstream.on('response', (answer: IncomingMessage) => {
      // No upgrade: this answer ends the connection.
      const headers = downstreamHeaders(answer.rawHeaders, fwd.requestId, fwd.personal);
      headers.push('connection', 'close');
      socket.write(responseHead(answer, headers), 'latin1');
      answer.pipe(socket);
      answer.on('error', () => socket.destroy());
      report(answer.statusCode ?? 502);
    });
    upstream.on('error', (err) => {
      const code = errorCode(err);
      if (reported) return socket.destroy();
      this.opts.log.warn({ reqId: fwd.requestId, upstream: backend.origin, err: code }, 'Upstream upgrade failed');
      writeRaw(socket, errorPage(502, "the app's machine did not answer", req.headers.accept, fwd.requestId), 502);
      report(502, code === 'ECONNRESET' ? 'closed before answering' : code);
    });
    socket.on('error', () => upstream.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.end();
  }
}

/** A response's status line and the given [name, value, ...] header list, for a raw socket. */
function responseHead(answer: IncomingMessage, headers: readonly string[]): string {
  const lines = [`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage ?? ''}`];
  for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * One forwarded request: the handler the Upstream calls as the machine's answer arrives, writing it
 * straight into `res`. One object and one 'close' listener per request: bench/proxy measured a
 * stream + AbortController + async version at about twice the CPU per request (docs/benchmarks.md).
 */
class Exchange implements ExchangeHandler {
  /** Made only when asked for (forward()), settled at once when the exchange is already over. */
  private settled: Promise<Outcome> | undefined;
  private settle: ((o: Outcome) => void) | undefined;
  private readonly method: string;
  private readonly withBody: boolean;
  private readonly headers: string[];
  private controller: ExchangeControl | undefined;
  private backend: Backend | undefined;
  private gone = false;
  private finished = false;
  /** An answer held whole for fwd.rewrite: its head, and its body so far. */
  private held:
    { status: number; statusText: string; headers: string[]; chunks: Buffer[]; bytes: number; timer: NodeJS.Timeout } | undefined;
  /** Its own 'close' listener, when the caller has none (forward()). */
  private readonly onClose: (() => void) | undefined;

  constructor(
    private readonly proxy: Proxy,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly key: string,
    private readonly backends: () => readonly Backend[],
    private readonly fwd: Forwarded,
    private readonly outcome: Outcome,
    listen: boolean,
  ) {
    this.method = req.method ?? 'GET';
    this.withBody = hasBody(req.headers);
    const headers = upstreamHeaders(req.rawHeaders, fwd);
    // A page that may be filled is asked for whole and fresh: a 304 or a range would be of the unfilled one.
    this.headers = fwd.rewrite ? withoutConditionals(headers) : headers;
    if (listen) {
      this.onClose = () => this.clientGone();
      // `on`, not `once` (no wrapper made per request): 'close' comes once, and finish() takes it off.
      res.on('close', this.onClose);
    } else outcome.exchange = this;
  }

  /** The response closed: unless it was finished, the client left, and the machine is let go. */
  clientGone(): void {
    if (this.finished || this.res.writableFinished) return;
    this.gone = true;
    this.controller?.abort();
    this.outcome.error = 'client went away';
    this.finish();
  }

  /** Settles when the exchange is over; never rejects. */
  get done(): Promise<Outcome> {
    if (!this.settled) this.settled = this.finished ? Promise.resolve(this.outcome) : new Promise((resolve) => (this.settle = resolve));
    return this.settled;
  }

  send(b: Backend): void {
    this.backend = b;
    this.outcome.backend = b.origin;
    const body = this.withBody
      ? { stream: this.req, length: this.req.headers['transfer-encoding'] === undefined ? this.req.headers['content-length'] : undefined }
      : undefined;
    const { method, headers } = this;
    // The client's values and the identity were checked (forwardingEntries); the forwarding ones are checked there.
    const checked = headers.length - forwardingEntries;
    this.controller = this.proxy.pool(b).request({ method, path: this.req.url ?? '/', headers, checked, body }, this);
  }

  onHead(status: number, statusText: string, rawHeaders: string[]): void {
    const headers = downstreamHeaders(rawHeaders, this.fwd.requestId, this.fwd.personal);
    if (this.fwd.rewrite && status === 200 && rewritable(headers)) {
      // An answer still coming after rewriteHoldMs (a page streamed as it is made) goes as it comes.
      const timer = setTimeout(() => this.release(), rewriteHoldMs);
      this.held = { status, statusText, headers, chunks: [], bytes: 0, timer };
      return;
    }
    this.res.writeHead(status, statusText || undefined, headers);
  }

  onBody(chunk: Buffer): void {
    const held = this.held;
    if (held) {
      held.chunks.push(chunk);
      held.bytes += chunk.length;
      if (held.bytes <= rewriteMaxBytes) return;
      // Too large to hold: it goes as it came, from here on streamed.
      this.release();
      return;
    }
    this.write(chunk);
  }

  /** Sends what was held as it came, and streams the rest. */
  private release(): void {
    const held = this.held;
    if (!held || this.gone) return;
    this.held = undefined;
    clearTimeout(held.timer);
    this.res.writeHead(held.status, held.statusText || undefined, held.headers);
    for (const c of held.chunks) this.write(c);
  }

  private write(chunk: Buffer): void {
    if (this.res.write(chunk)) return;
    // The client reads slower than the machine writes: stop reading the machine until it caught up.
    const controller = this.controller!;
    controller.pause();
    this.res.once('drain', () => controller.resume());
  }

  onEnd(): void {
    if (this.held) {
      this.rewrite(this.held).catch((err: unknown) => {
        this.proxy.opts.log.warn({ err, reqId: this.fwd.requestId }, 'Sending a held page failed');
        this.res.destroy();
        this.finish();
      });
      return;
    }
    this.res.end();
    this.finish();
  }

  /** Sends a held answer, rewritten when fwd.rewrite says so (if it fails, as it came: the page still works, filled by its script). */
  private async rewrite(held: NonNullable<Exchange['held']>): Promise<void> {
    this.held = undefined;
    clearTimeout(held.timer);
    const body = Buffer.concat(held.chunks, held.bytes);
    let out: Buffer | undefined;
    let deadline: NodeJS.Timeout | undefined;
    try {
      // Never longer than rewriteWaitMs: a slow database costs the page its filling, not its answer.
      const filling = this.fwd.rewrite!(body.toString('utf8'));
      // Past the deadline it is not waited for: its failure then is nobody's.
      filling.catch(() => undefined);
      const html = await Promise.race([
        filling,
        new Promise<undefined>((resolve) => (deadline = setTimeout(() => resolve(undefined), rewriteWaitMs))),
      ]);
      if (html !== undefined) out = Buffer.from(html, 'utf8');
    } catch (err) {
      this.proxy.opts.log.warn({ err, reqId: this.fwd.requestId, host: this.fwd.host }, 'Filling a page failed; sent as the app wrote it');
    } finally {
      clearTimeout(deadline);
    }
    if (this.gone) return;
    // Filled, the page is no longer what the machine's validators name.
    const headers = out ? withoutValidators(held.headers, out.length) : held.headers;
    this.res.writeHead(held.status, held.statusText || undefined, headers);
    this.res.end(out ?? body);
    this.finish();
  }

  /** `answered`: the answer's head reached onHead, so a failure now can only cut the response. */
  onError(err: UpstreamError, answered: boolean): void {
    const { outcome, fwd, req, res } = this;
    if (this.gone) return;
    if (!outcome.retried && retryable(this.method, this.withBody, err, answered)) {
      const first = this.backend!;
      const again = this.proxy.pick(this.key, this.backends(), first.origin) ?? first;
      outcome.retried = true;
      this.proxy.opts.log.debug(
        { reqId: fwd.requestId, err: errorCode(err), from: first.origin, to: again.origin },
        'Retrying on another machine',
      );
      return this.send(again);
    }
    const code = errorCode(err) ?? String(err);
    outcome.error = code;
    if (this.held) {
      // Nothing of a held answer was sent: the client gets a whole 502, not a cut response.
      clearTimeout(this.held.timer);
      this.held = undefined;
      answered = false;
    }
    if (answered) {
      this.proxy.opts.log.warn({ reqId: fwd.requestId, upstream: outcome.backend, err: code }, 'Upstream response broke off');
      res.destroy();
    } else {
      this.proxy.opts.log.warn({ reqId: fwd.requestId, upstream: outcome.backend, err: code, host: fwd.host }, 'Upstream request failed');
      if (code === 'UPSTREAM_HEADERS_TIMEOUT') sendError(res, 504, 'the app did not answer in time', req.headers.accept, fwd.requestId);
      else sendError(res, 502, "the app's machine did not answer", req.headers.accept, fwd.requestId);
    }
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.onClose) this.res.off('close', this.onClose);
    this.settle?.(this.outcome);
  }
}

/** Past this size an answer is not held for fwd.rewrite: it is streamed as it came (docs/api/html-data.md). */
export const rewriteMaxBytes = 512 * 1024;
/** An answer not complete this long after its head is streamed as it comes. */
export const rewriteHoldMs = 1000;
/** How long fwd.rewrite may take before the answer goes as it came. */
export const rewriteWaitMs = 250;

/** An answer fwd.rewrite can read: HTML in UTF-8 (or unsaid), not compressed. */
function rewritable(headers: readonly string[]): boolean {
  let html = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!.toLowerCase();
    const value = headers[i + 1]!.toLowerCase();
    if (name === 'content-encoding' && value !== 'identity') return false;
    if (name === 'content-type') {
      const [type, ...params] = value.split(';').map((p) => p.trim());
      const charset = params.find((p) => p.startsWith('charset='))?.slice(8);
      html = type === 'text/html' && (charset === undefined || charset === 'utf-8' || charset === '"utf-8"');
    }
  }
  return html;
}

/** Request headers without If-None-Match, If-Modified-Since, If-Range and Range (the forwarding entries at the end are kept). */
function withoutConditionals(headers: string[]): string[] {
  const out: string[] = [];
  const checkedEnd = headers.length - forwardingEntries;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!.toLowerCase();
    if (i < checkedEnd && (name === 'if-none-match' || name === 'if-modified-since' || name === 'if-range' || name === 'range')) continue;
    out.push(headers[i]!, headers[i + 1]!);
  }
  return out;
}

/** The headers of a rewritten answer: its new length, without the machine's ETag and Last-Modified. */
function withoutValidators(headers: readonly string[], length: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!.toLowerCase();
    if (name === 'content-length' || name === 'etag' || name === 'last-modified') continue;
    out.push(headers[i]!, headers[i + 1]!);
  }
  out.push('content-length', String(length));
  return out;
}

const reasons: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  421: 'Misdirected Request',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** An HTTP response written on a socket that left the HTTP server (after an Upgrade request). */
export function writeRaw(socket: Duplex, page: { headers: Record<string, string | number>; body: string }, status: number): void {
  if (!socket.writable) return;
  const head = [
    `HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}`,
    ...Object.entries(page.headers).map(([k, v]) => `${k}: ${v}`),
    'connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${page.body}`);
}
