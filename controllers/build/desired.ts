// The Build reconciler's pure half: from a Build and what the informers show (its Job and Pod, the
// app's cache claim, the namespace's earlier Builds), the objects it should have and the status to
// report. A Build runs as a Job in the App's namespace (the account's quota and restricted profile
// apply): a `source` init container puts the tree in the workspace (the artifact, by the runtime's
// verified fetch; or a shallow Git clone, the only container that sees a clone credential), then the
// builder (builder/) plans, installs, builds and sends its output to the API. Phases: Queued (no
// builder running yet), Building, Succeeded, Failed, Canceled; a Build of a source an earlier Build
// of the same app already built is Succeeded at once with that output (Reused). docs/api/builds.md.
import type * as k8s from '@kubernetes/client-node';
import { artifactCredentialTtlSeconds, mintArtifactCredential, mintBuildCredential } from '../../lib/artifacts/credential.js';
import { buildAnnotations, buildCacheClaim, outputOf, planOf, terminalPhases, type BuildPhase } from '../../lib/builds/index.js';
import { apiVersion, labels, managers, previewSeparator } from '../../lib/contract.js';
import type { Build } from '../../lib/resources/index.js';
import type { ConditionInput } from '../frame/status.js';
import { clusterDnsEgress, platformPeers } from '../../lib/kube/platform-peers.js';

export interface BuildSettings {
  builderImage: string;
  /** The runtime image, whose `fetch` puts an artifact source in the workspace. */
  runtimeImage: string;
  /** Where the builder sends plan and output (`<machine listener>/builds`) and where artifacts are fetched (`<listener>/artifacts`). */
  reportBaseUrl: string;
  artifactBaseUrl: string;
  key: Buffer;
  cacheBytes: number;
  /** The volume class of the cache claims; the cluster's default when unset. */
  storageClass: string | undefined;
  /** The platform's addresses and ports (the machine listener), as App policies name them. */
  platformCidrs: readonly string[];
  platformNamespace?: string | undefined;
  platformPorts: ReadonlyArray<{ port: number; endPort?: number }>;
  /** Ranges a build may not reach (private, shared, link-local: pods, Services, nodes, metadata). */
  privateCidrs: readonly string[];
  resources: k8s.V1ResourceRequirements;
  /** The account's pull Secret the build's pod pulls with (controllers/account/); undefined: the platform has no registry of its own. */
  pullSecret?: string | undefined;
  /** The build's pod in a user namespace of its own (hostUsers: false; config.userNamespaces). */
  userNamespaces?: boolean | undefined;
  /** Builds may ask the cluster DNS (SVC_MACHINE_CLUSTER_DNS): package registries and the platform by name. */
  clusterDns?: boolean | undefined;
}

export type BuildStatusFields = NonNullable<Build['status']>;

export interface BuildObserved {
  job: k8s.V1Job | undefined;
  pod: k8s.V1Pod | undefined;
  cacheClaim: k8s.V1PersistentVolumeClaim | undefined;
  policy: k8s.V1NetworkPolicy | undefined;
  /** Builds of the namespace (the reusable ones are among them). */
  builds: readonly Build[];
}

export interface BuildPlanOut {
  cacheClaim: k8s.V1PersistentVolumeClaim | undefined;
  policy: k8s.V1NetworkPolicy;
  createJob: k8s.V1Job | undefined;
  /** The Job to delete (a canceled build's). */
  deleteJob: k8s.V1Job | undefined;
  status: BuildStatusFields;
  ready: Omit<ConditionInput, 'type'>;
  /** Look again this long after, for what no event will announce (an output that never came). */
  requeueMs?: number;
}

/** The app whose cache a Build uses: a preview (`<app>--<ref>`) builds with its parent's. */
export const cacheAppOf = (b: Build): string => b.spec.app.split(previewSeparator)[0]!;

