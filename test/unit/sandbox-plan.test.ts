// The Sandbox controller's pure halves: the lifecycle of one Sandbox (controllers/sandbox/desired.ts)
// and the pool's plan (controllers/sandbox/pool.ts), from observed objects and the time.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { claimMetadata, coldReason, planSandbox, type SandboxObserved } from '../../controllers/sandbox/desired.js';
import { poolKey, sandboxPod } from '../../controllers/sandbox/pod.js';
import { planPool, sandboxPolicies } from '../../controllers/sandbox/pool.js';
import { annotations, labels } from '../../lib/contract.js';
import type { Sandbox } from '../../lib/resources/index.js';
import { formatActivity, type SandboxActivity } from '../../lib/sandbox/activity.js';
import { defaultResources } from '../../lib/sandbox/limits.js';
import { platformPeers } from '../../lib/kube/platform-peers.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(t0.getTime() + s * 1000);
const timing = { retentionMs: 3600_000, startDeadlineMs: 120_000 };
const settings = { image: 'svc/sandbox:1', namespace: 'svc-sandboxes', runtimeClass: 'svc-sandbox', agentKey: Buffer.alloc(32, 1) };
const key = poolKey(settings, { ...defaultResources });

const sandbox = (spec: Partial<Sandbox['spec']> = {}, status?: Sandbox['status']): Sandbox => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Sandbox',
  metadata: { name: 'sb-1', namespace: 'acct', uid: 'uid-1', creationTimestamp: t0.toISOString() as unknown as Date },
  spec: { runtime: 'python', idleTimeoutSeconds: 300, maxLifetimeSeconds: 3600, ...spec },
  ...(status ? { status } : {}),
});
const member = (
  name: string,
  ready: boolean,
  extra: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): k8s.V1Pod => ({
  ...sandboxPod(settings, {
    name,
    resources: { ...defaultResources },
    network: false,
    labels: { [labels.sandboxPool]: key, ...extra.labels },
    annotations: extra.annotations ?? {},
  }),
  status: ready ? { phase: 'Running', podIP: '10.244.1.7', conditions: [{ type: 'Ready', status: 'True' }] } : { phase: 'Pending' },
});
const claimed = (ready = true, launch: 'warm' | 'cold' = 'warm') =>
  member('sbx-a', ready, { labels: { [labels.sandboxUid]: 'uid-1' }, annotations: { [annotations.launch]: launch } });
const observe = (o: Partial<SandboxObserved> & { sandbox: Sandbox; now: Date }): SandboxObserved => ({
  pod: undefined,
  free: { ready: [], starting: [] },
  ...o,
});

