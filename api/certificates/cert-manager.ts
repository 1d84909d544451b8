// Certificates by cert-manager (`SVC_CERTIFICATES_ISSUER=cert-manager`, docs/decisions/0028-https.md):
// a worker of the API that, every pass, observes the Domains (the informer), their claims
// (PostgreSQL), the cert-manager Certificates it wrote (an informer of the certificates namespace)
// and the Secrets cert-manager made from them, decides (lib/certificates/cert-manager-plan.ts), and
// applies it: a Certificate server-side applied per verified domain, one deleted with its Secret when
// its name is no longer its namespace's, and the Certificate's conditions mirrored into the Domain's
// `status.certificate` (a merge patch of that field only) with an event on each transition.
// cert-manager orders, validates, retries and renews; ingress-auth answers its HTTP-01 Challenges and
// serves its Secrets. A change of a Certificate (its status, mostly) starts a pass soon. Every API
// replica runs it, but only the one leading the deploy recorder's Lease acts on a pass: two replicas
// would tell each transition twice.
import * as k8s from '@kubernetes/client-node';
import type { Knex } from 'knex';
import type { ComponentConfig } from '../../lib/config.js';
import { labels, managers } from '../../lib/contract.js';
import { certManager, certificateAnnotations, certificateSecretName } from '../../lib/certificates/contract.js';
import {
  certManagerSelector,
  planCertManager,
  type CertManagerCertificate,
  type CertManagerStep,
  type IssuerRef,
  type ObservedCertManagerSecret,
} from '../../lib/certificates/cert-manager-plan.js';
import { certificatePatch, type CertificateStatus, type ObservedDomain } from '../../lib/certificates/plan.js';
import { ignoreStatus, serverSideApply } from '../../lib/kube/client.js';
import { keepWatching } from '../../lib/kube/keep-watching.js';
import type { Logger } from '../../lib/logger.js';
import { Passes } from '../../lib/passes.js';
import type { ApiDeps } from '../deps.js';
import type { DomainRepository } from '../repositories/domains.js';
import { claimsFromDb, observedDomain, type ClaimsView } from './issuer.js';

type CertificatesConfig = ComponentConfig<'api'>['certificates'];

type SecretDeleter = Pick<k8s.CoreV1Api, 'readNamespacedSecret' | 'deleteNamespacedSecret'>;
type Core = SecretDeleter & Pick<k8s.CoreV1Api, 'listNamespacedSecret'>;
type Custom = Pick<k8s.CustomObjectsApi, 'listNamespacedCustomObject' | 'patchNamespacedCustomObject' | 'deleteNamespacedCustomObject'>;

/** Where the worker reads its Certificates from: an informer's cache (tests give a list). */
export interface CertificateCache {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Whether a first list has arrived: until then a pass decides nothing (an empty cache is not "none"). */
  synced(): boolean;
  list(): readonly CertManagerCertificate[];
  onChange(fn: () => void): void;
}

export interface CertManagerIssuerDeps {
  /** config.certificates, with `issuer: cert-manager`. */
  config: CertificatesConfig;
  kc: k8s.KubeConfig;
  core: Core;
  /** Default: from kc. */
  custom?: Custom;
  /** Default: an informer of the namespace's Certificates through kc. */
  certificates?: CertificateCache;
  domains: Pick<DomainRepository, 'list' | 'writeStatus'>;
  /** For the claims, unless they are given. */
  db?: Knex;
  claims?: ClaimsView;
  events: Pick<ApiDeps['events'], 'record'>;
  log: Logger;
  /** Whether this replica leads (api/deps.ts: the deploy recorder's Lease); a pass of one that does not does nothing. */
  isLeader: () => boolean;
  /** Default: the wall clock (whether a served certificate has expired). */
  clock?: () => Date;
  /** Between two passes (default 15 s). */
  intervalMs?: number;
}

/** What one pass did, by domain (tests wait on it). */
export interface CertManagerPassResult {
  /** Certificates written. */
  applied: string[];
  /** Certificates (or Secrets left alone) deleted. */
  deleted: string[];
  /** Domains whose status.certificate was written, with the phase written. */
  statuses: Array<{ domain: string; phase: CertificateStatus['phase'] }>;
  /** False when the Certificates were not listed yet: nothing was decided. */
  synced: boolean;
  /** False on a replica that does not lead: nothing was decided. */
  leading: boolean;
}

const { group, version, plural } = certManager.certificates;

