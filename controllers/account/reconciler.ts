// The account-namespace reconciler's thin half: labels the namespace for Pod Security Admission and
// applies its quota, limits and deny-all NetworkPolicy (server-side apply, forced: a hand edit is
// undone), and keeps the account's registry pull Secret current (a new credential when it is missing,
// altered, or the namespace's hash was removed to rotate it). Idempotent; an unchanged namespace
// costs no apiserver write.
import * as k8s from '@kubernetes/client-node';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import { pullCredentialAnnotation, pullSecretName } from '../../lib/registry/names.js';
import { credentialHash, newPullPassword } from '../../lib/registry/pull-credential.js';
import { accountObjects, missingLabels, pullSecret, pullSecretCurrent } from './desired.js';
import { Applier } from '../frame/apply.js';
import type { Outcome, Reconciler } from '../frame/controller.js';

export class AccountReconciler implements Reconciler<k8s.V1Namespace, never> {
  /**
   * What applies the guardrails, remembering what was last applied per namespace; the frame
   * forgets a namespace (gone, or a guardrail deleted by hand) and the next reconcile applies again.
   */
  readonly applier: Applier;
  /**
   * Per namespace, the pull credential hash last seen current, and when: trusted for a while (a
   * resync every minute would otherwise read every account's Secret), then read again, so a Secret
   * deleted or edited by hand is made again within pullRecheckMs.
   */
  private readonly pullChecked = new Map<string, { hash: string; at: number }>();

  constructor(
    private readonly core: k8s.CoreV1Api,
    networking: k8s.NetworkingV1Api,
    private readonly log: Logger,
    /** The platform's registry (`host[:port]`) pull Secrets are for; undefined: none are made. */
    private readonly registry: string | undefined = undefined,
    private readonly clock: () => number = Date.now,
    private readonly pullRecheckMs = 10 * 60_000,
  ) {
    this.applier = new Applier({ core, networking });
    // A namespace forgotten (gone, or something of its deleted by hand): its pull Secret is read again too.
    this.applier.onForget((namespace) => this.pullChecked.delete(namespace));
  }

  async reconcile(ns: k8s.V1Namespace): Promise<Outcome<never>> {
    const name = ns.metadata!.name!;
    if (ns.metadata?.deletionTimestamp || ns.status?.phase === 'Terminating') return {};
    const labels = missingLabels(ns);
    // The namespace as this reconcile last wrote it: the pull credential's write is conditional on it.
    let current = ns;
    if (Object.keys(labels).length) {
      current = await this.core.patchNamespace({ name, body: { metadata: { labels } } }, mergePatch);
      this.log.info({ kind: 'Namespace', name, labels }, 'Labelled the account namespace for Pod Security Admission');
    }
    const objects = accountObjects(name);
    // The LimitRange before the quota: once the quota counts limits, a pod without them is refused,
    // and the LimitRange is what gives them.
    if (await this.applier.applyAll(name, name, [objects.limits, objects.quota, objects.denyAll]))
      this.log.info({ kind: 'Namespace', name }, 'Applied the account namespace guardrails');
    // After the guardrails: a failure here (the apiserver, RBAC) never leaves a namespace without them.
    if (this.registry) await this.ensurePullSecret(current, this.registry);
    return {};
  }

  /**
   * A new credential when the Secret does not hold the current one. The namespace's hash is written
   * first: in between, the old Secret's credential is refused (a pull then fails once and the
   * kubelet retries), never a credential the platform did not mean to accept.
   */
  private async ensurePullSecret(ns: k8s.V1Namespace, registry: string): Promise<void> {
    const name = ns.metadata!.name!;
    const want = ns.metadata?.annotations?.[pullCredentialAnnotation];
    const checked = this.pullChecked.get(name);
    if (want && checked?.hash === want && this.clock() - checked.at < this.pullRecheckMs) return;
    let secret: k8s.V1Secret | undefined;
    try {
      secret = await this.core.readNamespacedSecret({ namespace: name, name: pullSecretName });
    } catch (err) {
      if (kubeStatus(err) !== 404) throw err;
    }
    if (want && pullSecretCurrent(ns, secret, registry)) {
      this.pullChecked.set(name, { hash: want, at: this.clock() });
      return;
    }
    const password = newPullPassword();
    const hash = credentialHash(password);
    // Only over the namespace this decision was made on: a cache that does not show the hash written
    // a moment ago looks exactly like an operator removing it to rotate, and rotating again would
    // refuse the pulls under way. A newer namespace answers 409, and the next reconcile sees it.
    await this.core.patchNamespace(
      { name, body: { metadata: { resourceVersion: ns.metadata?.resourceVersion, annotations: { [pullCredentialAnnotation]: hash } } } },
      mergePatch,
    );
    // A Secret's type cannot change: one of another type (made by hand) goes first.
    if (secret && secret.type !== 'kubernetes.io/dockerconfigjson')
      await this.core.deleteNamespacedSecret({ namespace: name, name: pullSecretName });
    await this.applier.apply(name, pullSecret(name, registry, password));
    this.pullChecked.set(name, { hash, at: this.clock() });
    this.log.info(
      { kind: 'Secret', namespace: name, name: pullSecretName, rotated: secret !== undefined },
      secret ? "Rotated the account's registry pull credential" : "Made the account's registry pull credential",
    );
  }
}
