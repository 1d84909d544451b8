// The HTTP/1.1 client ingress-auth forwards with: keep-alive connections to one machine, at most
// `connections` of them, requests waiting in order beyond that. Chosen over undici's Pool by
// measurement (docs/benchmarks.md, issue 19): a request is one string written once, its answer read
// by a strict parser (response-parser.ts) straight into the caller's handler, with nothing between.
//
// Every failure is an UpstreamError whose code says what happened, so the proxy can tell "the
// machine never saw it" (retry.ts) from "it broke while answering". One timer per machine, not per
// request, enforces the deadlines: connecting, the answer's head, and an idle connection's life.
import net, { type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { BadResponse, ResponseParser, type ResponseSink } from './response-parser.js';

export interface UpstreamOptions {
  /** Connections to this machine at most; more requests wait for one. */
  connections: number;
  /** From sending a request to the end of its answer's head. */
  headersTimeoutMs: number;
  /** An unused connection is closed after this (below node:http's 5 s, so we close first). */
  keepAliveMs?: number;
  connectTimeoutMs?: number;
  /** The answer's head at most (node:http's limit by default). */
  maxHeadBytes?: number;
}

export interface UpstreamRequest {
  method: string;
  /** The request target, origin-form. */
  path: string;
  /** [name, value, ...]; without hop-by-hop headers (Transfer-Encoding is ours to set). */
  headers: readonly string[];
  /**
   * How many entries of `headers`, from the start, need no check here: values node's HTTP parser
   * read from a client (it refuses exactly the bytes `sendableValue` does: test/security/
   * upstream-client.test.ts), or that were checked where they were made. The rest are checked.
   */
  checked?: number | undefined;
  /** A body to stream: with `length` it is sent as is (the headers carry Content-Length), else chunked. */
  body?: { stream: Readable; length: string | undefined } | undefined;
}

/** What the caller hears of an exchange, in this order: head, body chunks, end; or one error. */
export interface ExchangeHandler {
  onHead(status: number, statusText: string, rawHeaders: string[]): void;
  onBody(chunk: Buffer): void;
  onEnd(): void;
  /** `answered`: the head had reached the caller (a failure now cuts a response short). */
  onError(err: UpstreamError, answered: boolean): void;
}

/** The caller's hold on an exchange: backpressure, and giving up (no callback follows abort). */
export interface ExchangeControl {
  pause(): void;
  resume(): void;
  abort(): void;
}

/**
 * Codes: UPSTREAM_CLOSED (the connection ended before the answer did), UPSTREAM_CONNECT_TIMEOUT,
 * UPSTREAM_HEADERS_TIMEOUT, UPSTREAM_BAD_RESPONSE (broken framing or syntax), UPSTREAM_BAD_REQUEST
 * (a header value we were given cannot be sent), UPSTREAM_HANDLER_FAILED (the caller's handler
 * threw), or node:net's (ECONNREFUSED, ECONNRESET, ...).
 */
export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

// Anything but HTAB, visible ASCII and obs-text ends a header line early: never sent (RFC 9110 5.5).
const unsendableValue = /[^\t\x20-\x7e\x80-\xff]/;

/** A header value this client would send (no byte that could end its line early). */
export function sendableValue(value: string): boolean {
  return !unsendableValue.test(value);
}
const unsendableTarget = /[^\x21-\x7e\x80-\xff]/;

export class Upstream {
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  private readonly waiting: Exchange[] = [];
  private sweeper: NodeJS.Timeout | undefined;
  private closing: (() => void) | undefined;
  readonly keepAliveMs: number;
  readonly connectTimeoutMs: number;
  readonly maxHeadBytes: number;
  private readonly hostHeader: string;

  constructor(
    readonly host: string,
    readonly port: number,
    readonly opts: UpstreamOptions,
  ) {
    this.keepAliveMs = opts.keepAliveMs ?? 4_000;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
    this.maxHeadBytes = opts.maxHeadBytes ?? 16_384;
    this.hostHeader = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  }

  /** Sends a request; the handler hears how it goes. */
  request(r: UpstreamRequest, handler: ExchangeHandler): ExchangeControl {
    const ex = new Exchange(this, handler, r.method === 'HEAD', r.body);
    let head: string;
    try {
      head = this.head(r);
    } catch (err) {
      queueMicrotask(() => ex.fail(err as UpstreamError));
      return ex;
    }
    ex.head = head;
    const conn = this.idle.pop();
    if (conn) conn.run(ex);
    else if (this.all.size < this.opts.connections) this.open().run(ex);
    else this.waiting.push(ex);
    return ex;
  }

  /** Closes idle connections now and busy ones once their exchange is over; settles when none is left. */
  close(): Promise<void> {
    for (const c of this.idle.splice(0)) c.destroy();
    if (this.all.size === 0 && this.waiting.length === 0) return Promise.resolve(this.stopSweeper());
    return new Promise((resolve) => (this.closing = resolve));
  }

  /** Connections open now (idle and busy), for tests and metrics. */
  get connections(): number {
    return this.all.size;
  }

  /** @internal A connection is free again: the next waiting exchange gets it, or it idles. */
  release(c: Connection): void {
    let next: Exchange | undefined;
    while ((next = this.waiting.shift()) && next.aborted);
    if (next) return c.run(next);
    if (this.closing) return c.destroy();
    c.idleSince = Date.now();
    this.idle.push(c);
  }

  /** @internal A connection is gone: forget it, and open another for whoever waits. */
  forget(c: Connection): void {
    if (!this.all.delete(c)) return;
    const i = this.idle.indexOf(c);
    if (i !== -1) this.idle.splice(i, 1);
    let next: Exchange | undefined;
    while ((next = this.waiting.shift()) && next.aborted);
    if (next) this.open().run(next);
    else if (this.all.size === 0) {
      this.stopSweeper();
      this.closing?.();
    }
  }

  private open(): Connection {
    const c = new Connection(this, net.connect({ host: this.host, port: this.port }));
    this.all.add(c);
    this.sweeper ??= setInterval(() => this.sweep(), Math.min(1_000, Math.max(50, this.opts.headersTimeoutMs / 4))).unref();
    return c;
  }

  private stopSweeper(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** The deadlines: a connect or an answer's head that took too long, an idle connection kept too long. */
  private sweep(): void {
    const now = Date.now();
    for (const c of this.all) {
      const ex = c.exchange;
      if (!ex) {
        if (now - c.idleSince >= this.keepAliveMs) c.destroy();
      } else if (c.socket.connecting) {
        if (now - ex.sentAt >= this.connectTimeoutMs)
          c.fail(new UpstreamError('connecting to the machine timed out', 'UPSTREAM_CONNECT_TIMEOUT'));
      } else if (!ex.answered && now - ex.sentAt >= this.opts.headersTimeoutMs) {
        c.fail(new UpstreamError('the machine did not answer in time', 'UPSTREAM_HEADERS_TIMEOUT'));
      }
    }
  }

  /** The request's head as one string, or an UpstreamError when a value could end a line early. */
  private head(r: UpstreamRequest): string {
    if (unsendableTarget.test(r.path)) throw new UpstreamError('request target cannot be sent', 'UPSTREAM_BAD_REQUEST');
    let head = `${r.method} ${r.path} HTTP/1.1\r\n`;
    let host = false;
    const h = r.headers;
    const checked = r.checked ?? 0;
    for (let i = 0; i < h.length; i += 2) {
      const name = h[i]!;
      const value = h[i + 1]!;
      if (i >= checked && unsendableValue.test(value)) throw new UpstreamError(`header ${name} cannot be sent`, 'UPSTREAM_BAD_REQUEST');
      if (name.length === 4 && name.toLowerCase() === 'host') host = true;
      head += `${name}: ${value}\r\n`;
    }
    if (!host) head += `host: ${this.hostHeader}\r\n`;
    if (r.body && r.body.length === undefined) head += 'transfer-encoding: chunked\r\n';
    return `${head}\r\n`;
  }
}

/** One request and its answer. */
class Exchange implements ExchangeControl {
  head = '';
  sentAt = 0;
  conn: Connection | undefined;
  /** The head reached the handler. */
  answered = false;
  aborted = false;
  over = false;
  /** All of the request's body was written (no body: true). */
  bodySent: boolean;
  private unpipe: (() => void) | undefined;

  constructor(
    readonly upstream: Upstream,
    readonly handler: ExchangeHandler,
    readonly isHead: boolean,
    readonly body: UpstreamRequest['body'],
  ) {
    this.bodySent = body === undefined;
  }

  pause(): void {
    if (!this.over && this.conn?.exchange === this) this.conn.socket.pause();
  }

  resume(): void {
    if (this.conn?.exchange === this) this.conn.socket.resume();
  }

  abort(): void {
    if (this.over) return;
    this.over = this.aborted = true;
    this.unpipe?.();
    // Half an answer or half a request on it: the connection cannot carry another.
    this.conn?.destroy();
  }

  /** Ends the exchange with an error (once; never after the end or an abort). */
  fail(err: UpstreamError): void {
    if (this.over) return;
    this.over = true;
    this.unpipe?.();
    this.handler.onError(err, this.answered);
  }

  finish(): void {
    if (this.over) return;
    this.over = true;
    // An answer before the whole body was sent (413, say): the rest is not wanted.
    this.unpipe?.();
    this.handler.onEnd();
  }

  /** Streams the body onto the connection, with backpressure both ways. */
  pipe(socket: Socket): void {
    const { stream, length } = this.body!;
    const chunked = length === undefined;
    const onData = (chunk: Buffer) => {
      let ok: boolean;
      if (chunked) {
        socket.cork();
        socket.write(`${chunk.length.toString(16)}\r\n`);
        socket.write(chunk);
        ok = socket.write('\r\n');
        socket.uncork();
      } else ok = socket.write(chunk);
      if (!ok) {
        stream.pause();
        socket.once('drain', onDrain);
      }
    };
    const onDrain = () => stream.resume();
    const onEnd = () => {
      if (chunked) socket.write('0\r\n\r\n');
      this.bodySent = true;
      this.unpipe = undefined;
      stream.off('data', onData).off('error', onGone).off('aborted', onGone);
    };
    const onGone = () => this.abort();
    this.unpipe = () => {
      this.unpipe = undefined;
      stream.off('data', onData).off('end', onEnd).off('error', onGone).off('aborted', onGone);
      socket.off('drain', onDrain);
    };
    stream.on('data', onData).once('end', onEnd).once('error', onGone).once('aborted', onGone);
  }
}

/** One keep-alive connection: at most one exchange at a time (no pipelining). */
class Connection implements ResponseSink {
  exchange: Exchange | undefined;
  idleSince = 0;
  private readonly parser: ResponseParser;
  /** Set by onComplete during a feed: whether the connection may be reused. */
  private completed: boolean | undefined;
  private dead = false;

  constructor(
    private readonly upstream: Upstream,
    readonly socket: Socket,
  ) {
    this.parser = new ResponseParser(this, upstream.maxHeadBytes);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => this.onEnd());
    socket.on('error', (err: NodeJS.ErrnoException) => this.fail(new UpstreamError(err.message, err.code ?? 'UPSTREAM_CLOSED')));
    socket.on('close', () => this.fail(new UpstreamError('the connection to the machine closed', 'UPSTREAM_CLOSED')));
  }

  run(ex: Exchange): void {
    this.exchange = ex;
    ex.conn = this;
    ex.sentAt = Date.now();
    this.parser.expect(ex.isHead);
    // The last exchange's reader may have paused it on its final chunk.
    if (this.socket.isPaused()) this.socket.resume();
    this.socket.write(ex.head, 'latin1');
    if (ex.body) ex.pipe(this.socket);
  }

  onHead(status: number, statusText: string, rawHeaders: string[]): void {
    const ex = this.exchange!;
    ex.answered = true;
    if (!ex.over) ex.handler.onHead(status, statusText, rawHeaders);
  }

  onBody(chunk: Buffer): void {
    const ex = this.exchange!;
    if (!ex.over && chunk.length > 0) ex.handler.onBody(chunk);
  }

  onComplete(reusable: boolean): void {
    this.completed = reusable;
    const ex = this.exchange!;
    this.exchange = undefined;
    // Reusable only once the request went out whole: else the machine may still be reading it.
    if (!ex.bodySent) this.completed = false;
    ex.finish();
  }

  /** Ends the current exchange with `err` and closes the connection. */
  fail(err: UpstreamError): void {
    const ex = this.exchange;
    this.exchange = undefined;
    this.destroy();
    ex?.fail(err);
  }

  destroy(): void {
    if (this.dead) return;
    this.dead = true;
    this.socket.destroy();
    this.upstream.forget(this);
  }

  private onData(chunk: Buffer): void {
    if (!this.exchange) {
      // Bytes nobody asked for: the machine is not speaking HTTP/1.1 as we do.
      return this.destroy();
    }
    let leftover: Buffer | undefined;
    try {
      leftover = this.parser.feed(chunk);
    } catch (err) {
      // A handler that threw ends its exchange, never the process (every connection of it would go).
      if (!(err instanceof BadResponse))
        return this.fail(new UpstreamError(`handling the answer failed: ${(err as Error).message}`, 'UPSTREAM_HANDLER_FAILED'));
      return this.fail(new UpstreamError(`the machine's answer is not valid HTTP/1.1: ${err.message}`, err.code));
    }
    const reusable = this.completed;
    if (reusable === undefined) return;
    this.completed = undefined;
    if (!reusable || (leftover && leftover.length > 0) || this.dead) return this.destroy();
    this.upstream.release(this);
  }

  private onEnd(): void {
    if (this.exchange && this.parser.endsAtClose) this.parser.end();
    this.fail(new UpstreamError('the machine closed the connection before answering in full', 'UPSTREAM_CLOSED'));
  }
}
