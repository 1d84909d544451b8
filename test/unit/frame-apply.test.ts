// The frame's apply side (controllers/frame/apply.ts): server-side apply through the client of each
// kind, an unchanged shape skipped, a forgotten key applied again; and the frame forgetting what was
// applied when an owned object or the owner itself is deleted (controllers/frame/controller.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { Applier } from '../../controllers/frame/apply.js';
import { Controller, type Informer } from '../../controllers/frame/controller.js';
import { createLogger } from '../../lib/logger.js';

const log = createLogger('test', 'silent');

/** API clients that record every call: `kind method namespace/name` and the options given. */
function fakeClients() {
  const calls: Array<{ call: string; opts: Record<string, unknown> }> = [];
  let version = 0;
  const record =
    (method: string) =>
    async (opts: { namespace: string; name: string; body: k8s.KubernetesObject }): Promise<k8s.KubernetesObject> => {
      calls.push({ call: `${method} ${opts.namespace}/${opts.name}`, opts });
      version += 1;
      return { ...opts.body, metadata: { ...opts.body.metadata, resourceVersion: String(version) } };
    };
  const core = {
    patchNamespacedService: record('patchNamespacedService'),
    patchNamespacedLimitRange: record('patchNamespacedLimitRange'),
    patchNamespacedResourceQuota: record('patchNamespacedResourceQuota'),
    patchNamespacedConfigMap: record('patchNamespacedConfigMap'),
    patchNamespacedSecret: record('patchNamespacedSecret'),
  } as unknown as k8s.CoreV1Api;
  const networking = { patchNamespacedNetworkPolicy: record('patchNamespacedNetworkPolicy') } as unknown as k8s.NetworkingV1Api;
  const batch = { patchNamespacedCronJob: record('patchNamespacedCronJob') } as unknown as k8s.BatchV1Api;
  const custom = { patchNamespacedCustomObject: record('patchNamespacedCustomObject') } as unknown as k8s.CustomObjectsApi;
  return { calls, clients: { core, networking, batch, custom } };
}

const policy = (name: string, note = ''): k8s.V1NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: 'ns', annotations: { note } },
  spec: { podSelector: {} },
});
const service = (name: string): k8s.V1Service => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'ns' } });

describe('Applier', () => {
  it('applies an unchanged shape once, a changed one again, and a forgotten one again', async () => {
    const { calls, clients } = fakeClients();
    const applier = new Applier(clients);
    assert.equal(await applier.applyAll('ns', 'ns', [policy('a'), service('s')]), true);
    assert.deepEqual(
      calls.map((c) => c.call),
      ['patchNamespacedNetworkPolicy ns/a', 'patchNamespacedService ns/s'],
      'in the order given',
    );
    assert.equal(await applier.applyAll('ns', 'ns', [policy('a'), service('s')]), false, 'the same shape is skipped');
    assert.equal(calls.length, 2);

    assert.equal(await applier.applyAll('ns', 'ns', [policy('a', 'changed'), service('s')]), true, 'a changed shape is applied');
    assert.equal(calls.length, 4);

    assert.equal(applier.forget('ns'), true, 'something was remembered');
    assert.equal(applier.forget('ns'), false, 'nothing is left to forget');
    assert.equal(await applier.applyAll('ns', 'ns', [policy('a', 'changed'), service('s')]), true, 'forgotten: applied again');
    assert.equal(calls.length, 6);

    assert.equal(await applier.applyAll('ns', 'ns', [policy('a', 'changed'), service('s')], true), true, 'forced: applied again');
    assert.equal(calls.length, 8);
  });

  it('does not remember an apply that an object deleted meanwhile was forgotten during', async () => {
    const { clients } = fakeClients();
    let deleteDuringApply = true;
    const applier = new Applier({
      ...clients,
      networking: {
        patchNamespacedNetworkPolicy: async (opts: { body: k8s.V1NetworkPolicy }) => {
          // The informer's delete event of what is being applied arrives before the apply returns.
          if (deleteDuringApply) applier.forget('ns');
          return opts.body;
        },
      } as unknown as k8s.NetworkingV1Api,
    });
    assert.equal(await applier.applyAll('ns', 'ns', [policy('a')]), true);
    assert.equal(applier.last('ns'), undefined, 'not remembered: the next reconcile applies it again');
    deleteDuringApply = false;
    assert.equal(await applier.applyAll('ns', 'ns', [policy('a')]), true, 'applied again');
    assert.equal(await applier.applyAll('ns', 'ns', [policy('a')]), false, 'and now remembered');
  });

  it('keeps keys apart, and remembers the resourceVersion an apply returned', async () => {
    const { clients } = fakeClients();
    const applier = new Applier(clients);
    const shape = ['anything', { json: true }];
    const applied = await applier.apply('ns', service('s'));
    applier.remember('uid-1', shape, applied.metadata?.resourceVersion);
    assert.equal(applier.unchanged('uid-1', shape), true);
    assert.equal(applier.unchanged('uid-1', ['anything', { json: false }]), false);
    assert.equal(applier.unchanged('uid-2', shape), false, 'another key knows nothing');
    assert.deepEqual(applier.last('uid-1'), { hash: Applier.hash(shape), resourceVersion: '1' });
    applier.remember('uid-2', shape);
    assert.equal(applier.last('uid-2')?.resourceVersion, undefined);
    applier.forget('uid-1');
    assert.equal(applier.last('uid-1'), undefined);
    assert.equal(applier.unchanged('uid-2', shape), true, 'forgetting one key leaves the others');
  });

  it('tells its forget hooks every key forgotten', () => {
    const applier = new Applier({});
    const forgotten: string[] = [];
    applier.onForget((key) => forgotten.push(key));
    applier.remember('a', 1);
    applier.forget('a');
    applier.forget('b');
    assert.deepEqual(forgotten, ['a', 'b']);
  });

  it('applies each kind through its client, forced, as the controllers', async () => {
    const { calls, clients } = fakeClients();
    const applier = new Applier(clients);
    const objects: k8s.KubernetesObject[] = [
      service('svc'),
      { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr' } },
      { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'sec' } },
      policy('pol'),
      { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'cj' } },
    ];
    for (const o of objects) await applier.apply('ns', o);
    await applier.apply('ns', { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: { name: 'db' } }, { plural: 'clusters' });
    assert.deepEqual(
      calls.map((c) => c.call),
      [
        'patchNamespacedService ns/svc',
        'patchNamespacedLimitRange ns/lr',
        'patchNamespacedResourceQuota ns/q',
        'patchNamespacedConfigMap ns/cm',
        'patchNamespacedSecret ns/sec',
        'patchNamespacedNetworkPolicy ns/pol',
        'patchNamespacedCronJob ns/cj',
        'patchNamespacedCustomObject ns/db',
      ],
    );
    for (const { opts } of calls) {
      assert.equal(opts.fieldManager, 'svc-controllers');
      assert.equal(opts.force, true);
    }
    assert.deepEqual(
      { group: calls.at(-1)!.opts.group, version: calls.at(-1)!.opts.version, plural: calls.at(-1)!.opts.plural },
      { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters' },
    );
    await assert.rejects(applier.apply('ns', { apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 't' } }), /no plural/);
    await assert.rejects(new Applier({}).apply('ns', service('s')), /no API client/);
  });
});

