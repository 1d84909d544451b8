// The deploy recorder (api/deploys/recorder.ts): it writes down the outcomes the App controller
// decided, only while it leads, once each, with the controller's time; it catches up when it
// becomes leader, retries by itself while the store is away, and fails deploys of deleted Apps.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeployRecorder, recordOutcomes, type AppFeed } from '../../api/deploys/recorder.js';
import type { DeployStore } from '../../lib/deploys.js';
import { createLogger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { eventually } from '../support/wait.js';

const log = createLogger('test', 'silent');

class Feed implements AppFeed {
  apps = new Map<string, App>();
  private readonly changed: Array<(a: App) => void> = [];
  private readonly deleted: Array<(a: App) => void> = [];
  all(): App[] {
    return [...this.apps.values()];
  }
  onChange(fn: (a: App) => void): void {
    this.changed.push(fn);
  }
  onDelete(fn: (a: App) => void): void {
    this.deleted.push(fn);
  }
  put(app: App): void {
    this.apps.set(app.metadata.uid!, app);
    for (const fn of this.changed) fn(app);
  }
  remove(uid: string): void {
    const app = this.apps.get(uid)!;
    this.apps.delete(uid);
    for (const fn of this.deleted) fn(app);
  }
}

type Outcomes = NonNullable<NonNullable<App['status']>['deploys']>;
const app = (uid: string, deploys: Outcomes): App => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: { name: `app-${uid}`, namespace: 'ns', uid },
  spec: {},
  status: { deploys },
});

