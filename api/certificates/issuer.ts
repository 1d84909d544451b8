// The certificate issuer (docs/decisions/0028-https.md): a worker of the API that, every pass,
// observes the Domains (the informer), their claims (PostgreSQL) and the certificate Secrets of the
// certificates namespace, decides what to do (lib/certificates/plan.ts), and applies it:
// - an order of a verified name without a certificate, or due its renewal, within the budget kept in
//   PostgreSQL (lib/certificates/budget.ts: its pending row is the order's lease, so API replicas
//   never order one name twice), through ACME (lib/certificates/acme.ts); the certificate written as
//   a `kubernetes.io/tls` Secret (lib/certificates/contract.ts), `status.certificate` of its Domain
//   (a merge patch of that field only: the verifier writes the rest), and an event;
// - a Secret whose name is no longer verified deleted, and that Domain's status.certificate removed;
// - with `certificates.platformDns01`, the platform's own `*.<apps domain>` ordered by DNS-01 into
//   the platform Secret ingress-auth serves it from, renewed as a domain's is (no Domain: its state
//   is the Secret's annotations and the log).
// A pass that throws is logged; the next one tries again. Tests drive it with pass().
import type * as k8s from '@kubernetes/client-node';
import { X509Certificate } from 'node:crypto';
import type { Knex } from 'knex';
import type { ComponentConfig } from '../../lib/config.js';
import { labels, managers } from '../../lib/contract.js';
import { AcmeIssuer, CertificateError, type CertificateSource, type IssuedCertificate } from '../../lib/certificates/acme.js';
import { orderLeaseMs, retryAfterFailure, type OrderLimits } from '../../lib/certificates/budget.js';
import {
  certificateAnnotations,
  certificateLabel,
  certificateRenewAfterAnnotation,
  certificateSecretName,
  certificateSources,
  challengeLabel,
} from '../../lib/certificates/contract.js';
import { CertificateOrders, type OrderBook } from '../../lib/certificates/orders.js';
import {
  certificatePatch,
  planCertificates,
  type CertificateStatus,
  type CertificateStep,
  type ObservedClaim,
  type ObservedDomain,
  type ObservedSecret,
} from '../../lib/certificates/plan.js';
import { needsCertificate, renewAfterOf } from '../../lib/certificates/renewal.js';
import { platformDns01Name, txtLookupAt, type DnsProvider, type TxtLookup } from '../../lib/certificates/dns01.js';
import { Rfc2136Client } from '../../lib/dns/update.js';
import { ignoreStatus, serverSideApply } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import { Passes } from '../../lib/passes.js';
import type { ApiDeps } from '../deps.js';
import type { DomainRecord, DomainRepository } from '../repositories/domains.js';

type CertificatesConfig = ComponentConfig<'api'>['certificates'];

type Core = Pick<
  k8s.CoreV1Api,
  | 'listNamespacedSecret'
  | 'listNamespacedConfigMap'
  | 'patchNamespacedSecret'
  | 'deleteNamespacedSecret'
  | 'readNamespacedSecret'
  | 'createNamespacedSecret'
  | 'createNamespacedConfigMap'
  | 'deleteNamespacedConfigMap'
  | 'createNamespace'
>;

/** Reads the claims of names (app_domains): which namespace and account hold each, and whether it is verified. */
export type ClaimsView = (names: readonly string[]) => Promise<Map<string, ObservedClaim>>;

/** A Domain as both issuers observe it (the informer's record), with its DNS-01 delegation as last checked. */
export function observedDomain(r: DomainRecord): ObservedDomain {
  return {
    name: r.name,
    namespace: r.namespace,
    app: r.app,
    phase: r.phase,
    certificate: r.status?.certificate,
    delegatedTo: r.records.find((x) => x.purpose === 'certificate')?.observed,
  };
}

export function claimsFromDb(db: Knex): ClaimsView {
  return async (names) => {
    const out = new Map<string, ObservedClaim>();
    if (!names.length) return out;
    const rows = (await db('app_domains')
      .select('name', 'namespace', 'account_id', 'verified_at')
      .whereIn('name', [...names])) as Array<{
      name: string;
      namespace: string;
      account_id: string;
      verified_at: Date | null;
    }>;
    for (const r of rows) out.set(r.name, { namespace: r.namespace, accountId: r.account_id, verified: r.verified_at !== null });
    return out;
  };
}

