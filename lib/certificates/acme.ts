// The ACME side of the certificate issuer (docs/decisions/0028-https.md), over `acme-client` (RFC
// 8555): the platform's account (its key kept in a Secret, made on first use; contact and EAB from
// the configuration) and one order of one name, validated by HTTP-01 through a ConfigMap that
// ingress-auth answers (lib/certificates/contract.ts). The CA is told to validate only once
// ingress-auth answers the challenge at SVC_ACME_HTTP01_CHECK_URL, so an informer's lag never costs
// a failed validation. A wildcard is validated by DNS-01 instead (lib/certificates/dns01.ts): its TXT
// written by RFC 2136 at the name its `_acme-challenge` is delegated to, and the CA told only once the
// zone's server answers it; without a DNS provider a wildcard is refused before any order.
import { AsyncLocalStorage } from 'node:async_hooks';
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import acme from 'acme-client';
import { labels, managers } from '../contract.js';
import { kubeStatus, mergePatch } from '../kube/client.js';
import type { Logger } from '../logger.js';
import { acmeChallengePathPrefix, acmeToken, challengeConfigMapName, challengeLabel } from './contract.js';
import type { DnsProvider, TxtLookup } from './dns01.js';

export interface AcmeSettings {
  /** Where the account Secret and the challenge ConfigMaps live. */
  namespace: string;
  directoryUrl: string;
  contact: string | undefined;
  eab: { kid: string; hmacKey: string } | undefined;
  /** A PEM file of CA certificates to trust for the directory's HTTPS, besides the system's. */
  caFile: string | undefined;
  /** The account key's Secret: in the release namespace on a cluster, which ingress-auth cannot read. */
  accountSecret: { namespace: string; name: string };
  /** ingress-auth's address as the issuer reaches it (`http://host:port`); undefined: no self-check. */
  http01CheckUrl: string | undefined;
}

/** What a certificate order ended with when it gave no certificate. */
export class CertificateError extends Error {
  constructor(
    /** `refused`: the CA (or the issuer) refused before validating (a rate limit); `failed`: anything else. */
    readonly outcome: 'failed' | 'refused',
    /** CamelCase: DNS01Unavailable, RateLimited, ValidationFailed, ChallengeNotServed, ... */
    readonly reason: string,
    message: string,
    /** The CA's Retry-After, if it said one. */
    readonly retryAfter?: Date,
    /** Whether an order was placed with the CA. */
    readonly ordered = true,
  ) {
    super(message);
    this.name = 'CertificateError';
  }
}

export interface IssuedCertificate {
  /** PEM, the full chain (leaf first). */
  certificate: string;
  /** PEM, the certificate's private key. */
  key: string;
  notBefore: Date;
  notAfter: Date;
}

export interface IssueOptions {
  /** PEM: the certificate's key (default: a new P-256 key). */
  key?: string;
  /** A wildcard's: where its DNS-01 TXT is written (the target of its `_acme-challenge` CNAME, dns01Target). */
  dns01Name?: string;
}

/** What issues certificates (AcmeIssuer; a fake in unit tests). */
export interface CertificateSource {
  issue(domain: string, options?: IssueOptions): Promise<IssuedCertificate>;
}

export const dns01Unavailable = (domain: string) =>
  new CertificateError(
    'failed',
    'DNS01Unavailable',
    `wildcard certificates need a DNS provider (RFC 2136), not configured: ${domain} cannot be validated by HTTP-01`,
    undefined,
    false,
  );

type Core = Pick<
  k8s.CoreV1Api,
  | 'readNamespacedSecret'
  | 'patchNamespacedSecret'
  | 'createNamespacedSecret'
  | 'createNamespacedConfigMap'
  | 'deleteNamespacedConfigMap'
  | 'createNamespace'
>;

/** The last problem document the CA answered within one order (acme-client keeps only its detail). */
interface Problem {
  status: number;
  type: string | undefined;
  detail: string | undefined;
  retryAfter: Date | undefined;
}
/** What one order saw of its HTTP exchanges: the last problem answered, the last request made. */
export interface Exchange {
  last: Problem | undefined;
  request?: string;
}
const problems = new AsyncLocalStorage<Exchange>();
let axiosPrepared = false;

/**
 * acme-client's one axios instance: a timeout; no retries of its own (it would sleep out a
 * rate limit's Retry-After, hours perhaps, inside a pass: the issuer's schedule is the retry); each
 * response's problem document kept for the order it belongs to; the configured CA trusted.
 */
