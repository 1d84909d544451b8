// HTTP-01 answers (docs/decisions/0028-https.md), from two sources feeding one index:
// - the built-in ACME issuer writes each challenge in flight as a ConfigMap of the certificates
//   namespace (lib/certificates/contract.ts: `{domain, token, keyAuthorization}`, labelled
//   `challengeLabel`);
// - with `SVC_CERTIFICATES_ISSUER=cert-manager`, cert-manager's ACME solver makes an
//   `acme.cert-manager.io/v1` Challenge there (`spec.type: HTTP-01`, `dnsName`, `token`, `key`) for
//   each Certificate the API wrote; such a challenge is answered only while a verified Domain routes
//   its name, since anyone who may make Certificates in that namespace could otherwise have a
//   certificate validated for a name no tenant verified.
// ingress-auth answers `GET /.well-known/acme-challenge/<token>` from informers of them, on that
// domain only, before anything else (no sign-in gate, never the app). Every other request under that
// path is 404: an app never answers a challenge for a name the platform holds. Only a token of the
// ACME shape and its key authorization (`<token>.<thumbprint>`) are ever served: nothing else written
// there shows as a page on a tenant's name.
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as k8s from '@kubernetes/client-node';
import { acmeChallengePathPrefix, acmeToken, certManager, challengeLabel } from '../../lib/certificates/contract.js';
import { keepWatching } from '../../lib/kube/keep-watching.js';
import type { Logger } from '../../lib/logger.js';
import { sendError } from '../errors.js';
import { hostnameOf } from '../host.js';

/** The key authorization of a token on a hostname, if a challenge of that name is in flight. */
export interface ChallengeSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  answer(hostname: string, token: string): string | undefined;
}

/** One challenge in flight, as its source said it. */
export interface Challenge {
  /** The hostname it is answered on (normalized). */
  domain: string;
  token: string;
  keyAuthorization: string;
}

/** A cert-manager `acme.cert-manager.io/v1` Challenge, as much of it as ingress-auth reads. */
export interface CertManagerChallenge {
  metadata?: { namespace?: string; name?: string };
  spec?: { type?: string; dnsName?: string; token?: string; key?: string; wildcard?: boolean };
}

/** RFC 8555 §8.1: `<token>.<base64url JWK thumbprint>`. */
const isKeyAuthorization = (token: string, key: string) =>
  key.startsWith(`${token}.`) && /^[A-Za-z0-9_-]{1,128}$/.test(key.slice(token.length + 1));

/** What a challenge must be to be served: a hostname, a token of the ACME shape, its key authorization. */
function served(domain: string | undefined, token: string | undefined, key: string | undefined): Challenge | undefined {
  const d = hostnameOf(domain);
  if (!d || !token || !acmeToken.test(token) || !key || !isKeyAuthorization(token, key)) return undefined;
  return { domain: d, token, keyAuthorization: key };
}

/** The ACME issuer's challenge ConfigMap, read; undefined: not one that is served. */
export function challengeOfConfigMap(cm: k8s.V1ConfigMap): Challenge | undefined {
  if (cm.metadata?.labels?.[challengeLabel] === undefined) return undefined;
  return served(cm.data?.domain, cm.data?.token, cm.data?.keyAuthorization);
}

/** A cert-manager Challenge, read; undefined unless it is an HTTP-01 one that is served (a DNS-01 one is the DNS's). */
export function challengeOfCertManager(c: CertManagerChallenge): Challenge | undefined {
  if (c.spec?.type !== 'HTTP-01' || c.spec.wildcard === true) return undefined;
  return served(c.spec.dnsName, c.spec.token, c.spec.key);
}

interface Entry extends Challenge {
  /** Answered only while this says the hostname may be (cert-manager's: a verified Domain routes it). */
  gate: ((hostname: string) => boolean) | undefined;
}

/** Challenges by token; no Kubernetes in here. */
export class ChallengeIndex implements ChallengeSource {
  /** token -> source key (`<kind>/<namespace>/<name>`) -> challenge. */
  private readonly byToken = new Map<string, Map<string, Entry>>();
  private readonly tokenOf = new Map<string, string>();

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  /** The challenge of a source object now (undefined: none, or no longer one), replacing what it said before. */
  set(key: string, c: Challenge | undefined, gate?: (hostname: string) => boolean): void {
    this.delete(key);
    if (!c) return;
    let same = this.byToken.get(c.token);
    if (!same) this.byToken.set(c.token, (same = new Map<string, Entry>()));
    same.set(key, { ...c, gate });
    this.tokenOf.set(key, c.token);
  }

  delete(key: string): void {
    const token = this.tokenOf.get(key);
    if (token === undefined) return;
    this.tokenOf.delete(key);
    const same = this.byToken.get(token);
    same?.delete(key);
    if (same?.size === 0) this.byToken.delete(token);
  }

