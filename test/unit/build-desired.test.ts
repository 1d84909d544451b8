// The Build reconciler's pure half (controllers/build/desired.ts): from a Build and what the caches
// show, the Job to make and the status to say, through every phase and every way of failing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { checkBuildCredential } from '../../lib/artifacts/credential.js';
import type { Build } from '../../lib/resources/index.js';
import { buildPolicy, cacheAppOf, plan, type BuildObserved, type BuildSettings } from '../../controllers/build/desired.js';

const key = Buffer.alloc(32, 3);
const settings: BuildSettings = {
  builderImage: 'reg/svc/builder:1',
  runtimeImage: 'reg/svc/runtime:1',
  reportBaseUrl: 'http://10.244.0.1:8079/builds',
  artifactBaseUrl: 'http://10.244.0.1:8079/artifacts',
  key,
  cacheBytes: 1 << 30,
  storageClass: undefined,
  platformCidrs: ['10.244.0.1/32'],
  platformPorts: [{ port: 8079 }],
  privateCidrs: ['10.0.0.0/8'],
  resources: { limits: { cpu: '1', memory: '2Gi' } },
};
const digest = `sha256:${'a'.repeat(64)}`;
const now = new Date('2026-11-26T12:00:00Z');
const build = (over: Partial<Build> = {}, name = 'bld-0000000000000001'): Build => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Build',
  metadata: { name, namespace: 'acct', uid: `uid-${name}`, creationTimestamp: new Date('2026-11-26T11:59:00Z'), ...over.metadata },
  spec: { app: 'site', source: { artifact: { digest } }, deploy: true, ...over.spec },
  ...(over.status ? { status: over.status } : {}),
});
const observed = (o: Partial<BuildObserved> = {}): BuildObserved => ({
  job: undefined,
  pod: undefined,
  cacheClaim: undefined,
  policy: undefined,
  builds: [],
  ...o,
});
const job = (status: k8s.V1JobStatus): k8s.V1Job => ({ metadata: { name: 'bld-0000000000000001' }, status });
const pod = (init: k8s.V1ContainerState, main?: k8s.V1ContainerState): k8s.V1Pod => ({
  metadata: { name: 'bld-0000000000000001-x' },
  status: {
    initContainerStatuses: [{ name: 'source', state: init, image: '', imageID: '', ready: false, restartCount: 0 }],
    containerStatuses: main ? [{ name: 'build', state: main, image: '', imageID: '', ready: false, restartCount: 0 }] : [],
  },
});

