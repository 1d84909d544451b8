// Sandboxes on the real node (the controllers of `make test`, the sandbox RuntimeClass, the
// svc/sandbox image) through the API: open, exec, files, destroy; eval in each runtime; network off
// and on; idle and lifetime expiry; isolation from other sandboxes, the host and other accounts;
// fork bombs, memory bombs and output floods; warm and cold launches; the account's limits.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { createAccount } from '../../lib/accounts.js';
import type { ExecResult } from '../../lib/sandbox/exec.js';
import { attenuate } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { images } from '../support/images.js';
import { testNamespace } from '../support/kube.js';
import { eventually } from '../support/wait.js';

interface SandboxBody {
  id: string;
  state: string;
  reason: string | null;
  message: string | null;
  launch: string | null;
  launch_reason: string | null;
  network: boolean;
  idle_expires_at: string | null;
  expires_at: string | null;
  ended_at: string | null;
}
type ExecBody = ExecResult & { sandbox: string; launch: string | null };

describe('sandboxes', { timeout: 600_000 }, () => {
  let api: TestApi;
  const opened: string[] = [];

  before(async () => {
    api = await startTestApi({ env: { SVC_SANDBOX_MAX_OPEN: '8', SVC_SANDBOX_IMAGE: images.sandbox } });
    // The controllers record the runtimes once a pool member is ready (a fresh cluster: its first pull).
    await eventually('the sandbox runtimes to be recorded', async () => (await api.request('GET', '/api/runtimes')).status === 200, {
      timeoutMs: 180_000,
      intervalMs: 500,
    });
  });
  after(async () => {
    for (const id of opened) await api.request('DELETE', `/api/sandboxes/${id}`).catch(() => undefined);
    await api?.close();
  });

  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  const open = async (body: Record<string, unknown> = {}, token?: string): Promise<SandboxBody> => {
    const s = await json<SandboxBody>(await api.request('POST', '/api/sandboxes', { body, ...(token ? { token } : {}) }), 201);
    opened.push(s.id);
    return s;
  };
  const exec = async (id: string, body: Record<string, unknown>) =>
    json<ExecBody>(await api.request('POST', `/api/sandboxes/${id}/exec`, { body }), 200);
  const get = async (id: string) => json<SandboxBody>(await api.request('GET', `/api/sandboxes/${id}`), 200);

  it('lists the runtimes really installed, with versions and what eval supports', async () => {
    const { runtimes } = await json<{
      runtimes: Array<{ name: string; version: string; language: string; extension: string; eval: boolean }>;
    }>(await api.request('GET', '/api/runtimes'), 200);
    const names = runtimes.map((r) => r.name);
    for (const n of ['python', 'node', 'typescript', 'bash', 'perl', 'ruby', 'php'])
      assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
    const python = runtimes.find((r) => r.name === 'python')!;
    assert.match(python.version, /^3\.\d+/);
    assert.equal(python.extension, '.py');
    assert.equal(python.eval, true);
  });

  it('opens warm, runs commands as an unprivileged user, moves files both ways, and is destroyed with its record kept', async () => {
    const s = await open({ runtime: 'python' });
    assert.equal(s.state, 'ready');
    assert.equal(s.launch, 'warm', `launched ${s.launch}: ${s.launch_reason}`);
    assert.ok(s.expires_at && s.idle_expires_at);
    const id = await exec(s.id, { argv: ['id', '-u'] });
    assert.deepEqual([id.status, id.exit_code, id.stdout.trim()], ['ok', 0, '1000']);
    const shell = await exec(s.id, { command: 'cat | tr a-z A-Z; echo "$X" >&2; exit 7', stdin: 'hello', env: { X: 'ex' } });
    assert.deepEqual([shell.status, shell.exit_code, shell.stdout, shell.stderr], ['ok', 7, 'HELLO', 'ex\n']);

    const blob = randomBytes(5 * 1024 * 1024 + 3);
    const put = await fetch(`${api.url}/api/sandboxes/${s.id}/files?path=data/blob.bin`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/octet-stream' },
      body: blob,
    });
    assert.deepEqual(await json(put, 200), { path: '/home/app/data/blob.bin', size: blob.length });
    const sum = await exec(s.id, { command: 'sha256sum data/blob.bin | cut -d" " -f1' });
    const { createHash } = await import('node:crypto');
    assert.equal(sum.stdout.trim(), createHash('sha256').update(blob).digest('hex'));
    const back = await fetch(`${api.url}/api/sandboxes/${s.id}/files?path=/home/app/data/blob.bin`, {
      headers: { authorization: `Bearer ${api.token}` },
    });
    assert.equal(back.status, 200);
    assert.ok(Buffer.from(await back.arrayBuffer()).equals(blob), 'binary-safe both ways');
    assert.equal((await api.request('GET', `/api/sandboxes/${s.id}/files?path=missing`)).status, 404);

    const listed = await json<{ sandboxes: SandboxBody[] }>(await api.request('GET', '/api/sandboxes'), 200);
    assert.ok(listed.sandboxes.some((x) => x.id === s.id));
    const gone = await json<SandboxBody>(await api.request('DELETE', `/api/sandboxes/${s.id}`), 200);
    assert.deepEqual([gone.state, gone.reason], ['ended', 'Deleted']);
    assert.deepEqual(
      await json(await api.request('DELETE', `/api/sandboxes/${s.id}`), 200).then((b) => (b as SandboxBody).state),
      'ended',
      'destroying twice is no error',
    );
    const read = await get(s.id);
    assert.deepEqual([read.state, read.reason], ['ended', 'Deleted'], 'an ended sandbox reads as ended, never 404');
    const refused = await api.request('POST', `/api/sandboxes/${s.id}/exec`, { body: { argv: ['true'] } });
    assert.equal(refused.status, 409);
    assert.match(((await refused.json()) as { error: string }).error, /has ended \(Deleted: destroyed on request\)/);
    assert.ok(
      !(await json<{ sandboxes: SandboxBody[] }>(await api.request('GET', '/api/sandboxes'), 200)).sandboxes.some((x) => x.id === s.id),
      'not listed as open',
    );
    assert.ok(
      (await json<{ sandboxes: SandboxBody[] }>(await api.request('GET', '/api/sandboxes?all=true'), 200)).sandboxes.some(
        (x) => x.id === s.id,
      ),
    );

    // Its events and its seconds, once.
    await eventually('sandbox.destroyed and its usage', async () => {
      const rows = await api.db('events').where({ account_id: api.account.id, subject: s.id }).select<Array<{ type: string }>>('type');
      return rows.some((r) => r.type === 'sandbox.destroyed') ? rows : undefined;
    });
    const types = (
      await api.db('events').where({ account_id: api.account.id, subject: s.id }).orderBy('id').select<Array<{ type: string }>>('type')
    ).map((r) => r.type);
    assert.deepEqual(types, ['sandbox.opened', 'sandbox.destroyed']);
    // The API reads usage up to its clock's now (the test's clock, set when the API started).
    api.clock.advance(120_000);
    const usage = await json<{ usage?: Record<string, number>; meters?: Record<string, number> } & Record<string, unknown>>(
      await api.request('GET', '/api/account/usage'),
      200,
    );
    assert.match(
      JSON.stringify(usage),
      /"sandbox_seconds":[1-9]|"sandbox_seconds":0\.[0-9]*[1-9]/,
      `sandbox_seconds counted: ${JSON.stringify(usage)}`,
    );
  });

  it('moves files larger than any small ceiling, and says when the sandbox disk is full, leaving nothing half-written', async () => {
    const s = await open();
    const big = randomBytes(80 * 1024 * 1024);
    const put = await fetch(`${api.url}/api/sandboxes/${s.id}/files?path=big.bin`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/octet-stream' },
      body: big,
    });
    assert.deepEqual(await json(put, 200), { path: '/home/app/big.bin', size: big.length });
    const back = await fetch(`${api.url}/api/sandboxes/${s.id}/files?path=big.bin`, { headers: { authorization: `Bearer ${api.token}` } });
    assert.equal(back.headers.get('content-length'), String(big.length));
    assert.ok(Buffer.from(await back.arrayBuffer()).equals(big));
    const small = await open({ resources: { disk: '16Mi' } });
    assert.equal(small.launch, 'cold', "other resources than the pool's need a pod of their own");
    assert.match(small.launch_reason!, /resources/);
    const full = await fetch(`${api.url}/api/sandboxes/${small.id}/files?path=too-big.bin`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/octet-stream' },
      body: randomBytes(24 * 1024 * 1024),
    });
    assert.equal(full.status, 413);
    assert.match(((await full.json()) as { error: string }).error, /no space left: the sandbox disk is full/);
    const left = await exec(small.id, { command: 'ls -A /home/app; df -k /home/app | tail -1' });
    assert.doesNotMatch(left.stdout, /too-big/, 'the partial file is removed');
    for (const id of [s.id, small.id]) await json(await api.request('DELETE', `/api/sandboxes/${id}`), 200);
  });

  it('evaluates code once in each runtime and destroys the sandbox after', async () => {
    const cases: Array<[string, string, string]> = [
      ['python', 'import sys; print(sum(range(10)), sys.version_info[0])', '45 3'],
      ['node', 'console.log([1, 2, 3].map((x) => x * 2).join(","))', '2,4,6'],
      ['typescript', 'const n: number = 21; console.log(n * 2)', '42'],
      ['bash', 'for i in 1 2 3; do printf "$i"; done; echo', '123'],
      ['perl', 'print join("-", map { $_ * 3 } 1..3), "\\n";', '3-6-9'],
      ['ruby', 'puts [3, 1, 2].sort.inspect', '[1, 2, 3]'],
      ['php', '<?php echo strtoupper("php"), "\\n";', 'PHP'],
    ];
    const results = await Promise.all(
      cases.map(async ([runtime, code]) =>
        json<ExecBody & { runtime: string }>(await api.request('POST', '/api/eval', { body: { runtime, code } }), 200),
      ),
    );
    results.forEach((r, i) => {
      assert.deepEqual(
        [r.runtime, r.status, r.exit_code, r.stdout.trim()],
        [cases[i]![0], 'ok', 0, cases[i]![2]],
        `${cases[i]![0]}: ${r.stderr}`,
      );
    });
    const err = await json<ExecBody>(
      await api.request('POST', '/api/eval', { body: { runtime: 'python3', code: 'raise SystemExit(5)' } }),
      200,
    );
    assert.equal(err.exit_code, 5, 'aliases name runtimes');
    const unknown = await api.request('POST', '/api/eval', { body: { runtime: 'cobol', code: 'x' } });
    assert.equal(unknown.status, 400);
    assert.match(((await unknown.json()) as { error: string }).error, /unknown runtime "cobol"; known runtimes: .*python.*node/);
    await eventually('the eval sandboxes to end', async () => {
      const all = await json<{ sandboxes: SandboxBody[] }>(await api.request('GET', '/api/sandboxes?all=true'), 200);
      const mine = all.sandboxes.filter((x) => results.some((r) => r.sandbox === x.id));
      return mine.length === results.length && mine.every((x) => x.state === 'ended' && x.reason === 'Deleted');
    });
    const one = await json<ExecBody>(await api.request('POST', '/api/sandbox/exec', { body: { command: 'echo one-shot; pwd' } }), 200);
    assert.equal(one.stdout, 'one-shot\n/home/app\n');
  });

  it('has no network unless asked, and then reaches another namespace (launched cold, saying why)', async () => {
    const core = api.kube.core;
    const ns = await testNamespace(core, 'sbx-net');
    try {
      await core.createNamespacedPod({
        namespace: ns.name,
        body: {
          metadata: { name: 'web' },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'web',
                image: images.busybox,
                command: ['sh', '-c', 'mkdir -p /tmp/w && echo reached > /tmp/w/index.html && exec httpd -f -p 8080 -h /tmp/w'],
              },
            ],
          },
        },
      });
      const ip = await eventually(
        'the server pod',
        async () => {
          const p = await core.readNamespacedPod({ name: 'web', namespace: ns.name });
          return p.status?.phase === 'Running' ? p.status.podIP : undefined;
        },
        { timeoutMs: 60_000 },
      );
      const probe = `import urllib.request\ntry:\n  print(urllib.request.urlopen("http://${ip}:8080/", timeout=3).read().decode().strip())\nexcept Exception as e:\n  print("refused", type(e).__name__)`;
      const off = await json<ExecBody>(await api.request('POST', '/api/eval', { body: { runtime: 'python', code: probe } }), 200);
      assert.match(off.stdout, /^refused/, `no network by default: ${off.stdout}`);
      // The API's machine listener: on every host address, at a port the nodes let app machines reach.
      const machinePort = new URL(api.machineUrl).port;
      const host = await json<ExecBody>(
        await api.request('POST', '/api/eval', {
          body: { runtime: 'python', code: probe.replace(`${ip}:8080`, `10.244.0.1:${machinePort}`) },
        }),
        200,
      );
      assert.match(host.stdout, /^refused/, `nor to the host: ${host.stdout}`);
      const s = await open({ network: true });
      assert.deepEqual([s.state, s.launch, s.network], ['ready', 'cold', true]);
      assert.match(s.launch_reason!, /network/);
      const on = await exec(s.id, { argv: ['python3', '-c', probe] });
      assert.equal(on.stdout.trim(), 'reached');
      // With its network on, still not the host: its machine port, nor the apiserver (its Service).
      const tcp = (target: string) => `import socket
try:
  socket.create_connection((${target}), timeout=3); print("connected")
except Exception as e:
  print("refused", type(e).__name__)`;
      for (const target of [`"10.244.0.1", ${machinePort}`, '"10.96.0.1", 443', '"10.244.0.1", 6443']) {
        const r = await exec(s.id, { argv: ['python3', '-c', tcp(target)] });
        assert.match(r.stdout, /^refused/, `${target}: ${r.stdout}`);
      }
    } finally {
      await ns.dispose();
    }
  });

  it('ends an idle sandbox (IdleTimeout) and one past its lifetime however busy (Expired), with reasons', async () => {
    const [idle, busy] = await Promise.all([open({ idle_timeout_seconds: 5 }), open({ max_lifetime_seconds: 8, idle_timeout_seconds: 5 })]);
    const keepBusy = (async () => {
      for (let i = 0; i < 6; i++) {
        const r = await api.request('POST', `/api/sandboxes/${busy.id}/exec`, { body: { argv: ['sleep', '1'] } });
        if (r.status !== 200) break;
        await r.text();
      }
    })();
    const idleEnd = await eventually(
      'the idle sandbox to end',
      async () => {
        const s = await get(idle.id);
        return s.state === 'ended' ? s : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.equal(idleEnd.reason, 'IdleTimeout');
    assert.match(idleEnd.message!, /no exec for 5 s/);
    const busyEnd = await eventually(
      'the busy sandbox to expire',
      async () => {
        const s = await get(busy.id);
        return s.state === 'ended' ? s : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    await keepBusy;
    assert.equal(busyEnd.reason, 'Expired', `kept busy, it ends at its lifetime, not idle: ${busyEnd.message}`);
    assert.ok(new Date(busyEnd.ended_at!).getTime() - new Date(busyEnd.expires_at!).getTime() < 3000);
    const ends = await eventually('the expiry events', async () => {
      const rows = await api
        .db('events')
        .whereIn('subject', [idle.id, busy.id])
        .where({ type: 'sandbox.expired' })
        .select<Array<{ subject: string; data: { reason: string } }>>('subject', 'data');
      return rows.length === 2 ? rows : undefined;
    });
    assert.deepEqual(Object.fromEntries(ends.map((e) => [e.subject, e.data.reason])), { [idle.id]: 'IdleTimeout', [busy.id]: 'Expired' });
  });

  it('isolates sandboxes from each other and from the host', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    await exec(a.id, { command: 'echo secret > /home/app/mine; echo t > /tmp/mine' });
    const peek = await exec(b.id, { command: 'ls /home/app/mine /tmp/mine 2>&1; echo "uid=$(id -u)"' });
    assert.match(peek.stdout, /No such file/);
    const probe = await exec(b.id, {
      command: [
        'test -e /var/run/secrets/kubernetes.io && echo TOKEN || echo no-token',
        'touch /usr/x 2>/dev/null && echo ROOT-WRITABLE || echo read-only',
        'test -e /work && echo HOST || echo no-host',
        // PID 1 is the pod's pause process, whose root is the pause image, not the host's.
        'test -e /proc/1/root/work -o -e /proc/1/root/root/.cache && echo HOST-VIA-PID1 || { tr "\\0" " " </proc/1/cmdline; echo; }',
        'stat -c %u /proc/[0-9]* | sort -u | tr "\\n" " "',
      ].join('; '),
    });
    const lines = probe.stdout.trim().split('\n');
    assert.deepEqual(
      lines.slice(0, 4).map((l) => l.trim()),
      ['no-token', 'read-only', 'no-host', '/pause'],
      probe.stdout + probe.stderr,
    );
    assert.equal(lines[4]?.trim(), '1000', 'every process of the sandbox, the agent and PID 1 included, runs as its one unprivileged user');
  });

  it('contains a fork bomb, a memory bomb and an output flood with the right status, and the sandbox lives on', async () => {
    const s = await open();
    const fork = await exec(s.id, { command: 'bomb() { bomb | bomb & }; bomb', timeout_seconds: 3 });
    assert.ok(['timed_out', 'ok'].includes(fork.status), JSON.stringify(fork));
    const after1 = await exec(s.id, { command: 'echo alive; ls -d /proc/[0-9]* | wc -l' });
    assert.equal(after1.stdout.split('\n')[0], 'alive', 'the sandbox answers after a fork bomb');
    // Killed, and gone within seconds: a loaded node may still be ending (and PID 1 reaping) the
    // last of them when the next exec starts, while a bomb left running would only grow.
    let left = after1.stdout;
    await eventually(
      'the fork bomb’s processes gone',
      async () => Number((left = (await exec(s.id, { command: 'ls -d /proc/[0-9]* | wc -l' })).stdout).trim()) < 20,
      { timeoutMs: 15_000, intervalMs: 500 },
    ).catch(() => assert.fail(`its processes were killed: ${left}`));
    const mem = await exec(s.id, {
      argv: ['python3', '-c', 'b = []\nwhile True: b.append(bytearray(64 * 1024 * 1024))'],
      timeout_seconds: 30,
    });
    assert.equal(mem.status, 'failed', JSON.stringify(mem));
    assert.match(mem.reason!, /out of memory/);
    const flood = await exec(s.id, { command: 'yes flood', timeout_seconds: 2, max_output_bytes: 4096 });
    assert.equal(flood.status, 'timed_out');
    assert.equal(flood.stdout.length, 4096);
    assert.equal(flood.truncated.stdout, true);
    assert.ok(flood.bytes.stdout > 1_000_000, `counted ${flood.bytes.stdout} bytes`);
    const alive = await exec(s.id, { argv: ['echo', 'still here'] });
    assert.equal(alive.stdout, 'still here\n');
    assert.equal((await get(s.id)).state, 'ready');
  });

  it("never shows one account another's sandbox, and refuses tokens restricted to apps", async () => {
    const s = await open();
    const other = await createAccount(api.db, api.kube.core, { email: `other-${Date.now()}@example.test` });
    try {
      const { token } = await api.deps.tokens.issue(other.id, { name: 'other' });
      for (const [method, path, body] of [
        ['GET', `/api/sandboxes/${s.id}`, undefined],
        ['POST', `/api/sandboxes/${s.id}/exec`, { argv: ['true'] }],
        ['DELETE', `/api/sandboxes/${s.id}`, undefined],
        ['GET', `/api/sandboxes/${s.id}/files?path=x`, undefined],
      ] as const) {
        assert.equal((await api.request(method, path, { token, ...(body ? { body } : {}) })).status, 404, `${method} ${path}`);
      }
      assert.deepEqual(
        (await json<{ sandboxes: unknown[] }>(await api.request('GET', '/api/sandboxes?all=true', { token }), 200)).sandboxes,
        [],
      );
      assert.equal((await get(s.id)).state, 'ready', 'untouched');
      const appsOnly = attenuate(api.token, [{ kind: 'apps', apps: ['blog'] }]);
      const refused = await api.request('POST', '/api/sandboxes', { token: appsOnly, body: {} });
      assert.equal(refused.status, 403);
      assert.equal((await api.request('POST', '/api/eval', { token: appsOnly, body: { runtime: 'python', code: '1' } })).status, 403);
      const readOnly = attenuate(api.token, [{ kind: 'actions', actions: ['read'] }]);
      assert.equal(
        (await api.request('POST', `/api/sandboxes/${s.id}/exec`, { token: readOnly, body: { argv: ['true'] } })).status,
        403,
        'exec needs the exec action',
      );
    } finally {
      await api.kube.core.deleteNamespace({ name: other.namespace }).catch(() => undefined);
    }
  });

  it('limits open sandboxes per account with 429 and Retry-After, and refuses limits over the maximum', async () => {
    // Others of this file may end meanwhile: open until refused, at most the limit's worth.
    let over: Response | undefined;
    for (let i = 0; i <= 8 && !over; i++) {
      const r = await api.request('POST', '/api/sandboxes', { body: { wait_seconds: 0 } });
      if (r.status === 429) over = r;
      else opened.push((await json<SandboxBody>(r, 201)).id);
    }
    assert.ok(over, 'refused once 8 are open');
    const open = (await json<{ sandboxes: unknown[] }>(await api.request('GET', '/api/sandboxes'), 200)).sandboxes.length;
    assert.ok(open >= 7 && open <= 8, `${open} open when refused`);
    assert.ok(Number(over.headers.get('retry-after')) >= 1);
    assert.match(((await over.json()) as { error: string }).error, /at most 8 per account/);
    const big = await api.request('POST', '/api/sandboxes', { body: { resources: { memory: '64Gi' } } });
    assert.equal(big.status, 400);
    const bad = await api.request('POST', '/api/sandboxes', { body: { idle_timeout_seconds: 1 } });
    assert.equal(bad.status, 400);
    const both = await api.request('POST', `/api/sandboxes/${opened.at(-1)}/exec`, { body: { command: 'x', argv: ['y'] } });
    assert.equal(both.status, 400);
    // Every open one goes, and with them the refusal.
    const all = (await json<{ sandboxes: SandboxBody[] }>(await api.request('GET', '/api/sandboxes'), 200)).sandboxes;
    await Promise.all(all.map(async (x) => json(await api.request('DELETE', `/api/sandboxes/${x.id}`), 200)));
    assert.deepEqual((await json<{ sandboxes: unknown[] }>(await api.request('GET', '/api/sandboxes'), 200)).sandboxes, []);
    opened.push((await json<SandboxBody>(await api.request('POST', '/api/sandboxes', { body: { wait_seconds: 0 } }), 201)).id);
  });

  it("works from the CLI: svc eval and svc sandbox open|exec|put|get|ls|rm, with exit codes that mirror the command's", async () => {
    const { execFile } = await import('node:child_process');
    const { mkdtemp, readFile, rm, writeFile } = await import('node:fs/promises');
    const os = await import('node:os');
    const path = await import('node:path');
    const { repoRoot } = await import('../../lib/paths.js');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-cli-'));
    const svc = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [path.join(repoRoot, 'bin/svc.js'), ...args],
          { env: { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token } },
          (err, stdout, stderr) => {
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
          },
        );
      });
    try {
      const ev = await svc('eval', '--runtime', 'python', '-c', 'import sys\nprint("hi")\nsys.exit(3)');
      assert.deepEqual([ev.code, ev.stdout], [3, 'hi\n'], ev.stderr);
      await writeFile(path.join(dir, 'main.ts'), 'const x: string = "typed"; console.log(x);\n');
      const file = await svc('eval', '--runtime', 'ts', path.join(dir, 'main.ts'));
      assert.deepEqual([file.code, file.stdout], [0, 'typed\n'], file.stderr);

      const opened = await svc('sandbox', 'open', '--runtime', 'node');
      assert.equal(opened.code, 0, opened.stderr);
      const id = opened.stdout.trim();
      assert.match(id, /^sb-[0-9a-f]{16}$/);
      assert.match(opened.stderr, new RegExp(`^${id}  ready \\((Claimed|Started)`), 'open says what it opened');
      const run = await svc('sandbox', 'exec', id, '--', 'sh', '-c', 'echo out; echo err >&2; exit 5');
      assert.deepEqual([run.code, run.stdout, run.stderr], [5, 'out\n', 'err\n']);
      const slow = await svc('sandbox', 'exec', id, '--timeout', '1', '-c', 'sleep 5');
      assert.equal(slow.code, 124);
      assert.match(slow.stderr, /timed_out: killed after the timeout of 1 s/);
      const asJson = await svc('sandbox', 'exec', id, '--json', '-c', 'echo x');
      assert.equal((JSON.parse(asJson.stdout) as { stdout: string }).stdout, 'x\n');
      const bytes = randomBytes(100_000);
      await writeFile(path.join(dir, 'in.bin'), bytes);
      assert.equal((await svc('sandbox', 'put', id, path.join(dir, 'in.bin'), 'in.bin')).code, 0);
      assert.equal((await svc('sandbox', 'exec', id, '-c', 'cp in.bin out.bin')).code, 0);
      assert.equal((await svc('sandbox', 'get', id, 'out.bin', path.join(dir, 'out.bin'))).code, 0);
      assert.ok((await readFile(path.join(dir, 'out.bin'))).equals(bytes));
      const listed = await svc('sandbox', 'ls', '--json');
      assert.ok((JSON.parse(listed.stdout) as Array<{ id: string }>).some((x) => x.id === id));
      assert.match((await svc('sandbox', 'ls')).stdout, new RegExp(`^ID +STATE .*\\n${id} +ready`, 'm'));
      const removed = await svc('sandbox', 'rm', id);
      assert.match(removed.stdout, new RegExp(`${id}  ended \\(Deleted`));
      const gone = await svc('sandbox', 'exec', id, '-c', 'true');
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, /409 sandbox .* has ended \(Deleted/);
      const missing = await svc('sandbox', 'exec', 'sb-0000000000000000', '-c', 'true');
      assert.match(missing.stderr, /404 sandbox sb-0000000000000000 not found/);
      const usage = await svc('sandbox', 'exec', id);
      assert.equal(usage.code, 2, 'a usage error');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("counts launches and shows the pool's depth on the controllers' /metrics", async () => {
    const metrics = async () => {
      const text = await (await fetch('http://127.0.0.1:8082/metrics')).text();
      const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
      return {
        text,
        launched: value('svc_sandbox_launches_total{launch="warm"}') + value('svc_sandbox_launches_total{launch="cold"}'),
        size: value('svc_sandbox_pool_size'),
        ready: value('svc_sandbox_pool_members{state="ready"}'),
      };
    };
    const before = await metrics();
    assert.match(before.text, /^svc_controllers_leading 1$/m);
    assert.ok(before.size >= 1 && before.ready >= 0, before.text);
    assert.match(before.text, /^svc_controller_reconciles_total\{kind="Sandbox"\} \d+$/m);
    const s = await open();
    const after = await metrics();
    assert.equal(after.launched, before.launched + 1, `one more launch (${s.launch})`);
    await json(await api.request('DELETE', `/api/sandboxes/${s.id}`), 200);
  });

  it('is what kubectl shows: a Sandbox with its phase, reason and launch', async () => {
    const custom = api.kube.kc.makeApiClient(k8s.CustomObjectsApi);
    type Item = { metadata: { name: string }; status?: { phase?: string; reason?: string; launch?: string } };
    const items = await eventually('every Sandbox to report a phase', async () => {
      const list = (await custom.listNamespacedCustomObject({
        group: 'svc.dev',
        version: 'v1alpha1',
        plural: 'sandboxes',
        namespace: api.account.namespace,
      })) as { items: Item[] };
      return list.items.length > 0 && list.items.every((i) => i.status?.phase && i.status.reason) ? list.items : undefined;
    });
    assert.ok(
      items.some((i) => i.status?.launch === 'warm') && items.some((i) => i.status?.launch === 'cold'),
      'both launches were exercised',
    );
  });
});
