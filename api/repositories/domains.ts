// An account's custom domains as the API reads and writes them: the Domain custom resources (a
// cluster-wide informer; ingress-auth routes the verified ones), each named after its domain's hash
// and owned by its App, so they go with it (docs/decisions/0027-app-domains.md). The API is their
// only writer: its operations create and delete them, its verifier writes their status.
import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { annotations, apiVersion, group, labels, managers, pluralOf, version } from '../../lib/contract.js';
import { DomainError } from '../../lib/errors.js';
import { ignoreStatus, kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { isAtLeast, untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import type { Domain, DomainStatus } from '../../lib/resources/index.js';

const plural = pluralOf('Domain');

/** The Kubernetes name of a domain's resource: `d-` and 20 hex digits of its SHA-256 (a `*` is no object name). */
export const domainObjectName = (domain: string) => `d-${createHash('sha256').update(domain).digest('hex').slice(0, 20)}`;

/** A merge patch of a Domain's status: a field set to null is removed. */
export type StatusPatch = { [K in keyof DomainStatus]: DomainStatus[K] | null };

export type DomainRecordStatus = NonNullable<DomainStatus['records']>[number];

/** A Domain as the API's actions and presenters see it. */
export interface DomainRecord {
  readonly name: string;
  readonly namespace: string;
  readonly app: string;
  /** Added because the App's `spec.domains` names it (kubectl, GitOps), not through the API. */
  readonly declared: boolean;
  readonly objectName: string;
  readonly phase: NonNullable<DomainStatus['phase']>;
  readonly reason: string | undefined;
  readonly message: string | undefined;
  readonly records: readonly DomainRecordStatus[];
  readonly checkedAt: Date | undefined;
  readonly verifiedAt: Date | undefined;
  readonly nextCheckAt: Date | undefined;
  /** When its phase last changed (its Verified condition's transition), else its creation. */
  readonly phaseSince: Date;
  readonly createdAt: Date;
  readonly status: DomainStatus | undefined;
  readonly resourceVersion: string | undefined;
}

const dateOf = (s: string | undefined) => (s ? new Date(s) : undefined);

export function domainRecord(d: Domain): DomainRecord {
  const createdAt = new Date(d.metadata.creationTimestamp ?? Number.NaN);
  if (!d.metadata.name || !d.metadata.namespace || Number.isNaN(createdAt.getTime()))
    throw new DomainError('unavailable', `cannot read domain ${d.spec?.domain ?? '(unnamed)'}: the cluster answered it incomplete`);
  const since = d.status?.conditions?.find((c) => c.type === 'Verified')?.lastTransitionTime;
  return Object.freeze({
    name: d.spec.domain,
    namespace: d.metadata.namespace,
    app: d.spec.app,
    declared: d.metadata.annotations?.[annotations.declared] === 'app-spec',
    objectName: d.metadata.name,
    phase: d.status?.phase ?? 'Pending',
    reason: d.status?.reason,
    message: d.status?.message,
    records: d.status?.records ?? [],
    checkedAt: dateOf(d.status?.checkedAt),
    verifiedAt: dateOf(d.status?.verifiedAt),
    nextCheckAt: dateOf(d.status?.nextCheckAt),
    phaseSince: dateOf(since) ?? createdAt,
    createdAt,
    status: d.status,
    resourceVersion: d.metadata.resourceVersion,
  });
}

export class DomainRepository {
  private readonly informer: k8s.ListWatch<Domain>;
  private readonly custom: k8s.CustomObjectsApi;

  constructor(kc: k8s.KubeConfig, log: Logger) {
    ({ informer: this.informer, custom: this.custom } = customInformer<Domain>(kc, plural, log));
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** Calls `fn` with every Domain the cache adds or changes (the certificate issuer follows verification). */
  onChange(fn: (d: DomainRecord) => void): void {
    const call = (d: Domain) => {
      try {
        fn(domainRecord(d));
      } catch {
        // An incomplete object (domainRecord refuses it) is nobody's news.
      }
    };
    this.informer.on('add', call);
    this.informer.on('update', call);
  }

  /** The account's domains (of one app when given), by name. */
  list(namespace: string, app?: string): DomainRecord[] {
    return this.informer
      .list(namespace)
      .filter((d) => app === undefined || d.spec.app === app)
      .map(domainRecord)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Domain `domain` of the account, if it has it. */
  get(namespace: string, domain: string): DomainRecord | undefined {
    const d = this.informer.get(domainObjectName(domain), namespace);
    return d && d.spec.domain === domain ? domainRecord(d) : undefined;
  }

  /** A new Domain for app `app` (owned by it), or the one already there; waits until the cache has it. */
  async create(
    namespace: string,
    domain: string,
    app: { name: string; id: string },
    opts: { declared?: boolean } = {},
  ): Promise<DomainRecord> {
    const name = domainObjectName(domain);
    const ownerReferences = [{ apiVersion, kind: 'App', name: app.name, uid: app.id, controller: false, blockOwnerDeletion: true }];
    let created: Domain;
    try {
      created = await createCustomObject<Domain>(
        this.custom,
        'Domain',
        namespace,
        {
          name,
          labels: { [labels.app]: app.name, [labels.managedBy]: managers.api },
          ...(opts.declared ? { annotations: { [annotations.declared]: 'app-spec' } } : {}),
          ownerReferences,
        },
        { domain, app: app.name },
      );
    } catch (err) {
      if (kubeStatus(err) !== 409) throw err;
      created = (await this.custom.getNamespacedCustomObject({ group, version, namespace, plural, name })) as Domain;
    }
    await untilCached<Domain>(this.informer, namespace, name, (c) => c?.metadata.uid === created.metadata.uid);
    return domainRecord(created);
  }

  async delete(namespace: string, domain: string): Promise<void> {
    const name = domainObjectName(domain);
    await this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name }).catch(ignoreStatus(404));
    await untilCached<Domain>(this.informer, namespace, name, (c) => c === undefined);
  }

  /**
   * Writes the status the verifier decided (a merge patch of the fields given; null removes one) and
   * answers the Domain as written, once the cache holds it too: a check's answer and the reads after
   * it show what it found. Undefined: the Domain went meanwhile.
   */
  async writeStatus(namespace: string, domain: string, status: StatusPatch): Promise<DomainRecord | undefined> {
    const name = domainObjectName(domain);
    const written = (await this.custom
      .patchNamespacedCustomObjectStatus({ group, version, namespace, plural, name, body: { status } }, mergePatch)
      .catch(ignoreStatus(404))) as Domain | undefined;
    if (!written) return undefined;
    await untilCached<Domain>(this.informer, namespace, name, (c) =>
      isAtLeast(c?.metadata.resourceVersion, written.metadata.resourceVersion),
    );
    return domainRecord(written);
  }
}
