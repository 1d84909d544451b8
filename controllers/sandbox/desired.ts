// The Sandbox reconciler's pure half: from a Sandbox, the pod serving it (if any), the pool's free
// members and the time, what to do next (claim a member, start a pod of its own, delete its pod,
// delete the Sandbox once its record has been kept long enough) and the status to report. No I/O:
// controllers/sandbox/reconciler.ts observes, applies and plans again until nothing is left to do.
//
// The lifecycle (docs/api/sandboxes.md):
//   Pending  (Starting)  its pod is starting (a cold launch)
//   Ready    (Claimed | Started)  its agent answers; idle and lifetime deadlines run
//   Ended    (Expired | IdleTimeout | Deleted)  its pod is gone; the record stays for the retention window
//   Failed   (PodFailed | PodGone | StartTimeout | AgentUnreachable)  likewise, with why
import type * as k8s from '@kubernetes/client-node';
import { annotations, labels } from '../../lib/contract.js';
import { agentPort } from '../../lib/sandbox/exec.js';
import { defaultResources, resourcesOf, sameResources } from '../../lib/sandbox/limits.js';
import type { Sandbox, SandboxStatus } from '../../lib/resources/index.js';
import { activityAnnotation, parseActivity } from '../../lib/sandbox/activity.js';
import { podBroken, podReady } from './pod.js';

export interface SandboxTiming {
  /** An ended sandbox's record is deleted this long after it ended. */
  retentionMs: number;
  /** A pod not serving by then fails the sandbox (StartTimeout). */
  startDeadlineMs: number;
}

export interface SandboxObserved {
  sandbox: Sandbox;
  /** The pod serving it: claimed or started for it (from the cache, or just made by this process). */
  pod: k8s.V1Pod | undefined;
  /** Unclaimed pool members of the default template, ready ones and ones still starting. */
  free: { ready: readonly k8s.V1Pod[]; starting: readonly k8s.V1Pod[] };
  now: Date;
}

export type SandboxAction =
  | { kind: 'claim'; pod: k8s.V1Pod; launch: 'warm' | 'cold'; launchReason: string | undefined }
  | { kind: 'create'; launchReason: string }
  | { kind: 'deletePod'; name: string; namespace: string }
  | { kind: 'deleteSandbox' };

export type Phase = NonNullable<SandboxStatus['phase']>;

export interface SandboxPlan {
  action?: SandboxAction;
  status: SandboxStatus;
  requeueMs?: number;
}

const iso = (d: Date) => d.toISOString();
const ms = (s: string | undefined) => (s ? new Date(s).getTime() : undefined);

/** Why a sandbox cannot be served by a pool member (then it is launched cold), or undefined. */
export function coldReason(sandbox: Sandbox): string | undefined {
  if (sandbox.spec.network) return 'network access needs a pod of its own';
  if (!sameResources(resourcesOf(sandbox.spec.resources), defaultResources))
    return 'resources other than the defaults need a pod of their own';
  return undefined;
}

export function ended(sandbox: Sandbox): boolean {
  return sandbox.status?.phase === 'Ended' || sandbox.status?.phase === 'Failed';
}

