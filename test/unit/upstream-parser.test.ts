// The machine's answer as ingress-auth reads it (ingress-auth/upstream/response-parser.ts): every
// framing a machine may legitimately use, read the same whatever the chunk boundaries; every
// ambiguous or malformed one refused. A machine is tenant code: what it sends after its answer must
// never be taken for the answer to the next request.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BadResponse, ResponseParser, type ResponseSink } from '../../ingress-auth/upstream/response-parser.js';

interface Read {
  status?: number;
  reason?: string;
  headers?: string[];
  body: string;
  complete?: boolean;
  reusable?: boolean;
  leftover: string;
}

/** Feeds `parts` in order for one answer (to HEAD when `head`); what the sink heard. */
function read(parts: readonly (string | Buffer)[], opts: { head?: boolean; end?: boolean } = {}): Read {
  const out: Read = { body: '', leftover: '' };
  const sink: ResponseSink = {
    onHead: (status, reason, headers) => Object.assign(out, { status, reason, headers }),
    onBody: (chunk) => (out.body += chunk.toString('latin1')),
    onComplete: (reusable) => Object.assign(out, { complete: true, reusable }),
  };
  const p = new ResponseParser(sink, 1024);
  p.expect(opts.head ?? false);
  for (const part of parts) {
    const left = p.feed(Buffer.isBuffer(part) ? part : Buffer.from(part, 'latin1'));
    if (left) out.leftover += left.toString('latin1');
  }
  if (opts.end) p.end();
  return out;
}

const refused = (parts: readonly string[], why: RegExp, opts: { head?: boolean } = {}) =>
  assert.throws(
    () => read(parts, opts),
    (err: unknown) => err instanceof BadResponse && why.test(err.message),
    parts.join(''),
  );

describe('upstream answers: what is read', () => {
  it('a Content-Length body, the headers as sent (spelling, order, repeats), reusable', () => {
    const r = read(['HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nContent-Length: 5\r\n\r\nhello']);
    assert.deepEqual(r, {
      status: 200,
      reason: 'OK',
      headers: ['Content-Type', 'text/plain', 'Set-Cookie', 'a=1', 'set-cookie', 'b=2', 'Content-Length', '5'],
      body: 'hello',
      complete: true,
      reusable: true,
      leftover: '',
    });
  });

  it('trims optional whitespace around values and keeps the inner one; a status line without a reason', () => {
    const r = read(['HTTP/1.1 204\r\nX-A: \t a  b \t\r\nX-Empty:\r\n\r\n']);
    assert.deepEqual(r.headers, ['X-A', 'a  b', 'X-Empty', '']);
    assert.equal(r.reason, '');
    assert.equal(r.complete, true);
  });

  it('a chunked body, extensions and trailers read and dropped', () => {
    const r = read([
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=v\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n',
    ]);
    assert.equal(r.body, 'hello world');
    assert.equal(r.reusable, true);
  });

  it('the same answers whatever the chunk boundaries (property)', () => {
    const answers = [
      'HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n',
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 3\r\n\r\nabc',
    ];
    fc.assert(
      fc.property(fc.constantFrom(...answers), fc.array(fc.nat(), { maxLength: 8 }), (answer, cuts) => {
        const points = [...new Set(cuts.map((c) => c % answer.length))].sort((a, b) => a - b);
        const parts: string[] = [];
        let last = 0;
        for (const p of points) {
          parts.push(answer.slice(last, p));
          last = p;
        }
        parts.push(answer.slice(last));
        assert.deepEqual(read(parts), read([answer]));
      }),
      { numRuns: 2000 },
    );
  });

  it('no body for HEAD, 204 and 304, whatever Content-Length says', () => {
    const head = read(['HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n'], { head: true });
    assert.deepEqual([head.complete, head.body, head.headers], [true, '', ['Content-Length', '12']]);
    assert.equal(read(['HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n']).complete, true);
  });

  it('skips informational answers (100, 103) and reads the final one', () => {
    const r = read(['HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok']);
    assert.deepEqual([r.status, r.headers, r.body], [200, ['Content-Length', '2'], 'ok']);
  });

  it('a body delimited by the close: complete at the end, never reused', () => {
    const r = read(['HTTP/1.1 200 OK\r\n\r\nall ', 'of it'], { end: true });
    assert.deepEqual([r.body, r.complete, r.reusable], ['all of it', true, false]);
    const cut = read(['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf'], { end: true });
    assert.equal(cut.complete, undefined, 'a Content-Length body cut short is not complete');
  });

  it('Connection: close, and HTTP/1.0 without keep-alive, are not reused', () => {
    assert.equal(read(['HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n']).reusable, false);
    assert.equal(read(['HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n']).reusable, false);
    assert.equal(read(['HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n']).reusable, true);
  });

  it('the same Content-Length twice is one length', () => {
    assert.equal(read(['HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok']).body, 'ok');
  });

  it('bytes after a complete answer are handed back, never read as the next answer', () => {
    const smuggled = 'HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged';
    const r = read([`HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok${smuggled}`]);
    assert.deepEqual([r.body, r.leftover], ['ok', smuggled]);
    assert.equal(read([`HTTP/1.1 204 No Content\r\n\r\n${smuggled}`]).leftover, smuggled, 'a 204 with a body');
  });
});

