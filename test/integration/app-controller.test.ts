// The App controller against the local cluster, its nodes and a running controllers process
// (`make test` starts both): Apps applied as kubectl would apply them become machines and a Service.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { checkArtifactCredential } from '../../lib/artifacts/credential.js';
import { packTree } from '../../lib/artifacts/tarball.js';
import { loadConfig } from '../../lib/config.js';
import { apiVersion, group, version, type App } from '../../lib/resources/index.js';
import { kubeConfig, statusOf, testNamespace } from '../support/kube.js';
import { eventually } from '../support/wait.js';
import { images } from '../support/images.js';
import { listenOnMachinePort } from '../support/api.js';

const server = {
  kind: 'container',
  image: images.python,
  command: ['python3', '-m', 'http.server', '$(PORT)', '--bind', '0.0.0.0'],
  port: 8000,
};

describe('App controller', () => {
  let core: k8s.CoreV1Api;
  let custom: k8s.CustomObjectsApi;
  let discovery: k8s.DiscoveryV1Api;
  let ns: Awaited<ReturnType<typeof testNamespace>>;

  before(async () => {
    const kc = kubeConfig();
    core = kc.makeApiClient(k8s.CoreV1Api);
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
    ns = await testNamespace(core, 'apps');
  });
  after(async () => {
    await ns?.dispose();
  });

  const target = (name: string) => ({ group, version, namespace: ns.name, plural: 'apps', name });
  const create = (name: string, spec: Record<string, unknown>) =>
    custom.createNamespacedCustomObject({
      group,
      version,
      namespace: ns.name,
      plural: 'apps',
      body: { apiVersion, kind: 'App', metadata: { name }, spec },
    });
  const get = async (name: string) => (await custom.getNamespacedCustomObject(target(name))) as App;
  const condition = (app: App, type: string) => app.status?.conditions?.find((c) => c.type === type);
  const machines = async (name: string) =>
    (await core.listNamespacedPod({ namespace: ns.name, labelSelector: `svc.dev/app=${name}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const readyEndpoints = async (name: string) => {
    const slices = await discovery.listNamespacedEndpointSlice({ namespace: ns.name, labelSelector: `kubernetes.io/service-name=${name}` });
    return slices.items
      .flatMap((s) => s.endpoints ?? [])
      .filter((e) => e.conditions?.ready)
      .flatMap((e) => e.addresses);
  };

  it('serves an App applied as kubectl would: machines on both nodes, a Service with ready endpoints, status', async () => {
    await create('web', { ...server, machines: 2 });
    // Ready as soon as both machines are; the rollout done once its Service routes to both too.
    const app = await eventually(
      'the App to be Ready and its rollout done',
      async () => {
        const a = await get('web');
        return condition(a, 'Ready')?.status === 'True' && condition(a, 'Progressing')?.status === 'False' ? a : undefined;
      },
      { timeoutMs: 60_000 },
    );
    assert.equal(app.status?.ready, '2/2');
    assert.equal(app.status?.url, 'http://web.apps.localhost:8081');
    assert.equal(app.status?.observedGeneration, app.metadata.generation);
    assert.equal(condition(app, 'Progressing')?.status, 'False');
    assert.equal(condition(app, 'Degraded')?.status, 'False');
    assert.deepEqual(
      app.status?.machines?.map((m) => m.ordinal),
      [0, 1],
    );
    assert.deepEqual([...new Set(app.status?.machines?.map((m) => m.node))].sort(), ['local-a', 'local-b']);
    const pods = await machines('web');
    assert.ok(pods.every((p) => p.metadata?.ownerReferences?.[0]?.kind === 'App' && p.metadata.ownerReferences[0].controller));
    const addresses = await eventually(
      'two ready endpoints',
      async () => {
        const a = await readyEndpoints('web');
        return a.length === 2 ? a : undefined;
      },
      { timeoutMs: 30_000 },
    );
    for (const ip of addresses) assert.equal((await fetch(`http://${ip}:8000/`)).status, 200);
  });

  it('replaces machines on a spec change, keeping a ready endpoint all the way', async () => {
    await create('rolling', { ...server, machines: 1 });
    await eventually('rolling to be Ready', async () => condition(await get('rolling'), 'Ready')?.status === 'True', {
      timeoutMs: 120_000,
    });
    const before = (await machines('rolling')).map((p) => p.metadata!.name);
    await custom.patchNamespacedCustomObject(
      { ...target('rolling'), body: { spec: { env: [{ name: 'VERSION', value: '2' }] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const samples: number[] = [];
    await eventually(
      'the new machine to replace the old one',
      async () => {
        samples.push((await readyEndpoints('rolling')).length);
        const names = (await machines('rolling')).map((p) => p.metadata!.name);
        const app = await get('rolling');
        return (
          names.length === 1 &&
          !before.includes(names[0]) &&
          condition(app, 'Ready')?.status === 'True' &&
          condition(app, 'Progressing')?.status === 'False'
        );
      },
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    assert.ok(samples.length > 5, 'sampled during the rollout');
    assert.ok(
      samples.every((n) => n >= 1),
      `a ready endpoint at every sample: ${samples.join(',')}`,
    );
  });

  it('reports a machine that cannot run as Degraded, naming the reason', async () => {
    await create('broken', { kind: 'container', image: 'nginx:1.27' });
    const app = await eventually('Degraded', async () => {
      const a = await get('broken');
      return condition(a, 'Degraded')?.status === 'True' ? a : undefined;
    });
    assert.match(condition(app, 'Degraded')!.message, /machine 0: app: (ErrImagePull|ImagePullBackOff)/);
    assert.equal(condition(app, 'Progressing')?.reason, 'RolloutFailed');
    assert.equal(condition(app, 'Ready')?.status, 'False');
  });

  it('keeps serving an applied App whose new spec fails, and leaves the spec exactly as applied', async () => {
    await create('gitops', { ...server, machines: 1 });
    const live = await eventually(
      'gitops to be Ready',
      async () => {
        const a = await get('gitops');
        return condition(a, 'Ready')?.status === 'True' && a.status?.rollout?.state === 'Live' ? a : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const [address] = await readyEndpoints('gitops');
    const servingPod = (await machines('gitops'))[0]!.metadata!.name;
    // As a GitOps tool applies a commit: a new image that cannot start (no deploy id, no API).
    const applied = { ...server, image: 'registry.invalid/gone:1', machines: 1 };
    await custom.replaceNamespacedCustomObject({ ...target('gitops'), body: { ...live, spec: applied } });
    const failed = await eventually(
      'the rollout to fail',
      async () => {
        const a = await get('gitops');
        return a.status?.rollout?.state === 'Failed' ? a : undefined;
      },
      { timeoutMs: 60_000 },
    );
    assert.match(failed.status!.rollout!.reason ?? '', /ErrImagePull|ImagePullBackOff|InvalidImageName/);
    assert.equal(condition(failed, 'Progressing')?.reason, 'RolloutFailed');
    assert.match(condition(failed, 'Progressing')!.message, /last live revision keeps serving/);
    // The failed machine goes; the one that served stays and is the only one.
    const pods = await eventually(
      'only the serving machine left',
      async () => {
        const p = await machines('gitops');
        return p.length === 1 && p[0]!.metadata!.name === servingPod ? p : undefined;
      },
      { timeoutMs: 30_000 },
    );
    assert.equal(pods[0]!.spec!.containers[0]!.image, server.image);
    assert.equal((await fetch(`http://${address}:8000/`)).status, 200, 'still serving');
    const after = await get('gitops');
    assert.deepEqual({ ...after.spec, machines: after.spec.machines }, { ...applied }, 'the spec is what was applied, not rewritten');
    assert.equal(after.metadata.generation, failed.metadata.generation, 'nothing wrote the spec since');
    assert.equal(condition(after, 'Ready')?.status, 'True');
    assert.equal(after.status?.observedGeneration, after.metadata.generation);
    // A fixed commit rolls out again.
    await custom.patchNamespacedCustomObject(
      { ...target('gitops'), body: { spec: { image: images.python, env: [{ name: 'FIXED', value: '1' }] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await eventually(
      'the fixed spec to go live',
      async () => {
        const a = await get('gitops');
        return a.status?.rollout?.state === 'Live' && a.status.observedGeneration === a.metadata.generation ? a : undefined;
      },
      { timeoutMs: 60_000 },
    );
  });

  it('serves a static App applied with a digest and URL only, and refuses bytes that do not match the digest', async () => {
    // An artifact store of our own (as GitOps users would run one), reachable from pods.
    const tree = await packTree({ 'index.html': '<h1>from git</h1>' });
    const digest = `sha256:${createHash('sha256').update(tree).digest('hex')}`;
    const credentials: Array<string | undefined> = [];
    const store = createServer((req, res) => {
      credentials.push(req.headers.authorization);
      if (req.url === `/artifacts/${digest}`) res.end(tree);
      else if (req.url === `/artifacts/sha256:${'c'.repeat(64)}`)
        res.end(tree); // wrong bytes for that digest
      else res.writeHead(404).end();
    });
    // On a port of the range pods may reach on the host (the nodes' firewall refuses the rest).
    const port = await listenOnMachinePort(store);
    const base = loadConfig({ SVC_API_MACHINE_PORT: String(port) }, { exists: () => false }).deploys.artifactBaseUrl;
    try {
      await create('gitops-site', { kind: 'static', source: { digest, url: `${base}/${digest}` } });
      const [address] = await eventually(
        'a ready endpoint',
        async () => {
          const a = await readyEndpoints('gitops-site');
          return a.length ? a : undefined;
        },
        { timeoutMs: 60_000 },
      );
      assert.equal(await (await fetch(`http://${address}:8080/`)).text(), '<h1>from git</h1>');
      const ready = await eventually('Ready', async () => {
        const a = await get('gitops-site');
        return condition(a, 'Ready')?.status === 'True' ? a : undefined;
      });
      assert.equal(ready.spec.kind, 'static');
      // The machine showed the credential the controller minted for this digest (lib/artifacts/credential.ts).
      const key = loadConfig({}).deploys.artifactKey!;
      const bearer = credentials.find(Boolean)?.replace(/^Bearer /, '');
      assert.deepEqual(checkArtifactCredential(key, digest, bearer, new Date()), { ok: true });

      const forged = `sha256:${'c'.repeat(64)}`;
      await create('forged-site', { kind: 'static', source: { digest: forged, url: `${base}/${forged}` } });
      const failing = await eventually(
        'the rollout to fail',
        async () => {
          const a = await get('forged-site');
          return condition(a, 'Progressing')?.reason === 'RolloutFailed' ? a : undefined;
        },
        { timeoutMs: 60_000 },
      );
      assert.match(condition(failing, 'Progressing')!.message, /container app/);
      assert.equal(condition(failing, 'Ready')?.status, 'False');
      assert.deepEqual(await readyEndpoints('forged-site'), []);
      const [pod] = await machines('forged-site');
      // The runtime fetches before it listens, and restarts: its current run may not have logged yet, the one before has.
      const log = await eventually('the runtime to log the mismatch', async () => {
        for (const previous of [false, true]) {
          const text = await core
            .readNamespacedPodLog({ namespace: ns.name, name: pod!.metadata!.name!, container: 'app', previous })
            .catch(() => '');
          if (/digest mismatch/.test(text)) return text;
        }
        return undefined;
      });
      assert.match(log, /digest mismatch/);
      // Kubernetes Events on the App, as `kubectl describe app` shows them.
      const events = await eventually('RolloutFailed and MachineCreated Events', async () => {
        const list = await core.listNamespacedEvent({
          namespace: ns.name,
          fieldSelector: 'involvedObject.kind=App,involvedObject.name=forged-site',
        });
        const reasons = list.items.map((e) => `${e.type}/${e.reason}`);
        return reasons.includes('Warning/RolloutFailed') && reasons.includes('Normal/MachineCreated') ? list.items : undefined;
      });
      assert.equal(events.find((e) => e.reason === 'RolloutFailed')?.source?.component, 'svc-controllers');
    } finally {
      store.close();
    }
  });

  it('deletes an App when its expiry passes', async () => {
    await create('shortlived', {
      kind: 'container',
      image: images.busybox,
      command: ['sleep', '300'],
      expiresAt: new Date(Date.now() + 3000).toISOString(),
    });
    await eventually(
      'the expired App to be deleted',
      async () => {
        try {
          await get('shortlived');
          return false;
        } catch (err) {
          return statusOf(err) === 404;
        }
      },
      { timeoutMs: 30_000 },
    );
  });

  it('puts back a Service deleted or edited by hand', async () => {
    await eventually('the web Service', () =>
      core.readNamespacedService({ namespace: ns.name, name: 'web' }).then(
        () => true,
        () => false,
      ),
    );
    const first = await core.readNamespacedService({ namespace: ns.name, name: 'web' });
    await core.deleteNamespacedService({ namespace: ns.name, name: 'web' });
    const again = await eventually('the Service to be recreated', async () => {
      const svc = await core.readNamespacedService({ namespace: ns.name, name: 'web' }).catch(() => undefined);
      return svc && svc.metadata!.uid !== first.metadata!.uid ? svc : undefined;
    });
    assert.deepEqual(again.spec!.selector, first.spec!.selector);
    // A hand edit of a field the controller owns is undone (server-side apply, forced).
    await core.patchNamespacedService(
      { namespace: ns.name, name: 'web', body: { spec: { selector: { 'svc.dev/app': 'someone-else' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await eventually(
      'the selector to be restored',
      async () => (await core.readNamespacedService({ namespace: ns.name, name: 'web' })).spec!.selector?.['svc.dev/app'] === 'web',
    );
    await eventually('two ready endpoints again', async () => (await readyEndpoints('web')).length === 2);
  });

  it('garbage-collects machines and the Service with the App', async () => {
    await eventually('web machines', async () => (await machines('web')).length === 2);
    await custom.deleteNamespacedCustomObject(target('web'));
    await eventually(
      'machines and Service to go',
      async () => {
        const svc = await core.readNamespacedService({ namespace: ns.name, name: 'web' }).then(
          () => true,
          () => false,
        );
        return !svc && (await machines('web')).length === 0;
      },
      { timeoutMs: 60_000 },
    );
  });

  it('works while holding the leader Lease', async () => {
    const lease = await kubeConfig()
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: 'svc-controllers', namespace: 'kube-system' });
    assert.ok(lease.spec?.holderIdentity, 'a holder');
    assert.ok(Date.now() - new Date(lease.spec.renewTime!).getTime() < 15_000, 'renewed recently');
  });
});
