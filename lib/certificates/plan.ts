// What the certificate issuer does in one pass (docs/decisions/0028-https.md), decided from what it
// observed: the Domains (the API's informer), their claims (PostgreSQL: the account that holds each
// name), and the certificate Secrets. Pure: api/certificates/issuer.ts observes and applies.
//
// - A name is ordered only when its Domain says Verified *and* its claim in PostgreSQL is held by the
//   Domain's own namespace and verified: a Domain written by anyone else never gets a certificate.
// - A wildcard needs DNS-01 (lib/certificates/dns01.ts): without a DNS provider it is Failed
//   (DNS01Unavailable); with one it is ordered only once the Domain's last check saw its
//   `_acme-challenge` CNAME to this account's target (else Failed, Dns01DelegationMissing, saying
//   what to publish): an order the CA would fail costs the name its failed-validation budget.
// - A certificate Secret is deleted only on positive evidence that its name is no longer verified:
//   its claim is gone (removed, failed), or its Domain is cached in another phase. A cache that is
//   empty or behind never deletes anything. A Domain's status is cleared on the same evidence, never
//   for a Verified Domain whose claim this database does not hold.
import { certificateSecretName } from './contract.js';
import { acmeChallengeName, dns01Target } from './dns01.js';
import { needsCertificate } from './renewal.js';
import type { DomainStatus } from '../resources/index.js';

/** A Domain's `status.certificate`, as the issuer writes it (its schema: crds/domains.svc.dev.yaml). */
export type CertificateStatus = NonNullable<DomainStatus['certificate']>;
export type CertificatePhase = NonNullable<CertificateStatus['phase']>;

export interface ObservedDomain {
  /** The domain (`shop.example`, `*.shop.example`). */
  name: string;
  namespace: string;
  app: string;
  phase: string;
  certificate: CertificateStatus | undefined;
  /** What the last check saw `_acme-challenge.<base>` alias (a wildcard's DNS-01 delegation); undefined: not checked. */
  delegatedTo?: readonly string[];
}

/** A name's claim in PostgreSQL (app_domains). */
export interface ObservedClaim {
  namespace: string;
  accountId: string;
  verified: boolean;
}

/** A certificate Secret of the issuer's (labelled `certificateLabel: acme`). */
export interface ObservedSecret {
  name: string;
  /** Its domain annotation. */
  domain: string;
  /** Its Domain's namespace (annotation): a certificate issued for another account's Domain of the name is none of this one's. */
  namespace: string | undefined;
  /** Undefined: its certificate could not be read. */
  notBefore: Date | undefined;
  notAfter: Date | undefined;
  renewAfter: Date | undefined;
}

export type CertificateStep =
  /** Order a certificate (budget permitting): none yet, or its renewal is due. */
  | { kind: 'order'; domain: ObservedDomain; accountId: string; renewal: boolean; dns01Name?: string }
  /** The name cannot be ordered (a wildcard without DNS-01, or not delegated yet): its status says so, once. */
  | {
      kind: 'unavailable';
      domain: ObservedDomain;
      accountId: string;
      reason: 'DNS01Unavailable' | 'Dns01DelegationMissing';
      message: string;
      /** A renewal's: the certificate still served, which the status keeps showing. */
      serving?: ObservedSecret;
    }
  /** The certificate is fresh but the Domain's status does not say so (after a restart, a lost write). */
  | { kind: 'record'; domain: ObservedDomain; secret: ObservedSecret }
  /** A certificate whose name is no longer verified. */
  | { kind: 'delete'; secretName: string; domain: string }
  /** A Domain no longer verified that still shows a certificate. */
  | { kind: 'clear'; domain: ObservedDomain };

export const dns01Message = (domain: string) =>
  `wildcard certificates need a DNS provider (RFC 2136), not configured: ${domain} cannot be validated by HTTP-01`;

export const delegationMessage = (domain: string, target: string) =>
  `a wildcard's certificate is validated by DNS-01: publish CNAME ${acmeChallengeName(domain.slice(2))} → ${target}, then verify the domain again`;

/** Every field of a `status.certificate`: a write of it names each, null for those it leaves out. */
export const certificateStatusKeys: ReadonlyArray<keyof CertificateStatus> = [
  'phase',
  'reason',
  'message',
  'notAfter',
  'renewAfter',
  'secretName',
  'lastAttemptAt',
  'retryAfter',
];

/**
 * `status.certificate` whole, as a merge patch: null removes a field (a merge patch merges
 * objects), so what this status leaves out is gone after the write.
 */
