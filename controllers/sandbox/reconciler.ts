// The Sandbox reconciler on the frame (controllers/frame/controller.ts): observes the pod serving a
// Sandbox in the informers' cache, plans with desired.ts, applies the plan (claims a free pool
// member, starts a pod of its own, deletes its pod or the ended Sandbox) and plans again with what
// it made, until nothing is left to do; the frame writes the status it returns.
//
// A claim is one JSON patch whose first operation tests that the member is still in the pool: two
// claimers (an old leader not yet stopped, say) cannot both get it, the second's patch fails whole.
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, labels, pluralOf, version } from '../../lib/contract.js';
import { kubeStatus } from '../../lib/kube/client.js';
import type { EventRecorder } from '../../lib/kube/events.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox, SandboxStatus } from '../../lib/resources/index.js';
import { resourcesOf } from '../../lib/sandbox/limits.js';
import type { Outcome, Reconciler } from '../frame/controller.js';
import { KindEvents } from '../frame/events.js';
import { claimMetadata, planSandbox, type SandboxAction, type SandboxPlan, type SandboxTiming } from './desired.js';
import { newPodName, podBroken, podReady, sandboxPod, type SandboxPodSettings } from './pod.js';

const jsonPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);
const pointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** What the informers show of sandbox pods. */
export interface SandboxPods {
  /** The pod claimed by or started for the Sandbox of this uid. */
  servingOf(uid: string): k8s.V1Pod | undefined;
  /** Unclaimed members of the pool of this key. */
  membersOf(key: string): k8s.V1Pod[];
}

export interface SandboxSettings {
  pod: SandboxPodSettings;
  timing: SandboxTiming;
  /** The key of the default template's pool. */
  poolKey: string;
}

