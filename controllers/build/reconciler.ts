// The Build reconciler on the frame: plans with desired.ts from the informers' caches and applies
// the plan: the namespace's build policy (once per process, or when it is missing), the app's cache
// claim, the Job; a canceled Build's Job is deleted (its pods with it).
import type * as k8s from '@kubernetes/client-node';
import { managers } from '../../lib/contract.js';
import { ignoreStatus, serverSideApply } from '../../lib/kube/client.js';
import type { EventRecorder } from '../../lib/kube/events.js';
import type { Logger } from '../../lib/logger.js';
import { apiVersion, type App, type Build } from '../../lib/resources/index.js';
import type { Outcome, Reconciler } from '../frame/controller.js';
import { plan, type BuildObserved, type BuildSettings, type BuildStatusFields } from './desired.js';

export interface BuildCache {
  observe(b: Build): BuildObserved & { cacheOwner: App | undefined };
}

export class BuildReconciler implements Reconciler<Build, BuildStatusFields> {
  /** Namespaces whose build policy this process applied (the policy is the same for every build). */
  private readonly policies = new Set<string>();

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly batch: k8s.BatchV1Api,
    private readonly networking: k8s.NetworkingV1Api,
    private readonly cache: BuildCache,
    private readonly settings: BuildSettings,
    private readonly log: Logger,
    private readonly events?: EventRecorder,
  ) {}

  /** A policy deleted by hand is applied again on the next build's reconcile. */
  forgetPolicy(namespace: string): void {
    this.policies.delete(namespace);
  }

  async reconcile(b: Build, now: Date): Promise<Outcome<BuildStatusFields>> {
    const { namespace, name } = b.metadata as { namespace: string; name: string };
    const observed = this.cache.observe(b);
    const p = plan(b, observed, this.settings, now);
    if (p.createJob && (!observed.policy || !this.policies.has(namespace))) {
      await this.networking.patchNamespacedNetworkPolicy(
        { namespace, name: p.policy.metadata!.name!, fieldManager: managers.controllers, force: true, body: p.policy },
        serverSideApply,
      );
      this.policies.add(namespace);
    }
    if (p.cacheClaim) {
      // Owned by the app whose cache it is: it goes with the app (its previews build with it meanwhile).
      const owner = observed.cacheOwner;
      const claim = owner
        ? {
            ...p.cacheClaim,
            metadata: {
              ...p.cacheClaim.metadata,
              ownerReferences: [{ apiVersion, kind: 'App', name: owner.metadata.name!, uid: owner.metadata.uid! }],
            },
          }
        : p.cacheClaim;
      await this.core.createNamespacedPersistentVolumeClaim({ namespace, body: claim }).catch(ignoreStatus(409));
    }
    if (p.createJob) {
      await this.batch.createNamespacedJob({ namespace, body: p.createJob }).catch(ignoreStatus(409));
      this.log.info(
        { kind: 'Build', namespace, name, app: b.spec.app, source: b.spec.source.artifact ? 'artifact' : 'git' },
        'Started the build Job',
      );
    }
    if (p.deleteJob) {
      await this.batch
        .deleteNamespacedJob({ namespace, name: p.deleteJob.metadata!.name!, propagationPolicy: 'Background' })
        .catch(ignoreStatus(404));
    }
    if (b.status?.phase !== p.status.phase) {
      this.log.info(
        { kind: 'Build', namespace, name, app: b.spec.app, phase: p.status.phase, reason: p.status.reason, why: p.status.message },
        'Build phase',
      );
      const m = b.metadata;
      const ref = { apiVersion, kind: 'Build', name: m.name!, namespace: m.namespace!, uid: m.uid! };
      if (p.status.phase === 'Failed') this.events?.record(ref, 'Warning', p.status.reason ?? 'Failed', p.status.message ?? 'failed');
      else this.events?.record(ref, 'Normal', p.status.reason ?? p.status.phase!, p.status.message ?? p.status.phase!);
    }
    return { status: p.status, ready: p.ready, ...(p.requeueMs !== undefined ? { requeueMs: p.requeueMs } : {}) };
  }
}
