// The reconciler frame (controllers/frame/): the keyed queue's coalescing, retries and delays, the
// periodic resync, and the status write it owns (observedGeneration, conditions, conflicts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { Controller, type Informer, type Outcome } from '../../controllers/frame/controller.js';
import { WorkQueue } from '../../controllers/frame/queue.js';
import { condition, mergePatchBetween, sameJson } from '../../controllers/frame/status.js';
import { createLogger } from '../../lib/logger.js';
import { eventually } from '../support/wait.js';

const until = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number) =>
  eventually(what, check, { timeoutMs, intervalMs: 5 });

const log = createLogger('test', 'silent');
const tick = () => new Promise((r) => setImmediate(r));

/** An informer whose cache and events the test drives. */
class FakeInformer<T extends k8s.KubernetesObject> implements Informer<T> {
  private readonly objects = new Map<string, T>();
  private readonly handlers: Record<string, Array<(o: T) => void>> = { add: [], update: [], delete: [] };
  on(verb: string, fn: (o: T) => void): void {
    this.handlers[verb]?.push(fn);
  }
  get(name: string, namespace?: string): T | undefined {
    return this.objects.get(`${namespace}/${name}`);
  }
  list(): T[] {
    return [...this.objects.values()];
  }
  put(obj: T): void {
    const key = `${obj.metadata!.namespace}/${obj.metadata!.name}`;
    const verb = this.objects.has(key) ? 'update' : 'add';
    this.objects.set(key, obj);
    for (const fn of this.handlers[verb]!) fn(obj);
  }
}

interface Thing extends k8s.KubernetesObject {
  status?: { phase?: string; conditions?: ReturnType<typeof condition>[]; observedGeneration?: number; extra?: string };
}
const thing = (name: string, generation = 1, status?: Thing['status']): Thing => ({
  metadata: { name, namespace: 'ns', generation, resourceVersion: String(generation) },
  ...(status ? { status } : {}),
});

describe('WorkQueue', () => {
  it('coalesces a key added while it waits, and runs a key added while it runs once more after', async () => {
    const runs: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(
      async (k) => {
        runs.push(k);
        if (runs.length === 1) await gate;
        return {};
      },
      () => undefined,
      1,
    );
    q.add('a');
    for (let i = 0; i < 5; i++) q.add('a'); // while it runs: one more run after
    q.add('b');
    q.add('b'); // while it waits: once
    release();
    await q.idle();
    await tick();
    await q.idle();
    assert.deepEqual(runs.sort(), ['a', 'a', 'b']);
    q.stop();
  });

  it('never works on one key twice at once, whatever the concurrency', async () => {
    let inFlight = 0;
    let most = 0;
    const q = new WorkQueue(
      async () => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight -= 1;
        return {};
      },
      () => undefined,
      8,
    );
    for (let i = 0; i < 20; i++) q.add('same');
    await until('the queue drains', async () => (q.stats().active === 0 && q.stats().waiting === 0 ? true : undefined), 2000);
    assert.equal(most, 1);
    q.stop();
  });

  it('retries a failing key with growing, jittered delays, and forgets its failures once it succeeds', async () => {
    const attempts: number[] = [];
    const errors: Array<{ attempt: number; retryMs: number }> = [];
    let calls = 0;
    const q = new WorkQueue(
      async () => {
        calls += 1;
        attempts.push(Date.now());
        if (calls <= 3) throw new Error('apiserver said no');
        return {};
      },
      (_k, _err, retryMs, attempt) => errors.push({ attempt, retryMs }),
      1,
      { baseMs: 20, maxMs: 1000 },
      () => 0.5,
    );
    q.add('k');
    await until('the fourth attempt', async () => (calls >= 4 ? true : undefined), 3000);
    assert.deepEqual(errors, [
      { attempt: 1, retryMs: 20 },
      { attempt: 2, retryMs: 40 },
      { attempt: 3, retryMs: 80 },
    ]);
    assert.ok(attempts[3]! - attempts[2]! >= 70, 'the third retry waited its delay');
    assert.equal(q.stats().failing, 0);
    assert.equal(q.retryDelay(30), 1000, 'capped');
    const jittered = new WorkQueue(
      async () => ({}),
      () => undefined,
      1,
      { baseMs: 100, maxMs: 1000 },
      () => 0,
    );
    assert.equal(jittered.retryDelay(1), 80, 'jitter takes up to a fifth off');
    q.stop();
  });

  it('a requeue asked for sooner wins over a later one', async () => {
    const runs: number[] = [];
    const q = new WorkQueue(
      async () => (runs.push(Date.now()), {}),
      () => undefined,
    );
    const start = Date.now();
    q.addAfter('k', 5000);
    q.addAfter('k', 30);
    q.addAfter('k', 4000);
    await until('the early requeue', async () => (runs.length ? true : undefined), 2000);
    assert.ok(runs[0]! - start < 1000);
    q.stop();
  });
});