/** What identifies a source for reuse: the same tree (digest) or the same commit. */
function sourceKey(b: Build): string | undefined {
  const s = b.spec.source;
  if (s.artifact) return `artifact:${s.artifact.digest}`;
  if (s.git?.commit) return `git:${s.git.url}#${s.git.commit}:${s.git.path ?? ''}`;
  return undefined;
}

const workspace = '/workspace';
const cacheMount = '/cache';
const policyName = 'svc-builds';
/** How long after its Job succeeded a Build waits for the API to record the output it sent. */
const outputGraceMs = 60_000;

const securityContext: k8s.V1SecurityContext = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
};

/**
 * The node disk a build may take (docs/decisions/0023-disks.md): its workspace (4Gi) and /tmp (1Gi)
 * emptyDirs, each bounded on its own, plus logs and slack; the kubelet evicts the pod past the sum.
 * On the source container too: it fills the workspace, and an init container's limit is the pod's
 * while it runs.
 */
export const buildEphemeralStorage = { request: '1Gi', limit: '6Gi' } as const;
const withDisk = (r: k8s.V1ResourceRequirements | undefined): k8s.V1ResourceRequirements => ({
  ...r,
  requests: { ...r?.requests, 'ephemeral-storage': buildEphemeralStorage.request },
  limits: { ...r?.limits, 'ephemeral-storage': buildEphemeralStorage.limit },
});

export function buildJob(b: Build, s: BuildSettings, now: Date): k8s.V1Job {
  const name = b.metadata.name!;
  const ns = b.metadata.namespace!;
  const timeout = b.spec.timeoutSeconds ?? 2700;
  const credentialUntil = new Date(now.getTime() + (timeout + 600) * 1000);
  const mounts: k8s.V1VolumeMount[] = [
    { name: 'workspace', mountPath: workspace },
    { name: 'tmp', mountPath: '/tmp' },
  ];
  const git = b.spec.source.git;
  const artifact = b.spec.source.artifact;
  const source: k8s.V1Container = artifact
    ? {
        name: 'source',
        image: s.runtimeImage,
        args: ['fetch'],
        env: [
          { name: 'SVC_ARTIFACT_URL', value: artifact.url ?? `${s.artifactBaseUrl}/${artifact.digest}` },
          { name: 'SVC_ARTIFACT_DIGEST', value: artifact.digest },
          {
            name: 'SVC_ARTIFACT_TOKEN',
            value: mintArtifactCredential(s.key, artifact.digest, new Date(now.getTime() + artifactCredentialTtlSeconds * 1000)),
          },
          { name: 'SVC_SITE_ROOT', value: workspace },
          // Its failures only: the builder says what it found.
          { name: 'SVC_LOG_LEVEL', value: 'warn' },
        ],
        resources: withDisk(undefined),
        securityContext,
        terminationMessagePolicy: 'FallbackToLogsOnError',
        volumeMounts: mounts,
      }
    : {
        name: 'source',
        image: s.builderImage,
        args: ['clone'],
        env: [
          { name: 'SVC_GIT_URL', value: git!.url },
          ...(git!.ref ? [{ name: 'SVC_GIT_REF', value: git!.ref }] : []),
          ...(git!.commit ? [{ name: 'SVC_GIT_COMMIT', value: git!.commit }] : []),
          // The clone's credential, to this container only: the build's commands never see it.
          ...(git!.secretName ? [{ name: 'SVC_GIT_TOKEN', valueFrom: { secretKeyRef: { name: git!.secretName, key: 'token' } } }] : []),
          { name: 'SVC_BUILD_WORKSPACE', value: workspace },
          { name: 'HOME', value: '/tmp' },
        ],
        resources: withDisk(undefined),
        securityContext,
        terminationMessagePolicy: 'FallbackToLogsOnError',
        volumeMounts: mounts,
      };
  const sub = git?.path ? `${workspace}/${git.path}` : workspace;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: ns,
      labels: { [labels.build]: name, [labels.managedBy]: managers.controllers },
      ownerReferences: [{ apiVersion, kind: 'Build', name, uid: b.metadata.uid!, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: timeout,
      // Kept an hour after it ends: the API copies its log (kept beyond the Job) meanwhile.
      ttlSecondsAfterFinished: 3600,
      template: {
        metadata: { labels: { [labels.build]: name, [labels.managedBy]: managers.controllers } },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(s.pullSecret ? { imagePullSecrets: [{ name: s.pullSecret }] } : {}),
          // The tenant's build scripts run here: their uid is an unprivileged high ID on the node.
          ...(s.userNamespaces ? { hostUsers: false } : {}),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            runAsGroup: 1000,
            fsGroup: 1000,
            fsGroupChangePolicy: 'OnRootMismatch',
            seccompProfile: { type: 'RuntimeDefault' },
          },
          initContainers: [source],
          containers: [
            {
              name: 'build',
              image: s.builderImage,
              env: [
                { name: 'SVC_BUILD_WORKSPACE', value: sub },
                { name: 'SVC_BUILD_REPORT_URL', value: `${b.spec.resultsUrl ?? s.reportBaseUrl}/${ns}/${name}` },
                { name: 'SVC_BUILD_TOKEN', value: mintBuildCredential(s.key, ns, name, credentialUntil) },
                { name: 'HOME', value: `${cacheMount}/home` },
                { name: 'COREPACK_ENABLE_DOWNLOAD_PROMPT', value: '0' },
              ],
              resources: withDisk(s.resources),
              securityContext,
              terminationMessagePolicy: 'FallbackToLogsOnError',
              volumeMounts: [...mounts, { name: 'cache', mountPath: cacheMount }],
            },
          ],
          volumes: [
            { name: 'workspace', emptyDir: { sizeLimit: '4Gi' } },
            { name: 'tmp', emptyDir: { sizeLimit: '1Gi' } },
            { name: 'cache', persistentVolumeClaim: { claimName: buildCacheClaim(cacheAppOf(b)) } },
          ],
        },
      },
    },
  };
}

