// The sandbox service (api/sandboxes/service.ts, the sandboxes' action layer) with in-memory fakes:
// opening counts the account's open sandboxes under its lock (429 with Retry-After past the limit)
// and records sandbox.opened; reading, destroying and exec refuse what the handlers refused, with
// the same messages; eval resolves its runtime and ends its sandbox. And a Sandbox's record and
// presentation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Actor } from '../../api/deploys/actions.js';
import { ApiError } from '../../api/errors.js';
import { presentSandbox } from '../../api/presenters/sandboxes.js';
import { sandboxRecord, type SandboxRecord } from '../../api/sandboxes/repository.js';
import { SandboxService, type SandboxServiceDeps } from '../../api/sandboxes/service.js';
import { DomainError } from '../../lib/errors.js';
import { createLogger } from '../../lib/logger.js';
import type { Sandbox, SandboxSpec } from '../../lib/resources/index.js';
import type { AgentExecRequest, ExecResult } from '../../lib/sandbox/exec.js';
import { refusal } from '../support/answers.js';
import { FakeLock } from '../support/fake-lock.js';

const ns = 'acct-1';
const actor: Actor = { accountId: 'acc_1', namespace: ns, createdBy: 'token:t1' };

type Serve = 'ready' | 'pending' | 'fail';
type RepoDep = SandboxServiceDeps['sandboxes'];

/** The account's Sandboxes, in memory; the controllers' answer to a new one is `serve`. */
class FakeSandboxes implements RepoDep {
  readonly items = new Map<string, Sandbox>();
  readonly created: Array<{ spec: SandboxSpec; underLock: boolean }> = [];
  readonly stopped: string[] = [];
  serve: Serve = 'ready';
  private n = 0;
  constructor(private readonly lock: FakeLock) {}
  put(name: string, o: { spec?: Partial<SandboxSpec>; status?: Sandbox['status']; namespace?: string } = {}): Sandbox {
    const s: Sandbox = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Sandbox',
      metadata: {
        name,
        namespace: o.namespace ?? ns,
        uid: `uid-${name}`,
        creationTimestamp: new Date(Date.UTC(2026, 2, 1, 12, 0, this.n++)),
      },
      spec: { runtime: 'python', ...o.spec },
      ...(o.status ? { status: o.status } : {}),
    };
    this.items.set(name, s);
    return s;
  }
  list(namespace: string): SandboxRecord[] {
    return [...this.items.values()]
      .filter((s) => s.metadata.namespace === namespace)
      .map(sandboxRecord)
      .sort((a, b) => b.createdAt!.getTime() - a.createdAt!.getTime());
  }
  resource(namespace: string, id: string): Sandbox | undefined {
    const s = this.items.get(id) ?? [...this.items.values()].find((c) => c.metadata.uid === id);
    return s?.metadata.namespace === namespace ? s : undefined;
  }
  find(namespace: string, id: string): SandboxRecord | undefined {
    const s = this.resource(namespace, id);
    return s && sandboxRecord(s);
  }
  async create(namespace: string, spec: SandboxSpec, _accountId: string): Promise<SandboxRecord> {
    this.created.push({ spec, underLock: this.lock.held });
    const name = `sb-${String(this.created.length).padStart(16, '0')}`;
    const status: Sandbox['status'] =
      this.serve === 'ready'
        ? {
            phase: 'Ready',
            reason: 'Claimed',
            launch: 'warm',
            address: '10.0.0.9:8080',
            podName: `pool-${name}`,
            expiresAt: '2099-01-01T00:00:00Z',
          }
        : this.serve === 'fail'
          ? { phase: 'Failed', reason: 'StartTimeout', message: 'no pod in 120 s' }
          : { phase: 'Pending', reason: 'Starting' };
    this.put(name, { spec, namespace });
    // As the create answers (no status), then as the controllers serve it.
    const answered = sandboxRecord(this.items.get(name)!);
    this.put(name, { spec, namespace, status });
    return answered;
  }
  async until(namespace: string, name: string, _done: (s: SandboxRecord) => boolean): Promise<SandboxRecord | undefined> {
    return this.find(namespace, name);
  }
  async stopSandbox(namespace: string, name: string): Promise<void> {
    this.stopped.push(name);
    const s = this.resource(namespace, name);
    if (s) this.items.set(name, { ...s, spec: { ...s.spec, stopped: true }, status: { ...s.status, phase: 'Ended', reason: 'Deleted' } });
  }
  async recordActivity(): Promise<void> {}
}

const result: ExecResult = {
  status: 'ok',
  exit_code: 0,
  signal: null,
  reason: null,
  stdout: 'hi\n',
  stderr: '',
  truncated: { stdout: false, stderr: false },
  bytes: { stdout: 3, stderr: 0 },
  duration_ms: 5,
};