export interface CertificateIssuerDeps {
  /** config.certificates. */
  config: CertificatesConfig;
  core: Core;
  domains: Pick<DomainRepository, 'list' | 'writeStatus'>;
  /** For the orders and the claims, unless they are given. */
  db?: Knex;
  orders?: OrderBook;
  claims?: ClaimsView;
  /** The ACME client (default: lib/certificates/acme.ts with config.acme). */
  acme?: CertificateSource;
  events: Pick<ApiDeps['events'], 'record'>;
  log: Logger;
  clock?: () => Date;
  /** The renewal jitter's random source. */
  random?: () => number;
  /** Between two passes (default 15 s). */
  intervalMs?: number;
  /** Orders in flight at once in one pass (default 3). */
  parallel?: number;
  /**
   * Whether this replica leads the recorder's Lease: only the leader writes what is not an order
   * (statuses said once, deletions, the sweep), so each is told once, not once per replica. Orders
   * are any replica's: PostgreSQL's row is their lease. Undefined: this one leads (tests).
   */
  isLeader?: () => boolean;
}

/** What one pass did, by domain (tests wait on it). */
export interface PassResult {
  issued: string[];
  renewed: string[];
  failed: Array<{ domain: string; reason: string; message: string }>;
  /** Refused by the budget (or the CA's rate limit) before any order: not ordered. */
  refused: Array<{ domain: string; reason: string; until: Date | undefined }>;
  /** Secrets deleted (their domains). */
  deleted: string[];
}

const toIso = (d: Date | undefined) => d?.toISOString();

/** The "account" the platform's own certificate is ordered for in the budget (no tenant account has this id). */
export const platformAccount = 'platform';

export class CertificateIssuer {
  private readonly passes: Passes<PassResult>;
  private readonly orders: OrderBook;
  private readonly claims: ClaimsView;
  private readonly source: CertificateSource;
  private readonly clock: () => Date;
  private readonly limits: OrderLimits;
  /** What the platform certificate's last refusal said, so a refusal that holds is logged once, not every pass. */
  private platformRefusal: string | undefined;

  /** Whether the configuration asks for this issuer: `acme`, with a directory. */
  static enabled(config: CertificatesConfig): boolean {
    return config.issuer === 'acme' && config.acme.directoryUrl !== undefined;
  }

  constructor(private readonly d: CertificateIssuerDeps) {
    const { config } = d;
    if (!d.orders && !d.db) throw new Error('CertificateIssuer needs db or orders');
    if (!d.claims && !d.db) throw new Error('CertificateIssuer needs db or claims');
    this.orders = d.orders ?? new CertificateOrders(d.db!);
    this.claims = d.claims ?? claimsFromDb(d.db!);
    this.clock = d.clock ?? (() => new Date());
    this.limits = config.acme.limits;
    this.passes = new Passes({
      run: () => this.runPass(),
      intervalMs: d.intervalMs ?? 15_000,
      onError: (err) => d.log.warn({ err }, 'A pass of the certificate issuer failed; the next one tries again'),
    });
    if (d.acme) this.source = d.acme;
    else {
      if (!config.acme.directoryUrl) throw new Error('CertificateIssuer needs config.acme.directoryUrl (SVC_ACME_DIRECTORY_URL)');
      this.source = new AcmeIssuer({
        core: d.core,
        log: d.log,
        settings: {
          namespace: config.namespace,
          directoryUrl: config.acme.directoryUrl,
          contact: config.acme.contact,
          eab: config.acme.eab,
          caFile: config.acme.caFile,
          accountSecret: config.acme.accountSecret,
          http01CheckUrl: config.acme.http01CheckUrl,
        },
        dns01: config.acme.dns01 && dns01Of(config.acme.dns01),
      });
    }
  }

  start(): void {
    this.passes.start();
  }

  /**
   * A pass soon (coalesced), rather than at the next tick: called when a Domain turns Verified, so
   * its certificate is ordered within moments of verification, not up to a tick later.
   */
  nudge(): void {
    this.passes.nudge();
  }

  async stop(): Promise<void> {
    await this.passes.stop();
  }

  /** One pass now (after the one running, if any): what it ordered, issued, refused and deleted. */
  pass(): Promise<PassResult> {
    return this.passes.pass();
  }

