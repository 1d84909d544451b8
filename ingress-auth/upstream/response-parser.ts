// The machine's answer, read strictly (RFC 9112): ingress-auth re-frames every response for the
// client, so how it reads the machine's framing decides what the client gets. A machine is tenant
// code and may be hostile: anything ambiguous (two different Content-Lengths, Transfer-Encoding with
// Content-Length or with a coding other than chunked, bare CR or LF, folded or malformed header
// lines, a head over the size limit, a 101 nobody asked for) is an error, never a guess. Bytes after
// a complete answer mean the connection cannot be trusted again (`leftover`).
//
// Fed with the socket's chunks; calls its sink synchronously as the answer arrives, handing body
// bytes as views of the chunk (no copy).

export interface ResponseSink {
  /** The status line and the header lines as [name, value, ...] (latin1, the app's spelling). */
  onHead(status: number, statusText: string, rawHeaders: string[]): void;
  onBody(chunk: Buffer): void;
  /** The answer is complete; `reusable`: the connection may carry another request. */
  onComplete(reusable: boolean): void;
}

/** An answer that breaks HTTP/1.1's framing or syntax: the exchange fails with 502, never retried. */
export class BadResponse extends Error {
  readonly code = 'UPSTREAM_BAD_RESPONSE';
}

const enum State {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailers,
  UntilClose,
  Done,
}

const statusLine = /^HTTP\/1\.([01]) ([1-5]\d\d)(?: ([^\x00-\x08\x0a-\x1f\x7f]*))?$/;
// name ":" OWS value OWS, where name is a token and value holds no control but HTAB (RFC 9110 5.5).
const headerLine = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*([^\x00-\x08\x0a-\x1f\x7f]*?)[\t ]*$/;
// chunk-size [ chunk-ext ]: at most 13 hex digits (2^52) so the size stays an exact number.
const chunkSizeLine = /^([0-9A-Fa-f]{1,13})[\t ]*(?:;[^\x00-\x08\x0a-\x1f\x7f]*)?$/;
const crlfcrlf = Buffer.from('\r\n\r\n');

/** Longest chunk-size line (with its extensions) and the trailer section's limit. */
const maxLineBytes = 4096;

export class ResponseParser {
  private state = State.Done;
  private noBody = false;
  /** The head (or a size/trailer line) split over chunks. */
  private pending: Buffer | undefined;
  private remaining = 0;
  private keepAlive = true;
  private trailerBytes = 0;

  constructor(
    private readonly sink: ResponseSink,
    private readonly maxHeadBytes: number,
  ) {}

  /** Expects the answer to a request; `head`: the request was HEAD (the answer has no body). */
  expect(head: boolean): void {
    this.state = State.Head;
    this.noBody = head;
    this.pending = undefined;
    this.keepAlive = true;
    this.trailerBytes = 0;
  }

  /** Whether an answer is awaited or being read. */
  get busy(): boolean {
    return this.state !== State.Done;
  }

  /** Whether the connection's end now completes the answer (a body delimited by the close). */
  get endsAtClose(): boolean {
    return this.state === State.UntilClose;
  }

  /** Whether any of the answer has been read (its status line arrived). */
  get started(): boolean {
    return this.state !== State.Head && this.state !== State.Done;
  }

