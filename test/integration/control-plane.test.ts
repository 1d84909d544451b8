// The local control plane is a real one: the controller-manager's controllers and the scheduler act
// on what the apiserver stores. node-agent (not part of this test) is what later runs the pods; here
// a Node object stands in so the scheduler has somewhere to bind.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version } from '../../lib/resources/index.js';
import { kubeConfig, kubectl, statusOf, testNamespace, uniqueName, waitNamespaceGone } from '../support/kube.js';
import { eventually } from '../support/wait.js';
import { images } from '../support/images.js';

describe('local control plane', () => {
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let batch: k8s.BatchV1Api;
  let ns: Awaited<ReturnType<typeof testNamespace>>;
  const nodeName = uniqueName('test-node');

  before(async () => {
    kc = kubeConfig();
    core = kc.makeApiClient(k8s.CoreV1Api);
    batch = kc.makeApiClient(k8s.BatchV1Api);
    ns = await testNamespace(core, 'cp');
  });
  after(async () => {
    await core.deleteNode({ name: nodeName }).catch(() => undefined);
    await ns?.dispose();
  });

  it('reports the pinned Kubernetes release', async () => {
    const out = JSON.parse(await kubectl('version', '-o', 'json')) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string; minor: string };
    };
    assert.match(out.clientVersion.gitVersion, /^v1\.(3[3-9]|[4-9]\d)\.\d+$/);
    assert.equal(out.serverVersion.gitVersion, out.clientVersion.gitVersion);
  });

  it('gives a new namespace its default ServiceAccount (serviceaccount controller)', async () => {
    await eventually('default ServiceAccount', async () => {
      const list = await core.listNamespacedServiceAccount({ namespace: ns.name });
      return list.items.some((sa) => sa.metadata?.name === 'default');
    });
  });

  it('turns a Job into a Pod that the scheduler binds to a Node', async () => {
    await core.createNode({
      body: { metadata: { name: nodeName, labels: { 'svc.dev/test-node': nodeName } } },
    });
    // Report the node Ready with room for pods, as a kubelet would.
    await core.patchNodeStatus(
      {
        name: nodeName,
        body: {
          status: {
            capacity: { cpu: '2', memory: '4Gi', pods: '10' },
            allocatable: { cpu: '2', memory: '4Gi', pods: '10' },
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'KubeletReady',
                message: 'test node',
                lastHeartbeatTime: new Date(),
                lastTransitionTime: new Date(),
              },
            ],
          },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );

    await batch.createNamespacedJob({
      namespace: ns.name,
      body: {
        metadata: { name: 'hello' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              nodeSelector: { 'svc.dev/test-node': nodeName },
              tolerations: [{ operator: 'Exists' }],
              containers: [{ name: 'hello', image: images.busybox, command: ['echo', 'hello'] }],
            },
          },
        },
      },
    });
    const pod = await eventually(
      'the Job pod to be scheduled',
      async () => {
        const pods = await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'job-name=hello' });
        return pods.items.find((p) => p.spec?.nodeName === nodeName);
      },
      { timeoutMs: 60_000 },
    );
    assert.equal(pod.metadata?.ownerReferences?.[0]?.kind, 'Job');
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    assert.equal(scheduled?.status, 'True');
  });

  it('deletes what a namespace held when the namespace is deleted', async () => {
    const doomed = await testNamespace(core, 'doomed');
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await core.createNamespacedConfigMap({ namespace: doomed.name, body: { metadata: { name: 'cfg' }, data: { a: 'b' } } });
    await core.createNamespacedSecret({ namespace: doomed.name, body: { metadata: { name: 'sec' }, stringData: { a: 'b' } } });
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace: doomed.name,
      plural: 'apps',
      body: { apiVersion, kind: 'App', metadata: { name: 'site' }, spec: { kind: 'container', image: 'nginx' } },
    });
    // A Job whose pod no node can take: the pod exists but is not bound, so no kubelet must confirm its end.
    await batch.createNamespacedJob({
      namespace: doomed.name,
      body: {
        metadata: { name: 'stuck' },
        spec: {
          template: {
            spec: {
              restartPolicy: 'Never',
              nodeSelector: { 'svc.dev/no-such-node': 'true' },
              containers: [{ name: 'c', image: images.busybox }],
            },
          },
        },
      },
    });
    await eventually('the stuck Job pod', async () => {
      const pods = await core.listNamespacedPod({ namespace: doomed.name });
      return pods.items.length > 0;
    });

    await doomed.dispose();
    await waitNamespaceGone(core, doomed.name);
    const leftovers = (await custom.listClusterCustomObject({ group, version, plural: 'apps' })) as {
      items: Array<{ metadata: { namespace: string } }>;
    };
    assert.equal(leftovers.items.filter((a) => a.metadata.namespace === doomed.name).length, 0);
    await assert.rejects(core.readNamespacedConfigMap({ namespace: doomed.name, name: 'cfg' }), (err: unknown) => statusOf(err) === 404);
  });

  it('garbage-collects owned objects when their owner goes (garbage collector)', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: {
        metadata: {
          name: 'owned',
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! }],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'owner' });
    await eventually('the owned ConfigMap to be collected', async () => {
      try {
        await core.readNamespacedConfigMap({ namespace: ns.name, name: 'owned' });
        return false;
      } catch (err) {
        return statusOf(err) === 404;
      }
    });
  });
});
