// What the API does in one pass when cert-manager issues the certificates
// (`SVC_CERTIFICATES_ISSUER=cert-manager`, docs/decisions/0028-https.md), decided from what it
// observed: the Domains, their claims (PostgreSQL), the cert-manager Certificates it wrote and the
// Secrets cert-manager made for them. Pure: api/certificates/cert-manager.ts observes and applies.
//
// - A verified name (the same rule as the ACME issuer's, lib/certificates/plan.ts isVerified) gets a
//   Certificate in the certificates namespace whose `secretTemplate` labels and annotates its Secret
//   the way ingress-auth serves certificates (lib/certificates/contract.ts): cert-manager's Secret is
//   then served by SNI exactly as an ACME one, for that Domain's namespace only.
// - Ordering, validation, retries and renewal are cert-manager's: the plan only mirrors the
//   Certificate's conditions into the Domain's `status.certificate`, with an event on each transition.
//   A certificate the status reports stays in it while its Secret is still served: cert-manager
//   issuing anew (a Certificate rewritten, another issuer) or failing to does not take it away.
// - A Certificate (and its Secret) is deleted only on positive evidence that its name is no longer
//   its namespace's: the claim is gone or unverified, held by another namespace, or its Domain is
//   cached in another phase. A cache that is empty or behind never deletes anything.
import { certManager, certificateAnnotations, certificateLabel, certificateSecretName, certificateSources } from './contract.js';
import {
  certificateStatusKeys,
  isVerified,
  showsStaleCertificate,
  type CertificateStatus,
  type ObservedClaim,
  type ObservedDomain,
} from './plan.js';

/** The issuer cert-manager Certificates name (config `certificates.certManager.issuerRef`). */
export interface IssuerRef {
  kind: string;
  name: string;
  group: string;
}

export interface CertManagerCondition {
  type: string;
  /** True, False or Unknown. */
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** A `certificates.cert-manager.io/v1` Certificate, as much of it as the platform writes and reads. */
export interface CertManagerCertificate {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    generation?: number;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: string | Date;
  };
  spec?: {
    secretName?: string;
    dnsNames?: string[];
    issuerRef?: Partial<IssuerRef>;
    privateKey?: { algorithm?: string; size?: number; rotationPolicy?: string };
    secretTemplate?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  };
  status?: {
    conditions?: CertManagerCondition[];
    notBefore?: string;
    notAfter?: string;
    renewalTime?: string;
    lastFailureTime?: string;
    failedIssuanceAttempts?: number;
  };
}

/** A certificate Secret cert-manager made from a Certificate of ours (labelled `certificateLabel: cert-manager`). */
export interface ObservedCertManagerSecret {
  name: string;
  /** Its domain annotation (from the Certificate's secretTemplate). */
  domain: string;
  /** Its Domain's namespace annotation. */
  namespace: string | undefined;
}

export type CertManagerStep =
  /** Write (server-side apply) the Certificate of a verified Domain: none yet, or not as it should be. */
  | { kind: 'apply'; domain: ObservedDomain; certificate: CertManagerCertificate }
  /**
   * Delete a Certificate whose name is no longer its namespace's, and its Secret if that Secret was
   * made for the same namespace (another namespace's Secret of the name is that one's business).
   * `preconditions` are the observed Certificate's: one rewritten since is decided on again.
   */
  | {
      kind: 'delete';
      name: string;
      domain: string;
      namespace: string | undefined;
      preconditions: { uid: string | undefined; resourceVersion: string | undefined };
    }
  /** A Secret left without its Certificate (a delete raced cert-manager's write) whose name is no longer its namespace's. */
  | { kind: 'deleteSecret'; name: string; domain: string; namespace: string | undefined }
  /** Write the Domain's `status.certificate` (what cert-manager reports), and record an event of a transition. */
  | {
      kind: 'status';
      domain: ObservedDomain;
      accountId: string;
      status: CertificateStatus;
      event?: { type: 'certificate.issued' | 'certificate.renewed' | 'certificate.failed'; data: Record<string, string> };
    }
  /** A Domain no longer verified that still shows a certificate. */
  | { kind: 'clear'; domain: ObservedDomain };

/** Selects the API's Certificates, and (through their secretTemplate) the Secrets cert-manager made from them. */
export const certManagerSelector = `${certificateLabel}=${certificateSources.certManager}`;