function prepareAxios(caFile: string | undefined): void {
  const ax = acme.axios;
  if (caFile) ax.defaults.httpsAgent = new https.Agent({ ca: [...tls.rootCertificates, readFileSync(caFile, 'utf8')], keepAlive: true });
  if (axiosPrepared) return;
  axiosPrepared = true;
  ax.defaults.timeout = 30_000;
  const settings = (ax.defaults as unknown as { acmeSettings?: { retryMaxAttempts: number } }).acmeSettings;
  if (settings) settings.retryMaxAttempts = 0;
  ax.interceptors.request.use((config) => {
    const ctx = problems.getStore();
    if (ctx) ctx.request = `${(config.method ?? 'get').toUpperCase()} ${config.url ?? ''}`;
    return config;
  });
  ax.interceptors.response.use((resp) => {
    const ctx = problems.getStore();
    if (ctx) {
      if (resp.status >= 400) {
        const data = (resp.data ?? {}) as { type?: unknown; detail?: unknown };
        ctx.last = {
          status: resp.status,
          type: typeof data.type === 'string' ? data.type : undefined,
          detail: typeof data.detail === 'string' ? data.detail : undefined,
          retryAfter: retryAfterOf(resp.headers['retry-after'], new Date()),
        };
      } else ctx.last = undefined;
    }
    return resp;
  });
}

/** A Retry-After header's time (seconds, or an HTTP date), if it names one in the future. */
export function retryAfterOf(header: unknown, now: Date): Date | undefined {
  if (typeof header !== 'string' || header.trim() === '') return undefined;
  const t = /^\d+$/.test(header.trim()) ? now.getTime() + Number(header.trim()) * 1000 : Date.parse(header);
  return Number.isFinite(t) && t > now.getTime() ? new Date(t) : undefined;
}

/** `urn:ietf:params:acme:error:rateLimited` → `RateLimited`. */
function reasonOf(type: string | undefined, fallback: string): string {
  const last = type?.split(':').pop();
  return last && /^[A-Za-z][A-Za-z0-9]*$/.test(last) ? last[0]!.toUpperCase() + last.slice(1) : fallback;
}

