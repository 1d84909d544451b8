// The sandbox pool on the frame: its primary object is the sandbox namespace, and every sandbox
// pod's change brings it back (as an owner's Watches). It applies the namespace's policies, keeps
// `size` free members of the current template (ready or starting), deletes what pool.ts says, and
// records the installed runtimes (what one ready member's agent found) in a ConfigMap the API lists
// at GET /runtimes.
import * as k8s from '@kubernetes/client-node';
import { annotations, labels, managers } from '../../lib/contract.js';
import { kubeStatus } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import { defaultResources } from '../../lib/sandbox/limits.js';
import { runtimesConfigMap, runtimesKey } from '../../lib/sandbox/runtimes-record.js';
import { Applier } from '../frame/apply.js';
import type { Outcome, Reconciler } from '../frame/controller.js';
import { agentRuntimes } from './agent-info.js';
import { newPodName, podReady, sandboxPod, type SandboxPodSettings } from './pod.js';
import { planPool, sandboxPolicies, type PoolPlan } from './pool.js';
import { platformPeers } from '../../lib/kube/platform-peers.js';

export interface PoolSettings {
  pod: SandboxPodSettings;
  key: string;
  size: number;
  platformCidrs: readonly string[];
  platformNamespace?: string | undefined;
}

export interface PoolObservations {
  pods(): readonly k8s.V1Pod[];
  sandboxExists(uid: string): boolean;
  reserved: ReadonlySet<string>;
  /** Free members being deleted, marked here before each delete (the Sandbox reconciler skips them). */
  retiring: Set<string>;
}

export class PoolReconciler implements Reconciler<k8s.V1Namespace, never> {
  /** What applies the namespace's policies, remembering them; the frame forgets them when one is deleted. */
  readonly applier: Applier;
  /** Members created by this process that the cache has not shown yet, with when (forgotten after a minute). */
  private readonly creating = new Map<string, number>();
  private runtimesFor: string | undefined;
  /** The last plan's free members, for /metrics-like logs and tests. */
  depth: PoolPlan['depth'] = { ready: 0, starting: 0 };
  private lastDepth = '';

  constructor(
    private readonly core: k8s.CoreV1Api,
    networking: k8s.NetworkingV1Api,
    private readonly observed: PoolObservations,
    private readonly settings: PoolSettings,
    private readonly log: Logger,
  ) {
    this.applier = new Applier({ core, networking });
  }

  async reconcile(ns: k8s.V1Namespace): Promise<Outcome<never>> {
    if (ns.metadata?.deletionTimestamp) return {};
    const namespace = this.settings.pod.namespace;
    await this.applier.applyAll(
      namespace,
      namespace,
      sandboxPolicies(namespace, platformPeers(this.settings.platformCidrs, this.settings.platformNamespace), this.settings.platformCidrs),
    );
    const pods = this.observed.pods();
    const present = new Set(pods.map((p) => p.metadata!.name!));
    for (const name of this.observed.retiring) if (!present.has(name)) this.observed.retiring.delete(name);
    const now = Date.now();
    for (const [name, at] of this.creating) if (present.has(name) || now - at > 60_000) this.creating.delete(name);
    const plan = planPool({
      pods,
      key: this.settings.key,
      size: this.settings.size,
      sandboxExists: (uid) => this.observed.sandboxExists(uid),
      reserved: this.observed.reserved,
      retiring: this.observed.retiring,
      creating: this.creating.size,
    });
    this.depth = plan.depth;
    const byName = new Map(pods.map((p) => [p.metadata!.name!, p]));
    for (const d of plan.delete) {
      // Claimed since the plan was made (this process's claims are marked before their patch): kept.
      if (this.observed.reserved.has(d.name)) continue;
      this.observed.retiring.add(d.name);
      this.log.info({ kind: 'SandboxPool', pod: d.name, why: d.why }, 'Deleting a sandbox pod');
      // Only the version planned from: a pod claimed meanwhile by another process (an old leader)
      // has changed, and the delete is refused (409) rather than taking a sandbox's pod.
      const resourceVersion = byName.get(d.name)?.metadata?.resourceVersion;
      await this.core
        .deleteNamespacedPod({
          name: d.name,
          namespace,
          gracePeriodSeconds: 0,
          ...(resourceVersion ? { body: { preconditions: { resourceVersion } } } : {}),
        })
        .catch((err: unknown) => {
          if (kubeStatus(err) === 409) this.observed.retiring.delete(d.name);
          else if (kubeStatus(err) !== 404) throw err;
        });
    }
    for (let i = 0; i < plan.create; i++) {
      const name = newPodName();
      this.creating.set(name, Date.now());
      await this.core
        .createNamespacedPod({
          namespace,
          body: sandboxPod(this.settings.pod, {
            name,
            resources: { ...defaultResources },
            network: false,
            labels: { [labels.sandboxPool]: this.settings.key },
            annotations: { [annotations.launch]: 'pool' },
          }),
        })
        .catch((err: unknown) => {
          this.creating.delete(name);
          throw err;
        });
    }
    const depth = JSON.stringify({ ...plan.depth, creating: plan.create });
    if (depth !== this.lastDepth) {
      this.log.info({ kind: 'SandboxPool', size: this.settings.size, ...plan.depth, created: plan.create }, 'Sandbox pool');
      this.lastDepth = depth;
    }
    await this.recordRuntimes(pods);
    // Members still starting are looked at again: one whose agent never answers changes nothing
    // the informers would report, and becomes broken only with time (podBroken).
    return plan.depth.starting > 0 ? { requeueMs: 30_000 } : {};
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
    const runtimes = await agentRuntimes(member, this.settings.pod.agentKey, 10_000);
    await this.applier.apply<k8s.V1ConfigMap>(namespace, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: runtimesConfigMap, namespace, labels: { [labels.managedBy]: managers.controllers } },
      data: { image, [runtimesKey]: JSON.stringify(runtimes) },
    });
    this.runtimesFor = image;
    this.log.info({ kind: 'SandboxPool', image, runtimes: runtimes.length }, 'Recorded the sandbox runtimes');
  }
}
