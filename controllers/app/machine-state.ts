// How an observed machine stands: whose it is, whether it is done, failing or hopeless, and whether a dependency is met.
import type * as k8s from '@kubernetes/client-node';
import type { ServiceView } from '../../lib/app-services.js';
import { labels } from '../../lib/contract.js';
import { hopelessWaiting, podReady } from '../frame/pods.js';
import type { AppStatusFields } from './rollout.js';

/** Whether a machine Pod belongs to `view` (the public service's machines made before services had names carry no service label). */
export function podOfService(pod: k8s.V1Pod, view: Pick<ServiceView, 'name' | 'public'>): boolean {
  const l = pod.metadata?.labels ?? {};
  if (view.public) return l[labels.public] === 'true' || l[labels.service] === undefined;
  return l[labels.public] !== 'true' && l[labels.service] === view.name;
}

function statusesOf(pod: k8s.V1Pod): k8s.V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

/** A machine that has done what it is for: ready, or, in a service that does not restart, ended with exit 0. */
export function done(pod: k8s.V1Pod, view: ServiceView): boolean {
  return podReady(pod) || (view.restart !== 'always' && pod.status?.phase === 'Succeeded');
}

export function broken(pod: k8s.V1Pod, view: ServiceView): string | undefined {
  if (pod.status?.phase === 'Succeeded' && view.restart !== 'always') return undefined;
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded')
    return `machine ${pod.metadata?.name} ended (${pod.status.phase})`;
  const waiting = statusesOf(pod).find(
    (s) => s.state?.waiting && !['ContainerCreating', 'PodInitializing'].includes(s.state.waiting.reason ?? ''),
  );
  return waiting ? `${waiting.name}: ${waiting.state!.waiting!.reason}: ${waiting.state!.waiting!.message ?? ''}`.trim() : undefined;
}

/** Why a machine of the current revision will not become ready (or finish), if it will not. */
export function hopelessMachine(pod: k8s.V1Pod, view: ServiceView, now: Date, deadlineMs: number): string | undefined {
  if (done(pod, view)) return undefined;
  for (const s of statusesOf(pod)) {
    const last = s.lastState?.terminated ?? s.state?.terminated;
    const ended = last
      ? ` (last exit ${last.exitCode}${last.reason ? `, ${last.reason}` : ''}${last.message ? `: ${last.message.trim().slice(-300)}` : ''})`
      : '';
    if (s.state?.waiting && hopelessWaiting.has(s.state.waiting.reason ?? ''))
      return `container ${s.name}: ${s.state.waiting.reason}${s.state.waiting.message ? `: ${s.state.waiting.message}` : ''}${ended}`;
    if (s.restartCount >= 2) return `container ${s.name} restarted ${s.restartCount} times${ended}`;
  }
  if (pod.status?.phase === 'Failed') {
    const exit = statusesOf(pod)
      .map((c) => c.state?.terminated)
      .find((t) => t && t.exitCode !== 0);
    return exit
      ? `machine ended with exit code ${exit.exitCode}${exit.reason ? ` (${exit.reason})` : ''}`
      : `machine ended (${pod.status.reason ?? 'Failed'})`;
  }
  const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : now.getTime();
  // A healthcheck's start period is time the service said it may need before it is healthy.
  const deadline = deadlineMs + (view.healthcheck?.startPeriodSeconds ?? 0) * 1000;
  if (now.getTime() - created >= deadline) return `not ready after ${Math.round(deadline / 1000)} s`;
  return undefined;
}

/**
 * Whether every machine of service `dep` is as `condition` asks (compose depends_on): started
 * (running), healthy (ready) or completed (ended with exit 0 at its current revision).
 */
export function dependencyMet(
  dep: ServiceView,
  pods: readonly k8s.V1Pod[],
  condition: 'started' | 'healthy' | 'completed',
  revisionAt: (ordinal: number) => string,
): boolean {
  const mine = pods.filter((p) => podOfService(p, dep));
  for (let o = 0; o < dep.machines; o++) {
    const ps = mine.filter((p) => Number(p.metadata?.labels?.[labels.machine]) === o);
    const met =
      condition === 'started'
        ? ps.some((p) => podReady(p) || p.status?.phase === 'Running' || p.status?.phase === 'Succeeded')
        : condition === 'healthy'
          ? ps.some((p) => podReady(p))
          : ps.some((p) => p.status?.phase === 'Succeeded' && p.metadata?.labels?.[labels.revision] === revisionAt(o));
    if (!met) return false;
  }
  return true;
}

export function machineState(pod: k8s.V1Pod): NonNullable<AppStatusFields['machines']>[number]['state'] {
  const phase = pod.status?.phase;
  if (podReady(pod)) return 'running';
  return phase === 'Succeeded' ? 'exited' : phase === 'Failed' ? 'failed' : phase === 'Running' ? 'starting' : 'pending';
}
