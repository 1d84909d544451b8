// The App reconciler's pure planning: what to create and delete, and the status, from an App and
// its observed machines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { machinePod, machinePolicy, plan, revisionOf } from '../../controllers/app/desired.js';
import { accountObjects, missingLabels } from '../../controllers/account/desired.js';
import { controlKeys } from '../../lib/machine-control.js';
import type { App } from '../../lib/resources/index.js';

const settings = {
  site: { appsDomain: 'apps.localhost', appsUrlSuffix: ':8081', secure: false },
  runtimeImage: 'svc/runtime:latest',
  artifactBaseUrl: 'http://10.244.0.1:8080/artifacts',
  rolloutDeadlineMs: 60_000,
  assertionIssuer: 'http://apps.localhost:8081/_svc/auth',
  jwksUrl: 'http://10.244.0.1:8080/_svc/auth/jwks.json',
};
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
    assert.deepEqual(
      p.create.map((x) => x.metadata?.name),
      [`shop-m0-${revisionOf(a, settings)}`, `shop-m1-${revisionOf(a, settings)}`],
    );
    assert.equal(p.create[0]?.metadata?.ownerReferences?.[0]?.uid, 'u1');
    assert.equal(p.status.ready, '0/2');
    assert.equal(p.status.url, 'http://shop.apps.localhost:8081');
    const secure = { ...settings, site: { ...settings.site, secure: true } };
    assert.equal(
      plan(a, [], secure, now).status.url,
      'https://shop.apps.localhost:8081',
      "https where app hostnames are served over it, as the API's links say",
    );
    assert.deepEqual(
      [['Ready', p.ready.ok], ...p.conditions.map((c) => [c.type, c.ok])],
      [
        ['Ready', false],
        ['Progressing', true],
        ['Degraded', false],
      ],
    );
  });

  it("gives every machine what it needs to verify identity assertions: the App's own settings, else the controllers'", () => {
    const envOf = (a: App) => Object.fromEntries((machinePod(a, 0, settings).spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    const plain = envOf(app());
    assert.equal(plain.SVC_AUTH_JWKS_URL, settings.jwksUrl);
    assert.equal(plain.SVC_AUTH_ISSUER, settings.assertionIssuer);
    assert.equal(plain.SVC_AUTH_AUDIENCE, 'shop.apps.localhost');
    const own = envOf(
      app({ identity: { jwksUrl: 'http://10.244.0.1:9999/_svc/auth/jwks.json', issuer: 'http://apps.localhost:9999/_svc/auth' } }),
    );
    assert.equal(own.SVC_AUTH_JWKS_URL, 'http://10.244.0.1:9999/_svc/auth/jwks.json');
    assert.equal(own.SVC_AUTH_ISSUER, 'http://apps.localhost:9999/_svc/auth');
    // An app's own variable of the same name does not replace the platform's.
    assert.equal(envOf(app({ env: [{ name: 'SVC_AUTH_AUDIENCE', value: 'evil' }] })).SVC_AUTH_AUDIENCE, 'shop.apps.localhost');
  });

  it('runs a machine in a user namespace of its own when the platform says so, and replaces the machines of the other shape', () => {
    const own = machinePod(app(), 0, { ...settings, userNamespaces: true });
    assert.equal(own.spec?.hostUsers, false);
    const host = machinePod(app(), 0, settings);
    assert.equal(host.spec?.hostUsers, undefined);
    assert.notEqual(revisionOf(app(), { ...settings, userNamespaces: true }), revisionOf(app(), settings));
  });

  it('runs every container of a machine non-root, unprivileged, capability-less, read-only, seccomp-confined, tokenless', () => {
    for (const a of [app(), app({ kind: 'static', source: { digest: `sha256:${'a'.repeat(64)}` } })]) {
      const pod = machinePod(a, 0, settings);
      assert.deepEqual(pod.spec?.securityContext, {
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        fsGroup: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      assert.equal(pod.spec?.automountServiceAccountToken, false);
      for (const c of [...(pod.spec?.initContainers ?? []), ...pod.spec.containers]) {
        assert.deepEqual(
          c.securityContext,
          { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true, runAsNonRoot: true },
          c.name,
        );
        assert.ok(
          c.volumeMounts?.some((m) => m.mountPath === '/tmp' && m.name === 'tmp'),
          `${c.name}: a writable /tmp`,
        );
      }
      assert.deepEqual(
        pod.spec?.volumes?.find((v) => v.name === 'tmp'),
        { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } },
      );
    }
  });

  it('writes each App a NetworkPolicy: in from the platform and its own machines, out to its own machines, the cluster DNS and the machine ports only', () => {
    assert.equal(machinePolicy(app(), settings), undefined, 'none without the platform’s addresses');
    const policy = machinePolicy(app(), {
      ...settings,
      platform: { cidrs: ['10.244.0.1/32', '10.244.1.1/32'], ports: [{ port: 8079 }, { port: 18000, endPort: 18099 }], clusterDns: true },
    })!;
    assert.equal(policy.metadata?.name, 'app-shop');
    assert.equal(policy.metadata?.ownerReferences?.[0]?.uid, 'u1');
    const own = { podSelector: { matchLabels: { 'svc.dev/app': 'shop' } } };
    assert.deepEqual(policy.spec, {
      podSelector: own.podSelector,
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [{ ipBlock: { cidr: '10.244.0.1/32' } }, { ipBlock: { cidr: '10.244.1.1/32' } }, own] }],
      egress: [
        { to: [own] },
        {
          to: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
              podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
            },
          ],
          ports: [
            { protocol: 'UDP', port: 53 },
            { protocol: 'TCP', port: 53 },
          ],
        },
        {
          to: [{ ipBlock: { cidr: '10.244.0.1/32' } }, { ipBlock: { cidr: '10.244.1.1/32' } }],
          ports: [
            { protocol: 'TCP', port: 8079 },
            { protocol: 'TCP', port: 18000, endPort: 18099 },
          ],
        },
      ],
    });
    // On a cluster (the chart), ingress-auth and the API are pods of the platform's namespace.
    const onCluster = machinePolicy(app(), { ...settings, platform: { cidrs: [], namespace: 'svc-system', ports: [{ port: 8079 }] } })!;
    const ns = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'svc-system' } } };
    assert.deepEqual(onCluster.spec!.ingress, [{ from: [ns, own] }]);
    assert.deepEqual(onCluster.spec!.egress![1], { to: [ns], ports: [{ protocol: 'TCP', port: 8079 }] });
    assert.equal(onCluster.spec!.egress!.length, 2, 'no way to the cluster DNS unless the platform says it answers for the cluster alone');
  });

  it('gives an account namespace PSA restricted, a quota, default limits and a deny-all policy', () => {
    assert.deepEqual(missingLabels({ metadata: { name: 'a', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }), {
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/enforce-version': 'latest',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
    const o = accountObjects('svc-acct-1');
    assert.deepEqual(o.denyAll.spec, { podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    assert.equal(o.quota.spec?.hard?.['services.nodeports'], '0');
    assert.equal(o.quota.spec?.hard?.pods, '50');
    assert.deepEqual((o.limits.spec?.limits[0] as unknown as { default: Record<string, string> }).default, {
      cpu: '1',
      memory: '512Mi',
      'ephemeral-storage': '1Gi',
    });
    for (const x of [o.quota, o.limits, o.denyAll]) assert.equal(x.metadata?.namespace, 'svc-acct-1');
  });

  it('keeps the old machine until the new revision is ready, then deletes it', () => {
    const before = app();
    const after = app({ env: [{ name: 'A', value: '1' }] });
    assert.notEqual(revisionOf(before, settings), revisionOf(after, settings));
    const old = withStatus(machinePod(before, 0, settings), true);
    const starting = plan(after, [old], settings, now);
    assert.equal(starting.create.length, 1);
    assert.equal(starting.delete.length, 0, 'the old machine serves meanwhile');
    assert.equal(starting.status.ready, '1/1');
    const fresh = withStatus(machinePod(after, 0, settings), false);
    assert.equal(plan(after, [old, fresh], settings, now).delete.length, 0);
    const done = plan(after, [old, withStatus(fresh, true)], settings, now);
    assert.deepEqual(
      done.delete.map((x) => x.metadata?.name),
      [old.metadata?.name],
    );
    assert.equal(done.create.length, 0);
  });

  it('counts a new machine, and lets the old one go, only once its Service routes to it (the EndpointSlices ingress-auth reads)', () => {
    const v1 = app({ deployId: 'dep-1' });
    const v2 = app({ deployId: 'dep-2', env: [{ name: 'A', value: '1' }] });
    const at = (pod: k8s.V1Pod, ip: string): k8s.V1Pod => ({
      ...withStatus(pod, true),
      status: { ...withStatus(pod, true).status, podIP: ip },
    });
    const old = at(machinePod(v1, 0, settings), '10.0.0.1');
    const fresh = at(machinePod(v2, 0, settings), '10.0.0.2');
    const unlisted = plan(v2, [old, fresh], settings, now, [], new Set(['10.0.0.1']));
    assert.equal(unlisted.delete.length, 0, 'the old machine serves until the new one is routed to');
    assert.equal(unlisted.status.rollout?.state, 'Progressing', 'not Live while no request can reach it');
    const listed = plan(v2, [old, fresh], settings, now, [], new Set(['10.0.0.1', '10.0.0.2']));
    assert.deepEqual(
      listed.delete.map((p) => p.metadata?.name),
      [old.metadata?.name],
    );
    assert.equal(listed.status.rollout?.state, 'Live');
  });

  it('scales down by ordinal and suspends to zero', () => {
    const a = app({ machines: 1 });
    const extra = withStatus(machinePod(a, 1, settings), true);
    const first = withStatus(machinePod(a, 0, settings), true);
    assert.deepEqual(
      plan(a, [first, extra], settings, now).delete.map((x) => x.metadata?.name),
      [extra.metadata?.name],
    );
    const suspended = app({ suspended: true });
    assert.equal(plan(suspended, [first], settings, now).delete.length, 1);
  });

  it('marks an expired App for deletion and asks to look again at the expiry otherwise', () => {
    assert.equal(plan(app({ expiresAt: '2025-12-31T23:59:59Z' }), [], settings, now).expired, true);
    const later = plan(app({ expiresAt: '2026-01-01T00:01:00Z' }), [], settings, now);
    assert.equal(later.expired, false);
    assert.equal(later.requeueMs, 60_000);
  });

  it('serves static, HTML, Markdown and handler-tree apps with the runtime image, fetching the digest the App names', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const a = app({ kind: 'markdown', image: undefined, source: { digest } });
    const pod = plan(a, [], settings, now).create[0]!;
    // One container: the runtime fetches and verifies the artifact itself before it listens.
    assert.equal(pod.spec!.initContainers, undefined);
    assert.equal(pod.spec!.containers.length, 1);
    const main = pod.spec!.containers[0]!;
    assert.equal(main.image, 'svc/runtime:latest');
    assert.deepEqual(main.args, ['serve']);
    const env = Object.fromEntries((main.env ?? []).map((e) => [e.name, e.value]));
    assert.equal(env.SVC_ARTIFACT_URL, `http://10.244.0.1:8080/artifacts/${digest}`, 'the default store when the App names no URL');
    assert.equal(env.SVC_ARTIFACT_DIGEST, digest);
    assert.equal(env.SVC_APP_KIND, 'markdown');
    assert.equal(main.volumeMounts?.find((m) => m.name === 'site')?.readOnly, undefined, 'the runtime writes what it fetched');
    // Ready as it serves: the probe asks the machine's own port, which holds it until the site is up.
    assert.equal(main.startupProbe, undefined);
    assert.deepEqual(main.readinessProbe?.httpGet, { port: 9099, path: '/ready' });
    assert.equal(main.readinessProbe?.periodSeconds, 1);
    assert.ok((main.readinessProbe?.timeoutSeconds ?? 0) * 1000 > 8000, 'the probe outwaits the runtime’s hold');
    assert.equal(env.SVC_CONTROL_PORT, '9099', 'every runtime machine opens the port, swapping or not');
    assert.equal(env.SVC_CONTROL_KEY, undefined, 'and takes no orders without the platform’s key');
    // The platform's HOST and PORT come last: an app's own variables do not move the runtime off them.
    assert.deepEqual(main.env!.slice(-2), [
      { name: 'HOST', value: '0.0.0.0' },
      { name: 'PORT', value: '8080' },
    ]);
    assert.deepEqual(main.livenessProbe?.httpGet, { port: 9099, path: '/live' }, 'alive while it starts, however long');
    assert.equal(main.livenessProbe?.initialDelaySeconds, undefined);
    assert.equal(main.terminationMessagePolicy, 'FallbackToLogsOnError');
    const withUrl = app({ kind: 'static', image: undefined, source: { digest, url: 'http://store.example/x' } });
    assert.equal(
      plan(withUrl, [], settings, now).create[0]!.spec!.containers[0]!.env!.find((e) => e.name === 'SVC_ARTIFACT_URL')!.value,
      'http://store.example/x',
    );
    const handlers = plan(app({ kind: 'handlers', image: undefined, source: { digest } }), [], settings, now);
    assert.equal(handlers.create.length, 1, 'a handler tree runs on the runtime image too');
    assert.deepEqual(handlers.create[0]!.spec!.containers[0]!.args, ['serve']);
    assert.ok(handlers.create[0]!.spec!.containers[0]!.env?.some((e) => e.name === 'SVC_APP_KIND' && e.value === 'handlers'));
    const sourceless = plan(app({ kind: 'handlers', image: undefined }), [], settings, now);
    assert.equal(sourceless.create.length, 0);
    assert.equal(sourceless.ready.reason, 'NoSource');
  });

  it('bounds the node disk of every container of a machine (ephemeral-storage, issue 30)', () => {
    const volumes = [{ name: 'data', path: '/data', size: '16Mi' }];
    for (const a of [
      app(),
      app({ kind: 'static', source: { digest: `sha256:${'a'.repeat(64)}` } }),
      app({ volumes, resources: { cpu: '1', memory: '256Mi' } }),
    ]) {
      const pod = machinePod(a, 0, settings);
      const all = [...(pod.spec?.initContainers ?? []), ...pod.spec!.containers];
      assert.ok(all.length >= 1);
      for (const c of all) {
        assert.equal(c.resources?.requests?.['ephemeral-storage'], '64Mi', c.name);
        assert.equal(c.resources?.limits?.['ephemeral-storage'], '1Gi', c.name);
      }
    }
    // The app's own limits stay, next to the disk's.
    assert.deepEqual(machinePod(app({ resources: { cpu: '1', memory: '256Mi' } }), 0, settings).spec!.containers[0]!.resources!.limits, {
      cpu: '1',
      memory: '256Mi',
      'ephemeral-storage': '1Gi',
    });
  });

  it('gives each machine its own claim per volume, made before it and kept when the volume or the machine goes', () => {
    const plain = app({ machines: 2 });
    const withVolumes = app({ machines: 2, volumes: [{ name: 'data', path: '/var/data', size: '5Gi' }] });
    const p = plan(withVolumes, [], settings, now);
    assert.deepEqual(
      p.claims.map((c) => [
        c.metadata?.name,
        c.spec?.resources?.requests?.storage,
        c.metadata?.labels?.['svc.dev/machine'],
        c.metadata?.labels?.['svc.dev/volume'],
        c.spec?.accessModes,
      ]),
      [
        ['shop-data-m0', '5Gi', '0', 'data', ['ReadWriteOnce']],
        ['shop-data-m1', '5Gi', '1', 'data', ['ReadWriteOnce']],
      ],
    );
    assert.equal(p.claims[0]?.metadata?.ownerReferences?.[0]?.uid, 'u1', 'deleted with its App');
    assert.equal(plan(withVolumes, [], { ...settings, volumeStorageClass: 'fast' }, now).claims[0]?.spec?.storageClassName, 'fast');
    const pod = p.create[1]!;
    assert.deepEqual(
      pod.spec?.volumes?.find((v) => v.name === 'vol-data'),
      { name: 'vol-data', persistentVolumeClaim: { claimName: 'shop-data-m1' } },
    );
    assert.deepEqual(
      pod.spec?.containers[0]?.volumeMounts?.find((m) => m.name === 'vol-data'),
      { name: 'vol-data', mountPath: '/var/data' },
    );
    // Claims already there are not made again; none is ever deleted by the plan (the Plan has no such field).
    assert.deepEqual(plan(withVolumes, [], settings, now, p.claims).claims, []);
    assert.deepEqual(
      plan(app({ machines: 1, volumes: withVolumes.spec.volumes }), [], settings, now, p.claims).claims,
      [],
      "scaling down keeps machine 1's claim",
    );
    // Apps without volumes keep their revision: upgrading the controllers replaces no machine.
    assert.equal(revisionOf(plain, settings, 1), 'e36c8074e6', 'the revision the controllers before volumes gave it');
    assert.notEqual(revisionOf(withVolumes, settings, 0), revisionOf(plain, settings, 0), 'declaring a volume replaces the machines');
  });

  it('placement pins one machine to a node and replaces only that machine', () => {
    const a = app({ machines: 2 });
    const moved = app({ machines: 2, placement: [{ ordinal: 1, node: 'local-b' }] });
    assert.equal(revisionOf(a, settings, 0), revisionOf(moved, settings, 0));
    assert.notEqual(revisionOf(a, settings, 1), revisionOf(moved, settings, 1));
    const pods = [0, 1].map((o) => withStatus(machinePod(a, o, settings), true));
    const p = plan(moved, pods, settings, now);
    assert.equal(p.create.length, 1);
    const terms = p.create[0]!.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms;
    assert.deepEqual(terms[0]!.matchExpressions![0]!.values, ['local-b']);
    assert.equal(p.create[0]!.metadata!.labels!['svc.dev/machine'], '1');
    assert.equal(p.delete.length, 0, 'the old machine 1 serves until the new one is ready');
  });

  it('reports a rollout that cannot succeed, and one past its deadline, as RolloutFailed', () => {
    const a = app();
    const pod = machinePod(a, 0, settings);
    const stuck: k8s.V1Pod = {
      ...pod,
      metadata: { ...pod.metadata, creationTimestamp: now },
      status: {
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'app',
            image: 'x',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'ErrImagePull', message: 'failed to pull and unpack image x' } },
          },
        ],
      },
    };
    const failed = plan(a, [stuck], settings, now).conditions.find((c) => c.type === 'Progressing')!;
    assert.equal(failed.ok, false);
    assert.equal(failed.reason, 'RolloutFailed');
    assert.match(failed.message, /machine 0: container app: ErrImagePull: failed to pull and unpack image x/);
    const slow: k8s.V1Pod = { ...pod, metadata: { ...pod.metadata, creationTimestamp: now }, status: { phase: 'Running' } };
    const waiting = plan(a, [slow], settings, now);
    assert.equal(waiting.conditions.find((c) => c.type === 'Progressing')!.reason, 'RollingOut');
    assert.equal(waiting.requeueMs, 60_000, 'looks again at the deadline');
    const late = plan(a, [slow], settings, new Date(now.getTime() + 61_000)).conditions.find((c) => c.type === 'Progressing')!;
    assert.equal(late.reason, 'RolloutFailed');
    assert.match(late.message, /not ready after 60 s/);
  });

  describe('rollouts, decided by the controller alone', () => {
    const ready = (pod: k8s.V1Pod): k8s.V1Pod => withStatus({ ...pod, metadata: { ...pod.metadata, creationTimestamp: now } }, true);
    const crashing = (pod: k8s.V1Pod): k8s.V1Pod => ({
      ...pod,
      metadata: { ...pod.metadata, creationTimestamp: now },
      status: {
        phase: 'Running',
        containerStatuses: [
          {
            name: 'app',
            image: 'x',
            imageID: '',
            ready: false,
            restartCount: 3,
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: { exitCode: 1 } },
          },
        ],
      },
    });
    /** The App with the status the frame would have written from plan `p`. */
    const written = (a: App, p: ReturnType<typeof plan>): App => ({ ...a, status: { ...p.status } });

    it("a rollout whose machines all serve is Live, recorded once as the deploy's outcome, and becomes what a failure falls back to", () => {
      const a = app({ deployId: 'dep-1' });
      const first = plan(a, [], settings, now);
      assert.equal(first.status.rollout?.state, 'Progressing');
      assert.equal(first.status.deploys, undefined, 'nothing has ended yet');
      const live = plan(written(a, first), [ready(first.create[0]!)], settings, now);
      assert.equal(live.status.rollout?.state, 'Live');
      assert.equal(live.status.currentDeploy, 'dep-1');
      assert.deepEqual(live.status.deploys, [{ id: 'dep-1', state: 'live', at: now.toISOString() }]);
      assert.equal(live.status.live?.deploy, 'dep-1');
      assert.deepEqual(live.status.live?.spec, { kind: 'container', image: 'busybox', port: 8080, deployId: 'dep-1' });
      const again = plan(written(a, live), [ready(first.create[0]!)], settings, new Date(now.getTime() + 5000));
      assert.deepEqual(again.status, live.status, 'a settled App reports the same status (no write)');
    });

    it('a failed rollout keeps the live machines, removes its own, and is not retried until the spec changes; the spec is never rewritten', () => {
      const v1 = app({ deployId: 'dep-1' });
      const p1 = plan(v1, [], settings, now);
      const m1 = ready(p1.create[0]!);
      const live = written(v1, plan(written(v1, p1), [m1], settings, now));
      const v2: App = { ...live, spec: { ...live.spec, image: 'broken', deployId: 'dep-2' } };
      const rolling = plan(v2, [m1], settings, now);
      assert.equal(rolling.create.length, 1, 'the new machine starts beside the old one');
      const m2 = crashing(rolling.create[0]!);
      const failing = plan(written(v2, rolling), [m1, m2], settings, now);
      assert.equal(failing.status.rollout?.state, 'Failed');
      assert.match(failing.status.rollout?.reason ?? '', /CrashLoopBackOff/);
      assert.equal(failing.delete.length, 0, 'the old machine stays');
      assert.equal(failing.status.deploys?.[0]?.id, 'dep-2');
      assert.equal(failing.status.deploys?.[0]?.state, 'failed');
      assert.equal(failing.status.currentDeploy, 'dep-1');
      const halted = plan(written(v2, failing), [m1, m2], settings, now);
      assert.deepEqual(
        halted.delete.map((p) => p.metadata?.name),
        [m2.metadata?.name],
        'the failed machine goes, the live one serves',
      );
      assert.equal(halted.create.length, 0, 'no retry of the failed spec');
      assert.equal(halted.ready.ok, true);
      assert.match(halted.ready.message, /deploy dep-1 keeps serving/);
      const progressing = halted.conditions.find((c) => c.type === 'Progressing')!;
      assert.equal(progressing.reason, 'RolloutFailed');
      assert.equal(v2.spec.image, 'broken', 'the spec stays as applied');
      // The live machine vanishes while the rollout is failed: it is made again from the snapshot.
      const remade = plan(written(v2, halted), [], settings, now);
      assert.equal(remade.create.length, 1);
      assert.equal(remade.create[0]!.spec!.containers[0]!.image, 'busybox');
      assert.equal(remade.create[0]!.metadata!.annotations!['svc.dev/deploy'], 'dep-1');
      // A new spec (a new deploy) rolls out again.
      const v3: App = { ...written(v2, halted), spec: { ...v2.spec, image: 'busybox:fixed', deployId: 'dep-3' } };
      const next = plan(v3, [m1], settings, now);
      assert.equal(next.create.length, 1);
      assert.equal(next.status.rollout?.state, 'Progressing');
      assert.equal(next.status.rollout?.deploy, 'dep-3');
    });

    it('a machine of a live revision that fails later degrades the App; the rollout stays Live and nothing latches', () => {
      const a = app({ deployId: 'dep-1' });
      const p1 = plan(a, [], settings, now);
      const m = ready(p1.create[0]!);
      const live = written(a, plan(written(a, p1), [m], settings, now));
      assert.equal(live.status?.rollout?.state, 'Live');
      const crashed = plan(live, [crashing(m)], settings, now);
      assert.equal(crashed.status.rollout?.state, 'Live');
      assert.equal(crashed.conditions.find((c) => c.type === 'Progressing')?.reason, 'RollingOut');
      assert.equal(crashed.conditions.find((c) => c.type === 'Degraded')?.ok, true);
      assert.deepEqual(
        crashed.status.deploys?.map((d) => d.state),
        ['live'],
        'the deploy stays live',
      );
      const recovered = plan(written(live, crashed), [m], settings, now);
      assert.equal(recovered.status.rollout?.state, 'Live');
      assert.equal(recovered.ready.ok, true);
    });

    it('keeps the last outcomes only, newest first', () => {
      let a = app({ deployId: 'dep-0' });
      for (let i = 0; i < 12; i++) {
        a = { ...a, spec: { ...a.spec, deployId: `dep-${i}` } };
        const p = plan(a, [], settings, now);
        a = written(a, plan(written(a, p), [ready(p.create[0]!)], settings, now));
      }
      assert.equal(a.status?.deploys?.length, 10);
      assert.deepEqual(
        a.status?.deploys?.slice(0, 2).map((d) => d.id),
        ['dep-11', 'dep-10'],
      );
    });
  });
});

