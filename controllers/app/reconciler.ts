// The App reconciler's thin half: reads the App, plans with desired.ts, applies the plan (Service by
// server-side apply, machine Pods created and deleted), writes status in one patch, and deletes an
// expired App. Safe to run twice or after a crash: every step is idempotent.
import * as k8s from '@kubernetes/client-node';
import { isAtLeast } from '../../lib/kube/until-cached.js';
import { kubeStatus, mergePatch, serverSideApply } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import type { EventRecorder } from '../../lib/kube/events.js';
import { apiVersion, group, version, type App } from '../../lib/resources/index.js';
import { appService, machinePolicy, managerName, plan, type AppSettings } from './desired.js';

const ignore = (...codes: number[]) => (err: unknown) => {
  if (!codes.includes(kubeStatus(err) ?? 0)) throw err;
};

/** The namespace is being deleted: its Apps go too, so there is nothing left to make. */
function namespaceTerminating(err: unknown): boolean {
  return kubeStatus(err) === 403 && /because it is being terminated/.test(String((err as { body?: unknown }).body ?? ''));
}

/** What the informers show of an App's children. */
export interface Observed {
  podsOf(namespace: string, app: string): k8s.V1Pod[];
  serviceOf(namespace: string, app: string): k8s.V1Service | undefined;
}

export class AppReconciler {
  /**
   * The Service last applied per App uid, and the resourceVersion the apply returned: re-applying
   * an unchanged one is a wasted apiserver write, but one deleted or edited by hand is applied again.
   */
  private readonly applied = new Map<string, { shape: string; resourceVersion: string | undefined }>();

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly custom: k8s.CustomObjectsApi,
    private readonly networking: k8s.NetworkingV1Api,
    private readonly observed: Observed,
    private readonly settings: AppSettings,
    private readonly log: Logger,
    private readonly events?: EventRecorder,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  private event(app: App, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const m = app.metadata;
    this.events?.record({ apiVersion, kind: 'App', name: m.name!, namespace: m.namespace!, uid: m.uid! }, type, reason, message);
  }

  /** The App is gone: drop what was remembered about it. */
  forget(uid: string): void {
    this.applied.delete(uid);
  }

  /** The App's Service was deleted (by hand, or with its App): the next reconcile applies it again. */
  serviceGone(appUid: string): void {
    if (this.applied.delete(appUid)) this.log.info({ kind: 'App', appUid }, 'The Service of an App was deleted; it is applied again');
  }

  /** Returns when to look again without a change, if ever. */
  async reconcile(app: App): Promise<{ requeueMs?: number }> {
    const namespace = app.metadata.namespace!;
    const name = app.metadata.name!;
    if (app.metadata.deletionTimestamp) return {};
    const p = plan(app, this.observed.podsOf(namespace, name), this.settings, this.clock());
    if (p.expired) {
      await this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural: 'apps', name }).catch(ignore(404));
      this.log.info({ kind: 'App', namespace, name, expiresAt: app.spec.expiresAt }, 'Deleted expired App');
      this.event(app, 'Normal', 'Expired', `expiry ${app.spec.expiresAt} passed; deleting the app`);
      return {};
    }
    try {
      const service = appService(app);
      const policy = machinePolicy(app, this.settings);
      const shape = JSON.stringify([service, policy]);
      const last = this.applied.get(app.metadata.uid!);
      const seen = this.observed.serviceOf(namespace, name)?.metadata?.resourceVersion;
      // Edited since our apply: the cache shows a later version than the apply returned (the cache
      // may also still be behind it, which is no reason to apply again). Deleted: serviceGone().
      const edited = seen !== undefined && last?.resourceVersion !== undefined && seen !== last.resourceVersion && isAtLeast(seen, last.resourceVersion);
      if (last?.shape !== shape || edited) {
        // The policy first: a machine is never reachable by more than it allows.
        if (policy) await this.networking.patchNamespacedNetworkPolicy({ name: policy.metadata!.name!, namespace, body: policy, fieldManager: managerName, force: true }, serverSideApply);
        const result = await this.core.patchNamespacedService({ name, namespace, body: service, fieldManager: managerName, force: true }, serverSideApply);
        this.applied.set(app.metadata.uid!, { shape, resourceVersion: result.metadata?.resourceVersion });
        if (edited && last?.shape === shape) this.log.info({ kind: 'App', namespace, name }, 'Restored the Service changed by hand');
      }
      for (const pod of p.create) {
        await this.core.createNamespacedPod({ namespace, body: pod }).catch(ignore(409));
        this.log.info({ kind: 'App', namespace, name, pod: pod.metadata!.name }, 'Created machine');
        this.event(app, 'Normal', 'MachineCreated', `machine ${pod.metadata!.labels?.['svc.dev/machine']}: created ${pod.metadata!.name}`);
      }
    } catch (err) {
      if (namespaceTerminating(err)) return {};
      throw err;
    }
    for (const pod of p.delete) {
      await this.core.deleteNamespacedPod({ namespace, name: pod.metadata!.name! }).catch(ignore(404));
      this.log.info({ kind: 'App', namespace, name, pod: pod.metadata!.name }, 'Deleted machine');
      this.event(app, 'Normal', 'MachineDeleted', `machine ${pod.metadata!.labels?.['svc.dev/machine']}: deleted ${pod.metadata!.name}`);
    }
    const progressing = (st: App['status']) => st?.conditions?.find((c) => c.type === 'Progressing');
    const failedNow = progressing(p.status);
    if (failedNow?.reason === 'RolloutFailed' && progressing(app.status)?.reason !== 'RolloutFailed') this.event(app, 'Warning', 'RolloutFailed', failedNow.message);
    if (p.status.currentDeploy && p.status.currentDeploy !== app.status?.currentDeploy) {
      this.event(app, 'Normal', 'DeployServed', `all ${p.status.ready} machines serve deploy ${p.status.currentDeploy}`);
    }
    if (JSON.stringify(p.status) !== JSON.stringify(app.status ?? {})) {
      await this.custom
        .patchNamespacedCustomObjectStatus({ group, version, namespace, plural: 'apps', name, body: { status: p.status } }, mergePatch)
        .catch(ignore(404));
    }
    return p.requeueMs !== undefined ? { requeueMs: p.requeueMs } : {};
  }
}