describe('build desired state', () => {
  it("queues a new build: its Job (non-root, limits, deadline, a credential for this build only) and its app's cache claim", () => {
    const p = plan(build(), observed(), settings, now);
    assert.deepEqual([p.status.phase, p.status.reason], ['Queued', 'Queued']);
    const spec = p.createJob!.spec!;
    assert.equal(spec.activeDeadlineSeconds, 2700);
    assert.equal(spec.backoffLimit, 0);
    const pod = spec.template.spec!;
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(pod.automountServiceAccountToken, false);
    const builder = pod.containers[0]!;
    assert.equal(builder.securityContext?.allowPrivilegeEscalation, false);
    assert.deepEqual(builder.resources?.limits, { cpu: '1', memory: '2Gi', 'ephemeral-storage': '6Gi' });
    const env = Object.fromEntries(builder.env!.map((e) => [e.name, e.value]));
    assert.equal(env.SVC_BUILD_REPORT_URL, 'http://10.244.0.1:8079/builds/acct/bld-0000000000000001');
    assert.deepEqual(checkBuildCredential(key, 'acct', 'bld-0000000000000001', env.SVC_BUILD_TOKEN, now), { ok: true });
    assert.equal(
      checkBuildCredential(key, 'acct', 'bld-0000000000000002', env.SVC_BUILD_TOKEN, now).ok,
      false,
      "it sends no other build's results",
    );
    assert.equal(
      pod.initContainers![0]!.env!.find((e) => e.name === 'SVC_ARTIFACT_URL')?.value,
      `http://10.244.0.1:8079/artifacts/${digest}`,
    );
    assert.equal(p.cacheClaim?.metadata?.name, 'build-cache-site');
  });

  it('runs the build in a user namespace of its own when the platform says so', () => {
    assert.equal(plan(build(), observed(), { ...settings, userNamespaces: true }, now).createJob!.spec!.template.spec!.hostUsers, false);
    assert.equal(plan(build(), observed(), settings, now).createJob!.spec!.template.spec!.hostUsers, undefined);
  });

  it('bounds the node disk of every container of a build, artifact or Git (ephemeral-storage over its bounded emptyDirs)', () => {
    const git = build({ spec: { ...build().spec, source: { git: { url: 'https://git.example/repo.git', ref: 'main' } } } });
    for (const b of [build(), git]) {
      const pod = plan(b, observed(), settings, now).createJob!.spec!.template.spec!;
      for (const c of [...pod.initContainers!, ...pod.containers]) {
        assert.equal(c.resources?.requests?.['ephemeral-storage'], '1Gi', c.name);
        assert.equal(c.resources?.limits?.['ephemeral-storage'], '6Gi', c.name);
      }
      assert.deepEqual(
        pod.volumes!.filter((v) => v.emptyDir).map((v) => v.emptyDir!.sizeLimit),
        ['4Gi', '1Gi'],
      );
    }
  });

  it("builds a preview with its parent's cache, and sends results where the Build says", () => {
    const b = build({
      spec: {
        app: 'site--feat',
        source: { artifact: { digest, url: 'http://10.244.0.1:18001/artifacts/x' } },
        resultsUrl: 'http://10.244.0.1:18001/builds',
      },
    });
    assert.equal(cacheAppOf(b), 'site');
    const p = plan(b, observed(), settings, now);
    const vols = p.createJob!.spec!.template.spec!.volumes!;
    assert.equal(vols.find((v) => v.name === 'cache')?.persistentVolumeClaim?.claimName, 'build-cache-site');
    const env = Object.fromEntries(p.createJob!.spec!.template.spec!.containers[0]!.env!.map((e) => [e.name, e.value]));
    assert.match(env.SVC_BUILD_REPORT_URL!, /^http:\/\/10\.244\.0\.1:18001\/builds\/acct\//);
  });

  it("gives a Git build's token to the clone alone", () => {
    const b = build({
      spec: {
        app: 'site',
        source: { git: { url: 'https://git.example.com/r.git', ref: 'main', commit: 'c'.repeat(40), secretName: 'build-git-site' } },
      },
    });
    const spec = plan(b, observed(), settings, now).createJob!.spec!.template.spec!;
    assert.equal(spec.initContainers![0]!.env!.find((e) => e.name === 'SVC_GIT_TOKEN')?.valueFrom?.secretKeyRef?.name, 'build-git-site');
    assert.ok(!JSON.stringify(spec.containers).includes('SVC_GIT_TOKEN'));
  });

  it('is Building once a container runs, and Succeeded when the Job did and its output was stored', () => {
    assert.equal(
      plan(build(), observed({ job: job({}), pod: pod({ waiting: { reason: 'PodInitializing' } }) }), settings, now).status.phase,
      'Queued',
    );
    const fetching = plan(build(), observed({ job: job({ startTime: now }), pod: pod({ running: {} }) }), settings, now);
    assert.deepEqual([fetching.status.phase, fetching.status.message], ['Building', 'fetching the source']);
    const withPlan = build({ metadata: { annotations: { 'svc.dev/build-plan': JSON.stringify({ kind: 'static' }) } } });
    assert.equal(
      plan(withPlan, observed({ job: job({ startTime: now }), pod: pod({ terminated: { exitCode: 0 } }, { running: {} }) }), settings, now)
        .status.message,
      'building (static)',
    );
    const stored = build({ metadata: { annotations: { 'svc.dev/build-output': JSON.stringify({ digest, bytes: 10 }) } } });
    const done = plan(stored, observed({ job: job({ startTime: now, succeeded: 1, completionTime: now }) }), settings, now);
    assert.deepEqual([done.status.phase, done.status.reason, done.status.artifact], ['Succeeded', 'Built', { digest, sizeBytes: 10 }]);
    const waiting = plan(build(), observed({ job: job({ succeeded: 1, completionTime: now }) }), settings, now);
    assert.deepEqual([waiting.status.phase, waiting.status.reason], ['Building', 'Storing']);
    const lost = plan(build(), observed({ job: job({ succeeded: 1, completionTime: new Date(now.getTime() - 120_000) }) }), settings, now);
    assert.deepEqual([lost.status.phase, lost.status.reason], ['Failed', 'NoOutput']);
  });

  it("fails saying why: the builder's reason, the source, the deadline, memory, an image that cannot start", () => {
    const failedJob = (reason = 'BackoffLimitExceeded') =>
      job({ startTime: now, conditions: [{ type: 'Failed', status: 'True', reason, lastTransitionTime: now }] });
    const said = JSON.stringify({ reason: 'CommandFailed', message: '`npm run build` exited with code 1' });
    const cmd = plan(
      build(),
      observed({ job: failedJob(), pod: pod({ terminated: { exitCode: 0 } }, { terminated: { exitCode: 1, message: said } }) }),
      settings,
      now,
    );
    assert.deepEqual(
      [cmd.status.phase, cmd.status.reason, cmd.status.message],
      ['Failed', 'CommandFailed', '`npm run build` exited with code 1'],
    );
    const src = plan(
      build(),
      observed({ job: failedJob(), pod: pod({ terminated: { exitCode: 1, message: 'answered 404 Not Found' } }) }),
      settings,
      now,
    );
    assert.deepEqual([src.status.reason, src.status.message], ['SourceFailed', 'the source could not be fetched: answered 404 Not Found']);
    assert.equal(plan(build(), observed({ job: failedJob('DeadlineExceeded') }), settings, now).status.reason, 'DeadlineExceeded');
    assert.equal(
      plan(
        build(),
        observed({ job: failedJob(), pod: pod({ terminated: { exitCode: 0 } }, { terminated: { exitCode: 137, reason: 'OOMKilled' } }) }),
        settings,
        now,
      ).status.reason,
      'OutOfMemory',
    );
    const pull = plan(
      build(),
      observed({ job: job({}), pod: pod({ waiting: { reason: 'ImagePullBackOff', message: 'not found' } }) }),
      settings,
      now,
    );
    assert.deepEqual([pull.status.reason, Boolean(pull.deleteJob)], ['BuilderFailed', true]);
  });

  it('reuses an earlier build of the same source for the app (or its parent), runs nothing, and keeps an ended status whatever happens to its Job', () => {
    const earlier = build(
      {
        status: { phase: 'Succeeded', artifact: { digest: `sha256:${'b'.repeat(64)}`, sizeBytes: 5 }, completedAt: '2026-11-26T11:00:00Z' },
      },
      'bld-0000000000000000',
    );
    const p = plan(
      build({ spec: { app: 'site--feat', source: { artifact: { digest } } } }),
      observed({ builds: [earlier] }),
      settings,
      now,
    );
    assert.deepEqual(
      [p.status.phase, p.status.reason, p.status.reusedFrom, p.createJob],
      ['Succeeded', 'Reused', 'bld-0000000000000000', undefined],
    );
    const ended = build({ status: { phase: 'Failed', reason: 'CommandFailed', message: 'x' } });
    const kept = plan(ended, observed({ job: undefined }), settings, now);
    assert.deepEqual([kept.status.phase, kept.status.reason, kept.createJob], ['Failed', 'CommandFailed', undefined]);
  });

  it('cancels: the Job deleted, the build Canceled', () => {
    const b = build({ metadata: { annotations: { 'svc.dev/cancel-requested': now.toISOString() } } });
    const p = plan(b, observed({ job: job({ startTime: now }) }), settings, now);
    assert.deepEqual([p.status.phase, Boolean(p.deleteJob), p.createJob], ['Canceled', true, undefined]);
  });

  it('lets build pods out to the machine listener and the internet, never to private addresses, and nothing in', () => {
    const policy = buildPolicy('acct', settings);
    assert.deepEqual(policy.spec!.ingress, []);
    assert.deepEqual(policy.spec!.egress![1], { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '10.244.0.1/32'] } }] });
    assert.equal(policy.spec!.egress!.length, 2, 'no DNS unless the platform says the cluster DNS answers');
    // Where it does: names resolve (a registry's, the platform's Service), though the DNS is on a private address.
    const named = buildPolicy('acct', { ...settings, clusterDns: true }).spec!.egress!;
    assert.deepEqual(named[0], {
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
    });
  });
});
