// The Build reconciler on the frame: plans with desired.ts from the informers' caches and applies
// the plan: the namespace's build policy (once per process, or when it is missing), the app's cache
// claim, the Job; a canceled Build's Job is deleted (its pods with it).
import type * as k8s from '@kubernetes/client-node';
import { ignoreStatus } from '../../lib/kube/client.js';
import type { EventRecorder } from '../../lib/kube/events.js';
import type { Logger } from '../../lib/logger.js';
import { apiVersion, type App, type Build } from '../../lib/resources/index.js';
import { Applier } from '../frame/apply.js';
import type { Outcome, Reconciler } from '../frame/controller.js';
import { KindEvents } from '../frame/events.js';
import { plan, type BuildObserved, type BuildSettings, type BuildStatusFields } from './desired.js';

export interface BuildCache {
  observe(b: Build): BuildObserved & { cacheOwner: App | undefined };
}

export class BuildReconciler implements Reconciler<Build, BuildStatusFields> {
  /**
   * What applies a namespace's build policy (the same for every build), remembering it per
   * namespace; a policy deleted by hand is forgotten by the frame and applied on the next build's reconcile.
   */
  readonly applier: Applier;
  private readonly events: KindEvents<Build>;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly batch: k8s.BatchV1Api,
    networking: k8s.NetworkingV1Api,
    private readonly cache: BuildCache,
    private readonly settings: BuildSettings,
    private readonly log: Logger,
    events?: EventRecorder,
  ) {
    this.events = new KindEvents(events, 'Build', apiVersion);
    this.applier = new Applier({ networking });
  }

  async reconcile(b: Build, now: Date): Promise<Outcome<BuildStatusFields>> {
    const { namespace, name } = b.metadata as { namespace: string; name: string };
    const observed = this.cache.observe(b);
    const p = plan(b, observed, this.settings, now);
    if (p.createJob) await this.applier.applyAll(namespace, namespace, [p.policy], !observed.policy);
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
      if (p.status.phase === 'Failed') this.events.record(b, 'Warning', p.status.reason ?? 'Failed', p.status.message ?? 'failed');
      else this.events.record(b, 'Normal', p.status.reason ?? p.status.phase!, p.status.message ?? p.status.phase!);
    }
    return { status: p.status, ready: p.ready, ...(p.requeueMs !== undefined ? { requeueMs: p.requeueMs } : {}) };
  }
}