  /** An ACME issuer's challenge ConfigMap added or changed. */
  upsert(cm: k8s.V1ConfigMap): void {
    this.set(keyOf('ConfigMap', cm), challengeOfConfigMap(cm));
  }

  remove(cm: k8s.V1ConfigMap): void {
    this.delete(keyOf('ConfigMap', cm));
  }

  answer(hostname: string, token: string): string | undefined {
    if (!acmeToken.test(token)) return undefined;
    const h = hostnameOf(hostname);
    if (!h) return undefined;
    for (const c of this.byToken.get(token)?.values() ?? []) if (c.domain === h && (c.gate?.(h) ?? true)) return c.keyAuthorization;
    return undefined;
  }
}

const keyOf = (kind: string, o: k8s.KubernetesObject) => `${kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** Feeds the index from an informer: each object read by `read`, answered under `gate` if given. */
function feed<T extends k8s.KubernetesObject>(
  index: ChallengeIndex,
  informer: k8s.ListWatch<T>,
  kind: string,
  read: (o: T) => Challenge | undefined,
  gate?: (hostname: string) => boolean,
): void {
  for (const verb of ['add', 'update'] as const) informer.on(verb, (o) => index.set(keyOf(kind, o), read(o), gate));
  informer.on('delete', (o) => index.delete(keyOf(kind, o)));
}

export interface ChallengeStoreOptions {
  namespace: string;
  log: Logger;
  /**
   * Also cert-manager's Challenges (`SVC_CERTIFICATES_ISSUER=cert-manager`), each answered only
   * while `routed` says a verified Domain routes its name.
   */
  certManager?: { routed: (hostname: string) => boolean };
}

/** The index fed by informers of the namespace's challenge ConfigMaps and, with cert-manager, its Challenges. */
export class ChallengeStore implements ChallengeSource {
  readonly index = new ChallengeIndex();
  private readonly informers: Array<Pick<k8s.ListWatch<k8s.KubernetesObject>, 'start' | 'stop'>> = [];

  constructor(kc: k8s.KubeConfig, opts: ChallengeStoreOptions) {
    const { namespace, log } = opts;
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const configMaps = new k8s.ListWatch<k8s.V1ConfigMap>(
      `/api/v1/namespaces/${namespace}/configmaps`,
      new k8s.Watch(kc),
      () => core.listNamespacedConfigMap({ namespace, labelSelector: challengeLabel }),
      false,
      challengeLabel,
    );
    feed(this.index, configMaps, 'ConfigMap', challengeOfConfigMap);
    keepWatching(configMaps, 'acme challenges', log);
    this.informers.push(configMaps);
    if (opts.certManager) {
      const custom = kc.makeApiClient(k8s.CustomObjectsApi);
      const { group, version, plural } = certManager.challenges;
      const challenges = new k8s.ListWatch<CertManagerChallenge & k8s.KubernetesObject>(
        `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
        new k8s.Watch(kc),
        () =>
          custom.listNamespacedCustomObject({ group, version, namespace, plural }) as Promise<
            k8s.KubernetesListObject<CertManagerChallenge & k8s.KubernetesObject>
          >,
        false,
      );
      feed(this.index, challenges, 'Challenge', challengeOfCertManager, opts.certManager.routed);
      keepWatching(challenges, 'cert-manager challenges', log);
      this.informers.push(challenges);
    }
  }

  async start(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  answer(hostname: string, token: string): string | undefined {
    return this.index.answer(hostname, token);
  }
}

/** Whether a (canonical) request target is under the ACME challenge path. */
export function isChallengePath(url: string): boolean {
  return url.startsWith(acmeChallengePathPrefix);
}

/**
 * Answers a request under the challenge path: 200 with the key authorization (text/plain) for a
 * GET or HEAD of a token in flight on the request's host, 404 for anything else.
 */
export function challengeRoute(challenges: ChallengeSource, req: IncomingMessage, res: ServerResponse, requestId: string): void {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const token = (q === -1 ? url : url.slice(0, q)).slice(acmeChallengePathPrefix.length);
  const host = hostnameOf(req.headers.host);
  const found = (req.method === 'GET' || req.method === 'HEAD') && host !== undefined ? challenges.answer(host, token) : undefined;
  if (found === undefined) return sendError(res, 404, 'no such ACME challenge here', req.headers.accept, requestId);
  res.writeHead(200, {
    'content-type': 'text/plain',
    'content-length': Buffer.byteLength(found),
    'cache-control': 'no-store',
    'x-request-id': requestId,
  });
  res.end(req.method === 'HEAD' ? undefined : found);
}
