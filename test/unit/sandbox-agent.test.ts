// The sandbox agent (sandbox-agent/), run in this process on the host: its authentication, exec
// semantics (exit codes, stdin, env, cwd, timeouts that kill what a command left behind, output
// caps, streaming, programs that cannot start) and files. What needs the sandbox pod's limits
// (fork bombs, memory bombs) is tested against real pods in test/integration/sandboxes.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { installed, runtimeCatalogue, runtimeNamed, versionOf } from '../../lib/sandbox/runtimes.js';
import { Agent } from '../../sandbox-agent/server.js';
import { strays } from '../../sandbox-agent/strays.js';
import { exitCodeOf } from '../../cli/sandbox.js';

const token = 'test-token-0123456789';

describe('sandbox agent', () => {
  let server: Server;
  let base: string;
  let home: string;

  before(async () => {
    home = await mkdtemp(path.join(os.tmpdir(), 'agent-home-'));
    const agent = new Agent({
      token,
      env: { home, tmp: home, path: '/usr/local/bin:/usr/bin:/bin' },
      runtimes: async () => [installed(runtimeNamed('python')!, '3.11.2')],
      maxRunning: 2,
    });
    server = await agent.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    assert.equal((await fetch(`${base}/healthz`)).status, 503, 'not ready before it is warm');
    agent.warm = true;
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await rm(home, { recursive: true, force: true });
  });

  const auth = { authorization: `Bearer ${token}` };
  const exec = async (body: Record<string, unknown>) => {
    const res = await fetch(`${base}/exec`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ timeoutMs: 10_000, maxOutputBytes: 1 << 20, ...body }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as {
      status: string;
      exit_code: number | null;
      signal: string | null;
      reason: string | null;
      stdout: string;
      stderr: string;
      truncated: { stdout: boolean; stderr: boolean };
      bytes: { stdout: number; stderr: number };
      duration_ms: number;
    };
  };

  it('answers its probe without a token and nothing else without the right one', async () => {
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.equal((await fetch(`${base}/info`)).status, 401);
    assert.equal((await fetch(`${base}/info`, { headers: { authorization: 'Bearer test-token-0123456788' } })).status, 401);
    assert.equal(
      (await fetch(`${base}/exec`, { method: 'POST', body: '{"argv":["id"],"timeoutMs":1000,"maxOutputBytes":10}' })).status,
      401,
    );
    const info = (await (await fetch(`${base}/info`, { headers: auth })).json()) as { runtimes?: Array<{ name: string }>; running: number };
    assert.equal(info.running, 0);
    assert.equal(info.runtimes, undefined, 'runtimes only when asked: probing them costs every pod start');
    const asked = (await (await fetch(`${base}/info?runtimes=1`, { headers: auth })).json()) as { runtimes: Array<{ name: string }> };
    assert.deepEqual(
      asked.runtimes.map((r) => r.name),
      ['python'],
    );
  });

  it('runs argv with stdin, env and cwd, and reports the exit code of a program that fails as ok', async () => {
    const r = await exec({
      argv: ['/bin/sh', '-c', 'cat; echo "$GREETING from $(pwd)"; echo oops >&2; exit 3'],
      stdin: Buffer.from('in\n').toString('base64'),
      env: { GREETING: 'hi' },
      cwd: '.',
    });
    assert.equal(r.status, 'ok');
    assert.equal(r.exit_code, 3);
    assert.equal(r.stdout, `in\nhi from ${home}\n`);
    assert.equal(r.stderr, 'oops\n');
    assert.deepEqual(r.truncated, { stdout: false, stderr: false });
  });

  it('refuses malformed requests with what is wrong', async () => {
    const post = async (body: unknown) => {
      const res = await fetch(`${base}/exec`, {
        method: 'POST',
        headers: auth,
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return [res.status, ((await res.json()) as { error: string }).error] as const;
    };
    const ok = { timeoutMs: 1000, maxOutputBytes: 10 };
    assert.deepEqual(await post('{'), [400, 'body is not JSON']);
    assert.deepEqual(await post({ ...ok, argv: ['x'], code: 'y', runtime: 'python' }), [400, 'body: exactly one of argv and code']);
    assert.deepEqual(await post({ ...ok, code: 'y' }), [400, 'runtime: code needs a runtime']);
    assert.deepEqual(await post({ ...ok, argv: [] }), [400, 'argv: 1 to 4096 strings']);
    assert.deepEqual(await post({ ...ok, argv: ['x'], env: { 'A=B': 'c' } }), [400, 'env.A=B: a variable name and a string value']);
    assert.deepEqual(await post({ argv: ['x'], timeoutMs: 0.5, maxOutputBytes: 1 }), [400, 'timeoutMs: an integer of milliseconds']);
  });

  it('says why a program cannot start, apart from its own exit codes', async () => {
    const missing = await exec({ argv: ['no-such-program-xyz'] });
    assert.equal(missing.status, 'failed');
    assert.match(missing.reason!, /no such file or directory: no-such-program-xyz/);
    const dir = await exec({ argv: ['true'], cwd: 'nowhere' });
    assert.equal(dir.status, 'failed');
    assert.match(dir.reason!, /no such directory/);
    const own = await exec({ argv: ['/bin/sh', '-c', 'exit 127'] });
    assert.deepEqual([own.status, own.exit_code], ['ok', 127]);
  });

  it('kills a command at its timeout with everything it started, even what left its output', async () => {
    const pidFile = path.join(home, 'bg.pid');
    const started = Date.now();
    const r = await exec({
      argv: ['/bin/sh', '-c', `sleep 60 </dev/null >/dev/null 2>&1 & echo $! > ${pidFile}; sleep 60`],
      timeoutMs: 300,
    });
    assert.equal(r.status, 'timed_out');
    assert.equal(r.signal, 'SIGKILL');
    assert.match(r.reason!, /timeout of 0.3 s/);
    // Killed at its timeout, not when the 60 s sleeps end (a bound that a loaded machine's scheduling
    // does not reach: 1 s was, with three test files at a time on two cores).
    assert.ok(Date.now() - started < 10_000, `killed at its timeout (${Date.now() - started} ms)`);
    const { readFile } = await import('node:fs/promises');
    const bg = Number(await readFile(pidFile, 'utf8'));
    // Gone, or a zombie left for PID 1 to reap (the pause container in a sandbox pod).
    const state = await readFile(`/proc/${bg}/stat`, 'utf8').then(
      (st) => st.slice(st.lastIndexOf(')') + 2, st.lastIndexOf(')') + 3),
      () => 'gone',
    );
    assert.ok(state === 'gone' || state === 'Z', `the background process is gone too (state ${state})`);
  });

  it('keeps output up to its cap per stream, counts the rest, and never blocks on a flood', async () => {
    const r = await exec({
      argv: ['/bin/sh', '-c', 'head -c 5000000 /dev/zero | tr "\\0" a; head -c 10 /dev/zero >&2'],
      maxOutputBytes: 1000,
    });
    assert.equal(r.status, 'ok');
    assert.equal(r.stdout.length, 1000);
    assert.deepEqual(r.truncated, { stdout: true, stderr: false });
    assert.deepEqual(r.bytes, { stdout: 5_000_000, stderr: 10 });
  });

  it('streams output as NDJSON as it comes, then the exit line', async () => {
    const res = await fetch(`${base}/exec?stream=1`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ argv: ['/bin/sh', '-c', 'echo one; sleep 0.3; echo two >&2; exit 4'], timeoutMs: 5000, maxOutputBytes: 100 }),
    });
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.match(Buffer.from(first.value).toString(), /"type":"stdout","data":"one\\n"/, 'the first line comes before the command ends');
    let rest = '';
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += Buffer.from(c.value).toString();
    const lines = rest
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(lines[0], { type: 'stderr', data: 'two\n' });
    assert.equal(lines.at(-1)!.type, 'exit');
    assert.equal(lines.at(-1)!.exit_code, 4);
    assert.equal(lines.at(-1)!.stdout, undefined, 'the exit line carries no output again');
  });

  it('refuses more execs at once than its limit with 429', async () => {
    const slow = () =>
      fetch(`${base}/exec`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ argv: ['sleep', '0.5'], timeoutMs: 5000, maxOutputBytes: 10 }),
      });
    const answers = await Promise.all([slow(), slow(), new Promise((r) => setTimeout(r, 100)).then(slow)]);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 429],
    );
  });

  it('writes and reads files byte for byte, streamed, and says what is missing', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 7);
    const put = await fetch(`${base}/files?path=${encodeURIComponent('sub/dir/blob.bin')}`, { method: 'PUT', headers: auth, body: bytes });
    assert.equal(put.status, 200);
    assert.deepEqual(await put.json(), { path: path.join(home, 'sub/dir/blob.bin'), size: bytes.length });
    const got = await fetch(`${base}/files?path=sub/dir/blob.bin`, { headers: auth });
    assert.equal(got.headers.get('content-length'), String(bytes.length));
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(bytes));
    const missing = await fetch(`${base}/files?path=nope`, { headers: auth });
    assert.equal(missing.status, 404);
    assert.match(((await missing.json()) as { error: string }).error, /no such file/);
    assert.equal((await fetch(`${base}/files?path=sub`, { headers: auth })).status, 400);
  });
});