  /** Reads one chunk. Returns the bytes after a complete answer (the caller must not reuse the connection then), if any. */
  feed(chunk: Buffer): Buffer | undefined {
    let buf = chunk;
    let at = 0;
    if (this.pending) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = undefined;
    }
    while (at < buf.length) {
      switch (this.state) {
        case State.Head:
          at = this.head(buf, at);
          if (at < 0) return undefined;
          break;
        case State.Length:
          at = this.body(buf, at);
          if (this.remaining === 0) this.complete();
          break;
        case State.ChunkSize: {
          const line = this.line(buf, at);
          if (line === undefined) return undefined;
          at = line.next;
          const m = chunkSizeLine.exec(line.text);
          if (!m) throw new BadResponse('malformed chunk size');
          this.remaining = parseInt(m[1]!, 16);
          this.state = this.remaining === 0 ? State.Trailers : State.ChunkData;
          break;
        }
        case State.ChunkData:
          at = this.body(buf, at);
          if (this.remaining === 0) {
            this.state = State.ChunkDataEnd;
            this.remaining = 2;
          }
          break;
        case State.ChunkDataEnd: {
          // Exactly CRLF after the data (remaining: 2, then 1 when split between chunks).
          const expected = this.remaining === 2 ? 13 : 10;
          if (buf[at] !== expected) throw new BadResponse('chunk data not followed by CRLF');
          at++;
          if (--this.remaining === 0) this.state = State.ChunkSize;
          break;
        }
        case State.Trailers: {
          const line = this.line(buf, at);
          if (line === undefined) return undefined;
          at = line.next;
          this.trailerBytes += line.text.length + 2;
          if (this.trailerBytes > maxLineBytes) throw new BadResponse('trailer section too large');
          // Trailers are checked and dropped: nothing of them is forwarded.
          if (line.text === '') this.complete();
          else if (!headerLine.test(line.text)) throw new BadResponse('malformed trailer line');
          break;
        }
        case State.UntilClose: {
          this.sink.onBody(at === 0 ? buf : buf.subarray(at));
          return undefined;
        }
        case State.Done:
          return buf.subarray(at);
      }
    }
    return undefined;
  }

  /** The connection ended: completes an answer delimited by the close; anything else was cut off. */
  end(): boolean {
    if (this.state !== State.UntilClose) return false;
    this.state = State.Done;
    this.sink.onComplete(false);
    return true;
  }

  /** Hands on what is here of the `remaining` body bytes; returns where they end. */
  private body(buf: Buffer, at: number): number {
    const n = Math.min(this.remaining, buf.length - at);
    this.remaining -= n;
    this.sink.onBody(buf.subarray(at, at + n));
    return at + n;
  }

  private complete(): void {
    this.state = State.Done;
    this.sink.onComplete(this.keepAlive);
  }

  /** A CRLF-terminated line from `at` (bare CR or LF refused); undefined (bytes kept) when it is not all here. */
  private line(buf: Buffer, at: number): { text: string; next: number } | undefined {
    const lf = buf.indexOf(10, at);
    if (lf === -1) {
      if (buf.length - at > maxLineBytes) throw new BadResponse('line too long');
      this.pending = buf.subarray(at);
      return undefined;
    }
    if (lf - at > maxLineBytes) throw new BadResponse('line too long');
    if (lf === at || buf[lf - 1] !== 13) throw new BadResponse('bare LF');
    const text = buf.toString('latin1', at, lf - 1);
    if (text.includes('\r')) throw new BadResponse('bare CR');
    return { text, next: lf + 1 };
  }

  /** Reads a head from `at`; returns where its body starts, or -1 when the head is not all here. */
  private head(buf: Buffer, at: number): number {
    const end = buf.indexOf(crlfcrlf, at);
    if (end === -1) {
      if (buf.length - at > this.maxHeadBytes) throw new BadResponse('response head too large');
      this.pending = buf.subarray(at);
      return -1;
    }
    if (end - at > this.maxHeadBytes) throw new BadResponse('response head too large');
    const lines = buf.toString('latin1', at, end).split('\r\n');
    const m = statusLine.exec(lines[0]!);
    if (!m) throw new BadResponse('malformed status line');
    const http10 = m[1] === '0';
    const status = Number(m[2]);
    const raw: string[] = [];
    let length: string | undefined;
    let chunked = false;
    let transferEncoding = false;
    let close = http10;
    for (let i = 1; i < lines.length; i++) {
      const h = headerLine.exec(lines[i]!);
      // Also a line with a bare CR or LF, or an obs-fold (a line starting with whitespace).
      if (!h) throw new BadResponse('malformed header line');
      const name = h[1]!;
      const value = h[2]!;
      raw.push(name, value);
      switch (name.length) {
        case 10:
          if (name.toLowerCase() === 'connection') {
            const tokens = value.toLowerCase();
            if (/(^|,)\s*close\s*(,|$)/.test(tokens)) close = true;
            else if (http10 && /(^|,)\s*keep-alive\s*(,|$)/.test(tokens)) close = false;
          }
          break;
        case 14:
          if (name.toLowerCase() === 'content-length') {
            // Repeated (as headers or as a list) only with one value (RFC 9112 6.3, item 5).
            for (const part of value.split(',')) {
              const v = part.trim();
              if (!/^\d{1,15}$/.test(v)) throw new BadResponse('malformed Content-Length');
              if (length !== undefined && Number(length) !== Number(v)) throw new BadResponse('conflicting Content-Length');
              length = v;
            }
          }
          break;
        case 17:
          if (name.toLowerCase() === 'transfer-encoding') {
            // Only `chunked`, once: another coding would reach the client without its name
            // (Transfer-Encoding is hop-by-hop), and a repeat is how smuggling begins.
            if (transferEncoding || value.toLowerCase() !== 'chunked')
              throw new BadResponse(`unsupported Transfer-Encoding ${JSON.stringify(value)}`);
            transferEncoding = chunked = true;
          }
          break;
      }
    }
    const next = end + 4;
    if (status < 200) {
      // 100 Continue, 103 Early Hints: informational, not forwarded; the real answer follows. A 101
      // here is an upgrade nobody asked for (upgrades take their own path, proxy.ts).
      if (status === 101) throw new BadResponse('101 Switching Protocols to a plain request');
      return next;
    }
    if (chunked && (length !== undefined || http10)) throw new BadResponse('Transfer-Encoding with Content-Length or in HTTP/1.0');
    this.keepAlive = !close;
    this.sink.onHead(status, m[3] ?? '', raw);
    if (this.noBody || status === 204 || status === 304) {
      this.complete();
    } else if (chunked) {
      this.state = State.ChunkSize;
    } else if (length !== undefined) {
      this.remaining = Number(length);
      this.state = State.Length;
      if (this.remaining === 0) this.complete();
    } else {
      this.keepAlive = false;
      this.state = State.UntilClose;
    }
    return next;
  }
}