export function planSandbox(o: SandboxObserved, t: SandboxTiming): SandboxPlan {
  const { sandbox: s, pod, now } = o;
  const prev = s.status ?? {};
  const created = ms(s.metadata?.creationTimestamp as unknown as string | undefined) ?? now.getTime();
  const lifetimeMs = (s.spec.maxLifetimeSeconds ?? 3600) * 1000;
  const idleMs = (s.spec.idleTimeoutSeconds ?? 300) * 1000;
  const expiresAt = created + lifetimeMs;
  // What stays from one reconcile to the next (the launch is read back from the pod's annotations).
  const kept: SandboxStatus = {
    ...(prev.launch ? { launch: prev.launch } : {}),
    ...(prev.launchReason ? { launchReason: prev.launchReason } : {}),
    ...(prev.podName ? { podName: prev.podName, podNamespace: prev.podNamespace } : {}),
    ...(prev.node ? { node: prev.node } : {}),
    ...(prev.readyAt ? { readyAt: prev.readyAt } : {}),
    ...(prev.lastActivityAt ? { lastActivityAt: prev.lastActivityAt } : {}),
    expiresAt: iso(new Date(expiresAt)),
  };
  const deletePod: SandboxAction | undefined =
    pod && !pod.metadata?.deletionTimestamp
      ? { kind: 'deletePod', name: pod.metadata!.name!, namespace: pod.metadata!.namespace! }
      : undefined;

  if (ended(s)) {
    const endedAt = ms(prev.endedAt) ?? now.getTime();
    const goneAt = endedAt + t.retentionMs;
    if (now.getTime() >= goneAt) return { action: { kind: 'deleteSandbox' }, status: prev };
    return { ...(deletePod ? { action: deletePod } : {}), status: prev, requeueMs: goneAt - now.getTime() };
  }
  const end = (phase: 'Ended' | 'Failed', reason: string, message: string): SandboxPlan => ({
    ...(deletePod ? { action: deletePod } : {}),
    status: { ...kept, phase, reason, message, endedAt: iso(now) },
    requeueMs: t.retentionMs,
  });
  if (s.spec.stopped) return end('Ended', 'Deleted', 'destroyed on request');
  if (now.getTime() >= expiresAt) return end('Ended', 'Expired', `reached its maximum lifetime of ${s.spec.maxLifetimeSeconds ?? 3600} s`);

  if (!pod) {
    if (prev.podName) return end('Failed', 'PodGone', `its pod ${prev.podName} was deleted`);
    const why = coldReason(s);
    const pending = (launchReason: string | undefined): SandboxStatus => ({
      ...kept,
      phase: 'Pending',
      reason: 'Starting',
      message: 'claiming a pod',
      launch: 'cold',
      ...(launchReason ? { launchReason } : {}),
    });
    if (!why && o.free.ready[0])
      return {
        action: { kind: 'claim', pod: o.free.ready[0], launch: 'warm', launchReason: undefined },
        status: { ...kept, phase: 'Pending', reason: 'Starting', message: 'claiming a pod' },
      };
    if (!why && o.free.starting[0]) {
      const reason = 'the pool had no ready pod: claimed one still starting';
      return { action: { kind: 'claim', pod: o.free.starting[0], launch: 'cold', launchReason: reason }, status: pending(reason) };
    }
    const reason = why ?? 'the pool is empty';
    return { action: { kind: 'create', launchReason: reason }, status: pending(reason) };
  }

  const launch: { launch: 'warm' | 'cold'; launchReason?: string } = {
    launch: pod.metadata?.annotations?.[annotations.launch] === 'warm' ? 'warm' : 'cold',
    ...(pod.metadata?.annotations?.[annotations.launchReason] ? { launchReason: pod.metadata.annotations[annotations.launchReason] } : {}),
  };
  const placed: SandboxStatus = {
    ...kept,
    ...launch,
    podName: pod.metadata!.name!,
    podNamespace: pod.metadata!.namespace!,
    ...(pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}),
  };
  const broken = podBroken(pod);
  if (broken) return end('Failed', 'PodFailed', broken);
  if (!podReady(pod) || !pod.status?.podIP) {
    const deadline = created + t.startDeadlineMs;
    if (now.getTime() >= deadline) {
      const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
      return end(
        'Failed',
        'StartTimeout',
        `its pod was not ready within ${Math.round(t.startDeadlineMs / 1000)} s${waiting?.reason ? ` (${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''})` : ''}`,
      );
    }
    return {
      status: { ...placed, phase: 'Pending', reason: 'Starting', message: `pod ${pod.metadata!.name} is starting` },
      requeueMs: deadline - now.getTime(),
    };
  }
  // Idle by what the platform saw (the API's record of execs and transfers), never by what the
  // agent in the sandbox says: that is the tenant's to forge. While an exec may still run (its
  // deadline, busyUntil), the sandbox is not idle.
  const readyAt = ms(prev.readyAt) ?? now.getTime();
  const seen = parseActivity(s.metadata?.annotations?.[activityAnnotation]);
  const usedUntil = Math.max(readyAt, ms(prev.lastActivityAt) ?? 0, seen?.at.getTime() ?? 0, seen?.busyUntil?.getTime() ?? 0);
  const lastActivity = Math.min(usedUntil, now.getTime());
  const idleAt = usedUntil + idleMs;
  if (now.getTime() >= idleAt) return end('Ended', 'IdleTimeout', `no exec for ${s.spec.idleTimeoutSeconds ?? 300} s`);
  return {
    status: {
      ...placed,
      phase: 'Ready',
      reason: launch.launch === 'warm' ? 'Claimed' : 'Started',
      message: launch.launch === 'warm' ? 'served by a ready pod of the pool' : 'served by a pod started for it',
      address: `${pod.status.podIP}:${agentPort}`,
      readyAt: iso(new Date(readyAt)),
      ...(lastActivity > readyAt ? { lastActivityAt: iso(new Date(lastActivity)) } : {}),
      idleExpiresAt: iso(new Date(idleAt)),
    },
    requeueMs: Math.min(idleAt, expiresAt) - now.getTime(),
  };
}

/** The labels and annotations that claim a pod for a sandbox (and take it out of its pool). */
export function claimMetadata(
  sandbox: Sandbox,
  launch: 'warm' | 'cold',
  launchReason: string | undefined,
): { labels: Record<string, string | null>; annotations: Record<string, string | null> } {
  return {
    labels: {
      [labels.sandboxPool]: null,
      [labels.sandbox]: sandbox.metadata.name!,
      [labels.sandboxNamespace]: sandbox.metadata.namespace!,
      [labels.sandboxUid]: sandbox.metadata.uid!,
    },
    annotations: { [annotations.launch]: launch, [annotations.launchReason]: launchReason ?? null },
  };
}