export function cacheClaim(b: Build, s: BuildSettings): k8s.V1PersistentVolumeClaim {
  const app = cacheAppOf(b);
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: buildCacheClaim(app),
      namespace: b.metadata.namespace,
      labels: { [labels.buildCache]: app, [labels.managedBy]: managers.controllers },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: String(s.cacheBytes) } },
      ...(s.storageClass ? { storageClassName: s.storageClass } : {}),
    },
  };
}

/**
 * The namespace's build pods: nothing comes in; out, to the platform's machine listener (sources,
 * results) and to the internet (package registries, code hosts), never to a private address (other
 * pods, Services, nodes, the metadata service).
 */
export function buildPolicy(namespace: string, s: BuildSettings): k8s.V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: policyName, namespace, labels: { [labels.managedBy]: managers.controllers } },
    spec: {
      podSelector: { matchExpressions: [{ key: labels.build, operator: 'Exists' }] },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [
        // Names (a registry's, the platform's Service): the cluster DNS, which is on a private address.
        ...(s.clusterDns ? [clusterDnsEgress] : []),
        {
          to: platformPeers(s.platformCidrs, s.platformNamespace),
          ports: s.platformPorts.map((p) => ({ protocol: 'TCP', port: p.port, ...(p.endPort ? { endPort: p.endPort } : {}) })),
        },
        { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: [...s.privateCidrs, ...s.platformCidrs] } }] },
      ],
    },
  };
}

const reasonOfJobFailure = (job: k8s.V1Job) => job.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');

function statusesOf(pod: k8s.V1Pod | undefined): k8s.V1ContainerStatus[] {
  return [...(pod?.status?.initContainerStatuses ?? []), ...(pod?.status?.containerStatuses ?? [])];
}

