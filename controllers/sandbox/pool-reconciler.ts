// The sandbox pool on the frame: its primary object is the sandbox namespace, and every sandbox
// pod's change brings it back (as an owner's Watches). It applies the namespace's policies, keeps
// `size` free members of the current template (ready or starting), deletes what pool.ts says, and
// records the installed runtimes (what one ready member's agent found) in a ConfigMap the API lists
// at GET /runtimes.
import * as k8s from '@kubernetes/client-node';
import { annotations, labels, managers } from '../../lib/contract.js';
import { kubeStatus, serverSideApply } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import { agentPort, agentToken } from '../../lib/sandbox/exec.js';
import { defaultResources } from '../../lib/sandbox/limits.js';
import { runtimesConfigMap, runtimesKey } from '../../lib/sandbox/runtimes-record.js';
import type { Outcome, Reconciler } from '../frame/controller.js';
import { newPodName, podReady, sandboxPod, type SandboxPodSettings } from './pod.js';
import { planPool, sandboxPolicies, type PoolPlan } from './pool.js';

export interface PoolSettings {
  pod: SandboxPodSettings;
  key: string;
  size: number;
  platformCidrs: readonly string[];
}

export interface PoolObservations {
  pods(): readonly k8s.V1Pod[];
  sandboxExists(uid: string): boolean;
  reserved: ReadonlySet<string>;
}

export class PoolReconciler implements Reconciler<k8s.V1Namespace, never> {
  private policiesApplied = false;
  private runtimesFor: string | undefined;
  /** The last plan's free members, for /metrics-like logs and tests. */
  depth: PoolPlan['depth'] = { ready: 0, starting: 0 };
  private lastDepth = '';

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly networking: k8s.NetworkingV1Api,
    private readonly observed: PoolObservations,
    private readonly settings: PoolSettings,
    private readonly log: Logger,
  ) {}

  /** A policy of the namespace was deleted: the next pass applies them again. */
  forgetPolicies(): void {
    this.policiesApplied = false;
  }

  async reconcile(ns: k8s.V1Namespace): Promise<Outcome<never>> {
    if (ns.metadata?.deletionTimestamp) return {};
    const namespace = this.settings.pod.namespace;
    if (!this.policiesApplied) {
      for (const policy of sandboxPolicies(namespace, this.settings.platformCidrs)) {
        await this.networking.patchNamespacedNetworkPolicy({ name: policy.metadata!.name!, namespace, body: policy, fieldManager: managers.controllers, force: true }, serverSideApply);
      }
      this.policiesApplied = true;
    }
    const pods = this.observed.pods();
    const plan = planPool({ pods, key: this.settings.key, size: this.settings.size, sandboxExists: (uid) => this.observed.sandboxExists(uid), reserved: this.observed.reserved });
    this.depth = plan.depth;
    for (const d of plan.delete) {
      this.log.info({ kind: 'SandboxPool', pod: d.name, why: d.why }, 'Deleting a sandbox pod');
      await this.core.deleteNamespacedPod({ name: d.name, namespace, gracePeriodSeconds: 0 }).catch((err: unknown) => {
        if (kubeStatus(err) !== 404) throw err;
      });
    }
    for (let i = 0; i < plan.create; i++) {
      const name = newPodName();
      await this.core.createNamespacedPod({
        namespace,
        body: sandboxPod(this.settings.pod, { name, resources: { ...defaultResources }, network: false, labels: { [labels.sandboxPool]: this.settings.key }, annotations: { [annotations.launch]: 'pool' } }),
      });
    }
    const depth = JSON.stringify({ ...plan.depth, creating: plan.create });
    if (depth !== this.lastDepth) {
      this.log.info({ kind: 'SandboxPool', size: this.settings.size, ...plan.depth, created: plan.create }, 'Sandbox pool');
      this.lastDepth = depth;
    }
    await this.recordRuntimes(pods);
    return {};
  }

  /** Once per image: the runtimes a ready member's agent found, into the ConfigMap GET /runtimes reads. */
  private async recordRuntimes(pods: readonly k8s.V1Pod[]): Promise<void> {
    const image = this.settings.pod.image;
    if (this.runtimesFor === image) return;
    const namespace = this.settings.pod.namespace;
    const existing = await this.core.readNamespacedConfigMap({ name: runtimesConfigMap, namespace }).catch(() => undefined);
    if (existing?.data?.image === image) {
      this.runtimesFor = image;
      return;
    }
    const member = pods.find((p) => p.metadata?.labels?.[labels.sandboxPool] === this.settings.key && podReady(p) && p.status?.podIP);
    if (!member) return; // the next member to become ready brings the pool back here
    const res = await fetch(`http://${member.status!.podIP}:${agentPort}/info?runtimes=1`, {
      headers: { authorization: `Bearer ${agentToken(this.settings.pod.agentKey, member.metadata!.name!)}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new Error(`the agent of ${member.metadata!.name} answered ${res.status} to /info`);
    const info = (await res.json()) as { runtimes: unknown[] };
    await this.core.patchNamespacedConfigMap(
      {
        name: runtimesConfigMap,
        namespace,
        fieldManager: managers.controllers,
        force: true,
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: runtimesConfigMap, namespace, labels: { [labels.managedBy]: managers.controllers } }, data: { image, [runtimesKey]: JSON.stringify(info.runtimes) } },
      },
      serverSideApply,
    );
    this.runtimesFor = image;
    this.log.info({ kind: 'SandboxPool', image, runtimes: info.runtimes.length }, 'Recorded the sandbox runtimes');
  }
}