  /** The certificate Secrets of the namespace, read. */
  private async observeSecrets(): Promise<ObservedSecret[]> {
    const list = await this.d.core.listNamespacedSecret({
      namespace: this.d.config.namespace,
      labelSelector: `${certificateLabel}=${certificateSources.acme}`,
    });
    return list.items.flatMap((s): ObservedSecret[] => {
      const domain = s.metadata?.annotations?.[certificateAnnotations.domain];
      if (!domain || !s.metadata?.name) return [];
      return [
        { name: s.metadata.name, domain, namespace: s.metadata.annotations?.[certificateAnnotations.namespace], ...readCertificate(s) },
      ];
    });
  }

  private async runPass(): Promise<PassResult> {
    const result: PassResult = { issued: [], renewed: [], failed: [], refused: [], deleted: [] };
    const observedAt = this.clock();
    const secrets = await this.observeSecrets();
    const domains = this.d.domains.list('').map(observedDomain);
    const claims = await this.claims([...new Set([...domains.map((x) => x.name), ...secrets.map((s) => s.domain)])]);
    const steps = planCertificates({ domains, claims, secrets, now: observedAt, dns01Zone: this.d.config.acme.dns01?.zone });
    const orders = steps.filter((s): s is Extract<CertificateStep, { kind: 'order' }> => s.kind === 'order');
    const leading = this.d.isLeader?.() ?? true;
    if (leading)
      await this.sweepChallenges(observedAt).catch((err: unknown) =>
        this.d.log.warn({ err }, 'Sweeping abandoned HTTP-01 challenges failed; the next pass tries again'),
      );
    for (const step of steps) {
      if (step.kind === 'order' || !leading) continue;
      await this.apply(step, result).catch((err: unknown) =>
        this.d.log.warn(
          { err, step: step.kind, domain: 'domain' in step ? step.domain : undefined },
          'A certificate step failed; the next pass tries again',
        ),
      );
    }
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(this.d.parallel ?? 3, orders.length) }, async () => {
        while (next < orders.length && !this.passes.isStopped) {
          const step = orders[next++]!;
          await this.order(step, secrets, observedAt, result).catch((err: unknown) =>
            this.d.log.warn({ err, domain: step.domain.name }, 'A certificate order failed to be recorded; the next pass tries again'),
          );
        }
      }),
    );
    await this.platformPass(observedAt, result).catch((err: unknown) =>
      this.d.log.warn({ err }, "The platform certificate's order failed to be recorded; the next pass tries again"),
    );
    return result;
  }

  /** The platform's `*.<apps domain>` (config `certificates.platformDns01`): ordered into its Secret when missing or due. */
  private async platformPass(observedAt: Date, result: PassResult): Promise<void> {
    const { platformDns01, platformSecret, namespace, acme } = this.d.config;
    if (!platformDns01 || !platformSecret || !acme.dns01) return;
    const { domain } = platformDns01;
    const secret = await this.d.core.readNamespacedSecret({ namespace, name: platformSecret }).catch((err: unknown) => {
      ignoreStatus(404)(err);
      return undefined;
    });
    const held = secret ? readCertificate(secret) : undefined;
    const need = needsCertificate({ verified: true, secret: held?.notAfter !== undefined, renewAfter: held?.renewAfter, now: observedAt });
    if (!need.need) return;
    const begin = await this.orders.begin({ domain, accountId: platformAccount, limits: this.limits, now: this.clock(), observedAt });
    if (!begin.allowed) {
      if (begin.reason === 'OrderInFlight' || begin.reason === 'IssuedMeanwhile') return;
      result.refused.push({ domain, reason: begin.reason, until: begin.until });
      if (this.platformRefusal !== begin.message)
        this.d.log.warn({ domain, reason: begin.reason, retryAfter: begin.until }, `The platform certificate waits: ${begin.message}`);
      this.platformRefusal = begin.message;
      return;
    }
    this.platformRefusal = undefined;
    const dns01Name = platformDns01Name(domain.slice(2), acme.dns01.zone);
    let cert: IssuedCertificate;
    try {
      cert = await this.source.issue(domain, { dns01Name });
    } catch (err) {
      const e = await this.finishFailed(begin, err);
      if (e.outcome === 'refused') result.refused.push({ domain, reason: e.reason, until: e.retryAfter });
      else result.failed.push({ domain, reason: e.reason, message: e.message });
      // The one record a platform team publishes, said where they look when it fails.
      const publish = dns01Name.startsWith('_acme-challenge.') ? undefined : `CNAME _acme-challenge.${domain.slice(2)} → ${dns01Name}`;
      this.d.log.warn(
        { domain, reason: e.reason, message: e.message, retryAfter: e.retryAfter, ...(publish ? { publish } : {}) },
        'The platform certificate was not issued',
      );
      return;
    }
    const renewed = held !== undefined;
    const renewAfter = renewAfterOf(cert.notBefore, cert.notAfter, this.d.random);
    await this.keepIssued(begin.id, renewed, () =>
      this.writeSecret(
        platformSecret,
        { domain, source: certificateSources.platform },
        { chain: cert.certificate, key: cert.key, notAfter: cert.notAfter, renewAfter },
      ),
    );
    (renewed ? result.renewed : result.issued).push(domain);
    this.d.log.info(
      { domain, secret: platformSecret, notAfter: cert.notAfter, renewAfter },
      renewed ? 'Renewed the platform certificate' : 'Issued the platform certificate',
    );
  }

  /** An order that did not succeed: recorded with when the name may be ordered again (the CA's word, else a back-off). */
  private async finishFailed(
    begin: { id: string; failuresBefore: number },
    err: unknown,
  ): Promise<CertificateError & { retryAfter: Date }> {
    const now = this.clock();
    const e =
      err instanceof CertificateError
        ? err
        : new CertificateError('failed', 'OrderFailed', err instanceof Error ? err.message : String(err));
    const retryAfter =
      e.outcome === 'refused'
        ? (e.retryAfter ?? retryAfterFailure(begin.failuresBefore + 1, now))
        : retryAfterFailure(begin.failuresBefore + 1, now, e.retryAfter);
    await this.orders.finish(begin.id, { outcome: e.outcome, now, reason: e.reason, message: e.message, retryAfter });
    return Object.assign(e, { retryAfter });
  }

  /**
   * What the CA issued, kept: the Secret written before the order's row is finished, so another
   * replica's pass that finds the row finished also finds the Secret (no second order). A Secret
   * that cannot be written holds the name back for an hour rather than ordering again every pass.
   */
  private async keepIssued(orderId: string, renewed: boolean, write: () => Promise<void>): Promise<void> {
    const outcome = renewed ? 'renewed' : 'issued';
    try {
      await write();
    } catch (err) {
      const now = this.clock();
      const message = err instanceof Error ? err.message : String(err);
      await this.orders.finish(orderId, {
        outcome,
        now,
        reason: 'SecretNotWritten',
        message,
        retryAfter: new Date(now.getTime() + 3600_000),
      });
      throw err;
    }
    await this.orders.finish(orderId, { outcome, now: this.clock() });
  }

  /**
   * HTTP-01 ConfigMaps older than an order's lease: left by an API that died mid-order (a live order
   * deletes its own). Answered by ingress-auth until then, harmlessly; deleted so they do not pile up.
   */
  private async sweepChallenges(now: Date): Promise<void> {
    const namespace = this.d.config.namespace;
    const list = await this.d.core.listNamespacedConfigMap({ namespace, labelSelector: challengeLabel });
    for (const cm of list.items) {
      const made = cm.metadata?.creationTimestamp ? new Date(cm.metadata.creationTimestamp).getTime() : now.getTime();
      if (now.getTime() - made < orderLeaseMs || !cm.metadata?.name) continue;
      await this.d.core
        .deleteNamespacedConfigMap({ namespace, name: cm.metadata.name, body: { preconditions: { uid: cm.metadata.uid } } })
        .catch(ignoreStatus(404, 409));
      this.d.log.info({ configMap: cm.metadata.name }, 'Deleted an abandoned HTTP-01 challenge');
    }
  }

  private async apply(step: Exclude<CertificateStep, { kind: 'order' }>, result: PassResult): Promise<void> {
    switch (step.kind) {
      case 'unavailable':
        // A renewal that cannot be ordered leaves the certificate served, and its status says so.
        await this.writeStatus(
          step.domain,
          step.serving
            ? { ...step.domain.certificate, phase: 'Issued', reason: step.reason, message: `the renewal waits: ${step.message}` }
            : { phase: 'Failed', reason: step.reason, message: step.message },
        );
        await this.d.events.record(step.accountId, 'certificate.failed', step.domain.app, {
          domain: step.domain.name,
          app: step.domain.app,
          reason: step.reason,
          message: step.message,
        });
        result.failed.push({ domain: step.domain.name, reason: step.reason, message: step.message });
        return;
      case 'record': {
        const c = step.domain.certificate;
        const issued = c?.phase === 'Issued' && (c.reason === 'Issued' || c.reason === 'Renewed');
        await this.writeStatus(step.domain, {
          phase: 'Issued',
          reason: issued ? c.reason : 'Issued',
          message: `the certificate is served until ${toIso(step.secret.notAfter)}; renewed after ${toIso(step.secret.renewAfter)}`,
          secretName: step.secret.name,
          notAfter: toIso(step.secret.notAfter),
          renewAfter: toIso(step.secret.renewAfter),
          lastAttemptAt: c?.lastAttemptAt,
        });
        return;
      }
      case 'delete':
        await this.d.core.deleteNamespacedSecret({ namespace: this.d.config.namespace, name: step.secretName }).catch(ignoreStatus(404));
        this.d.log.info({ domain: step.domain, secret: step.secretName }, 'Deleted the certificate of a domain no longer verified');
        result.deleted.push(step.domain);
        return;
      case 'clear':
        await this.d.domains.writeStatus(step.domain.namespace, step.domain.name, { certificate: null });
        return;
    }
  }

  /** One order: the budget, the CA, the Secret, the status, the event. */
  private async order(
    step: Extract<CertificateStep, { kind: 'order' }>,
    secrets: readonly ObservedSecret[],
    observedAt: Date,
    result: PassResult,
  ): Promise<void> {
    const { domain, accountId } = step;
    const current = domain.certificate;
    const existing = secrets.find((s) => s.domain === domain.name && s.namespace === domain.namespace);
    const stillValid = existing?.notAfter !== undefined && existing.notAfter.getTime() > this.clock().getTime();
    const begin = await this.orders.begin({ domain: domain.name, accountId, limits: this.limits, now: this.clock(), observedAt });
    if (!begin.allowed) {
      if (begin.reason === 'OrderInFlight' || begin.reason === 'IssuedMeanwhile') return;
      result.refused.push({ domain: domain.name, reason: begin.reason, until: begin.until });
      const message = stillValid ? `the renewal waits: ${begin.message}` : begin.message;
      // Said already (the failure that set this retry_after, or this refusal in an earlier pass).
      if (current?.retryAfter === begin.until.toISOString()) return;
      await this.writeStatus(domain, {
        ...current,
        phase: stillValid ? 'Issued' : 'Failed',
        reason: begin.reason,
        message,
        retryAfter: begin.until.toISOString(),
      });
      if (current?.reason !== begin.reason)
        await this.d.events.record(accountId, 'certificate.failed', domain.app, {
          domain: domain.name,
          app: domain.app,
          reason: begin.reason,
          message,
          retry_after: begin.until.toISOString(),
        });
      return;
    }

    const startedAt = this.clock();
    if (!stillValid)
      await this.writeStatus(domain, {
        phase: 'Pending',
        reason: 'Ordering',
        message: `a certificate is being ordered from the CA`,
        lastAttemptAt: startedAt.toISOString(),
      });
    let cert: IssuedCertificate;
    try {
      cert = await this.source.issue(domain.name, step.dns01Name ? { dns01Name: step.dns01Name } : {});
    } catch (err) {
      const e = await this.finishFailed(begin, err);
      const { retryAfter } = e;
      const message = `${stillValid ? 'the renewal failed: ' : ''}${e.message}; the next order is not before ${retryAfter.toISOString()}`;
      await this.writeStatus(domain, {
        ...(stillValid ? current : {}),
        phase: stillValid ? 'Issued' : 'Failed',
        reason: e.reason,
        message,
        retryAfter: retryAfter.toISOString(),
        lastAttemptAt: startedAt.toISOString(),
      });
      await this.d.events.record(accountId, 'certificate.failed', domain.app, {
        domain: domain.name,
        app: domain.app,
        reason: e.reason,
        message: e.message,
        retry_after: retryAfter.toISOString(),
      });
      if (e.outcome === 'refused') result.refused.push({ domain: domain.name, reason: e.reason, until: retryAfter });
      else result.failed.push({ domain: domain.name, reason: e.reason, message: e.message });
      this.d.log.warn({ domain: domain.name, reason: e.reason, message: e.message, retryAfter }, 'A certificate order did not succeed');
      return;
    }

    // The CA issued it: counted against the budget whatever happens next. A failure to keep it
    // (the Secret not written) is the pass's to log, and the next pass orders again.
    const renewed = existing !== undefined;
    const renewAfter = renewAfterOf(cert.notBefore, cert.notAfter, this.d.random);
    const secretName = certificateSecretName(domain.name);
    await this.keepIssued(begin.id, renewed, () =>
      this.writeSecret(
        secretName,
        { domain: domain.name, namespace: domain.namespace, source: certificateSources.acme },
        { chain: cert.certificate, key: cert.key, notAfter: cert.notAfter, renewAfter },
      ),
    );
    await this.writeStatus(domain, {
      phase: 'Issued',
      reason: renewed ? 'Renewed' : 'Issued',
      message: `the certificate is served until ${cert.notAfter.toISOString()}; renewed after ${renewAfter.toISOString()}`,
      notAfter: cert.notAfter.toISOString(),
      renewAfter: renewAfter.toISOString(),
      secretName,
      lastAttemptAt: startedAt.toISOString(),
    });
    await this.d.events.record(accountId, renewed ? 'certificate.renewed' : 'certificate.issued', domain.app, {
      domain: domain.name,
      app: domain.app,
      not_after: cert.notAfter.toISOString(),
    });
    (renewed ? result.renewed : result.issued).push(domain.name);
    this.d.log.info(
      { domain: domain.name, notAfter: cert.notAfter, renewAfter },
      renewed ? 'Renewed a certificate' : 'Issued a certificate',
    );
  }

  /** A certificate Secret: labelled with how it was made, annotated with its name (and its Domain's namespace: a tenant's). */
  private async writeSecret(
    name: string,
    of: { domain: string; namespace?: string; source: (typeof certificateSources)['acme' | 'platform'] },
    { chain, key, notAfter, renewAfter }: { chain: string; key: string; notAfter: Date; renewAfter: Date },
  ): Promise<void> {
    const namespace = this.d.config.namespace;
    await this.d.core.patchNamespacedSecret(
      {
        namespace,
        name,
        fieldManager: managers.api,
        force: true,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name,
            namespace,
            labels: { [certificateLabel]: of.source, [labels.managedBy]: managers.api },
            annotations: {
              [certificateAnnotations.domain]: of.domain,
              ...(of.namespace ? { [certificateAnnotations.namespace]: of.namespace } : {}),
              [certificateAnnotations.notAfter]: notAfter.toISOString(),
              [certificateRenewAfterAnnotation]: renewAfter.toISOString(),
            },
          },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': Buffer.from(chain).toString('base64'), 'tls.key': Buffer.from(key).toString('base64') },
        },
      },
      serverSideApply,
    );
  }

  /** Writes `status.certificate` whole (a merge patch of that field only: the verifier writes the rest of the status). */
  private async writeStatus(domain: ObservedDomain, c: CertificateStatus): Promise<void> {
    await this.d.domains.writeStatus(domain.namespace, domain.name, { certificate: certificatePatch(c) });
    domain.certificate = c;
  }
}