/** An error of a step of an order, mapped to what the issuer records. */
export function mapAcmeError(err: unknown, exchange: Exchange | undefined, step: string, ordered: boolean): CertificateError {
  if (err instanceof CertificateError) return err;
  const problem = exchange?.last;
  // A request that got no answer at all: acme-client's axios loses the network error and throws
  // a TypeError of its own reading the missing response.
  if (!problem && err instanceof TypeError && /reading 'config'/.test(err.message))
    return new CertificateError(
      'failed',
      'CAUnavailable',
      `${step} failed: the CA did not answer${exchange?.request ? ` ${exchange.request}` : ''} (unreachable, or it timed out)`,
      undefined,
      ordered,
    );
  const detail = problem?.detail ?? (err instanceof Error ? err.message : String(err));
  if (problem?.type === 'urn:ietf:params:acme:error:rateLimited' || problem?.status === 429)
    return new CertificateError('refused', 'RateLimited', `the CA refused ${step}: ${detail}`, problem.retryAfter, false);
  return new CertificateError('failed', reasonOf(problem?.type, 'OrderFailed'), `${step} failed: ${detail}`, problem?.retryAfter, ordered);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class AcmeIssuer implements CertificateSource {
  private client: Promise<acme.Client> | undefined;

  constructor(
    private readonly d: {
      core: Core;
      settings: AcmeSettings;
      log: Logger;
      /** How long ingress-auth has to answer a challenge before the order is given up (default 10 s). */
      selfCheckMs?: number;
      /** The addresses the check URL's host stands for (default: addressesOf, the system's resolver). */
      addresses?: (hostname: string) => Promise<string[]>;
      /** DNS-01: the zone's updates and its server's answers; undefined, wildcards are refused. */
      dns01?: { provider: DnsProvider; lookup: TxtLookup };
      /** How long the zone's server has to answer a DNS-01 TXT before the order is given up (default 30 s). */
      dnsCheckMs?: number;
    },
  ) {
    prepareAxios(d.settings.caFile);
  }

  /** The account's client: its key from the Secret (made on first use), the account created or found. */
  private account(): Promise<acme.Client> {
    this.client ??= this.makeAccount().catch((err: unknown) => {
      this.client = undefined;
      throw err;
    });
    return this.client;
  }

  private async makeAccount(): Promise<acme.Client> {
    const s = this.d.settings;
    const accountKey = await this.accountKey();
    const client = new acme.Client({
      directoryUrl: s.directoryUrl,
      accountKey,
      ...(s.eab ? { externalAccountBinding: s.eab } : {}),
      backoffAttempts: 12,
      backoffMin: 1000,
      backoffMax: 10_000,
    });
    try {
      // The key's account if it has one (acme-client then reads it, POST-as-GET), its contact kept current.
      await client.createAccount({ onlyReturnExisting: true });
      if (s.contact) await client.updateAccount({ contact: [s.contact] });
    } catch (err) {
      if (problems.getStore()?.last?.type !== 'urn:ietf:params:acme:error:accountDoesNotExist') throw err;
      await client.createAccount({ termsOfServiceAgreed: true, ...(s.contact ? { contact: [s.contact] } : {}) });
    }
    this.d.log.info({ account: client.getAccountUrl(), directory: s.directoryUrl }, 'ACME account ready');
    return client;
  }

  private async accountKey(): Promise<string> {
    const { namespace, name } = this.d.settings.accountSecret;
    const read = async () => {
      const secret = await this.d.core.readNamespacedSecret({ namespace, name }).catch((err: unknown) => {
        if (kubeStatus(err) === 404) return undefined;
        throw err;
      });
      const pem = secret?.data?.['private-key.pem'];
      return { secret, key: pem ? Buffer.from(pem, 'base64').toString('utf8') : undefined };
    };
    const existing = await read();
    if (existing.key) return existing.key;
    const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
    try {
      if (existing.secret) {
        // Made empty by the chart (the API may patch that one Secret only): filled once, guarded by
        // its resourceVersion, so two replicas never both think their key is the account's.
        await this.d.core.patchNamespacedSecret(
          {
            namespace,
            name,
            body: {
              metadata: { resourceVersion: existing.secret.metadata?.resourceVersion },
              data: { 'private-key.pem': Buffer.from(key).toString('base64') },
            },
          },
          mergePatch,
        );
        return key;
      }
      if (namespace === this.d.settings.namespace) await this.ensureNamespace();
      await this.d.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name, namespace, labels: { [labels.managedBy]: managers.api } },
          type: 'Opaque',
          stringData: { 'private-key.pem': key },
        },
      });
      return key;
    } catch (err) {
      // Another replica wrote it first: its key is the account's.
      if (kubeStatus(err) !== 409) throw err;
      const theirs = (await read()).key;
      if (!theirs) throw new Error(`Secret ${namespace}/${name} exists without a private-key.pem`, { cause: err });
      return theirs;
    }
  }

  /**
   * The namespace, made if missing (a local platform's; the chart's release namespace exists, and
   * there the API may not make namespaces at all: any refusal is left to the writes that follow).
   */
  private async ensureNamespace(): Promise<void> {
    const name = this.d.settings.namespace;
    await this.d.core
      .createNamespace({ body: { metadata: { name, labels: { [labels.managedBy]: managers.api } } } })
      .catch((err: unknown) => {
        if (kubeStatus(err) !== 409) this.d.log.debug({ err, namespace: name }, 'Not making the certificates namespace');
      });
  }

  /**
   * One order of `domain`: HTTP-01 for its one authorization (DNS-01 at `dns01Name` for a wildcard),
   * the CSR of `key` (PEM; a new P-256 key when not given), the certificate's full chain. Throws a
   * CertificateError.
   */
  async issue(domain: string, { key, dns01Name }: IssueOptions = {}): Promise<IssuedCertificate> {
    const wildcard = domain.startsWith('*.');
    if (wildcard && (!this.d.dns01 || !dns01Name)) throw dns01Unavailable(domain);
    const ctx: Exchange = { last: undefined };
    return problems.run(ctx, async () => {
      let step = 'creating the ACME account';
      let ordered = false;
      try {
        const client = await this.account();
        step = 'creating the order';
        ctx.last = undefined;
        let order = await client.createOrder({ identifiers: [{ type: 'dns', value: domain }] });
        ordered = true;
        step = 'reading the authorizations';
        const authorizations = await client.getAuthorizations(order);
        for (const authz of authorizations) {
          if (authz.status === 'valid') continue;
          step = `validating ${authz.identifier.value}`;
          if (wildcard)
            await validateByDns(client, authz, {
              domain,
              target: dns01Name!,
              ...this.d.dns01!,
              checkMs: this.d.dnsCheckMs,
              log: this.d.log,
            });
          else await this.validate(client, authz);
        }
        step = 'finalizing the order';
        const certificateKey = key ?? (await acme.crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
        const [, csr] = await acme.crypto.createCsr({ commonName: domain, altNames: [domain] }, certificateKey);
        order = await client.finalizeOrder(order, csr);
        step = 'downloading the certificate';
        const certificate = await client.getCertificate(order);
        const leaf = new X509Certificate(certificate);
        return { certificate, key: certificateKey, notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) };
      } catch (err) {
        throw mapAcmeError(err, ctx, step, ordered);
      }
    });
  }

  private async validate(client: acme.Client, authz: acme.Authorization): Promise<void> {
    const domain = authz.identifier.value;
    const challenge = authz.challenges.find((c) => c.type === 'http-01');
    if (!challenge) throw new CertificateError('failed', 'NoHttp01Challenge', `the CA offered no http-01 challenge for ${domain}`);
    if (!acmeToken.test(challenge.token))
      throw new CertificateError('failed', 'BadToken', `the CA's http-01 token for ${domain} is not a base64url token ingress-auth serves`);
    const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
    const { namespace } = this.d.settings;
    const name = challengeConfigMapName(challenge.token);
    await this.d.core
      .createNamespacedConfigMap({
        namespace,
        body: {
          metadata: { name, namespace, labels: { [challengeLabel]: 'http-01', [labels.managedBy]: managers.api } },
          data: { domain, token: challenge.token, keyAuthorization },
        },
      })
      .catch((err: unknown) => {
        if (kubeStatus(err) !== 409) throw err;
      });
    try {
      if (this.d.settings.http01CheckUrl)
        await this.untilServed(domain, challenge.token, keyAuthorization).catch(async (err: unknown) => {
          // Not left pending at the CA (its pending authorizations are limited too).
          await client.deactivateAuthorization(authz).catch(() => undefined);
          throw err;
        });
      await completeAndWait(client, challenge, `the CA could not validate ${domain} by http-01`);
    } finally {
      await this.d.core.deleteNamespacedConfigMap({ namespace, name }).catch((err: unknown) => {
        if (kubeStatus(err) !== 404) this.d.log.warn({ err, name }, 'Deleting an HTTP-01 challenge ConfigMap failed');
      });
    }
  }

  /** Until every ingress-auth answers the challenge as the CA will ask it (≤ selfCheckMs), else fails: the CA is not told. */
  private untilServed(domain: string, token: string, keyAuthorization: string): Promise<void> {
    return untilServedEverywhere({
      url: new URL(`${acmeChallengePathPrefix}${token}`, this.d.settings.http01CheckUrl),
      domain,
      keyAuthorization,
      timeoutMs: this.d.selfCheckMs ?? 10_000,
      ...(this.d.addresses ? { addresses: this.d.addresses } : {}),
    });
  }
}