describe('Sandbox plan', () => {
  it('claims a ready pool member warm, else one still starting (cold, saying so), else starts a pod of its own', () => {
    const warm = planSandbox(
      observe({ sandbox: sandbox(), now: at(0), free: { ready: [member('sbx-r', true)], starting: [member('sbx-s', false)] } }),
      timing,
    );
    assert.deepEqual(warm.action && { kind: warm.action.kind, launch: (warm.action as { launch?: string }).launch }, {
      kind: 'claim',
      launch: 'warm',
    });
    const starting = planSandbox(
      observe({ sandbox: sandbox(), now: at(0), free: { ready: [], starting: [member('sbx-s', false)] } }),
      timing,
    );
    assert.equal(starting.action?.kind, 'claim');
    assert.match((starting.action as { launchReason: string }).launchReason, /no ready pod/);
    const empty = planSandbox(observe({ sandbox: sandbox(), now: at(0) }), timing);
    assert.deepEqual(empty.action, { kind: 'create', launchReason: 'the pool is empty' });
    assert.equal(empty.status.phase, 'Pending');
  });

  it('goes cold, with the reason, when a pool member cannot give what the sandbox asks (network, other limits)', () => {
    const free = { ready: [member('sbx-r', true)], starting: [] };
    const net = planSandbox(observe({ sandbox: sandbox({ network: true }), now: at(0), free }), timing);
    assert.deepEqual(net.action, { kind: 'create', launchReason: 'network access needs a pod of its own' });
    const big = planSandbox(observe({ sandbox: sandbox({ resources: { memory: '1Gi' } }), now: at(0), free }), timing);
    assert.equal(big.action?.kind, 'create');
    assert.match(coldReason(sandbox({ resources: { memory: '1Gi' } }))!, /resources/);
    assert.equal(
      coldReason(sandbox({ resources: { memory: '512Mi', cpu: '1000m' } })),
      undefined,
      'the defaults written another way are the defaults',
    );
  });

  it('is Ready on a ready pod with its address, launch, and both deadlines; requeues at the nearer one', () => {
    const p = planSandbox(observe({ sandbox: sandbox(), pod: claimed(), now: at(10) }), timing);
    assert.equal(p.action, undefined);
    assert.equal(p.status.phase, 'Ready');
    assert.equal(p.status.reason, 'Claimed');
    assert.equal(p.status.launch, 'warm');
    assert.equal(p.status.address, '10.244.1.7:7070');
    assert.equal(p.status.idleExpiresAt, at(310).toISOString());
    assert.equal(p.status.expiresAt, at(3600).toISOString());
    assert.equal(p.requeueMs, 300_000);
    const cold = planSandbox(observe({ sandbox: sandbox(), pod: claimed(true, 'cold'), now: at(10) }), timing);
    assert.equal(cold.status.reason, 'Started');
  });

  it('ends an idle sandbox by what the API saw of its use (never by what its agent says), and not while an exec may still run', () => {
    const used = (activity: SandboxActivity | undefined) => {
      const s = sandbox({}, { phase: 'Ready', readyAt: at(0).toISOString() });
      if (activity) s.metadata.annotations = { [annotations.activity]: formatActivity(activity) };
      return s;
    };
    const idle = planSandbox(observe({ sandbox: used(undefined), pod: claimed(), now: at(301) }), timing);
    assert.deepEqual([idle.status.phase, idle.status.reason], ['Ended', 'IdleTimeout'], 'nothing recorded: idle since it was ready');
    assert.deepEqual(idle.action, { kind: 'deletePod', name: 'sbx-a', namespace: 'svc-sandboxes' });
    const recent = planSandbox(observe({ sandbox: used({ at: at(250) }), pod: claimed(), now: at(301) }), timing);
    assert.equal(recent.status.phase, 'Ready');
    assert.equal(recent.status.lastActivityAt, at(250).toISOString());
    assert.equal(recent.status.idleExpiresAt, at(550).toISOString());
    assert.equal(recent.requeueMs, 249_000);
    const running = planSandbox(observe({ sandbox: used({ at: at(0), busyUntil: at(400) }), pod: claimed(), now: at(301) }), timing);
    assert.equal(running.status.phase, 'Ready', 'an exec that may still run is use');
    assert.equal(running.status.lastActivityAt, at(301).toISOString(), 'never in the future');
    assert.equal(running.status.idleExpiresAt, at(700).toISOString(), "idle counts from the exec's deadline");
    const crashed = planSandbox(observe({ sandbox: used({ at: at(0), busyUntil: at(100) }), pod: claimed(), now: at(401) }), timing);
    assert.equal(crashed.status.reason, 'IdleTimeout', 'an exec whose end was never recorded counts until its deadline only');
    const garbage = sandbox({}, { phase: 'Ready', readyAt: at(0).toISOString() });
    garbage.metadata.annotations = { [annotations.activity]: '{"at":"never"}' };
    assert.equal(planSandbox(observe({ sandbox: garbage, pod: claimed(), now: at(301) }), timing).status.reason, 'IdleTimeout');
  });

  it('ends at its lifetime (Expired) busy or not, on request (Deleted), and fails with why when its pod goes', () => {
    const expired = planSandbox(observe({ sandbox: sandbox({ maxLifetimeSeconds: 60 }), pod: claimed(), now: at(60) }), timing);
    assert.deepEqual([expired.status.phase, expired.status.reason], ['Ended', 'Expired']);
    assert.match(expired.status.message!, /maximum lifetime of 60 s/);
    const deleted = planSandbox(observe({ sandbox: sandbox({ stopped: true }), pod: claimed(), now: at(5) }), timing);
    assert.deepEqual([deleted.status.phase, deleted.status.reason, deleted.action?.kind], ['Ended', 'Deleted', 'deletePod']);
    const gone = planSandbox(
      observe({ sandbox: sandbox({}, { phase: 'Ready', podName: 'sbx-a', podNamespace: 'svc-sandboxes' }), now: at(5) }),
      timing,
    );
    assert.deepEqual([gone.status.phase, gone.status.reason], ['Failed', 'PodGone']);
    const oom = claimed();
    oom.status = {
      phase: 'Failed',
      containerStatuses: [
        {
          name: 'sandbox',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 137, reason: 'OOMKilled' } },
        },
      ],
    };
    const failed = planSandbox(observe({ sandbox: sandbox(), pod: oom, now: at(5) }), timing);
    assert.deepEqual([failed.status.phase, failed.status.reason], ['Failed', 'PodFailed']);
    assert.match(failed.status.message!, /OOMKilled \(exit 137\)/);
  });

  it('fails a sandbox whose pod is not ready by the start deadline, naming what its container waits on', () => {
    const stuck = claimed(false);
    stuck.status = {
      phase: 'Pending',
      containerStatuses: [
        { name: 'sandbox', image: '', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } },
      ],
    };
    assert.equal(planSandbox(observe({ sandbox: sandbox(), pod: stuck, now: at(60) }), timing).status.phase, 'Pending');
    const late = planSandbox(observe({ sandbox: sandbox(), pod: stuck, now: at(120) }), timing);
    assert.deepEqual([late.status.phase, late.status.reason], ['Failed', 'StartTimeout']);
    assert.match(late.status.message!, /ContainerCreating/);
  });

  it('keeps an ended record for the retention window, then deletes the Sandbox', () => {
    const ended = sandbox({}, { phase: 'Ended', reason: 'IdleTimeout', endedAt: at(100).toISOString() });
    const kept = planSandbox(observe({ sandbox: ended, now: at(200) }), timing);
    assert.equal(kept.action, undefined);
    assert.equal(kept.status.reason, 'IdleTimeout', 'the final state and reason stay readable');
    assert.equal(kept.requeueMs, 3600_000 - 100_000);
    assert.deepEqual(planSandbox(observe({ sandbox: ended, now: at(3700) }), timing).action, { kind: 'deleteSandbox' });
  });

  it('claims by taking the pod out of its pool and naming the Sandbox', () => {
    const meta = claimMetadata(sandbox(), 'cold', 'the pool is empty');
    assert.equal(meta.labels[labels.sandboxPool], null);
    assert.equal(meta.labels[labels.sandboxUid], 'uid-1');
    assert.equal(meta.annotations[annotations.launchReason], 'the pool is empty');
  });
});