/** An informer whose events the test drives. */
class FakeInformer<T extends k8s.KubernetesObject> implements Informer<T> {
  private readonly handlers: Record<string, Array<(o: T) => void>> = { add: [], update: [], delete: [] };
  on(verb: string, fn: (o: T) => void): void {
    this.handlers[verb]?.push(fn);
  }
  get(): T | undefined {
    return undefined;
  }
  list(): T[] {
    return [];
  }
  emit(verb: 'add' | 'update' | 'delete', obj: T): void {
    for (const fn of this.handlers[verb]!) fn(obj);
  }
}

describe('the frame forgets what was applied', () => {
  const owned = (owner: string): k8s.KubernetesObject => ({
    metadata: {
      name: 'child',
      namespace: 'ns',
      labels: { owner },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Owner', name: owner, uid: `uid-${owner}` }],
    },
  });

  function setup() {
    const primary = new FakeInformer<k8s.KubernetesObject>();
    const children = new FakeInformer<k8s.KubernetesObject>();
    const applier = new Applier({});
    const order: string[] = [];
    applier.onForget((key) => order.push(`forget ${key}`));
    const controller = new Controller<k8s.KubernetesObject, object>({
      kind: 'Owner',
      primary,
      reconciler: { reconcile: async () => ({}) },
      applier,
      appliedKeyOf: (o) => o.metadata!.uid!,
      log,
    });
    const add = controller.add.bind(controller);
    controller.add = (key: string) => {
      order.push(`enqueue ${key}`);
      add(key);
    };
    return { primary, children, applier, order, controller };
  }

  it('forgets an owned child’s apply before its owner is looked at again, and only on delete', () => {
    const { children, applier, order, controller } = setup();
    controller.watches(children, (c) => [`ns/${c.metadata!.labels!.owner}`], { forget: (c) => [c.metadata!.ownerReferences![0]!.uid] });
    applier.remember('uid-a', 'shape');
    children.emit('update', owned('a'));
    assert.equal(applier.unchanged('uid-a', 'shape'), true, 'an update forgets nothing');
    children.emit('delete', owned('a'));
    assert.deepEqual(order, ['enqueue ns/a', 'forget uid-a', 'enqueue ns/a']);
    assert.equal(applier.last('uid-a'), undefined);
    controller.stop();
  });

  it('forgets without enqueueing, or with, as asked', () => {
    const { children, applier, order, controller } = setup();
    controller.forgets(children, (c) => [c.metadata!.labels!.owner!]);
    controller.forgets(children, (c) => [`${c.metadata!.labels!.owner!}-again`], { requeue: true });
    applier.remember('a', 'shape');
    children.emit('add', owned('a'));
    children.emit('update', owned('a'));
    assert.deepEqual(order, [], 'only a delete counts');
    children.emit('delete', owned('a'));
    assert.deepEqual(order, ['forget a', 'forget a-again', 'enqueue a-again']);
    assert.equal(applier.last('a'), undefined);
    controller.stop();
  });

  it('forgets the owner’s own key when the owner is deleted', () => {
    const { primary, applier, controller } = setup();
    applier.remember('uid-o', 'shape');
    primary.emit('delete', { metadata: { name: 'o', namespace: 'ns', uid: 'uid-o' } });
    assert.equal(applier.last('uid-o'), undefined);
    controller.stop();
  });
});