export function certificatePatch(c: CertificateStatus): CertificateStatus {
  // Typed as the status it writes: the generated type has no nulls, which only the patch carries.
  return Object.fromEntries(certificateStatusKeys.map((k) => [k, c[k] ?? null]));
}

/** Whether the Domain of this namespace may have a certificate: Verified, and its claim this namespace's and verified. */
export function isVerified(d: ObservedDomain, claim: ObservedClaim | undefined): boolean {
  return d.phase === 'Verified' && claim !== undefined && claim.namespace === d.namespace && claim.verified;
}

/**
 * Whether a Domain shows a certificate it may no longer have: it is not Verified, or its claim is
 * another namespace's or unverified. Not a Verified Domain whose claim this database does not hold:
 * none of this platform's (another platform's API on the same cluster, its own database), so there
 * is no evidence against it.
 */
export function showsStaleCertificate(d: ObservedDomain, claim: ObservedClaim | undefined): boolean {
  if (d.certificate?.phase === undefined || isVerified(d, claim)) return false;
  return !(d.phase === 'Verified' && claim === undefined);
}

export function planCertificates(o: {
  domains: readonly ObservedDomain[];
  claims: ReadonlyMap<string, ObservedClaim>;
  secrets: readonly ObservedSecret[];
  now: Date;
  /** The platform's DNS-01 zone (config `certificates.acme.dns01.zone`); undefined: no DNS-01. */
  dns01Zone?: string;
}): CertificateStep[] {
  const steps: CertificateStep[] = [];
  const secretOf = new Map<string, ObservedSecret>();
  for (const s of o.secrets) if (s.name === certificateSecretName(s.domain)) secretOf.set(s.domain, s);
  const verified = new Map<string, ObservedDomain>();
  for (const d of o.domains) if (isVerified(d, o.claims.get(d.name)) && !verified.has(d.name)) verified.set(d.name, d);

  for (const d of verified.values()) {
    const claim = o.claims.get(d.name)!;
    // Another account's certificate of this name (the name moved, the old Secret not yet replaced): ordered anew.
    const own = secretOf.get(d.name);
    const secret = own?.namespace === d.namespace ? own : undefined;
    const need = needsCertificate({ verified: true, secret: secret !== undefined, renewAfter: secret?.renewAfter, now: o.now });
    let dns01Name: string | undefined;
    if (need.need && d.name.startsWith('*.')) {
      dns01Name = o.dns01Zone ? dns01Target(o.dns01Zone, claim.accountId, d.name.slice(2)) : undefined;
      const refusal = !dns01Name
        ? ({ reason: 'DNS01Unavailable', message: dns01Message(d.name) } as const)
        : !d.delegatedTo?.includes(dns01Name)
          ? ({ reason: 'Dns01DelegationMissing', message: delegationMessage(d.name, dns01Name) } as const)
          : undefined;
      if (refusal) {
        const serving = secret?.notAfter && secret.notAfter > o.now ? secret : undefined;
        const said = serving ? d.certificate?.phase === 'Issued' : d.certificate?.phase === 'Failed';
        if (!said || d.certificate?.reason !== refusal.reason)
          steps.push({ kind: 'unavailable', domain: d, accountId: claim.accountId, ...refusal, ...(serving ? { serving } : {}) });
        continue;
      }
    }
    if (need.need) {
      steps.push({
        kind: 'order',
        domain: d,
        accountId: claim.accountId,
        renewal: need.why === 'renewal',
        ...(dns01Name ? { dns01Name } : {}),
      });
      continue;
    }
    const c = d.certificate;
    if (
      secret &&
      (c?.phase !== 'Issued' ||
        c.secretName !== secret.name ||
        c.notAfter !== secret.notAfter?.toISOString() ||
        c.renewAfter !== secret.renewAfter?.toISOString())
    )
      steps.push({ kind: 'record', domain: d, secret });
  }

  for (const s of secretOf.values()) {
    if (verified.has(s.domain)) continue;
    const claim = o.claims.get(s.domain);
    const cachedElsewhere = o.domains.some(
      (d) => d.name === s.domain && claim && d.namespace === claim.namespace && d.phase !== 'Verified',
    );
    if (!claim || !claim.verified || cachedElsewhere) steps.push({ kind: 'delete', secretName: s.name, domain: s.domain });
  }

  for (const d of o.domains) if (showsStaleCertificate(d, o.claims.get(d.name))) steps.push({ kind: 'clear', domain: d });
  return steps;
}
