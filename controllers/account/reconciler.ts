// The account-namespace reconciler's thin half: labels the namespace for Pod Security Admission and
// applies its quota, limits and deny-all NetworkPolicy (server-side apply, forced: a hand edit is
// undone). Idempotent; an unchanged namespace costs no apiserver write.
import * as k8s from '@kubernetes/client-node';
import { mergePatch, serverSideApply } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import { accountObjects, missingLabels } from './desired.js';
import { managers } from '../../lib/contract.js';
import type { Outcome, Reconciler } from '../frame/controller.js';

export class AccountReconciler implements Reconciler<k8s.V1Namespace, never> {
  /** What was last applied per namespace; forget() makes the next reconcile apply again. */
  private readonly applied = new Map<string, string>();

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly networking: k8s.NetworkingV1Api,
    private readonly log: Logger,
  ) {}

  /** The namespace is gone. */
  forget(ns: k8s.V1Namespace): void {
    this.applied.delete(ns.metadata!.name!);
  }

  /** Something of the namespace's was deleted by hand: the next reconcile applies everything again. */
  forgetNamespace(namespace: string): void {
    this.applied.delete(namespace);
  }

  async reconcile(ns: k8s.V1Namespace): Promise<Outcome<never>> {
    const name = ns.metadata!.name!;
    if (ns.metadata?.deletionTimestamp || ns.status?.phase === 'Terminating') return {};
    const labels = missingLabels(ns);
    if (Object.keys(labels).length) {
      await this.core.patchNamespace({ name, body: { metadata: { labels } } }, mergePatch);
      this.log.info({ kind: 'Namespace', name, labels }, 'Labelled the account namespace for Pod Security Admission');
    }
    const objects = accountObjects(name);
    const shape = JSON.stringify(objects);
    if (this.applied.get(name) === shape) return {};
    const opts = { namespace: name, fieldManager: managers.controllers, force: true };
    // The LimitRange before the quota: once the quota counts limits, a pod without them is refused,
    // and the LimitRange is what gives them.
    await this.core.patchNamespacedLimitRange({ ...opts, name: objects.limits.metadata!.name!, body: objects.limits }, serverSideApply);
    await this.core.patchNamespacedResourceQuota({ ...opts, name: objects.quota.metadata!.name!, body: objects.quota }, serverSideApply);
    await this.networking.patchNamespacedNetworkPolicy({ ...opts, name: objects.denyAll.metadata!.name!, body: objects.denyAll }, serverSideApply);
    this.applied.set(name, shape);
    this.log.info({ kind: 'Namespace', name }, 'Applied the account namespace guardrails');
    return {};
  }
}