describe('sandbox pod', () => {
  it("bounds a sandbox's node disk (ephemeral-storage: its logs; home and /tmp are memory)", () => {
    const pod = sandboxPod(settings, { name: 'sbx-x', resources: { ...defaultResources }, network: true, labels: {} });
    for (const c of pod.spec!.containers) {
      assert.equal(c.resources?.requests?.['ephemeral-storage'], '16Mi');
      assert.equal(c.resources?.limits?.['ephemeral-storage'], '128Mi');
    }
    for (const v of pod.spec!.volumes!) assert.equal(v.emptyDir?.medium, 'Memory', v.name);
  });

  it('runs in a user namespace of its own when the platform says so, and a pool member of the other shape is replaced', () => {
    const own = sandboxPod(
      { ...settings, userNamespaces: true },
      { name: 'sbx-x', resources: { ...defaultResources }, network: false, labels: {} },
    );
    assert.equal(own.spec!.hostUsers, false);
    const host = sandboxPod(settings, { name: 'sbx-x', resources: { ...defaultResources }, network: false, labels: {} });
    assert.equal(host.spec!.hostUsers, undefined);
    assert.notEqual(poolKey({ ...settings, userNamespaces: true }, { ...defaultResources }), key);
  });

  it('runs with no token, the restricted profile, limits, the sandbox RuntimeClass and a read-only root', () => {
    const pod = sandboxPod(settings, {
      name: 'sbx-x',
      resources: { cpu: '1', memory: '512Mi', disk: '256Mi' },
      network: false,
      labels: {},
    });
    const c = pod.spec!.containers[0]!;
    assert.equal(pod.spec!.automountServiceAccountToken, false);
    assert.equal(pod.spec!.runtimeClassName, 'svc-sandbox');
    assert.equal(pod.spec!.securityContext!.runAsNonRoot, true);
    assert.equal(pod.spec!.securityContext!.seccompProfile!.type, 'RuntimeDefault');
    assert.deepEqual(c.securityContext, {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
    });
    assert.deepEqual(c.resources!.limits, { cpu: '1', memory: '512Mi', 'ephemeral-storage': '128Mi' });
    assert.equal(pod.metadata!.labels![labels.network], 'off');
    assert.ok(c.env!.some((e) => e.name === 'SVC_SANDBOX_TOKEN' && e.value && e.value.length > 20));
  });

  it('changes pool key with what shapes a member', () => {
    assert.notEqual(poolKey({ ...settings, image: 'svc/sandbox:2' }, { ...defaultResources }), key);
  });
});

