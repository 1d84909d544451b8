// The App reconciler's pure planning: what to create and delete, and the status, from an App and
// its observed machines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { machinePod, plan, revisionOf } from '../../controllers/app/desired.js';
import type { App } from '../../lib/resources/index.js';

const settings = { appsDomain: 'apps.localhost', appsUrlSuffix: ':8081' };
const now = new Date('2026-01-01T00:00:00Z');
const app = (spec: Partial<App['spec']> = {}): App => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: { name: 'shop', namespace: 'ns', uid: 'u1', generation: 3 },
  spec: { kind: 'container', image: 'busybox', port: 8080, machines: 1, ...spec },
});
const withStatus = (pod: k8s.V1Pod, ready: boolean): k8s.V1Pod => ({
  ...pod,
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});

describe('App plan', () => {
  it('creates one machine per ordinal, owned by the App, and reports the status shape', () => {
    const a = app({ machines: 2 });
    const p = plan(a, [], settings, now);
    assert.deepEqual(p.create.map((x) => x.metadata?.name), [`shop-m0-${revisionOf(a)}`, `shop-m1-${revisionOf(a)}`]);
    assert.equal(p.create[0]?.metadata?.ownerReferences?.[0]?.uid, 'u1');
    assert.equal(p.status.ready, '0/2');
    assert.equal(p.status.url, 'http://shop.apps.localhost:8081');
    assert.equal(p.status.observedGeneration, 3);
    assert.deepEqual(p.status.conditions?.map((c) => [c.type, c.status]), [['Ready', 'False'], ['Progressing', 'True'], ['Degraded', 'False']]);
  });

  it('keeps the old machine until the new revision is ready, then deletes it', () => {
    const before = app();
    const after = app({ env: [{ name: 'A', value: '1' }] });
    assert.notEqual(revisionOf(before), revisionOf(after));
    const old = withStatus(machinePod(before, 0, revisionOf(before)), true);
    const starting = plan(after, [old], settings, now);
    assert.equal(starting.create.length, 1);
    assert.equal(starting.delete.length, 0, 'the old machine serves meanwhile');
    assert.equal(starting.status.ready, '1/1');
    const fresh = withStatus(machinePod(after, 0, revisionOf(after)), false);
    assert.equal(plan(after, [old, fresh], settings, now).delete.length, 0);
    const done = plan(after, [old, withStatus(fresh, true)], settings, now);
    assert.deepEqual(done.delete.map((x) => x.metadata?.name), [old.metadata?.name]);
    assert.equal(done.create.length, 0);
  });

  it('scales down by ordinal and suspends to zero', () => {
    const a = app({ machines: 1 });
    const extra = withStatus(machinePod(a, 1, revisionOf(a)), true);
    const first = withStatus(machinePod(a, 0, revisionOf(a)), true);
    assert.deepEqual(plan(a, [first, extra], settings, now).delete.map((x) => x.metadata?.name), [extra.metadata?.name]);
    const suspended = app({ suspended: true });
    assert.equal(plan(suspended, [first], settings, now).delete.length, 1);
  });

  it('marks an expired App for deletion and asks to look again at the expiry otherwise', () => {
    assert.equal(plan(app({ expiresAt: '2025-12-31T23:59:59Z' }), [], settings, now).expired, true);
    const later = plan(app({ expiresAt: '2026-01-01T00:01:00Z' }), [], settings, now);
    assert.equal(later.expired, false);
    assert.equal(later.requeueMs, 60_000);
  });
});