/** Why the builder's Pod cannot run, when waiting will not help (an image that cannot be pulled). */
function hopeless(pod: k8s.V1Pod | undefined): string | undefined {
  for (const s of statusesOf(pod)) {
    const w = s.state?.waiting;
    if (
      w &&
      ['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError'].includes(
        w.reason ?? '',
      )
    )
      return `${s.name}: ${w.reason}${w.message ? `: ${w.message}` : ''}`;
  }
  return undefined;
}

/**
 * What a container said when it ended: the builder writes {reason, message} (builder/main.ts); a
 * container that wrote nothing has its log's last lines there (FallbackToLogsOnError).
 */
function saidOf(text: string | undefined): { reason?: string; message: string } | undefined {
  const t = text?.trim();
  if (!t) return undefined;
  try {
    const v = JSON.parse(t) as { reason?: unknown; message?: unknown };
    if (typeof v.message === 'string')
      return { ...(typeof v.reason === 'string' && /^[A-Z][A-Za-z]+$/.test(v.reason) ? { reason: v.reason } : {}), message: v.message };
  } catch {
    // Plain text: a log's tail.
  }
  return { message: t.split('\n').slice(-5).join(' ').slice(0, 2000) };
}

const iso = (t: Date | string | undefined) => (t ? new Date(t).toISOString() : undefined);

