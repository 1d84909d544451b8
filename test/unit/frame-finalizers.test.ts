// The frame's finalizer helpers (controllers/frame/finalizers.ts): added or removed once, always
// over the resourceVersion the decision was made on, never a write when there is nothing to do.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { customMetadataPatcher, ensureFinalizer, hasFinalizer, removeFinalizer } from '../../controllers/frame/finalizers.js';

const obj = (finalizers?: string[]): k8s.KubernetesObject => ({
  metadata: { name: 'db', namespace: 'ns', resourceVersion: '7', ...(finalizers ? { finalizers } : {}) },
});

describe('finalizers', () => {
  it('adds one after the others, over the version decided from, and only when missing', async () => {
    const patches: unknown[] = [];
    const patch = async (_: k8s.KubernetesObject, metadata: Record<string, unknown>) => patches.push(metadata);
    assert.equal(await ensureFinalizer(patch, obj(), 'svc.dev/x'), true);
    assert.equal(await ensureFinalizer(patch, obj(['other']), 'svc.dev/x'), true);
    assert.equal(await ensureFinalizer(patch, obj(['svc.dev/x']), 'svc.dev/x'), false);
    assert.deepEqual(patches, [
      { resourceVersion: '7', finalizers: ['svc.dev/x'] },
      { resourceVersion: '7', finalizers: ['other', 'svc.dev/x'] },
    ]);
  });

  it('removes only its own, and writes nothing when it is not there', async () => {
    const patches: unknown[] = [];
    const patch = async (_: k8s.KubernetesObject, metadata: Record<string, unknown>) => patches.push(metadata);
    assert.equal(await removeFinalizer(patch, obj(['other', 'svc.dev/x']), 'svc.dev/x'), true);
    assert.equal(await removeFinalizer(patch, obj(['other']), 'svc.dev/x'), false);
    assert.equal(await removeFinalizer(patch, obj(), 'svc.dev/x'), false);
    assert.deepEqual(patches, [{ resourceVersion: '7', finalizers: ['other'] }]);
    assert.equal(hasFinalizer(obj(['svc.dev/x']), 'svc.dev/x'), true);
    assert.equal(hasFinalizer(obj(), 'svc.dev/x'), false);
  });

  it('patches a custom resource’s metadata as a merge patch', async () => {
    const calls: Array<Record<string, unknown>> = [];
    const custom = {
      patchNamespacedCustomObject: async (o: Record<string, unknown>, options: unknown) => {
        calls.push({ ...o, options: options !== undefined });
        return {};
      },
    } as unknown as k8s.CustomObjectsApi;
    await ensureFinalizer(customMetadataPatcher(custom, 'svc.dev', 'v1', 'databases'), obj(), 'svc.dev/x');
    assert.deepEqual(calls, [
      {
        group: 'svc.dev',
        version: 'v1',
        plural: 'databases',
        namespace: 'ns',
        name: 'db',
        body: { metadata: { resourceVersion: '7', finalizers: ['svc.dev/x'] } },
        options: true,
      },
    ]);
  });
});