/** The Certificate a verified Domain gets: what the API server-side applies (its whole intent). */
export function desiredCertificate(
  domain: Pick<ObservedDomain, 'name' | 'namespace'>,
  o: { namespace: string; issuerRef: IssuerRef; managedBy: Record<string, string> },
): CertManagerCertificate {
  const name = certificateSecretName(domain.name);
  const labels = { [certificateLabel]: certificateSources.certManager };
  const annotations = { [certificateAnnotations.domain]: domain.name, [certificateAnnotations.namespace]: domain.namespace };
  return {
    apiVersion: `${certManager.certificates.group}/${certManager.certificates.version}`,
    kind: certManager.certificates.kind,
    metadata: { name, namespace: o.namespace, labels: { ...labels, ...o.managedBy }, annotations },
    spec: {
      secretName: name,
      dnsNames: [domain.name],
      issuerRef: { kind: o.issuerRef.kind, name: o.issuerRef.name, group: o.issuerRef.group },
      // The key is never reused across renewals (cert-manager's default since 1.18, said anyway: an
      // older cert-manager would keep one key for the name's whole life).
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      secretTemplate: { labels, annotations },
    },
  };
}

/** Whether an observed Certificate has what `desired` asks (what the API owns of it; the rest is cert-manager's). */
export function certificateMatches(observed: CertManagerCertificate, desired: CertManagerCertificate): boolean {
  const pick = (c: CertManagerCertificate) =>
    JSON.stringify([
      Object.entries(desired.metadata.labels ?? {}).map(([k]) => c.metadata.labels?.[k]),
      Object.entries(desired.metadata.annotations ?? {}).map(([k]) => c.metadata.annotations?.[k]),
      c.spec?.secretName,
      c.spec?.dnsNames,
      [c.spec?.issuerRef?.kind, c.spec?.issuerRef?.name, c.spec?.issuerRef?.group ?? 'cert-manager.io'],
      [c.spec?.privateKey?.algorithm, c.spec?.privateKey?.size, c.spec?.privateKey?.rotationPolicy],
      sorted(c.spec?.secretTemplate?.labels),
      sorted(c.spec?.secretTemplate?.annotations),
    ]);
  return pick(observed) === pick(desired);
}

const sorted = (m: Record<string, string> | undefined) => Object.entries(m ?? {}).sort(([a], [b]) => a.localeCompare(b));

const conditionOf = (c: CertManagerCertificate, type: string) => c.status?.conditions?.find((x) => x.type === type);

/** A time cert-manager wrote (RFC 3339, seconds), as the ACME issuer writes them (toISOString), so one status reads alike. */
const isoOf = (t: string | undefined) => {
  const ms = Date.parse(t ?? '');
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
};

/** What the plan knows of the certificate a Domain's status reports, to keep reporting it while it is served. */
export interface Serving {
  /** Whether the Certificate's Secret, made for this Domain's namespace, is there (ingress-auth serves it). */
  secret: boolean;
  now: Date;
}

/** The reasons of an Issued status that are no failure (any other one says a failed issuance). */
const issuedReasons: ReadonlySet<string> = new Set(['Issued', 'Renewed', 'Reissuing']);

/**
 * What a Certificate's conditions say, as a Domain's `status.certificate`: Issued once Ready; a failed
 * issuance (its Issuing condition False with a failure time) Failed, or still Issued with the failure
 * said while a certificate is served (a failed renewal or reissuance); Pending while cert-manager has
 * not issued (Issuing True, or Ready False without a failure: cert-manager says Ready False
 * DoesNotExist on every new Certificate before it issues). A certificate the previous status reports
 * whose Secret is still served and not expired (`serving`) stays reported meanwhile: Issued,
 * `Reissuing`, with its notAfter and Secret.
 */
