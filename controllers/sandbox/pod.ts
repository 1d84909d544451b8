// The sandbox pod, pure: the one shape every sandbox runs in, whether made ahead for the pool or
// for one sandbox (cold). No service-account token, the restricted profile and more (read-only root,
// no capabilities, no privilege escalation, RuntimeDefault seccomp, a non-root uid, a user namespace
// of its own), the sandbox RuntimeClass (its base spec adds a process limit: hack/nodes.sh), the
// image's entrypoint lowering its open files, core dumps and file size before the agent starts
// (hack/images.sh), CPU and memory limits, and a writable home and /tmp on memory-backed volumes of a
// fixed size. The pause container is PID 1 (shareProcessNamespace): it reaps what tenant code
// orphans, and killing the agent ends the sandbox instead of leaving zombies to fill the process limit.
import { createHash, randomBytes } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { containers, labels, managers } from '../../lib/contract.js';
import { agentPort, agentToken, sandboxHome } from '../../lib/sandbox/exec.js';
import { requests, type SandboxResources } from '../../lib/sandbox/limits.js';

export interface SandboxPodSettings {
  image: string;
  namespace: string;
  runtimeClass: string | undefined;
  /** Derives each pod's agent token (lib/sandbox/exec.ts agentToken). */
  agentKey: Buffer;
  /** Each pod in a user namespace of its own (hostUsers: false; config.userNamespaces). */
  userNamespaces?: boolean | undefined;
}

export const sandboxUid = 1000;

/**
 * The node disk a sandbox may take (docs/decisions/0023-disks.md). Its root is read-only and its
 * home and /tmp are memory (counted by its memory limit), so what is left on the node's disk is its
 * logs: bounded so a sandbox printing without end is evicted rather than fill the disk.
 */
export const sandboxEphemeralStorage = { request: '16Mi', limit: '128Mi' } as const;

/** The hash of everything that shapes a pool member: a member of another template is replaced. */
export function poolKey(settings: SandboxPodSettings, resources: SandboxResources): string {
  return createHash('sha256')
    .update(JSON.stringify([settings.image, settings.runtimeClass ?? '', resources, agentPort, settings.userNamespaces === true, 3]))
    .digest('hex')
    .slice(0, 16);
}

export function newPodName(): string {
  return `sbx-${randomBytes(6).toString('hex')}`;
}

export function sandboxPod(
  settings: SandboxPodSettings,
  opts: {
    name: string;
    resources: SandboxResources;
    network: boolean;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
  },
): k8s.V1Pod {
  const { resources } = opts;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: opts.name,
      namespace: settings.namespace,
      labels: {
        [labels.sandboxPod]: 'true',
        [labels.network]: opts.network ? 'on' : 'off',
        [labels.managedBy]: managers.controllers,
        ...opts.labels,
      },
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      ...(settings.runtimeClass ? { runtimeClassName: settings.runtimeClass } : {}),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      shareProcessNamespace: true,
      // The code a sandbox runs is anyone's: its uid is an unprivileged high ID on the node.
      ...(settings.userNamespaces ? { hostUsers: false } : {}),
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: sandboxUid,
        runAsGroup: sandboxUid,
        fsGroup: sandboxUid,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: containers.sandbox,
          image: settings.image,
          env: [{ name: 'SVC_SANDBOX_TOKEN', value: agentToken(settings.agentKey, opts.name) }],
          ports: [{ name: 'agent', containerPort: agentPort }],
          readinessProbe: {
            httpGet: { path: '/healthz', port: agentPort as unknown as k8s.IntOrString },
            periodSeconds: 1,
            timeoutSeconds: 1,
            failureThreshold: 3,
          },
          resources: {
            requests: { ...requests, 'ephemeral-storage': sandboxEphemeralStorage.request },
            limits: { cpu: resources.cpu, memory: resources.memory, 'ephemeral-storage': sandboxEphemeralStorage.limit },
          },
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
          },
          volumeMounts: [
            { name: 'home', mountPath: sandboxHome },
            { name: 'tmp', mountPath: '/tmp' },
          ],
        },
      ],
      volumes: [
        { name: 'home', emptyDir: { medium: 'Memory', sizeLimit: resources.disk } },
        { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: resources.disk } },
      ],
    },
  };
}

export function podReady(pod: k8s.V1Pod): boolean {
  return (
    !pod.metadata?.deletionTimestamp &&
    pod.status?.phase === 'Running' &&
    pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
  );
}

/** Why a sandbox pod will never serve (it ended, or its container cannot start), if it will not. */
/**
 * How long a running sandbox container's agent may take to answer its readiness probe (it answers
 * within seconds): past that the pod is broken, not starting. One whose agent never listened sat
 * in the pool as "starting" for 13 minutes and was claimed by a sandbox that then never got ready.
 */
export const agentReadyWithinMs = 180_000;

export function podBroken(pod: k8s.V1Pod, now: number = Date.now()): string | undefined {
  if (pod.metadata?.deletionTimestamp) return `its pod ${pod.metadata.name} is being deleted`;
  const status = pod.status?.containerStatuses?.[0];
  const startedAt = status?.state?.running?.startedAt;
  if (startedAt && status?.ready !== true && now - new Date(startedAt).getTime() > agentReadyWithinMs)
    return `its agent did not answer within ${agentReadyWithinMs / 1000} s of its container starting`;
  const term = status?.state?.terminated ?? status?.lastState?.terminated;
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded' || term) {
    const why = term
      ? `${term.reason ?? 'exited'}${term.exitCode !== undefined ? ` (exit ${term.exitCode})` : ''}${term.message ? `: ${term.message.trim().slice(-200)}` : ''}`
      : (pod.status?.reason ?? pod.status?.phase ?? 'ended');
    return `its pod ended: ${why}${pod.status?.message ? ` ${pod.status.message}` : ''}`.trim();
  }
  const waiting = status?.state?.waiting;
  if (
    waiting &&
    [
      'ErrImagePull',
      'ImagePullBackOff',
      'InvalidImageName',
      'CreateContainerConfigError',
      'CreateContainerError',
      'RunContainerError',
    ].includes(waiting.reason ?? '')
  ) {
    return `its container cannot start: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
  }
  return undefined;
}