describe('upstream answers: what is refused (a machine may be hostile)', () => {
  it('ambiguous framing: Transfer-Encoding with Content-Length, two lengths, a coding other than chunked, chunked twice or in HTTP/1.0', () => {
    refused(['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n'], /Transfer-Encoding with Content-Length/);
    refused(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n'], /Transfer-Encoding with Content-Length/);
    refused(['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n'], /conflicting Content-Length/);
    refused(['HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n'], /conflicting Content-Length/);
    for (const te of ['gzip, chunked', 'chunked, gzip', 'identity', 'chunked;q=1', ' chunked x'])
      refused([`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${te}\r\n\r\n`], /unsupported Transfer-Encoding/);
    refused(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n'], /unsupported Transfer-Encoding/);
    refused(['HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'], /HTTP\/1.0/);
  });

  it('malformed lengths', () => {
    for (const cl of ['-1', '+5', '0x10', '5 5', '', '1e3', '9999999999999999'])
      refused([`HTTP/1.1 200 OK\r\nContent-Length: ${cl}\r\n\r\n`], /malformed Content-Length/);
  });

  it('malformed heads: bare LF or CR, folded lines, whitespace before the colon, controls, bad status lines', () => {
    refused(['HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n'], /malformed (status|header) line/);
    refused(['HTTP/1.1 200 OK\r\nX-A: a\nContent-Length: 0\r\n\r\n'], /malformed header line/);
    refused(['HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n'], /malformed header line/);
    refused(['HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n\r\n'], /malformed header line/);
    refused(['HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n'], /malformed header line/);
    refused(['HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n\r\n'], /malformed header line/);
    refused(['HTTP/1.1 200 OK\r\nX-A: a\x1bb\r\n\r\n'], /malformed header line/);
    refused(['HTTP/1.1 200 OK\r\nX A: a\r\n\r\n'], /malformed header line/);
    refused(['HTTP/1.1 200 OK\r\n: a\r\n\r\n'], /malformed header line/);
    for (const line of [
      'HTTP/1.1 600 Nope',
      'HTTP/1.1 99 Low',
      'HTTP/2 200 OK',
      'HTTP/1.1  200 OK',
      'http/1.1 200 OK',
      'HTTP/1.1 2000 OK',
      'ICY 200 OK',
    ])
      refused([`${line}\r\n\r\n`], /malformed status line/);
  });

  it('a head over the limit, whole or arriving in pieces', () => {
    refused([`HTTP/1.1 200 OK\r\nX-A: ${'a'.repeat(2000)}\r\n\r\n`], /too large/);
    refused(['HTTP/1.1 200 OK\r\n', ...Array.from({ length: 100 }, () => 'X-A: aaaaaaaaaaaaaaaaaaaa\r\n')], /too large/);
  });

  it('malformed chunks: sizes, missing CRLF after the data, bare LF, oversized trailers', () => {
    const te = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';
    for (const size of ['-1', '0x5', '+5', 'g', '', '12345678901234', '5\x00'])
      refused([`${te}${size}\r\nhello\r\n0\r\n\r\n`], /malformed chunk size/);
    refused([`${te}5\r\nhelloX\r\n0\r\n\r\n`], /not followed by CRLF/);
    refused([`${te}5\r\nhello\r`, 'X0\r\n\r\n'], /not followed by CRLF/);
    refused([`${te}5\nhello\r\n0\r\n\r\n`], /bare LF/);
    refused([`${te}0\r\nX-T: a\nb\r\n\r\n`], /bare LF/);
    refused([`${te}0\r\n`, ...Array.from({ length: 300 }, () => 'X-Trailer: aaaaaaa\r\n')], /trailer section too large/);
    refused([`${te}${'f'.repeat(5000)}`], /line too long/);
  });

  it('a 101 answer to a plain request', () => {
    refused(['HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n'], /101/);
  });
});