describe('Sandbox pool plan', () => {
  const base = { key, size: 2, sandboxExists: () => true, reserved: new Set<string>() };
  it('fills up to its size counting members still starting', () => {
    assert.equal(planPool({ ...base, pods: [] }).create, 2);
    assert.deepEqual(planPool({ ...base, pods: [member('a', true), member('b', false)] }), {
      create: 0,
      delete: [],
      depth: { ready: 1, starting: 1 },
    });
  });

  it('deletes members of an older template, broken members, and claimed pods whose Sandbox is gone', () => {
    const old = member('old', true, { labels: { [labels.sandboxPool]: 'other' } });
    const broken = member('broken', false);
    broken.status = { phase: 'Failed' };
    const orphan = member('orphan', true, { labels: { [labels.sandboxUid]: 'gone' } });
    delete orphan.metadata!.labels![labels.sandboxPool];
    const p = planPool({ ...base, pods: [old, broken, orphan, member('a', true)], sandboxExists: (uid) => uid !== 'gone' });
    assert.deepEqual(p.delete.map((d) => d.name).sort(), ['broken', 'old', 'orphan']);
    assert.equal(p.create, 1);
  });

  it('deletes a member whose agent has not answered for 180 s since its container started, and offers it to nobody', () => {
    const stuck = member('stuck', false);
    stuck.status = {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'sandbox',
          image: 'x',
          imageID: 'x',
          ready: false,
          restartCount: 0,
          state: { running: { startedAt: new Date(Date.now() - 181_000) } },
        },
      ],
    };
    const fresh = member('fresh', false);
    fresh.status = {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'sandbox',
          image: 'x',
          imageID: 'x',
          ready: false,
          restartCount: 0,
          state: { running: { startedAt: new Date(Date.now() - 5_000) } },
        },
      ],
    };
    const p = planPool({ ...base, pods: [stuck, fresh] });
    assert.deepEqual(p.delete, [{ name: 'stuck', why: 'its agent did not answer within 180 s of its container starting' }]);
    assert.deepEqual(p.depth, { ready: 0, starting: 1 });
    assert.equal(p.create, 1);
  });

  it('shrinks starting members first and leaves what this process just claimed alone', () => {
    const p = planPool({ ...base, size: 1, pods: [member('r', true), member('s', false)] });
    assert.deepEqual(p.delete, [{ name: 's', why: 'the pool is smaller now' }]);
    const reserved = planPool({ ...base, pods: [member('r', true)], reserved: new Set(['r']) });
    assert.equal(reserved.create, 2, 'a member being claimed is not counted as free');
  });

  it('counts members it created that the cache does not show yet, and does not delete a member twice', () => {
    assert.equal(planPool({ ...base, pods: [], creating: 2 }).create, 0, 'two made, not yet seen: none more');
    assert.equal(planPool({ ...base, pods: [member('a', false)], creating: 1 }).create, 0);
    const p = planPool({ ...base, size: 1, pods: [member('r', true), member('s', false)], retiring: new Set(['s']) });
    assert.deepEqual(p.delete, [], 'the member being deleted is gone already');
    assert.deepEqual(p.depth, { ready: 1, starting: 0 });
  });

  it('lets sandbox pods be reached only on the agent port from the platform, and reach nothing unless network is on', () => {
    const [isolation, network] = sandboxPolicies('svc-sandboxes', platformPeers(['10.244.0.1/32'], undefined), ['10.244.0.1/32']);
    assert.deepEqual(isolation!.spec!.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(isolation!.spec!.egress, []);
    assert.deepEqual((isolation!.spec!.ingress![0] as unknown as { from: unknown }).from, [{ ipBlock: { cidr: '10.244.0.1/32' } }]);
    assert.deepEqual(network!.spec!.podSelector, { matchLabels: { [labels.network]: 'on' } });
    assert.deepEqual(
      network!.spec!.egress![0]!.to![0]!.ipBlock!.except,
      ['169.254.169.254/32', '10.244.0.1/32'],
      "not the metadata address, nor the platform's nodes",
    );
    // On a cluster the API runs as pods of the platform's namespace: admitted by namespace.
    const [onCluster] = sandboxPolicies('svc-sandboxes', platformPeers(['10.0.0.0/24'], 'svc-system'), ['10.0.0.0/24']);
    assert.deepEqual((onCluster!.spec!.ingress![0] as unknown as { from: unknown }).from, [
      { ipBlock: { cidr: '10.0.0.0/24' } },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'svc-system' } } },
    ]);
  });
});