export function certificateStatusOf(
  c: CertManagerCertificate | undefined,
  previous: CertificateStatus | undefined,
  issuer: IssuerRef,
  serving?: Serving,
): CertificateStatus {
  const prev = withoutNulls(previous);
  const kept =
    prev?.phase === 'Issued' && prev.notAfter !== undefined && serving?.secret === true && Date.parse(prev.notAfter) > serving.now.getTime()
      ? prev
      : undefined;
  const served = kept && { secretName: kept.secretName, notAfter: kept.notAfter, renewAfter: kept.renewAfter };
  const notYet = (s: CertificateStatus): CertificateStatus =>
    served
      ? {
          phase: 'Issued',
          reason: 'Reissuing',
          message: `the certificate served until ${served.notAfter} stays while cert-manager issues a new one: ${s.message}`,
          ...served,
        }
      : s;
  const secretName = c?.spec?.secretName;
  if (!c?.status?.conditions?.length)
    return notYet({
      phase: 'Pending',
      reason: 'Requested',
      message: `a certificate was requested from cert-manager (${issuer.kind} ${issuer.name}); it has not reported on it yet`,
    });
  const ready = conditionOf(c, 'Ready');
  const issuing = conditionOf(c, 'Issuing');
  const notAfter = isoOf(c.status.notAfter);
  const renewAfter = isoOf(c.status.renewalTime);
  const lastFailureAt = isoOf(c.status.lastFailureTime);
  const failed = issuing?.status === 'False' && issuing.reason !== 'Issued' && c.status.lastFailureTime !== undefined;
  if (failed) {
    const reason = issuing.reason ?? 'Failed';
    const message = issuing.message ?? 'cert-manager could not issue the certificate; it retries';
    if (ready?.status === 'True')
      return {
        phase: 'Issued',
        reason,
        message: `the renewal failed: ${message}`,
        secretName,
        notAfter,
        renewAfter,
        lastAttemptAt: lastFailureAt,
      };
    if (served)
      return {
        phase: 'Issued',
        reason,
        message: `a new certificate could not be issued: ${message}; the one served until ${served.notAfter} stays`,
        ...served,
        lastAttemptAt: lastFailureAt,
      };
    return { phase: 'Failed', reason, message, lastAttemptAt: lastFailureAt };
  }
  if (ready?.status === 'True') {
    const told = prev?.notAfter;
    const renewed = told !== undefined && notAfter !== undefined && told !== notAfter;
    // The reason already said of this very certificate (a restart, a write of another field).
    const said = told !== undefined && told === notAfter ? prev?.reason : undefined;
    return {
      phase: 'Issued',
      reason: renewed ? 'Renewed' : said === 'Renewed' ? said : 'Issued',
      message: `the certificate is served until ${notAfter ?? '(unknown)'}; cert-manager renews it after ${renewAfter ?? '(unknown)'}`,
      secretName,
      notAfter,
      renewAfter,
    };
  }
  if (issuing?.status === 'True')
    return notYet({
      phase: 'Pending',
      reason: 'Issuing',
      message: issuing.message ?? 'cert-manager is issuing the certificate',
      lastAttemptAt: isoOf(issuing.lastTransitionTime),
    });
  if (ready?.status === 'False')
    return notYet({
      phase: 'Pending',
      reason: ready.reason ?? 'NotReady',
      message: `cert-manager has not issued the certificate yet${ready.message ? `: ${ready.message}` : ''}`,
    });
  return notYet({ phase: 'Pending', reason: 'Requested', message: 'cert-manager has not said whether the certificate is ready' });
}

/** A status as read back from the cluster may hold nulls (a merge patch's removals): the same as absent. */
function withoutNulls(c: CertificateStatus | undefined): CertificateStatus | undefined {
  return c && Object.fromEntries(Object.entries(c).filter(([, v]) => v !== null && v !== undefined));
}

/** Whether two statuses say the same (absent and undefined alike). */
export function sameStatus(a: CertificateStatus | undefined, b: CertificateStatus | undefined): boolean {
  return certificateStatusKeys.every((k) => (a?.[k] ?? undefined) === (b?.[k] ?? undefined));
}

/** The event of a status change, if it is a transition worth telling: a certificate issued or renewed, a new failure. */
function eventOf(domain: ObservedDomain, next: CertificateStatus): Extract<CertManagerStep, { kind: 'status' }>['event'] | undefined {
  const prev = withoutNulls(domain.certificate);
  const base = { domain: domain.name, app: domain.app };
  const failure = next.phase === 'Failed' || (next.phase === 'Issued' && !issuedReasons.has(next.reason ?? ''));
  if (!failure) {
    // Once per certificate, told by its notAfter: whatever the status said in between (a failed
    // renewal, a reissuance, a restart), the certificate it already reported is not told again.
    if (next.phase !== 'Issued' || next.notAfter === undefined || next.notAfter === prev?.notAfter) return undefined;
    return {
      type: next.reason === 'Renewed' ? 'certificate.renewed' : 'certificate.issued',
      data: { ...base, not_after: next.notAfter },
    };
  }
  // The same failure already told (a restart, a write of another field): once per attempt.
  if (prev !== undefined && prev.phase === next.phase && prev.reason === next.reason && prev.lastAttemptAt === next.lastAttemptAt)
    return undefined;
  return { type: 'certificate.failed', data: { ...base, reason: next.reason ?? 'Failed', message: next.message ?? '' } };
}

