// Attack: tenant code in a real sandbox pod (the svc/sandbox image on the local nodes, through the
// API) goes after the agent that runs it, as issue 30's attacker did: reads its environment (where
// its token was), its memory, attaches to it with ptrace, and opens its Node inspector with SIGUSR1;
// then leaves a process behind its exec in a session of its own. The agent runs as the same uid, so
// only its being non-dumpable (an execute-only node, hack/images.sh) and --disable-sigusr1 stand in
// the way; what an exec leaves behind is ended before the next exec starts. And with its network
// on, it tries every address of the host on the API's machine port (finding 5: the host's own
// address answered).
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import type { ExecResult } from '../../lib/sandbox/exec.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { images } from '../support/images.js';
import { assertOwnUserNamespace } from '../support/user-namespace.js';
import { eventually } from '../support/wait.js';

describe("security: tenant code cannot read, trace or inspect its sandbox's agent, nor outlive its exec", { timeout: 300_000 }, () => {
  let api: TestApi;
  let id: string;

  before(async () => {
    api = await startTestApi({ env: { SVC_SANDBOX_IMAGE: images.sandbox } });
    await eventually('the sandbox runtimes to be recorded', async () => (await api.request('GET', '/api/runtimes')).status === 200, {
      timeoutMs: 180_000,
      intervalMs: 500,
    });
    const res = await api.request('POST', '/api/sandboxes', { body: { runtime: 'python' } });
    const text = await res.text();
    assert.equal(res.status, 201, text);
    id = (JSON.parse(text) as { id: string; state: string }).id;
  });
  after(async () => {
    if (id) await api.request('DELETE', `/api/sandboxes/${id}`).catch(() => undefined);
    await api?.close();
  });

  const exec = async (command: string, sandbox = id): Promise<ExecResult> => {
    const res = await api.request('POST', `/api/sandboxes/${sandbox}/exec`, { body: { command, timeout_seconds: 30 } });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    return JSON.parse(text) as ExecResult;
  };

  it("runs the agent as the sandbox's user, yet its environment, memory and ptrace are closed to that user", async () => {
    // The agent: the process whose command line starts with its node (not this shell, which names it too).
    const found = await exec(
      'for p in /proc/[0-9]*; do tr "\\0" " " <$p/cmdline 2>/dev/null | grep -q "^/usr/local/lib/svc/agent-node .*sandbox-agent/main.js" && echo ${p#/proc/}; done',
    );
    const agent = found.stdout.trim().split('\n')[0];
    assert.match(agent ?? '', /^\d+$/, `the agent's pid (${found.stdout} ${found.stderr})`);
    const uid = await exec(`grep ^Uid: /proc/${agent}/status; id -u`);
    assert.match(uid.stdout, /^Uid:\s+1000\s/m, 'the same uid as the code it runs: only dumpability protects it');
    const environ = await exec(`cat /proc/${agent}/environ`);
    assert.notEqual(environ.exit_code, 0);
    assert.match(environ.stderr, /Permission denied/);
    assert.doesNotMatch(environ.stdout, /SVC_SANDBOX_TOKEN/);
    const owner = await exec(`stat -c %u /proc/${agent}/environ /proc/${agent}/mem`);
    assert.deepEqual(owner.stdout.trim().split('\n'), ['0', '0'], "a non-dumpable process's /proc files are root's");
    const mem = await exec(`python3 -c "open('/proc/${agent}/mem','rb').read(1)"`);
    assert.notEqual(mem.exit_code, 0);
    assert.match(mem.stderr, /PermissionError|Permission denied/);
    const ptrace = await exec(`python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, ${agent}, 0, 0)
print(r, ctypes.get_errno())"`);
    assert.equal(ptrace.stdout.trim(), '-1 1', 'PTRACE_ATTACH refused with EPERM');
    // SIGUSR1 would open the inspector on 127.0.0.1:9229 (0x2405); with --disable-sigusr1 it does not.
    const usr1 = await exec(`kill -USR1 ${agent}; sleep 1; grep -i ':2405 .* 0A ' /proc/net/tcp || echo none listening`);
    assert.equal(usr1.stdout.trim(), 'none listening');
    // And the agent is still there, serving.
    assert.equal((await exec('echo still served')).stdout, 'still served\n');
  });

  it('runs in a user namespace of its own, with limits its code cannot raise', async () => {
    assertOwnUserNamespace((await exec('cat /proc/self/uid_map')).stdout);
    // Set by the image's entrypoint before the agent starts (hack/images.sh), hard and soft.
    const limits = await exec(
      'echo $(ulimit -Sn) $(ulimit -Hn) $(ulimit -Hc) $(ulimit -Hf); (ulimit -n 512) 2>/dev/null && echo raised || echo kept',
    );
    assert.equal(limits.stdout, '256 256 0 4194304\nkept\n');
  });

  it('ends what an exec left running in a session of its own before the next exec starts', async () => {
    const left = await exec('(setsid sh -c "sleep 900" >/dev/null 2>&1 &); (nohup sleep 901 >/dev/null 2>&1 &); sleep 0.2; echo started');
    assert.equal(left.stdout, 'started\n');
    const after = await exec(
      'for p in /proc/[0-9]*; do tr "\\0" " " <$p/cmdline 2>/dev/null; echo; done | grep -c "^sleep 90[01]" || true',
    );
    assert.equal(after.stdout.trim(), '0', 'nothing the last exec started runs on');
  });

  it('refuses a sandbox with its network on every address of the host, on the machine port and others', async () => {
    const res = await api.request('POST', '/api/sandboxes', { body: { runtime: 'python', network: true } });
    const text = await res.text();
    assert.equal(res.status, 201, text);
    const open = JSON.parse(text) as { id: string };
    try {
      const hostAddresses = Object.values(os.networkInterfaces())
        .flat()
        .filter((a) => a && a.family === 'IPv4' && !a.internal)
        .map((a) => a!.address);
      assert.ok(hostAddresses.length >= 3, `the host's addresses: ${hostAddresses.join(', ')}`);
      const targets = hostAddresses.flatMap((a) => [`${a}:8079`, `${a}:8080`, `${a}:55432`]);
      const probe = await exec(
        `python3 -c "
import socket, sys
for t in sys.argv[1:]:
    host, port = t.rsplit(':', 1)
    try:
        socket.create_connection((host, int(port)), 3).close(); print(t, 'open')
    except OSError as e:
        print(t, 'refused' if isinstance(e, ConnectionRefusedError) else type(e).__name__)
" ${targets.join(' ')}`,
        open.id,
      );
      const answers = probe.stdout.trim().split('\n');
      assert.equal(answers.length, targets.length, probe.stderr);
      for (const line of answers) assert.doesNotMatch(line, / open$/, `reached: ${line}`);
    } finally {
      await api.request('DELETE', `/api/sandboxes/${open.id}`);
    }
  });
});
