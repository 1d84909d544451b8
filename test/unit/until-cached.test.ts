// Read-your-writes over an informer cache: a write waits until the cache shows it, bounded.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import { isAtLeast, untilCached, type ObjectCache } from '../../lib/kube/until-cached.js';

class FakeCache implements ObjectCache<KubernetesObject> {
  readonly objects = new Map<string, KubernetesObject>();
  readonly handlers = new Map<string, Set<(o: KubernetesObject) => void>>();
  get(name: string, namespace?: string) {
    return this.objects.get(`${namespace}/${name}`);
  }
  on(verb: string, cb: (o: KubernetesObject) => void) {
    if (!this.handlers.has(verb)) this.handlers.set(verb, new Set());
    this.handlers.get(verb)!.add(cb);
  }
  off(verb: string, cb: (o: KubernetesObject) => void) {
    this.handlers.get(verb)?.delete(cb);
  }
  /** As the informer does: the cache changes first, then the handlers run. */
  event(verb: 'add' | 'update' | 'delete', obj: KubernetesObject) {
    const key = `${obj.metadata!.namespace}/${obj.metadata!.name}`;
    if (verb === 'delete') this.objects.delete(key);
    else this.objects.set(key, obj);
    for (const cb of this.handlers.get(verb) ?? []) cb(obj);
  }
  listeners() {
    return [...this.handlers.values()].reduce((n, s) => n + s.size, 0);
  }
}

const app = (name: string, rv: string, namespace = 'ns'): KubernetesObject => ({ metadata: { name, namespace, resourceVersion: rv } });

describe('untilCached', () => {
  it('answers at once when the cache already shows the write', async () => {
    const cache = new FakeCache();
    cache.event('add', app('a', '12'));
    assert.equal(await untilCached(cache, 'ns', 'a', (c) => isAtLeast(c?.metadata?.resourceVersion, '12'), 50), true);
    assert.equal(cache.listeners(), 0);
  });

  it('waits for the event that shows the write, ignoring other objects and older versions, then lets go of its listeners', async () => {
    const cache = new FakeCache();
    cache.event('add', app('a', '10'));
    let settled: boolean | undefined;
    const wait = untilCached(cache, 'ns', 'a', (c) => isAtLeast(c?.metadata?.resourceVersion, '12'), 2000).then((ok) => (settled = ok));
    cache.event('update', app('b', '13'));
    cache.event('update', app('a', '11', 'other'));
    cache.event('update', app('a', '11'));
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, undefined, 'still waiting: the cache is behind the write');
    cache.event('update', app('a', '14')); // a later write seen first still shows ours
    assert.equal(await wait, true);
    assert.equal(cache.listeners(), 0);
  });

  it('sees a delete, and gives up after its time limit without failing the write', async () => {
    const cache = new FakeCache();
    cache.event('add', app('a', '10'));
    const gone = untilCached(cache, 'ns', 'a', (c) => !c, 2000);
    cache.event('delete', app('a', '10'));
    assert.equal(await gone, true);
    const started = Date.now();
    assert.equal(await untilCached(cache, 'ns', 'never', (c) => c !== undefined, 100), false);
    assert.ok(Date.now() - started >= 90);
    assert.equal(cache.listeners(), 0);
  });

  it('compares resource versions as integers (KEP-5504), anything else only by equality', () => {
    assert.equal(isAtLeast('100', '99'), true, 'numerically, not as text');
    assert.equal(isAtLeast('99', '100'), false);
    assert.equal(isAtLeast('7', '7'), true);
    assert.equal(isAtLeast('abc', 'abc'), true);
    assert.equal(isAtLeast('abd', 'abc'), false);
    assert.equal(isAtLeast(undefined, '1'), false);
  });
});