export class SandboxReconciler implements Reconciler<Sandbox, SandboxStatus> {
  /** Pods this process claimed or started per Sandbox uid, until the cache shows them. */
  private readonly made = new Map<string, k8s.V1Pod>();
  /** Names of those pods: never offered as free members, nor deleted by the pool, meanwhile. */
  readonly reserved = new Set<string>();
  /**
   * Free members the pool is deleting (pool-reconciler.ts marks them before its call): never
   * claimed. With `reserved`, one process's claims and deletions never meet on a pod: both are
   * marked synchronously before the call that acts on it.
   */
  readonly retiring = new Set<string>();
  /** Sandboxes served so far, by launch (the controllers' /metrics). */
  readonly launches = { warm: 0, cold: 0 };
  private readonly events: KindEvents<Sandbox>;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly custom: k8s.CustomObjectsApi,
    private readonly pods: SandboxPods,
    private readonly settings: SandboxSettings,
    private readonly log: Logger,
    events?: EventRecorder,
    /** Called after a member is claimed: the pool refills. */
    private readonly onClaim?: () => void,
  ) {
    this.events = new KindEvents(events, 'Sandbox', apiVersion);
  }

  forget(s: Sandbox): void {
    const pod = this.made.get(s.metadata.uid!);
    if (pod) this.reserved.delete(pod.metadata!.name!);
    this.made.delete(s.metadata.uid!);
  }

  private observe(s: Sandbox): k8s.V1Pod | undefined {
    const uid = s.metadata.uid!;
    const cached = this.pods.servingOf(uid);
    const made = this.made.get(uid);
    if (cached && made) {
      // The cache has caught up with what this process made.
      this.made.delete(uid);
      this.reserved.delete(made.metadata!.name!);
      return cached;
    }
    return cached ?? made;
  }

  private free(): { ready: k8s.V1Pod[]; starting: k8s.V1Pod[] } {
    const members = this.pods
      .membersOf(this.settings.poolKey)
      .filter((p) => !this.reserved.has(p.metadata!.name!) && !this.retiring.has(p.metadata!.name!) && !p.metadata?.deletionTimestamp);
    return { ready: members.filter(podReady), starting: members.filter((p) => !podReady(p) && !podBroken(p)) };
  }

  async reconcile(s: Sandbox, now: Date): Promise<Outcome<SandboxStatus>> {
    if (s.metadata.deletionTimestamp) return { deleted: true };
    let pod = this.observe(s);
    for (let step = 0; step < 5; step++) {
      const plan = planSandbox({ sandbox: s, pod, free: this.free(), now }, this.settings.timing);
      if (!plan.action) return this.outcome(s, plan);
      const next = await this.apply(s, plan.action, now);
      if (next === 'done') return plan.action.kind === 'deleteSandbox' ? { deleted: true } : this.outcome(s, plan);
      if (next !== 'again') pod = next;
    }
    throw new Error('no stable plan after 5 steps');
  }

  private outcome(s: Sandbox, plan: SandboxPlan): Outcome<SandboxStatus> {
    const st = plan.status;
    if (st.phase !== s.status?.phase && (st.phase === 'Ended' || st.phase === 'Failed')) {
      this.log.info(
        { kind: 'Sandbox', sandbox: `${s.metadata.namespace}/${s.metadata.name}`, phase: st.phase, reason: st.reason, message: st.message },
        `Sandbox ${st.phase.toLowerCase()}`,
      );
      this.events.record(s, st.phase === 'Failed' ? 'Warning' : 'Normal', st.reason ?? st.phase, st.message ?? '');
    }
    return {
      status: st,
      ready: { ok: st.phase === 'Ready', reason: st.reason ?? st.phase ?? 'Pending', message: st.message ?? '' },
      ...(plan.requeueMs !== undefined ? { requeueMs: Math.max(plan.requeueMs, 50) } : {}),
    };
  }

  /** Applies one action: the pod it made or claimed, 'again' to plan anew, or 'done'. */
  private async apply(s: Sandbox, a: SandboxAction, now: Date): Promise<k8s.V1Pod | 'again' | 'done'> {
    switch (a.kind) {
      case 'claim':
        return (await this.claim(s, a.pod, a.launch, a.launchReason, now)) ?? 'again';
      case 'create':
        return this.create(s, a.launchReason, now);
      case 'deletePod':
        await this.core.deleteNamespacedPod({ name: a.name, namespace: a.namespace, gracePeriodSeconds: 0 }).catch(ignore(404));
        return 'done';
      case 'deleteSandbox':
        await this.custom
          .deleteNamespacedCustomObject({
            group,
            version,
            plural: pluralOf('Sandbox'),
            namespace: s.metadata.namespace!,
            name: s.metadata.name!,
          })
          .catch(ignore(404));
        return 'done';
    }
  }

  /** Seconds from the pod's start to the sandbox's end (plus a minute): the kubelet's own backstop. */
  private deadlineSeconds(s: Sandbox, pod: k8s.V1Pod, now: Date): number {
    const started = pod.status?.startTime ? new Date(pod.status.startTime).getTime() : now.getTime();
    const expires = new Date(s.metadata.creationTimestamp as unknown as string).getTime() + (s.spec.maxLifetimeSeconds ?? 3600) * 1000;
    return Math.max(1, Math.ceil((expires - started) / 1000) + 60);
  }

  private async claim(
    s: Sandbox,
    member: k8s.V1Pod,
    launch: 'warm' | 'cold',
    launchReason: string | undefined,
    now: Date,
  ): Promise<k8s.V1Pod | undefined> {
    const name = member.metadata!.name!;
    this.reserved.add(name);
    const meta = claimMetadata(s, launch, launchReason);
    const ops: object[] = [{ op: 'test', path: `/metadata/labels/${pointer(labels.sandboxPool)}`, value: this.settings.poolKey }];
    for (const [k, v] of Object.entries(meta.labels))
      ops.push(
        v === null
          ? { op: 'remove', path: `/metadata/labels/${pointer(k)}` }
          : { op: 'add', path: `/metadata/labels/${pointer(k)}`, value: v },
      );
    for (const [k, v] of Object.entries(meta.annotations))
      if (v !== null) ops.push({ op: 'add', path: `/metadata/annotations/${pointer(k)}`, value: v });
    ops.push({ op: 'add', path: '/spec/activeDeadlineSeconds', value: this.deadlineSeconds(s, member, now) });
    try {
      const pod = await this.core.patchNamespacedPod({ name, namespace: member.metadata!.namespace!, body: ops }, jsonPatch);
      this.made.set(s.metadata.uid!, pod);
      this.launches[launch] += 1;
      this.onClaim?.();
      return pod;
    } catch (err) {
      this.reserved.delete(name);
      // Gone, or claimed by someone else (the test failed): plan again with another member.
      if ([404, 409, 422].includes(kubeStatus(err) ?? 0)) {
        this.log.debug({ kind: 'Sandbox', pod: name, status: kubeStatus(err) }, 'A pool member could not be claimed; trying another');
        return undefined;
      }
      throw err;
    }
  }

  private async create(s: Sandbox, launchReason: string, now: Date): Promise<k8s.V1Pod> {
    const name = newPodName();
    const meta = claimMetadata(s, 'cold', launchReason);
    const body = sandboxPod(this.settings.pod, {
      name,
      resources: resourcesOf(s.spec.resources),
      network: s.spec.network === true,
      labels: Object.fromEntries(Object.entries(meta.labels).filter((e): e is [string, string] => e[1] !== null)),
      annotations: Object.fromEntries(Object.entries(meta.annotations).filter((e): e is [string, string] => e[1] !== null)),
    });
    body.spec!.activeDeadlineSeconds = this.deadlineSeconds(s, body, now);
    this.reserved.add(name);
    const pod = await this.core.createNamespacedPod({ namespace: this.settings.pod.namespace, body }).catch((err: unknown) => {
      this.reserved.delete(name);
      throw err;
    });
    this.made.set(s.metadata.uid!, pod);
    this.launches.cold += 1;
    return pod;
  }
}

function ignore(...codes: number[]) {
  return (err: unknown) => {
    if (!codes.includes(kubeStatus(err) ?? 0)) throw err;
  };
}