describe('content swapped in place (issue 36)', () => {
  const swapping = { ...settings, artifactKey: Buffer.alloc(32, 7), control: controlKeys(Buffer.alloc(32, 7)) };
  const d = (c: string) => `sha256:${c.repeat(64)}`;
  const site = (digest: string, deployId: string, kind: App['spec']['kind'] = 'static'): App =>
    app({ kind, image: undefined, source: { digest }, deployId });
  const ready = (pod: k8s.V1Pod, annotations: Record<string, string> = {}): k8s.V1Pod => ({
    ...withStatus(pod, true),
    metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, ...annotations } },
    status: { phase: 'Running', podIP: '10.244.1.7', conditions: [{ type: 'Ready', status: 'True' }] },
  });
  const written = (a: App, p: ReturnType<typeof plan>): App => ({ ...a, status: { ...p.status } });

  it('keeps the machine of a static site, HTML app or Markdown site through a content deploy and orders it to swap', () => {
    for (const kind of ['static', 'html', 'markdown'] as const) {
      const a = site(d('a'), 'dep-1', kind);
      const b = site(d('b'), 'dep-2', kind);
      assert.equal(revisionOf(a, swapping), revisionOf(b, swapping), `${kind}: the artifact and the deploy do not make a new machine`);
      const first = plan(a, [], swapping, now);
      const m = ready(first.create[0]!);
      const live = written(a, plan(written(a, first), [m], swapping, now));
      assert.equal(live.status?.rollout?.state, 'Live');
      const deploying = plan({ ...live, spec: b.spec }, [m], swapping, now);
      assert.equal(deploying.create.length, 0, `${kind}: no new machine`);
      assert.equal(deploying.delete.length, 0);
      assert.deepEqual(
        deploying.swaps.map((s) => [s.pod.metadata?.name, s.digest, s.deploy, s.markOnly]),
        [[m.metadata?.name, d('b'), 'dep-2', false]],
      );
      assert.equal(deploying.swaps[0]!.url, `http://10.244.0.1:8080/artifacts/${d('b')}`);
      assert.equal(deploying.status.rollout?.state, 'Progressing', 'not Live until the machine says it serves it');
      assert.equal(deploying.status.ready, '1/1', 'the machine serves meanwhile');
      const swapped = ready(m, { 'svc.dev/content': d('b'), 'svc.dev/content-restarts': '0', 'svc.dev/deploy': 'dep-2' });
      const done = plan(written({ ...live, spec: b.spec }, deploying), [swapped], swapping, now);
      assert.equal(done.swaps.length, 0);
      assert.equal(done.status.rollout?.state, 'Live');
      assert.equal(done.status.currentDeploy, 'dep-2');
      assert.equal(done.status.machines?.[0]?.deploy, 'dep-2');
    }
  });

  it('records a deploy every machine served as live when the App moved on before status said so', () => {
    // dep-2 swapped onto the machine, and dep-3 applied, before a reconcile could say dep-2 was Live.
    const a = site(d('a'), 'dep-1');
    const first = plan(a, [], swapping, now);
    const m = ready(first.create[0]!);
    const live = written(a, plan(written(a, first), [m], swapping, now));
    const b: App = { ...live, spec: site(d('b'), 'dep-2').spec };
    const deploying = written(b, plan(b, [m], swapping, now));
    assert.equal(deploying.status?.rollout?.state, 'Progressing');
    const c: App = { ...deploying, spec: site(d('c'), 'dep-3').spec };
    const served = ready(m, { 'svc.dev/content': d('b'), 'svc.dev/content-restarts': '0', 'svc.dev/deploy': 'dep-2' });
    const later = new Date(now.getTime() + 5);
    const next = plan(c, [served], swapping, later);
    assert.deepEqual(
      next.status.deploys?.map((o) => [o.id, o.state]),
      [
        ['dep-2', 'live'],
        ['dep-1', 'live'],
      ],
      'dep-2 ended live: a rollback from dep-3 goes back to it',
    );
    assert.equal(next.status.deploys?.[0]?.at, later.toISOString());
    assert.equal(next.status.currentDeploy, 'dep-1', 'moved by the next rollout that goes Live, with the live snapshot');
    assert.equal(next.status.rollout?.deploy, 'dep-3');
    assert.deepEqual(
      next.swaps.map((s) => s.digest),
      [d('c')],
    );
    // Written once: the next reconcile (status now says dep-3 is rolling out) adds nothing.
    const again = plan(written(c, next), [served], swapping, later);
    assert.deepEqual(
      again.status.deploys?.map((o) => o.id),
      ['dep-2', 'dep-1'],
    );
    // A machine that had not taken dep-2 (it serves dep-1 still), or whose container restarted
    // since (what it serves is unknown), says nothing of dep-2.
    const notYet = plan(c, [m], swapping, later);
    assert.deepEqual(
      notYet.status.deploys?.map((o) => o.id),
      ['dep-1'],
    );
    const restarted: k8s.V1Pod = {
      ...served,
      status: { ...served.status, containerStatuses: [{ name: 'app', restartCount: 1, ready: true, image: '', imageID: '' }] },
    };
    assert.deepEqual(
      plan(c, [restarted], swapping, later).status.deploys?.map((o) => o.id),
      ['dep-1'],
    );
    // The status that said dep-2 was rolling out conflicted too: status still says dep-1 is Live.
    const unseen = plan({ ...live, spec: c.spec }, [served], swapping, later);
    assert.deepEqual(
      unseen.status.deploys?.map((o) => [o.id, o.state]),
      [
        ['dep-2', 'live'],
        ['dep-1', 'live'],
      ],
    );
    // Never more outcomes than the CRD keeps, while the next rollout is in progress too.
    const many = Array.from({ length: 10 }, (_, i) => ({ id: `old-${i}`, state: 'live' as const, at: now.toISOString() }));
    const full = plan({ ...deploying, spec: c.spec, status: { ...deploying.status, deploys: many } }, [served], swapping, later);
    assert.equal(full.status.deploys?.length, 10);
    assert.equal(full.status.deploys?.[0]?.id, 'dep-2');
    // The machines going back to the live deploy after a failed rollout say nothing new.
    assert.deepEqual(
      plan({ ...live, spec: c.spec }, [m], swapping, later).status.deploys?.map((o) => o.id),
      ['dep-1'],
    );
  });

  it('orders the swap again when the machine restarted since (it may have come back on another revision)', () => {
    const a = site(d('a'), 'dep-1');
    const m = ready(plan(a, [], swapping, now).create[0]!, { 'svc.dev/content': d('b'), 'svc.dev/content-restarts': '0' });
    const b = site(d('b'), 'dep-2');
    assert.equal(plan(b, [m], swapping, now).swaps.filter((s) => !s.markOnly).length, 0, 'serves it');
    const restarted: k8s.V1Pod = {
      ...m,
      status: { ...m.status, containerStatuses: [{ name: 'app', restartCount: 1, ready: true, image: '', imageID: '' }] },
    };
    assert.deepEqual(
      plan(b, [restarted], swapping, now).swaps.map((s) => [s.digest, s.markOnly]),
      [[d('b'), false]],
    );
  });

  it('fails the rollout when a machine has not taken the content, or is not routed to, by the deadline', () => {
    const a = site(d('a'), 'dep-1');
    const first = plan(a, [], swapping, now);
    const m = ready(first.create[0]!);
    const live = written(a, plan(written(a, first), [m], swapping, now));
    const b: App = { ...live, spec: site(d('b'), 'dep-2').spec };
    const started = written(b, plan(b, [m], swapping, now));
    assert.equal(started.status?.rollout?.state, 'Progressing');
    const waiting = plan(started, [m], swapping, new Date(now.getTime() + 30_000));
    assert.equal(waiting.status.rollout?.state, 'Progressing');
    assert.equal(waiting.requeueMs, 30_000, 'looked at again at the deadline');
    const late = plan(started, [m], swapping, new Date(now.getTime() + 60_000));
    assert.equal(late.status.rollout?.state, 'Failed');
    assert.match(late.status.rollout?.reason ?? '', new RegExp(`machine 0: did not serve ${d('b')} within 60 s`));
    // A new machine Ready but never listed in its Service's EndpointSlices.
    const v2 = app({ deployId: 'dep-2', env: [{ name: 'A', value: '1' }] });
    const fresh = {
      ...ready(machinePod(v2, 0, settings)),
      status: { phase: 'Running', podIP: '10.0.0.9', conditions: [{ type: 'Ready', status: 'True' }] },
    };
    const rolling = written(v2, plan(v2, [fresh], settings, now, [], new Set()));
    const unrouted = plan(rolling, [fresh], settings, new Date(now.getTime() + 61_000), [], new Set());
    assert.equal(unrouted.status.rollout?.state, 'Failed');
    assert.match(unrouted.status.rollout?.reason ?? '', /ready but not routed to/);
  });

  it('only marks a machine that serves the artifact already (the same content deployed again)', () => {
    const a = site(d('a'), 'dep-1');
    const m = ready(plan(a, [], swapping, now).create[0]!);
    const again = plan(site(d('a'), 'dep-2'), [m], swapping, now);
    assert.deepEqual(
      again.swaps.map((s) => [s.deploy, s.markOnly]),
      [['dep-2', true]],
    );
    assert.equal(again.status.rollout?.state, 'Live');
  });

  it("fails the rollout with the machine's reason when it refuses the artifact, and keeps it on what it served", () => {
    const a = site(d('a'), 'dep-1');
    const first = plan(a, [], swapping, now);
    const m = ready(first.create[0]!);
    const live = written(a, plan(written(a, first), [m], swapping, now));
    const b: App = { ...live, spec: site(d('b'), 'dep-2').spec };
    const refused = ready(m, {
      'svc.dev/content-failed': JSON.stringify({
        digest: d('b'),
        deploy: 'dep-2',
        reason: `cannot serve ${d('b')}: artifact digest mismatch`,
      }),
    });
    const failing = plan(written(b, plan(b, [m], swapping, now)), [refused], swapping, now);
    assert.equal(failing.status.rollout?.state, 'Failed');
    assert.match(failing.status.rollout?.reason ?? '', /machine 0: cannot serve .*digest mismatch/);
    assert.equal(failing.swaps.length, 0, 'not ordered again');
    const halted = plan(written(b, failing), [refused], swapping, now);
    assert.equal(halted.swaps.length, 0, 'the machine serves the live artifact, which it has');
    assert.equal(halted.delete.length + halted.create.length, 0);
    assert.equal(halted.status.currentDeploy, 'dep-1');
    // The same artifact deployed again (another deploy) is tried again.
    const retry = plan({ ...written(b, halted), spec: site(d('b'), 'dep-3').spec }, [refused], swapping, now);
    assert.deepEqual(
      retry.swaps.map((s) => [s.digest, s.deploy]),
      [[d('b'), 'dep-3']],
    );
  });

  it('swaps a handler tree in place too (a process per revision), and replaces the machines of any kind without a control key', () => {
    assert.equal(revisionOf(site(d('a'), 'dep-1', 'handlers'), swapping), revisionOf(site(d('b'), 'dep-2', 'handlers'), swapping));
    assert.notEqual(revisionOf(site(d('a'), 'dep-1'), settings), revisionOf(site(d('b'), 'dep-2'), settings));
    assert.notEqual(revisionOf(site(d('a'), 'dep-1', 'handlers'), settings), revisionOf(site(d('b'), 'dep-2', 'handlers'), settings));
    const handlers = plan(site(d('a'), 'dep-1', 'handlers'), [], swapping, now).create[0]!.spec!.containers[0]!;
    assert.equal(handlers.env?.find((e) => e.name === 'SVC_CONTROL_KEY')?.value, swapping.control.publicKey, 'a handler tree takes orders');
  });

  it('gives a swapping machine its control port, the public key orders are checked with, and its own name', () => {
    const main = plan(site(d('a'), 'dep-1'), [], swapping, now).create[0]!.spec!.containers[0]!;
    const env = new Map((main.env ?? []).map((e) => [e.name, e]));
    assert.equal(env.get('SVC_CONTROL_PORT')?.value, '9099');
    assert.equal(env.get('SVC_CONTROL_KEY')?.value, swapping.control.publicKey);
    assert.deepEqual(env.get('SVC_POD_NAME')?.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
    assert.deepEqual(
      main.ports?.map((p) => [p.name, p.containerPort]),
      [
        ['http', 8080],
        ['control', 9099],
      ],
    );
    assert.ok(!JSON.stringify(main).includes(swapping.control.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url')));
    const on9099 = plan(app({ kind: 'static', image: undefined, source: { digest: d('a') }, port: 9099 }), [], swapping, now).create[0]!;
    assert.equal(on9099.spec!.containers[0]!.env?.find((e) => e.name === 'SVC_CONTROL_PORT')?.value, '9098');
  });
});