function setup(o: { maxOpen?: number } = {}) {
  const lock = new FakeLock();
  const sandboxes = new FakeSandboxes(lock);
  const events: Array<{ type: string; subject: string; data: Record<string, unknown> }> = [];
  const requests: AgentExecRequest[] = [];
  const service = new SandboxService({
    sandboxes,
    runtimes: {
      list: async () => [],
      resolve: async (name) => {
        const canonical = ({ py: 'python', python: 'python', node: 'node' } as Record<string, string>)[name];
        if (!canonical) throw new DomainError('invalid', `unknown runtime "${name}"; known runtimes: python, node`);
        return canonical;
      },
    },
    agentKey: undefined,
    agents: {
      exec: async (_target, req) => {
        requests.push(req);
        return result;
      },
      execStream: async () => {
        throw new Error('not streamed here');
      },
      upload: async () => ({ path: '/home/app/f', size: 1 }),
      download: async () => {
        throw new Error('not here');
      },
      close: () => undefined,
    },
    limits: { maxOpenPerAccount: o.maxOpen ?? 2, execPerMinute: 600, outputLimitBytes: 1024 },
    lock,
    recordEvent: async (_accountId, type, subject, data) => void events.push({ type, subject, data }),
    log: createLogger('test', 'silent'),
  });
  return { service, sandboxes, events, requests };
}

describe('sandbox service: open', () => {
  it('makes the Sandbox under the account lock, records sandbox.opened and answers it served', async () => {
    const { service, sandboxes, events } = setup();
    const s = await service.open(actor, { runtime: 'py', network: true, idleTimeoutSeconds: 30 });
    assert.deepEqual(sandboxes.created, [{ spec: { runtime: 'python', network: true, idleTimeoutSeconds: 30 }, underLock: true }]);
    assert.equal(s.phase, 'Ready');
    assert.deepEqual(events, [{ type: 'sandbox.opened', subject: s.id, data: { sandbox: s.id, runtime: 'python', network: true } }]);
  });

  it('refuses one more open sandbox than the limit with 429 and a Retry-After; ended ones do not count', async () => {
    const { service, sandboxes } = setup({ maxOpen: 2 });
    const soon = new Date(Date.now() + 30_000).toISOString();
    sandboxes.put('sb-a', { status: { phase: 'Ready', idleExpiresAt: soon } });
    sandboxes.put('sb-b', { status: { phase: 'Pending' } });
    sandboxes.put('sb-c', { status: { phase: 'Ended', reason: 'Expired' } });
    await assert.rejects(service.open(actor, {}), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 'rate_limited');
      assert.equal(
        err.message,
        '2 sandboxes are open (at most 2 per account): destroy one (DELETE /sandboxes/{id}) or retry when one ends',
      );
      assert.ok(Number(err.headers['Retry-After']) >= 1 && Number(err.headers['Retry-After']) <= 30);
      return true;
    });
    assert.equal(sandboxes.created.length, 0);
  });

  it('refuses resources over the maximum and unknown runtimes (400), making nothing', async () => {
    const { service, sandboxes } = setup();
    await assert.rejects(
      service.open(actor, { resources: { cpu: '4' } }),
      refusal('invalid', 'resources over the sandbox maximum: cpu 4 > 2'),
    );
    await assert.rejects(service.open(actor, { runtime: 'cobol' }), refusal('invalid', /^unknown runtime "cobol"/));
    assert.equal(sandboxes.created.length, 0);
  });

  it('answers at once, as created, with wait 0', async () => {
    const { service, sandboxes } = setup();
    sandboxes.serve = 'pending';
    const s = await service.open(actor, { waitMs: 0 });
    assert.equal(s.phase, 'Pending');
  });
});