/**
 * The addresses a check URL's host stands for: with a headless Service (the chart's
 * `<release>-ingress-auth-pods`), every ingress-auth pod; an address, itself.
 */
export async function addressesOf(hostname: string): Promise<string[]> {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare)) return [bare];
  return [...new Set((await lookup(bare, { all: true })).map((a) => a.address))];
}

/**
 * Fresh connections each address must answer on: a pod's workers each keep their own informer, and
 * the kernel spreads new connections over them (SO_REUSEPORT), so one answer vouches for one worker.
 */
const answersPerAddress = 3;

/**
 * Until the challenge is answered at every address of the check URL's host, on fresh connections,
 * as the CA will ask it; else a ChallengeNotServed failure, and the CA is not told. The CA reaches
 * whichever replica its connection lands on: one whose informer lags would cost a failed validation.
 */
export async function untilServedEverywhere(o: {
  url: URL;
  domain: string;
  keyAuthorization: string;
  timeoutMs: number;
  addresses?: (hostname: string) => Promise<string[]>;
}): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    try {
      const addresses = await (o.addresses ?? addressesOf)(o.url.hostname);
      if (!addresses.length) throw new Error(`${o.url.hostname} has no address`);
      last = '';
      for (const address of addresses) {
        for (let i = 0; i < answersPerAddress && !last; i++) {
          const answer = await getText(o.url, o.domain, address);
          if (answer.status !== 200 || answer.body.trim() !== o.keyAuthorization)
            last = `${addresses.length > 1 ? `${address} ` : ''}answered ${answer.status}`;
        }
        if (last) break;
      }
      if (!last) return;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(250);
  }
  throw new CertificateError(
    'failed',
    'ChallengeNotServed',
    `ingress-auth did not serve the http-01 challenge of ${o.domain} at ${o.url.origin} within ${Math.round(o.timeoutMs / 1000)} s (${last}); the CA was not asked to validate`,
  );
}

