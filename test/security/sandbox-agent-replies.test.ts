// Attack: a sandbox's agent taken over by the code it runs (issue 30, finding 1). The agent runs in
// the tenant's pod as the tenant's user, so whatever it answers is the tenant's: here a hostile
// agent on loopback (what a replaced request handler answered in the attack) answers the API's real
// agent client and the real activity tracker. Each case reproduces what the attack got through
// (4 MiB of output for a cap of 1 KiB, a 64 MiB reply read whole, a stream without end, more
// execs than the limit) and checks the API now holds its own limits whatever the agent says.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SandboxUse } from '../../api/sandboxes/activity.js';
import { AgentClient, type AgentTarget } from '../../api/sandboxes/agent-client.js';
import { checkExecResult, cutUtf8 } from '../../api/sandboxes/agent-replies.js';
import { ApiError } from '../../api/errors.js';
import { createLogger } from '../../lib/logger.js';
import type { Sandbox } from '../../lib/resources/index.js';
import { parseActivity } from '../../lib/sandbox/activity.js';
import type { AgentExecRequest } from '../../lib/sandbox/exec.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

describe("security: what a sandbox agent answers is bounded and held to the API's limits", () => {
  let server: Server;
  let target: AgentTarget;
  let handler: Handler = (_req, res) => res.end();
  let written = 0;
  const client = new AgentClient(Buffer.alloc(32, 7), { execGraceMs: 300 });

  before(async () => {
    server = createServer((req, res) => handler(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    target = { address: `127.0.0.1:${(server.address() as AddressInfo).port}`, podName: 'sbx-hostile' };
  });
  after(() => {
    client.close();
    server.closeAllConnections();
    server.close();
  });

  const request = (maxOutputBytes: number, timeoutMs = 5000): AgentExecRequest => ({ argv: ['true'], timeoutMs, maxOutputBytes });
  const result = (over: Record<string, unknown> = {}) => ({
    status: 'ok',
    exit_code: 0,
    signal: null,
    reason: null,
    stdout: '',
    stderr: '',
    truncated: { stdout: false, stderr: false },
    bytes: { stdout: 0, stderr: 0 },
    duration_ms: 3,
    ...over,
  });
  /** Writes `total` bytes of `chunk` as fast as the socket takes them, counting what went out. */
  const flood = (res: ServerResponse, head: string, chunk: Buffer, total: number, tail = '') => {
    written = 0;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(head);
    const more = () => {
      while (written < total) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end(tail);
    };
    res.once('error', () => undefined);
    more();
  };
  const refusedWith = async (p: Promise<unknown>, code: string, message: RegExp) => {
    await assert.rejects(p, (err: unknown) => {
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.code, code);
      assert.match(err.message, message);
      return true;
    });
  };

  it('cuts output past the cap the API asked for, whatever the agent kept (4 MiB answered for 1 KiB)', async () => {
    handler = (_req, res) =>
      res.end(JSON.stringify(result({ stdout: 'x'.repeat(4 << 20), stderr: 'é'.repeat(2000), bytes: { stdout: 1, stderr: 1 } })));
    // The whole of it is over the reply limit for a cap of 1 KiB: refused before it is parsed.
    await refusedWith(client.exec(target, request(1024)), 'bad_gateway', /more than \d+ bytes|answered \d+ bytes \(at most/);
    // Within the reply limit (a cap of 1 MiB asked, 4 MiB kept by the agent): cut to the cap.
    const answer = await client.exec(target, request(1 << 20));
    assert.equal(Buffer.byteLength(answer.stdout), 1 << 20);
    assert.equal(answer.truncated.stdout, true);
    assert.equal(answer.bytes.stdout, 4 << 20, 'never fewer bytes than came');
    // Cut on a character's boundary, never inside one.
    const cut = checkExecResult(Buffer.from(JSON.stringify(result({ stderr: 'é'.repeat(10) }))), 5);
    assert.equal(cut.stderr, 'éé');
    assert.equal(cutUtf8('aé', 2), 'a');
  });

  it("reads a 64 MiB reply no further than its limit, and the API's memory does not grow with it", async () => {
    handler = (_req, res) => flood(res, '{"status":"ok","stdout":"', Buffer.alloc(64 * 1024, 0x61), 64 << 20, '"}');
    const rss = process.memoryUsage().rss;
    await refusedWith(client.exec(target, request(1024)), 'bad_gateway', /more than \d+ bytes/);
    assert.ok(written < 16 << 20, `the connection was cut early (${written} bytes written before it was)`);
    assert.ok(process.memoryUsage().rss - rss < 48 << 20, 'memory did not grow by the reply');
    // A declared length over the limit is refused before a byte is read.
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 << 20) });
      res.write('{');
    };
    await refusedWith(client.exec(target, request(1024)), 'bad_gateway', /answered 67108864 bytes/);
    // An error answer is short by nature: 64 KiB at most are read of it.
    handler = (_req, res) => {
      res.statusCode = 400;
      flood(res, '{"error":"', Buffer.alloc(64 * 1024, 0x62), 64 << 20, '"}');
    };
    await assert.rejects(client.exec(target, request(1024)), ApiError);
    assert.ok(written < 16 << 20, `an error answer was cut early (${written} bytes written; the sockets' buffers hold a few MiB)`);
  });

  it('refuses answers of the wrong shape and forged uploads', async () => {
    for (const body of [
      'not json',
      JSON.stringify({ status: 'pwned' }),
      JSON.stringify(result({ exit_code: 'zero' })),
      JSON.stringify([1, 2]),
    ]) {
      handler = (_req, res) => res.end(body);
      await refusedWith(client.exec(target, request(1024)), 'bad_gateway', /not JSON|wrong shape/);
    }
    handler = (req, res) => {
      req.resume();
      req.once('end', () => res.end(JSON.stringify({ path: '/etc/passwd', size: -1 })));
    };
    const { Readable } = await import('node:stream');
    await refusedWith(client.upload(target, 'f', Readable.from([Buffer.from('hi')]), 2), 'bad_gateway', /upload of the wrong shape/);
  });

  it('re-makes a streamed exec within bounds: output to the cap, a bad line or no exit ends it with an exit saying so', async () => {
    const read = async (stream: NodeJS.ReadableStream) => {
      let text = '';
      for await (const c of stream) text += String(c);
      return text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    };
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      for (let i = 0; i < 64; i++) res.write(`${JSON.stringify({ type: 'stdout', data: 'y'.repeat(64 * 1024) })}\n`);
      res.write(`${JSON.stringify({ type: 'exit', ...result({ stdout: undefined, stderr: undefined }) })}\n`);
      res.end(`${JSON.stringify({ type: 'stdout', data: 'after the end' })}\n`);
    };
    let lines = await read(await client.execStream(target, request(1024)));
    const out = lines
      .filter((l) => l.type === 'stdout')
      .map((l) => l.data as string)
      .join('');
    assert.equal(out.length, 1024, 'held to the cap');
    const exit = lines.at(-1)!;
    assert.equal(exit.type, 'exit');
    assert.deepEqual(exit.truncated, { stdout: true, stderr: false });
    assert.ok(!lines.some((l) => l.data === 'after the end'), 'nothing after the exit line');

    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(`${JSON.stringify({ type: 'stdout', data: 'ok' })}\n{"type":"shell","cmd":"rm -rf /"}\n`);
    };
    lines = await read(await client.execStream(target, request(1024)));
    assert.deepEqual(
      lines.map((l) => l.type),
      ['stdout', 'exit'],
    );
    assert.equal(lines[1]!.status, 'failed');
    assert.match(lines[1]!.reason as string, /broke its bounds: a line of the wrong shape/);

    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write('{"type":"stdout","data":"');
      res.end('z'.repeat(1 << 20));
    };
    lines = await read(await client.execStream(target, request(1024)));
    assert.equal(lines.at(-1)!.status, 'failed');
    assert.match(lines.at(-1)!.reason as string, /a line longer than/);
  });

  it('holds its deadline over the whole answer: an agent dripping a byte at a time is cut', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const drip = setInterval(() => res.write(' '), 50);
      res.once('close', () => clearInterval(drip));
    };
    const started = Date.now();
    await refusedWith(client.exec(target, request(1024, 200)), 'bad_gateway', /broke off/);
    assert.ok(Date.now() - started < 3000, `cut at its deadline (${Date.now() - started} ms)`);
  });

  it("holds the limit of execs at once in the API (the agent's own is the tenant's to lift), and records use for the idle timeout", async () => {
    const writes: string[] = [];
    let clock = 1_000_000;
    const use = new SandboxUse(
      async (_ns, _name, value) => void writes.push(value),
      16,
      createLogger('test', 'silent'),
      () => clock,
    );
    const s = { metadata: { name: 'sb-1', namespace: 'acct' }, spec: { runtime: 'python', idleTimeoutSeconds: 60 } } as Sandbox;
    const ends = Array.from({ length: 16 }, () => use.begin(s, 30_000));
    assert.throws(
      () => use.begin(s, 30_000),
      (err: unknown) => err instanceof ApiError && err.code === 'rate_limited' && /16 execs are running in sandbox sb-1/.test(err.message),
    );
    use.begin(s, 30_000, false)(); // a file transfer is not an exec: not refused
    // The first write goes out on a timer of its own: wait for it (one turn of the event loop is not
    // always enough, the timers phase may come after the check phase).
    for (let i = 0; i < 100 && writes.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const busy = parseActivity(writes.at(-1));
    assert.equal(busy?.busyUntil?.getTime(), 1_000_000 + 30_000, 'busy until the latest deadline');
    // Past a tenth of the idle timeout, the end is written at once (sooner it waits until then).
    clock += 10_000;
    for (const end of ends) end();
    assert.equal(use.running(s), 0);
    await new Promise((r) => setTimeout(r, 50));
    const idle = parseActivity(writes.at(-1));
    assert.equal(idle?.busyUntil, undefined, 'no longer busy once every exec ended');
    assert.equal(idle?.at.getTime(), 1_010_000);
    assert.ok(writes.length <= 3, `writes coalesced (${writes.length})`);
    use.close();
  });
});