describe('what an exec leaves behind', () => {
  it("is every process of the sandbox's user but PID 1, the agent and the agent's own helpers", () => {
    const procs = [
      { pid: 1, uid: 1000 }, // pause
      { pid: 7, uid: 1000 }, // the agent
      { pid: 40, uid: 1000 }, // a runtime probe of the agent's
      { pid: 41, uid: 1000 }, // setsid sh -c "sleep 900", reparented to PID 1
      { pid: 42, uid: 1000 },
      { pid: 50, uid: 0 }, // not the sandbox's user (none such in a sandbox pod; never touched)
    ];
    assert.deepEqual(strays(procs, { pid: 7, uid: 1000 }, new Set([40])), [41, 42]);
    assert.deepEqual(strays(procs.slice(0, 3), { pid: 7, uid: 1000 }, new Set([40])), []);
  });
});

describe('sandbox runtimes and exit codes', () => {
  it('finds versions in what probes print, and names runtimes by alias', () => {
    assert.equal(versionOf('Python 3.11.2\n'), '3.11.2');
    assert.equal(versionOf('v24.21.0'), '24.21.0');
    assert.equal(versionOf('GNU bash, version 5.2.15(1)-release'), '5.2.15');
    assert.equal(runtimeNamed('JS')?.name, 'node');
    assert.equal(runtimeNamed('python3')?.name, 'python');
    assert.equal(runtimeNamed('cobol'), undefined);
    assert.ok(['python', 'node', 'typescript', 'bash'].every((n) => runtimeCatalogue.some((r) => r.name === n)));
  });

  it('gives svc the exit code of the command: its own, 124 at a timeout, 128 + signal when killed', () => {
    assert.equal(exitCodeOf({ status: 'ok', exit_code: 3, signal: null }), 3);
    assert.equal(exitCodeOf({ status: 'timed_out', exit_code: null, signal: 'SIGKILL' }), 124);
    assert.equal(exitCodeOf({ status: 'failed', exit_code: null, signal: 'SIGKILL' }), 137);
    assert.equal(exitCodeOf({ status: 'failed', exit_code: null, signal: null }), 127);
  });
});