/** DNS-01 over RFC 2136 to the platform's zone, and its server's answers. */
function dns01Of(c: NonNullable<CertificatesConfig['acme']['dns01']>): { provider: DnsProvider; lookup: TxtLookup } {
  const client = new Rfc2136Client({
    server: c.server,
    zone: c.zone,
    key: { name: c.key.name, algorithm: c.key.algorithm, secret: Buffer.from(c.key.secret, 'base64') },
  });
  return { provider: client, lookup: txtLookupAt(c.server) };
}

/** A certificate Secret's validity, from its first certificate, and its renewal time (its annotation, else a third of its lifetime left). */
export function readCertificate(s: k8s.V1Secret): Pick<ObservedSecret, 'notBefore' | 'notAfter' | 'renewAfter'> {
  const none = { notBefore: undefined, notAfter: undefined, renewAfter: undefined };
  const crt = s.data?.['tls.crt'];
  if (!crt || !s.data?.['tls.key']) return none;
  try {
    const leaf = new X509Certificate(Buffer.from(crt, 'base64'));
    const notBefore = new Date(leaf.validFrom);
    const notAfter = new Date(leaf.validTo);
    const annotated = Date.parse(s.metadata?.annotations?.[certificateRenewAfterAnnotation] ?? '');
    const renewAfter = Number.isFinite(annotated)
      ? new Date(Math.min(annotated, notAfter.getTime()))
      : renewAfterOf(notBefore, notAfter, () => 0);
    return { notBefore, notAfter, renewAfter };
  } catch {
    return none;
  }
}