describe('Controller', () => {
  const make = (opts: {
    reconcile: (t: Thing) => Promise<Outcome<{ phase: string }>>;
    write?: (t: Thing, patch: unknown) => Promise<void>;
    resyncMs?: number;
  }) => {
    const informer = new FakeInformer<Thing>();
    const writes: Array<{ name: string; patch: unknown }> = [];
    const controller = new Controller<Thing, { phase: string }>({
      kind: 'Thing',
      primary: informer,
      reconciler: { reconcile: opts.reconcile },
      writeStatus:
        opts.write ??
        (async (t, patch) => {
          writes.push({ name: t.metadata!.name!, patch });
        }),
      log,
      resyncMs: opts.resyncMs ?? 3600_000,
      conflictRetryMs: 20,
      backoff: { baseMs: 20, maxMs: 100 },
      clock: () => new Date('2026-01-01T00:00:00Z'),
    });
    return { informer, controller, writes };
  };

  it('writes status with observedGeneration and the Ready condition, and nothing when it did not change', async () => {
    const { informer, controller, writes } = make({
      reconcile: async () => ({ status: { phase: 'Up' }, ready: { ok: true, reason: 'Up', message: 'all good' } }),
    });
    controller.start();
    informer.put(thing('a', 4));
    await until('the status write', async () => (writes.length ? true : undefined), 2000);
    const patch = writes[0]!.patch as Thing['status'];
    assert.equal(patch?.phase, 'Up');
    assert.equal(patch?.observedGeneration, 4);
    assert.deepEqual(
      patch?.conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
      [['Ready', 'True', 'Up', 4]],
    );
    // The cache now shows what was written (in the apiserver's key order): no second write.
    informer.put({
      ...thing('a', 4),
      status: JSON.parse(JSON.stringify({ conditions: patch.conditions, observedGeneration: 4, phase: 'Up' })) as Thing['status'],
    });
    await controller.queue.idle();
    assert.equal(writes.length, 1);
    controller.stop();
  });

  it('removes status fields the reconciler no longer reports (null in the merge patch)', async () => {
    const { informer, controller, writes } = make({
      reconcile: async () => ({ status: { phase: 'Up' }, ready: { ok: true, reason: 'Up', message: 'ok' } }),
    });
    controller.start();
    informer.put(thing('a', 1, { phase: 'Down', extra: 'stale' }));
    await until('the status write', async () => (writes.length ? true : undefined), 2000);
    assert.equal((writes[0]!.patch as Record<string, unknown>).extra, null);
    controller.stop();
  });

  it('a conflict on the status write is no failure: the key is looked at again and written then', async () => {
    let tries = 0;
    const written: unknown[] = [];
    const { informer, controller } = make({
      reconcile: async () => ({ status: { phase: 'Up' }, ready: { ok: true, reason: 'Up', message: 'ok' } }),
      write: async (_t, patch) => {
        tries += 1;
        if (tries === 1) throw new k8s.ApiException(409, 'Conflict', '{"reason":"Conflict"}', {});
        written.push(patch);
      },
    });
    controller.start();
    informer.put(thing('a'));
    await until('the second status write', async () => (written.length ? true : undefined), 2000);
    assert.equal(tries, 2);
    assert.equal(controller.stats().conflicts, 1);
    assert.equal(controller.stats().failing, 0);
    controller.stop();
  });

  it('retries a reconcile that throws, and resyncs every object on its period without any event', async () => {
    let calls = 0;
    const { informer, controller } = make({
      reconcile: async () => {
        calls += 1;
        if (calls === 1) throw new Error('transient');
        return {};
      },
      resyncMs: 50,
    });
    informer.put(thing('quiet'));
    controller.start();
    await until('the retry succeeds', async () => (controller.stats().failing === 0 && calls >= 2 ? true : undefined), 3000);
    // No event from here on: only the resync brings the key back.
    const before = calls;
    await until('two resyncs', async () => (calls >= before + 2 ? true : undefined), 3000);
    controller.stop();
  });

  it('reconciles the owner when something it owns changes', async () => {
    const seen: string[] = [];
    const { informer, controller } = make({ reconcile: async (t) => (seen.push(t.metadata!.name!), {}) });
    const children = new FakeInformer<k8s.V1Pod>();
    controller.watches(children, (pod) => [`ns/${pod.metadata!.labels!.owner}`]);
    informer.put(thing('parent'));
    await controller.queue.idle();
    seen.length = 0;
    children.put({ metadata: { name: 'p1', namespace: 'ns', labels: { owner: 'parent' } } });
    await until('the owner reconciled', async () => (seen.includes('parent') ? true : undefined), 2000);
    controller.stop();
  });
});

describe('status helpers', () => {
  it("keeps a condition's transition time while its status holds", () => {
    const t0 = new Date('2026-01-01T00:00:00Z');
    const first = condition([], { type: 'Ready', ok: false, reason: 'A', message: 'a' }, 1, t0);
    const same = condition([first], { type: 'Ready', ok: false, reason: 'B', message: 'b' }, 2, new Date('2026-01-02T00:00:00Z'));
    assert.equal(same.lastTransitionTime, first.lastTransitionTime);
    const flipped = condition([same], { type: 'Ready', ok: true, reason: 'C', message: 'c' }, 2, new Date('2026-01-03T00:00:00Z'));
    assert.equal(flipped.lastTransitionTime, '2026-01-03T00:00:00.000Z');
  });

  it('compares JSON whatever the key order, and patches nested removals with null', () => {
    assert.ok(sameJson({ a: 1, b: { c: 2, d: 3 } }, { b: { d: 3, c: 2 }, a: 1 }));
    assert.ok(!sameJson({ a: [1, 2] }, { a: [2, 1] }));
    assert.deepEqual(mergePatchBetween({ a: 1, live: { deploy: 'x', since: 't' }, list: [1] }, { a: 1, live: { since: 't' }, list: [2] }), {
      live: { deploy: null },
      list: [2],
    });
  });
});