describe('sandbox service: one sandbox', () => {
  it("answers not found for an unknown sandbox or another account's", async () => {
    const { service, sandboxes } = setup();
    sandboxes.put('sb-other', { namespace: 'acct-2', status: { phase: 'Ready' } });
    for (const id of ['sb-none', 'sb-other']) {
      const gone = refusal('not_found', `sandbox ${id} not found`);
      assert.throws(() => service.get(actor, id), gone);
      await assert.rejects(service.destroy(actor, id), gone);
      await assert.rejects(service.exec(actor, id, { command: 'true' }), gone);
    }
  });

  it('finds a sandbox by its uid, and lists the open ones unless all are asked for', async () => {
    const { service, sandboxes } = setup();
    sandboxes.put('sb-open', { status: { phase: 'Ready' } });
    sandboxes.put('sb-ended', { status: { phase: 'Ended', reason: 'Expired' } });
    assert.equal(service.get(actor, 'uid-sb-open').id, 'sb-open');
    assert.deepEqual(
      service.list(actor, false).map((s) => s.id),
      ['sb-open'],
    );
    assert.deepEqual(
      service.list(actor, true).map((s) => s.id),
      ['sb-ended', 'sb-open'],
    );
  });

  it('destroys an open sandbox, and answers an ended one as it is', async () => {
    const { service, sandboxes } = setup();
    sandboxes.put('sb-open', { status: { phase: 'Ready' } });
    sandboxes.put('sb-ended', { status: { phase: 'Failed', reason: 'PodFailed' } });
    assert.equal((await service.destroy(actor, 'sb-open')).phase, 'Ended');
    assert.equal((await service.destroy(actor, 'sb-ended')).phase, 'Failed');
    assert.deepEqual(sandboxes.stopped, ['sb-open']);
  });

  it('refuses an exec in an ended sandbox (409) and in one not ready yet (409, Retry-After 1)', async () => {
    const { service, sandboxes } = setup();
    sandboxes.put('sb-ended', {
      status: { phase: 'Ended', reason: 'IdleTimeout', message: 'idle 300 s', endedAt: '2026-03-01T13:00:00Z' },
    });
    sandboxes.put('sb-pending', { status: { phase: 'Pending', reason: 'Starting' } });
    await assert.rejects(
      service.exec(actor, 'sb-ended', { command: 'true' }),
      refusal('conflict', 'sandbox sb-ended has ended (IdleTimeout: idle 300 s) at 2026-03-01T13:00:00Z; open a new one'),
    );
    await assert.rejects(service.exec(actor, 'sb-pending', { command: 'true' }), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 'conflict');
      assert.equal(err.message, 'sandbox sb-pending is not ready yet (Starting); retry shortly');
      assert.deepEqual(err.headers, { 'Retry-After': '1' });
      return true;
    });
  });

  it('refuses stdin and stdin_base64 together, before looking the sandbox up (400)', async () => {
    const { service } = setup();
    await assert.rejects(
      service.exec(actor, 'sb-none', { command: 'cat', stdin: 'a', stdinBase64: 'YQ==' }),
      refusal('invalid', 'invalid body: give stdin or stdin_base64, not both'),
    );
  });

  it('runs an exec through the agent, its output capped at the platform limit', async () => {
    const { service, sandboxes, requests } = setup();
    sandboxes.put('sb-ready', {
      status: { phase: 'Ready', launch: 'cold', address: '10.0.0.9:8080', podName: 'sb-ready-pod', expiresAt: '2099-01-01T00:00:00Z' },
    });
    const answer = await service.exec(actor, 'sb-ready', { command: 'echo hi', stdin: 'x', maxOutputBytes: 1 << 20, timeoutSeconds: 2 });
    assert.deepEqual(answer, { ...result, sandbox: 'sb-ready', launch: 'cold' });
    assert.deepEqual(requests, [{ argv: ['/bin/sh', '-c', 'echo hi'], stdin: 'eA==', timeoutMs: 2000, maxOutputBytes: 1024 }]);
  });
});

describe('sandbox service: one-shot', () => {
  it('evaluates code in the resolved runtime and ends the sandbox after', async () => {
    const { service, sandboxes, requests } = setup();
    const answer = await service.evaluate(actor, { runtime: 'py', code: 'print(1)' }, {});
    assert.equal(answer.runtime, 'python');
    assert.equal(answer.stdout, 'hi\n');
    assert.equal(requests[0]?.code, 'print(1)');
    assert.equal(requests[0]?.runtime, 'python');
    assert.equal(sandboxes.created[0]?.spec.idleTimeoutSeconds, 60);
    assert.equal(sandboxes.created[0]?.spec.maxLifetimeSeconds, 120);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(sandboxes.stopped, [answer.sandbox]);
  });

  it('answers 503 when no sandbox could be started for the run, and ends it', async () => {
    const { service, sandboxes } = setup();
    sandboxes.serve = 'fail';
    await assert.rejects(
      service.oneShot(actor, {}, { command: 'true' }),
      refusal('unavailable', 'no sandbox could be started for this run (StartTimeout: no pod in 120 s)'),
    );
    await new Promise((r) => setImmediate(r));
    assert.equal(sandboxes.stopped.length, 1);
  });
});

describe('sandbox record and presentation', () => {
  it('presents a Sandbox as the API answered it before', () => {
    const s: Sandbox = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Sandbox',
      metadata: { name: 'sb-1', namespace: ns, uid: 'u1', creationTimestamp: new Date('2026-03-01T12:00:00Z') },
      spec: { runtime: 'python', resources: { memory: '1Gi' } },
      status: { phase: 'Ready', reason: 'Claimed', launch: 'cold', launchReason: 'other resources', readyAt: '2026-03-01T12:00:02Z' },
    };
    assert.deepEqual(presentSandbox(sandboxRecord(s)), {
      id: 'sb-1',
      runtime: 'python',
      network: false,
      state: 'ready',
      reason: 'Claimed',
      message: null,
      launch: 'cold',
      launch_reason: 'other resources',
      resources: { cpu: '1', memory: '1Gi', disk: '256Mi' },
      idle_timeout_seconds: 300,
      max_lifetime_seconds: 3600,
      created_at: '2026-03-01T12:00:00.000Z',
      ready_at: '2026-03-01T12:00:02Z',
      last_activity_at: null,
      idle_expires_at: null,
      expires_at: null,
      ended_at: null,
    });
    const bare = presentSandbox(sandboxRecord({ ...s, metadata: { name: 'sb-2', namespace: ns }, status: undefined }));
    assert.equal(bare.state, 'pending');
    assert.equal(bare.created_at, null);
  });
});