/** What validating a challenge asks of the ACME client (acme-client's Client; a stub in unit tests). */
export type ChallengeClient = Pick<
  acme.Client,
  'getChallengeKeyAuthorization' | 'completeChallenge' | 'waitForValidStatus' | 'deactivateAuthorization'
>;

/** Tells the CA the challenge is ready, and waits for its verdict: ValidationFailed with `failure` and the CA's words. */
async function completeAndWait(
  client: ChallengeClient,
  challenge: acme.Authorization['challenges'][number],
  failure: string,
): Promise<void> {
  await client.completeChallenge(challenge);
  try {
    await client.waitForValidStatus(challenge);
  } catch (err) {
    throw new CertificateError('failed', 'ValidationFailed', `${failure}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * DNS-01 of one authorization: the TXT written at `target` (the delegation target in the platform's
 * zone), the CA told once the zone's server answers it (else the authorization is deactivated and
 * the CA never asked: a failed validation would spend the name's budget), and the TXT withdrawn
 * whatever happened. Several values may stand at one name (two orders at once): only this order's
 * is added and removed.
 */
export async function validateByDns(
  client: ChallengeClient,
  authz: acme.Authorization,
  o: { domain: string; target: string; provider: DnsProvider; lookup: TxtLookup; checkMs?: number; log: Logger },
): Promise<void> {
  const { domain, target, provider, lookup } = o;
  const checkMs = o.checkMs ?? 30_000;
  const challenge = authz.challenges.find((c) => c.type === 'dns-01');
  if (!challenge) throw new CertificateError('failed', 'NoDns01Challenge', `the CA offered no dns-01 challenge for ${domain}`);
  // For dns-01 acme-client answers the TXT value: base64url(SHA-256(key authorization)).
  const value = await client.getChallengeKeyAuthorization(challenge);
  try {
    await provider.addTxt(target, value, 60).catch((err: unknown) => {
      throw new CertificateError(
        'failed',
        'Dns01UpdateFailed',
        `the DNS-01 record of ${domain} could not be written at ${target}: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
    const deadline = Date.now() + checkMs;
    while (!(await lookup(target).catch((): string[] => [])).includes(value)) {
      if (Date.now() >= deadline) {
        await client.deactivateAuthorization(authz).catch(() => undefined);
        throw new CertificateError(
          'failed',
          'Dns01NotPublished',
          `the zone's server did not answer the DNS-01 TXT record at ${target} within ${Math.round(checkMs / 1000)} s; the CA was not asked to validate`,
        );
      }
      await sleep(250);
    }
    await completeAndWait(
      client,
      challenge,
      `the CA could not validate ${domain} by dns-01 (is _acme-challenge.${domain.replace(/^\*\./, '')} a CNAME to ${target}?)`,
    );
  } finally {
    await provider.removeTxt(target, value).catch((err: unknown) => {
      o.log.warn({ err, domain, target }, 'Withdrawing a DNS-01 record failed; it is harmless but left in the zone');
    });
  }
}

/** GET `url` with `Host: host` (fetch may not set Host), its status and up to 4 KiB of body. */
/** A GET of `url` at one address (a new connection: no agent), Host `host`, the body's first 4 KiB. */
function getText(url: URL, host: string, address: string): Promise<{ status: number; body: string }> {
  const secure = url.protocol === 'https:';
  const options = {
    hostname: address,
    port: url.port || (secure ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    method: 'GET',
    headers: { host },
    timeout: 2000,
    agent: false,
    ...(secure && !isIP(url.hostname.replace(/^\[|\]$/g, '')) ? { servername: url.hostname } : {}),
  } as const;
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 4096) body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