export function planCertManager(o: {
  domains: readonly ObservedDomain[];
  claims: ReadonlyMap<string, ObservedClaim>;
  /** The Certificates labelled `certManagerSelector` in the certificates namespace. */
  certificates: readonly CertManagerCertificate[];
  /** The Secrets labelled the same (cert-manager's, from the secretTemplate). */
  secrets: readonly ObservedCertManagerSecret[];
  namespace: string;
  issuerRef: IssuerRef;
  managedBy: Record<string, string>;
  now: Date;
}): CertManagerStep[] {
  const steps: CertManagerStep[] = [];
  // Ours only: a Certificate named after its domain annotation (anything else was not written by the API).
  const certificateOf = new Map<string, CertManagerCertificate>();
  for (const c of o.certificates) {
    const domain = c.metadata.annotations?.[certificateAnnotations.domain];
    if (domain && c.metadata.name === certificateSecretName(domain)) certificateOf.set(domain, c);
  }
  const verified = new Map<string, ObservedDomain>();
  for (const d of o.domains) if (isVerified(d, o.claims.get(d.name)) && !verified.has(d.name)) verified.set(d.name, d);
  const deleteOf = (c: CertManagerCertificate, domain: string): CertManagerStep => ({
    kind: 'delete',
    name: c.metadata.name!,
    domain,
    namespace: c.metadata.annotations?.[certificateAnnotations.namespace],
    preconditions: { uid: c.metadata.uid, resourceVersion: c.metadata.resourceVersion },
  });

  for (const d of verified.values()) {
    const claim = o.claims.get(d.name)!;
    const desired = desiredCertificate(d, o);
    let c = certificateOf.get(d.name);
    if (c && c.metadata.annotations?.[certificateAnnotations.namespace] !== d.namespace) {
      // The name moved to this namespace (another account's claim released): the other namespace's
      // certificate is not this one's, so it goes and cert-manager issues anew.
      steps.push(deleteOf(c, d.name));
      c = undefined;
    }
    if (!c || c.metadata.deletionTimestamp !== undefined || !certificateMatches(c, desired))
      steps.push({ kind: 'apply', domain: d, certificate: desired });
    // A Certificate being rewritten still reports on the certificate its Secret holds, which is
    // served until cert-manager replaces it.
    const secret = o.secrets.some((s) => s.name === certificateSecretName(d.name) && s.domain === d.name && s.namespace === d.namespace);
    const status = certificateStatusOf(c, d.certificate, o.issuerRef, { secret, now: o.now });
    if (!sameStatus(status, d.certificate)) {
      const event = eventOf(d, status);
      steps.push({ kind: 'status', domain: d, accountId: claim.accountId, status, ...(event ? { event } : {}) });
    }
  }

  const noLongerTheirs = (domain: string, namespace: string | undefined) => {
    if (verified.get(domain)?.namespace === namespace) return false;
    const claim = o.claims.get(domain);
    if (!claim || !claim.verified || claim.namespace !== namespace) return true;
    return o.domains.some((d) => d.name === domain && d.namespace === claim.namespace && d.phase !== 'Verified');
  };
  for (const [domain, c] of certificateOf) {
    const namespace = c.metadata.annotations?.[certificateAnnotations.namespace];
    if (verified.has(domain)) continue; // Kept, or replaced above.
    if (noLongerTheirs(domain, namespace)) steps.push(deleteOf(c, domain));
  }
  for (const s of o.secrets) {
    if (s.name !== certificateSecretName(s.domain) || certificateOf.has(s.domain)) continue;
    if (noLongerTheirs(s.domain, s.namespace)) steps.push({ kind: 'deleteSecret', name: s.name, domain: s.domain, namespace: s.namespace });
  }

  for (const d of o.domains) if (showsStaleCertificate(d, o.claims.get(d.name))) steps.push({ kind: 'clear', domain: d });
  return steps;
}