/** The deploys table, in memory: rows move only forward, as DeployStore's do. */
class Store implements Pick<DeployStore, 'finish' | 'replaceOlder' | 'failOrphans'> {
  rows = new Map<string, { app: string; seq: number; status: string; reason?: string; at?: Date }>();
  calls: string[] = [];
  down = false;
  add(id: string, app: string, seq: number): void {
    this.rows.set(id, { app, seq, status: 'deploying' });
  }
  async finish(
    id: string,
    outcome: { status: 'live' } | { status: 'failed'; reason: string },
    at?: Date,
  ): Promise<'moved' | 'final' | 'missing'> {
    if (this.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    this.calls.push(`finish ${id} ${outcome.status}`);
    const row = this.rows.get(id);
    if (!row) return 'missing';
    if (row.status !== 'deploying') return 'final';
    Object.assign(row, { status: outcome.status, reason: outcome.status === 'failed' ? outcome.reason : undefined, at });
    return 'moved';
  }
  async replaceOlder(appUid: string, id: string, _at?: Date, spare: readonly string[] = []): Promise<number> {
    const seq = this.rows.get(id)!.seq;
    let n = 0;
    for (const [rid, r] of this.rows)
      if (r.app === appUid && r.seq < seq && r.status === 'deploying' && !spare.includes(rid)) {
        r.status = 'failed';
        r.reason = `replaced by ${id} before it went live`;
        n++;
      }
    return n;
  }
  async failOrphans(live: ReadonlySet<string>, reason: string): Promise<number> {
    let n = 0;
    for (const r of this.rows.values())
      if (!live.has(r.app) && r.status === 'deploying') {
        r.status = 'failed';
        r.reason = reason;
        n++;
      }
    return n;
  }
}

/** An election the test decides. */
function election() {
  let win!: (led: boolean) => void;
  const e = {
    run: () => new Promise<boolean>((r) => (win = r)),
    release: async () => win?.(false),
    lead: () => win(true),
  };
  return e;
}

/** A recorder that leads from the start, on a feed and a store of its own. */
function leading() {
  const feed = new Feed();
  const store = new Store();
  const e = election();
  const r = new DeployRecorder(feed, store, e, log);
  r.start();
  e.lead();
  return { feed, store, r };
}

describe('DeployRecorder', () => {
  it("writes nothing before it leads, then catches up on every App, oldest outcome first, with the controller's time", async () => {
    const feed = new Feed();
    const store = new Store();
    const e = election();
    const passes: string[] = [];
    const r = new DeployRecorder(feed, store, e, log, async (a) => void passes.push(a.metadata.uid!));
    r.start();
    store.add('d1', 'u1', 1);
    store.add('d2', 'u1', 2);
    store.add('d3', 'u1', 3);
    feed.put(
      app('u1', [
        { id: 'd3', state: 'live', at: '2026-01-01T00:03:00Z' },
        { id: 'd2', state: 'failed', reason: 'CrashLoopBackOff', at: '2026-01-01T00:02:00Z' },
      ]),
    );
    await new Promise((res) => setImmediate(res));
    assert.deepEqual(store.calls, [], 'a follower writes nothing');
    e.lead();
    await eventually('the outcomes written', () => store.rows.get('d3')!.status === 'live', { timeoutMs: 2000, intervalMs: 5 });
    assert.deepEqual(store.calls, ['finish d2 failed', 'finish d3 live']);
    assert.equal(store.rows.get('d2')!.reason, 'CrashLoopBackOff');
    assert.equal(store.rows.get('d3')!.at?.toISOString(), '2026-01-01T00:03:00.000Z');
    assert.equal(store.rows.get('d1')!.status, 'failed', 'an older deploy still in flight was replaced');
    assert.deepEqual(passes, ['u1'], 'invitations follow each pass over the App, after its outcomes');
    // The same status again (a resync, another replica's change): nothing written twice.
    feed.put(app('u1', [{ id: 'd3', state: 'live', at: '2026-01-01T00:03:00Z' }]));
    await new Promise((res) => setTimeout(res, 20));
    assert.equal(store.calls.length, 2);
    await r.stop();
  });

  it('never marks replaced a deploy the App reports an outcome of, even one it has written already and whose row fell behind', async () => {
    const { feed, store, r } = leading();
    store.add('e1', 'u5', 1);
    store.add('e2', 'u5', 2);
    feed.put(app('u5', [{ id: 'e1', state: 'live', at: '2026-01-01T00:01:00Z' }]));
    await eventually('e1 written', () => store.rows.get('e1')!.status === 'live', { timeoutMs: 2000, intervalMs: 5 });
    // The row goes back in flight (a recorder behind, as the API's rollback guards against), and the
    // next outcome comes: this pass skips e1 (written this term) and must leave it for the rollback.
    store.rows.get('e1')!.status = 'deploying';
    feed.put(
      app('u5', [
        { id: 'e2', state: 'live', at: '2026-01-01T00:02:00Z' },
        { id: 'e1', state: 'live', at: '2026-01-01T00:01:00Z' },
      ]),
    );
    await eventually('e2 written', () => store.rows.get('e2')!.status === 'live', { timeoutMs: 2000, intervalMs: 5 });
    assert.equal(store.rows.get('e1')!.status, 'deploying', 'not replaced: the controller said it went live');
    const written = await recordOutcomes(store, 'u5', [
      { id: 'e2', state: 'live', at: '2026-01-01T00:02:00Z' },
      { id: 'e1', state: 'live', at: '2026-01-01T00:01:00Z' },
    ]);
    assert.equal(store.rows.get('e1')!.status, 'live', 'moved to its outcome by the next pass that does not skip it');
    assert.deepEqual(
      written.map((w) => [w.id, w.moved]),
      [
        ['e1', true],
        ['e2', false],
      ],
    );
    await r.stop();
  });

  it("an outcome whose row is not written yet is written on the App's next change", async () => {
    const { feed, store, r } = leading();
    feed.put(app('u2', [{ id: 'd9', state: 'live', at: '2026-01-01T00:00:00Z' }]));
    await eventually('the first try', () => store.calls.length === 1, { timeoutMs: 2000, intervalMs: 5 });
    store.add('d9', 'u2', 9);
    feed.put(app('u2', [{ id: 'd9', state: 'live', at: '2026-01-01T00:00:00Z' }]));
    await eventually('written', () => store.rows.get('d9')!.status === 'live', { timeoutMs: 2000, intervalMs: 5 });
    await r.stop();
  });

  it('retries by itself while the store is away, without a new change of the App', async () => {
    const { feed, store, r } = leading();
    store.add('d5', 'u3', 5);
    store.down = true;
    feed.put(app('u3', [{ id: 'd5', state: 'live', at: '2026-01-01T00:00:00Z' }]));
    // Away long enough for several retries, with App changes meanwhile.
    await new Promise((res) => setTimeout(res, 2500));
    feed.put(app('u3', [{ id: 'd5', state: 'live', at: '2026-01-01T00:00:00Z' }]));
    await new Promise((res) => setTimeout(res, 1000));
    store.down = false;
    await eventually('written after the store came back', () => store.rows.get('d5')!.status === 'live', {
      timeoutMs: 8000,
      intervalMs: 20,
    });
    await r.stop();
  });

  it('fails the deploys in flight of an App that was deleted', async () => {
    const { feed, store, r } = leading();
    feed.put(app('u4', []));
    store.add('d7', 'u4', 7);
    feed.remove('u4');
    await eventually('failed', () => store.rows.get('d7')!.status === 'failed', { timeoutMs: 2000, intervalMs: 5 });
    assert.equal(store.rows.get('d7')!.reason, 'the app was deleted');
    await r.stop();
  });
});
