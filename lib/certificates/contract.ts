// What the certificate issuer (the API, api/certificates/) and ingress-auth (ingress-auth/tls/) agree
// on, through Kubernetes objects in one namespace (config `certificates.namespace`): the issuer
// writes, ingress-auth reads them from informers (docs/decisions/0028-https.md).
//
// - A certificate: a `kubernetes.io/tls` Secret named `certificateSecretName(domain)`, labelled
//   `certificateLabel: <how it was made>`, annotated with the domain it serves (`*.shop.example` for a
//   wildcard) and its expiry; `tls.crt` the full chain, `tls.key` its key. Served only while a
//   verified Domain of that name routes (a Secret alone never serves a tenant's name).
// - An HTTP-01 challenge in flight: a ConfigMap named `challengeConfigMapName(token)`, labelled
//   `challengeLabel: "http-01"`, data `{domain, token, keyAuthorization}`: ingress-auth answers
//   `GET http://<domain>/.well-known/acme-challenge/<token>` with `keyAuthorization` (text/plain), on
//   that host only. A key authorization is not a secret (the CA fetches it over plain HTTP).
import { createHash } from 'node:crypto';

const hashOf = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 20);

/** The Secret of a domain's certificate (the same hash as its Domain object's `d-` name). */
export const certificateSecretName = (domain: string) => `tls-${hashOf(domain)}`;

/** The ConfigMap of an HTTP-01 challenge's key authorization. */
export const challengeConfigMapName = (token: string) => `acme-http01-${hashOf(token)}`;

export const certificateLabel = 'svc.dev/certificate';
/**
 * `certificateLabel` values: issued by the platform's ACME client, provided by a platform team,
 * issued by cert-manager for a Certificate the API wrote (its `secretTemplate` carries the label and
 * the annotations below, so its Secret is served like an ACME one), or the platform's own
 * `*.<apps domain>` the ACME client keeps by DNS-01 (served by its name, `certificates.platformSecret`).
 */
export const certificateSources = { acme: 'acme', provided: 'provided', certManager: 'cert-manager', platform: 'platform' } as const;
export const challengeLabel = 'svc.dev/acme-challenge';

export const certificateAnnotations = {
  /** The name the certificate is for: `shop.example`, `*.shop.example`. */
  domain: 'svc.dev/domain',
  /**
   * The namespace of the Domain it was issued for: served only while the name routes to an App of
   * that namespace, so one account's certificate (a wildcard's, or one left behind while a removed
   * name is claimed by another account) never shows for another account's name.
   */
  namespace: 'svc.dev/domain-namespace',
  /** RFC 3339: when the certificate expires. */
  notAfter: 'svc.dev/not-after',
} as const;

export const acmeChallengePathPrefix = '/.well-known/acme-challenge/';

/** An ACME token: base64url, at least 128 bits (RFC 8555 §8.3); anything else is never served. */
export const acmeToken = /^[A-Za-z0-9_-]{22,128}$/;

/**
 * RFC 3339: when the issuer renews the certificate of a `certificateSources.acme` Secret (a third of
 * its lifetime before `notAfter`, less a random jitter drawn once, when it was issued).
 */
export const certificateRenewAfterAnnotation = 'svc.dev/renew-after';

/**
 * With `SVC_CERTIFICATES_ISSUER=cert-manager`: the API writes a cert-manager Certificate per verified
 * domain in the certificates namespace, named (and its `spec.secretName`) `certificateSecretName(domain)`,
 * labelled and annotated as its Secret is; ingress-auth answers the HTTP-01 Challenges cert-manager
 * makes for them there (api/certificates/cert-manager.ts, ingress-auth/tls/challenges.ts).
 */
export const certManager = {
  certificates: { group: 'cert-manager.io', version: 'v1', plural: 'certificates', kind: 'Certificate' },
  challenges: { group: 'acme.cert-manager.io', version: 'v1', plural: 'challenges', kind: 'Challenge' },
} as const;