export function plan(b: Build, observed: BuildObserved, s: BuildSettings, now = new Date()): BuildPlanOut {
  const ns = b.metadata.namespace!;
  const name = b.metadata.name!;
  const policy = buildPolicy(ns, s);
  const none = { cacheClaim: undefined, policy, createJob: undefined, deleteJob: undefined };
  const announced = planOf(b);
  const base: BuildStatusFields = { jobName: name, ...(announced ? { plan: announced } : {}) };
  const result = (
    phase: BuildPhase,
    reason: string,
    message: string,
    extra: Partial<BuildStatusFields> = {},
  ): Pick<BuildPlanOut, 'status' | 'ready'> => ({
    status: { ...base, phase, reason, message, ...extra },
    ready: { ok: phase === 'Succeeded', reason, message },
  });

  // An ended Build keeps what it ended with, whatever happens to its Job since.
  const current = b.status?.phase;
  if (current && terminalPhases.has(current)) {
    const { conditions: _c, observedGeneration: _g, ...kept } = b.status!;
    return {
      ...none,
      status: kept,
      ready: { ok: current === 'Succeeded', reason: kept.reason ?? current, message: kept.message ?? current },
    };
  }
  const job = observed.job;
  const pod = observed.pod;
  const startedAt = iso(job?.status?.startTime ?? pod?.status?.startTime);

  if (b.metadata.annotations?.[buildAnnotations.cancel] !== undefined) {
    return {
      ...none,
      deleteJob: job,
      ...result('Canceled', 'Canceled', 'canceled before it ended', {
        ...(startedAt ? { startedAt } : {}),
        completedAt: now.toISOString(),
      }),
    };
  }

  // The same source, built before for this app (or its parent): its output, nothing run.
  const key = sourceKey(b);
  const earlier = key
    ? observed.builds
        .filter(
          (o) =>
            o.metadata.name !== name &&
            cacheAppOf(o) === cacheAppOf(b) &&
            sourceKey(o) === key &&
            o.status?.phase === 'Succeeded' &&
            (o.status.artifact?.digest || o.status.image),
        )
        .sort((x, y) => String(y.status?.completedAt).localeCompare(String(x.status?.completedAt)))[0]
    : undefined;
  if (earlier && !job) {
    const at = iso(b.metadata.creationTimestamp) ?? now.toISOString();
    return {
      ...none,
      ...result('Succeeded', 'Reused', `the same source was built by ${earlier.metadata.name}: its output is this build's`, {
        reusedFrom: earlier.metadata.name!,
        ...(earlier.status!.plan ? { plan: earlier.status!.plan } : {}),
        ...(earlier.status!.artifact ? { artifact: earlier.status!.artifact } : {}),
        ...(earlier.status!.image ? { image: earlier.status!.image } : {}),
        startedAt: at,
        completedAt: at,
      }),
    };
  }

  const claim = observed.cacheClaim ? undefined : cacheClaim(b, s);
  if (!job) {
    return { ...none, cacheClaim: claim, createJob: buildJob(b, s, now), ...result('Queued', 'Queued', 'waiting for a builder') };
  }

  const failed = reasonOfJobFailure(job);
  if (failed) {
    const completedAt = iso(failed.lastTransitionTime) ?? now.toISOString();
    const times = { ...(startedAt ? { startedAt } : {}), completedAt };
    if (failed.reason === 'DeadlineExceeded')
      return {
        ...none,
        ...result('Failed', 'DeadlineExceeded', `the build ran longer than its limit of ${b.spec.timeoutSeconds ?? 2700} s`, times),
      };
    const ended = statusesOf(pod).find((c) => c.state?.terminated && c.state.terminated.exitCode !== 0);
    const said = saidOf(ended?.state?.terminated?.message);
    if (ended?.name === 'source')
      return {
        ...none,
        ...result(
          'Failed',
          'SourceFailed',
          `the source could not be fetched${said ? `: ${said.message}` : ` (exit ${ended.state!.terminated!.exitCode})`}`,
          times,
        ),
      };
    if (ended?.state?.terminated?.reason === 'OOMKilled')
      return {
        ...none,
        ...result('Failed', 'OutOfMemory', `the build ran out of memory (limit ${s.resources.limits?.memory ?? 'none'})`, times),
      };
    return {
      ...none,
      ...result(
        'Failed',
        said?.reason ?? 'BuildFailed',
        said?.message ?? `the build failed (${failed.reason ?? 'Failed'}${failed.message ? `: ${failed.message}` : ''})`,
        times,
      ),
    };
  }

  const output = outputOf(b);
  const succeeded = (job.status?.succeeded ?? 0) > 0;
  if (succeeded && output) {
    const completedAt = iso(job.status?.completionTime) ?? now.toISOString();
    return {
      ...none,
      ...result('Succeeded', 'Built', output.image ? `built image ${output.image}` : `built artifact ${output.digest}`, {
        ...(startedAt ? { startedAt } : {}),
        completedAt,
        artifact: { digest: output.digest, sizeBytes: output.bytes },
        ...(output.image ? { image: output.image } : {}),
      }),
    };
  }
  if (succeeded) {
    const ended = new Date(job.status?.completionTime ?? now).getTime();
    if (now.getTime() - ended > outputGraceMs)
      return {
        ...none,
        ...result('Failed', 'NoOutput', 'the builder ended without its output reaching the platform', {
          ...(startedAt ? { startedAt } : {}),
          completedAt: now.toISOString(),
        }),
      };
    return { ...none, ...result('Building', 'Storing', 'storing the output'), requeueMs: 5000 };
  }
  const problem = hopeless(pod);
  if (problem)
    return {
      ...none,
      deleteJob: job,
      ...result('Failed', 'BuilderFailed', `the builder cannot start: ${problem}`, {
        ...(startedAt ? { startedAt } : {}),
        completedAt: now.toISOString(),
      }),
    };
  const running = statusesOf(pod).some((c) => c.state?.running || c.state?.terminated);
  if (!running)
    return { ...none, cacheClaim: claim, ...result('Queued', 'Queued', pod ? 'a builder is starting' : 'waiting for a builder') };
  const step =
    statusesOf(pod).find((c) => c.state?.running)?.name === 'source'
      ? 'fetching the source'
      : announced
        ? `building (${announced.kind})`
        : 'planning';
  return { ...none, cacheClaim: claim, ...result('Building', 'Building', step, startedAt ? { startedAt } : {}) };
}
