// `svc logs` (cli/logs.ts) against a fake logs endpoint on 127.0.0.1:0 that cuts its connections:
// following resumes with since=<the point reached> and tail=0 and prints every line once, with no
// gap and no repeat, even when machines' lines arrive out of time order, a line is cut in half, or
// an app writes the same line twice in one millisecond.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { CommandContext } from '../../cli/command.js';
import { followLogs, formatLogLine, logsGroup, type LogLineBody } from '../../cli/logs.js';
import { LogCursor } from '../../lib/logs/resume.js';
import { ApiError } from '../../lib/client/index.js';

const at = (ms: number) => `2026-11-28T05:00:00.${String(ms).padStart(3, '0')}Z`;
const line = (ms: number, machine: number, text: string): LogLineBody => ({ time: at(ms), machine, pod: `shop-m${machine}-1`, line: text });
const ndjson = (l: LogLineBody) => `${JSON.stringify(l)}\n`;

interface Request {
  query: Record<string, string>;
  accept: string | undefined;
}

/** Each request is answered by the next script: it writes to the response, and may cut it. */
type Script = (res: ServerResponse) => void;

describe('svc logs', () => {
  const requests: Request[] = [];
  let scripts: Script[] = [];
  let url = '';
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'http://fake');
    requests.push({ query: Object.fromEntries(u.searchParams), accept: req.headers.accept });
    assert.equal(u.pathname, '/api/apps/shop/logs');
    const script = scripts.shift() ?? gone;
    script(res);
  });
  const gone: Script = (res) =>
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'app shop not found' }));
  const stream = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8' });

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  });
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function context(): { ctx: CommandContext; out: string[]; err: string[] } {
    const out: string[] = [];
    const err: string[] = [];
    return {
      out,
      err,
      ctx: {
        out: (l) => out.push(l),
        err: (l) => err.push(l),
        write: (t) => out.push(t),
        writeErr: (t) => err.push(t),
        stdout: new PassThrough(),
        readStdin: () => Promise.resolve(''),
        interactive: false,
        ask: () => Promise.resolve(''),
        target: () => ({ apiUrl: url, token: 'svc_test' }),
        sleep: () => Promise.resolve(),
      },
    };
  }

  it('formats a line as the API’s text form does', () => {
    assert.equal(formatLogLine(line(1, 0, 'listening')), '2026-11-28T05:00:00.001Z m0 listening');
    assert.equal(formatLogLine({ ...line(1, 2, 'job'), service: 'worker' }), '2026-11-28T05:00:00.001Z worker/m2 job');
    assert.equal(formatLogLine({ ...line(1, 0, 'x'), machine: null }), '2026-11-28T05:00:00.001Z shop-m0-1 x');
  });

  it('without -f prints the recent lines once, asking for NDJSON with the options given', async () => {
    requests.length = 0;
    scripts = [(res) => stream(res).end(ndjson(line(1, 0, 'one')) + ndjson({ ...line(2, 1, 'two'), service: 'web' }))];
    const { ctx, out } = context();
    assert.equal(await logsGroup.run(['shop', '--since', '5m', '--tail', '10', '--service', 'web'], ctx), 0);
    assert.deepEqual(out, ['2026-11-28T05:00:00.001Z m0 one', '2026-11-28T05:00:00.002Z web/m1 two']);
    assert.deepEqual(requests, [{ query: { since: '5m', tail: '10', service: 'web' }, accept: 'application/x-ndjson' }]);
  });

  it('-f resumes after cut connections without a gap or a repeat, and stops when the API refuses', async () => {
    requests.length = 0;
    const a = line(10, 0, 'a');
    const b = line(5, 1, 'b'); // m1's line, older than m0's newest, arrives after it
    const c = line(20, 0, 'c');
    const d = line(15, 1, 'd'); // written by m1 before the cut, not yet sent
    const f = line(25, 0, 'f');
    const e = line(30, 0, 'e');
    const tick = line(40, 0, 'tick');
    scripts = [
      // The first connection: a, b, c, then half of f, and the connection breaks.
      (res) => {
        stream(res).write(ndjson(a) + ndjson(b) + ndjson(c) + ndjson(f).slice(0, 30));
        setTimeout(() => res.socket?.destroy(), 50);
      },
      // Resumed from m1's last line (5): what the API sends from then on, the printed ones included.
      (res) => {
        stream(res).write(ndjson(b) + ndjson(a) + ndjson(d) + ndjson(c) + ndjson(f) + ndjson(e) + ndjson(tick));
        setTimeout(() => res.socket?.destroy(), 50);
      },
      // The app wrote "tick" twice in one millisecond; only the first had been sent. The API ends cleanly here.
      (res) => stream(res).end(ndjson(tick) + ndjson(tick)),
    ];
    const { ctx, out, err } = context();
    await assert.rejects(
      followLogs(ctx, { app: 'shop', follow: true, json: false }),
      (e: unknown) => e instanceof ApiError && e.status === 404,
    );
    assert.deepEqual(
      out.map((l) => l.split(' ').slice(1).join(' ')),
      ['m0 a', 'm1 b', 'm0 c', 'm1 d', 'm0 f', 'm0 e', 'm0 tick', 'm0 tick'],
    );
    assert.deepEqual(
      requests.map((r) => r.query),
      [
        { follow: 'true' },
        { follow: 'true', tail: '0', since: at(5) },
        // m1 last wrote d (15), m0 tick (40): from the older of the two, so a late m1 line is not lost.
        { follow: 'true', tail: '0', since: at(15) },
        { follow: 'true', tail: '0', since: at(15) },
      ],
    );
    assert.equal(err.filter((l) => /reconnecting/.test(l)).length, 2, 'each broken connection is told on stderr');
  });

  it('-f --json prints each line as the API sent it', async () => {
    scripts = [(res) => stream(res).end(ndjson(line(1, 0, 'x')))];
    const { ctx, out } = context();
    await assert.rejects(followLogs(ctx, { app: 'shop', follow: true, json: true }), ApiError);
    assert.deepEqual(out, [JSON.stringify(line(1, 0, 'x'))]);
  });

  it('takes a silent connection for a dead one after the idle time, and resumes', async () => {
    requests.length = 0;
    scripts = [(res) => stream(res).write(ndjson(line(1, 0, 'x')))]; // and then nothing, connection open
    const { ctx, out, err } = context();
    await assert.rejects(followLogs(ctx, { app: 'shop', follow: true, json: false, idleMs: 200 }), ApiError);
    assert.equal(out.length, 1);
    assert.deepEqual(requests[1]!.query, { follow: 'true', tail: '0', since: at(1) });
    assert.deepEqual(err, [], 'an idle reconnect is not an error to tell');
  });

  it('before any line, a reconnect asks what the first request asked', async () => {
    requests.length = 0;
    scripts = [(res) => void stream(res).socket?.destroy()];
    const { ctx } = context();
    await assert.rejects(followLogs(ctx, { app: 'shop', follow: true, json: false, since: '10m', tail: 5 }), ApiError);
    assert.deepEqual(requests[0]!.query, requests[1]!.query);
    assert.deepEqual(requests[0]!.query, { tail: '5', since: '10m', follow: 'true' });
  });
});

describe('LogCursor', () => {
  it('forgets what is more than a minute older than the newest line, and machines that stopped writing', () => {
    const c = new LogCursor();
    const l0 = line(0, 0, 'old');
    assert.equal(c.accept(JSON.stringify(l0), l0), true);
    const later = { ...line(0, 1, 'new'), time: '2026-11-28T05:02:00.000Z' };
    assert.equal(c.accept(JSON.stringify(later), later), true);
    // m0 last wrote two minutes before: the resume point is m1's, not m0's.
    assert.equal(c.resume(), '2026-11-28T05:02:00.000Z');
    assert.equal(c.accept(JSON.stringify(later), later), false, 'the line at the resume point is skipped once');
    assert.equal(c.accept(JSON.stringify(later), later), true, 'and printed when it comes again after that');
  });
});