/** An informer of the API's Certificates in one namespace, restarted with back-off (missing CRDs included). */
export function certificateInformer(kc: k8s.KubeConfig, namespace: string, log: Logger): CertificateCache {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  let listed = false;
  const informer = new k8s.ListWatch<CertManagerCertificate & k8s.KubernetesObject>(
    `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
    new k8s.Watch(kc),
    async () => {
      const list = (await custom.listNamespacedCustomObject({
        group,
        version,
        namespace,
        plural,
        labelSelector: certManagerSelector,
      })) as k8s.KubernetesListObject<CertManagerCertificate & k8s.KubernetesObject>;
      listed = true;
      return list;
    },
    false,
    certManagerSelector,
  );
  keepWatching(informer, 'cert-manager certificates', log);
  return {
    start: () => informer.start(),
    stop: () => informer.stop(),
    synced: () => listed,
    list: () => informer.list(namespace),
    onChange: (fn) => {
      for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, () => fn());
    },
  };
}

export class CertManagerIssuer {
  private readonly passes: Passes<CertManagerPassResult>;
  private readonly claims: ClaimsView;
  private readonly custom: Custom;
  private readonly certificates: CertificateCache;
  private readonly issuerRef: IssuerRef;
  private readonly namespace: string;

  /** Whether the configuration asks for this issuer. */
  static enabled(config: CertificatesConfig): boolean {
    return config.issuer === 'cert-manager' && config.certManager !== undefined;
  }

  constructor(private readonly d: CertManagerIssuerDeps) {
    if (!d.config.certManager) throw new Error('CertManagerIssuer needs config.certificates.certManager (SVC_CERT_MANAGER_ISSUER)');
    if (!d.claims && !d.db) throw new Error('CertManagerIssuer needs db or claims');
    this.issuerRef = d.config.certManager.issuerRef;
    this.namespace = d.config.namespace;
    this.claims = d.claims ?? claimsFromDb(d.db!);
    this.custom = d.custom ?? d.kc.makeApiClient(k8s.CustomObjectsApi);
    this.certificates = d.certificates ?? certificateInformer(d.kc, this.namespace, d.log);
    this.passes = new Passes({
      run: () => this.runPass(),
      intervalMs: d.intervalMs ?? 15_000,
      onError: (err) => d.log.warn({ err }, 'A pass of the cert-manager issuer failed; the next one tries again'),
    });
    this.certificates.onChange(() => this.nudge());
  }

  async start(): Promise<void> {
    await this.certificates.start();
    this.passes.start();
    this.nudge();
  }

  /** A pass soon (coalesced): a Domain turned Verified, or a Certificate changed. */
  nudge(): void {
    this.passes.nudge();
  }

  async stop(): Promise<void> {
    await this.passes.stop();
    await this.certificates.stop();
  }

  /** One pass now (after the one running, if any). */
  pass(): Promise<CertManagerPassResult> {
    return this.passes.pass();
  }

  /**
   * The certificate of `domain` issued for `namespace`, deleted now (the domain was removed): its
   * Certificate first, so that cert-manager does not write its Secret again, then the Secret. Another
   * namespace's of the same name are left alone. On any replica, leading or not: it is a request's.
   */
  async remove(domain: string, namespace: string): Promise<void> {
    const name = certificateSecretName(domain);
    const c = this.certificates.list().find((x) => x.metadata.name === name);
    if (c?.metadata.annotations?.[certificateAnnotations.namespace] === namespace)
      await this.deleteCertificate(name, { uid: c.metadata.uid, resourceVersion: c.metadata.resourceVersion });
    await deleteCertificateSecret(this.d.core, this.namespace, name, namespace);
  }

  private async observeSecrets(): Promise<ObservedCertManagerSecret[]> {
    const list = await this.d.core.listNamespacedSecret({ namespace: this.namespace, labelSelector: certManagerSelector });
    return list.items.flatMap((s): ObservedCertManagerSecret[] => {
      const domain = s.metadata?.annotations?.[certificateAnnotations.domain];
      if (!domain || !s.metadata?.name) return [];
      return [{ name: s.metadata.name, domain, namespace: s.metadata.annotations?.[certificateAnnotations.namespace] }];
    });
  }

  private async runPass(): Promise<CertManagerPassResult> {
    const result: CertManagerPassResult = { applied: [], deleted: [], statuses: [], synced: false, leading: this.d.isLeader() };
    if (!result.leading) return result;
    result.synced = this.certificates.synced();
    if (!result.synced) return result;
    const certificates = this.certificates.list();
    const secrets = await this.observeSecrets();
    const domains = this.d.domains.list('').map(observedDomain);
    const names = [
      ...domains.map((x) => x.name),
      ...secrets.map((s) => s.domain),
      ...certificates.flatMap((c) => c.metadata.annotations?.[certificateAnnotations.domain] ?? []),
    ];
    const claims = await this.claims([...new Set(names)]);
    const steps = planCertManager({
      domains,
      claims,
      certificates,
      secrets,
      namespace: this.namespace,
      issuerRef: this.issuerRef,
      managedBy: { [labels.managedBy]: managers.api },
      now: (this.d.clock ?? (() => new Date()))(),
    });
    for (const step of steps) {
      await this.apply(step, result).catch((err: unknown) =>
        this.d.log.warn(
          { err, step: step.kind, domain: 'domain' in step ? step.domain : undefined },
          'A cert-manager step failed; the next pass tries again',
        ),
      );
    }
    return result;
  }

  private async apply(step: CertManagerStep, result: CertManagerPassResult): Promise<void> {
    switch (step.kind) {
      case 'apply':
        await this.custom.patchNamespacedCustomObject(
          {
            group,
            version,
            namespace: this.namespace,
            plural,
            name: step.certificate.metadata.name!,
            body: step.certificate,
            fieldManager: managers.api,
            force: true,
          },
          serverSideApply,
        );
        result.applied.push(step.domain.name);
        this.d.log.info({ domain: step.domain.name, issuer: this.issuerRef }, 'Wrote the cert-manager Certificate of a verified domain');
        return;
      case 'delete':
        await this.deleteCertificate(step.name, step.preconditions);
        if (step.namespace) await deleteCertificateSecret(this.d.core, this.namespace, step.name, step.namespace);
        result.deleted.push(step.domain);
        this.d.log.info(
          { domain: step.domain, namespace: step.namespace },
          'Deleted the cert-manager Certificate of a name no longer verified',
        );
        return;
      case 'deleteSecret':
        if (step.namespace) await deleteCertificateSecret(this.d.core, this.namespace, step.name, step.namespace);
        result.deleted.push(step.domain);
        return;
      case 'status': {
        await this.writeStatus(step.domain, step.status);
        result.statuses.push({ domain: step.domain.name, phase: step.status.phase });
        if (step.event) await this.d.events.record(step.accountId, step.event.type, step.domain.app, step.event.data);
        return;
      }
      case 'clear':
        await this.d.domains.writeStatus(step.domain.namespace, step.domain.name, { certificate: null });
        return;
    }
  }

  /**
   * The Certificate as observed (`preconditions`): one rewritten since (its name moved, its domain
   * verified again) is not deleted on what was decided before, and the next pass decides anew.
   */
  private async deleteCertificate(name: string, preconditions: { uid?: string; resourceVersion?: string }): Promise<void> {
    await this.custom
      .deleteNamespacedCustomObject({ group, version, namespace: this.namespace, plural, name, body: { preconditions } })
      .catch(ignoreStatus(404, 409));
  }

  /** Writes `status.certificate` whole (a merge patch of that field only: the verifier writes the rest of the status). */
  private async writeStatus(domain: ObservedDomain, c: CertificateStatus): Promise<void> {
    await this.d.domains.writeStatus(domain.namespace, domain.name, { certificate: certificatePatch(c) });
    domain.certificate = c;
  }
}

/**
 * Deletes the certificate Secret `name` of the certificates namespace if it was issued for
 * `domainNamespace`'s Domain (by the ACME issuer or cert-manager alike): the name may have moved to
 * another account since, whose certificate has the same Secret name. The preconditions keep a Secret
 * written for another namespace between the read and the delete.
 */
export async function deleteCertificateSecret(
  core: SecretDeleter,
  namespace: string,
  name: string,
  domainNamespace: string,
): Promise<void> {
  const secret = await core.readNamespacedSecret({ namespace, name }).catch(ignoreStatus(404));
  if (!secret || secret.metadata?.annotations?.[certificateAnnotations.namespace] !== domainNamespace) return;
  await core
    .deleteNamespacedSecret({
      namespace,
      name,
      body: { preconditions: { resourceVersion: secret.metadata.resourceVersion, uid: secret.metadata.uid } },
    })
    .catch(ignoreStatus(404, 409));
}
