// The pod status node-agent reports, computed from what its processes are doing: a pure function,
// so phase and conditions follow the kubelet's rules in one place that unit tests cover.
import type * as k8s from '@kubernetes/client-node';

export type ContainerState =
  | { kind: 'waiting'; reason: string; message?: string }
  | { kind: 'running'; startedAt: Date }
  | { kind: 'terminated'; exitCode: number; reason: string; message?: string; signal?: number; startedAt?: Date; finishedAt: Date };

export interface ContainerRecord {
  name: string;
  image: string;
  state: ContainerState;
  lastState?: ContainerState;
  restartCount: number;
  ready: boolean;
  started: boolean;
}

export interface PodRecord {
  podIP: string | undefined;
  hostIP: string;
  startTime: Date;
  restartPolicy: 'Always' | 'OnFailure' | 'Never';
  init: ContainerRecord[];
  containers: ContainerRecord[];
  /** All init containers completed. */
  initialized: boolean;
  /** Set once the pod will run nothing more (terminal phase). */
  finished: boolean;
  /** Whether the containers' CPU and memory limits are enforced; undefined when none are set. */
  limits?: { enforced: boolean; message: string };
}

function stateOf(s: ContainerState): k8s.V1ContainerState {
  switch (s.kind) {
    case 'waiting':
      return { waiting: { reason: s.reason, ...(s.message ? { message: s.message } : {}) } };
    case 'running':
      return { running: { startedAt: s.startedAt } };
    case 'terminated':
      return {
        terminated: {
          exitCode: s.exitCode,
          reason: s.reason,
          ...(s.message ? { message: s.message } : {}),
          ...(s.signal ? { signal: s.signal } : {}),
          ...(s.startedAt ? { startedAt: s.startedAt } : {}),
          finishedAt: s.finishedAt,
        },
      };
  }
}

function containerStatus(c: ContainerRecord): k8s.V1ContainerStatus {
  return {
    name: c.name,
    image: c.image,
    imageID: '',
    ready: c.ready,
    started: c.started,
    restartCount: c.restartCount,
    state: stateOf(c.state),
    ...(c.lastState ? { lastState: stateOf(c.lastState) } : {}),
  };
}

/** A pod condition of node-agent's own: whether resource limits hold. */
export const limitsCondition = 'svc.dev/LimitsEnforced';

export function podPhase(p: PodRecord): 'Pending' | 'Running' | 'Succeeded' | 'Failed' {
  const initFailed = p.init.some((c) => c.state.kind === 'terminated' && c.state.exitCode !== 0) && p.restartPolicy === 'Never';
  if (initFailed) return 'Failed';
  if (!p.initialized) return 'Pending';
  const states = p.containers.map((c) => c.state);
  if (states.some((s) => s.kind === 'running')) return 'Running';
  if (states.every((s) => s.kind === 'terminated')) {
    const failed = states.some((s) => s.kind === 'terminated' && s.exitCode !== 0);
    if (p.finished || p.restartPolicy === 'Never' || (p.restartPolicy === 'OnFailure' && !failed)) return failed ? 'Failed' : 'Succeeded';
    return 'Running';
  }
  // Some containers wait: after a start they are restarting (Running), before any start Pending.
  return p.containers.some((c) => c.restartCount > 0 || c.state.kind === 'terminated') ? 'Running' : 'Pending';
}

function condition(type: string, ok: boolean, now: Date, reason?: string): k8s.V1PodCondition {
  return { type, status: ok ? 'True' : 'False', lastTransitionTime: now, ...(reason && !ok ? { reason } : {}) };
}

export function podStatus(p: PodRecord, previous: k8s.V1PodStatus | undefined, now = new Date()): k8s.V1PodStatus {
  const phase = podPhase(p);
  const containersReady = p.containers.every((c) => c.ready) && phase === 'Running';
  const conds = [
    condition('PodReadyToStartContainers', p.podIP !== undefined, now),
    condition('Initialized', p.initialized, now, 'ContainersNotInitialized'),
    condition('ContainersReady', containersReady, now, 'ContainersNotReady'),
    condition('Ready', containersReady, now, 'ContainersNotReady'),
  ].map((c) => {
    // Keep the transition time of a condition whose status did not change.
    const before = previous?.conditions?.find((x) => x.type === c.type);
    return before && before.status === c.status && before.lastTransitionTime ? { ...c, lastTransitionTime: before.lastTransitionTime } : c;
  });
  if (p.limits) {
    conds.push({ type: limitsCondition, status: p.limits.enforced ? 'True' : 'False', message: p.limits.message, lastTransitionTime: now });
  }
  const scheduled = previous?.conditions?.find((c) => c.type === 'PodScheduled');
  return {
    phase,
    conditions: scheduled ? [scheduled, ...conds] : conds,
    hostIP: p.hostIP,
    hostIPs: [{ ip: p.hostIP }],
    ...(p.podIP ? { podIP: p.podIP, podIPs: [{ ip: p.podIP }] } : {}),
    startTime: p.startTime,
    initContainerStatuses: p.init.map(containerStatus),
    containerStatuses: p.containers.map(containerStatus),
    qosClass: previous?.qosClass ?? 'BestEffort',
  };
}
