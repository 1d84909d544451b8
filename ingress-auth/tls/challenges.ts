// HTTP-01 answers (docs/decisions/0028-https.md): the issuer writes each challenge in flight as a
// ConfigMap of the certificates namespace (lib/certificates/contract.ts: `{domain, token,
// keyAuthorization}`, labelled `challengeLabel`); ingress-auth answers
// `GET /.well-known/acme-challenge/<token>` from an informer of them, on that domain only, before
// anything else (no sign-in gate, never the app). Every other request under that path is 404: an app
// never answers a challenge for a name the platform holds.
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as k8s from '@kubernetes/client-node';
import { acmeChallengePathPrefix, acmeToken, challengeLabel } from '../../lib/certificates/contract.js';
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

interface Challenge {
  domain: string;
  keyAuthorization: string;
}

/** Challenges by token; no Kubernetes in here. */
export class ChallengeIndex implements ChallengeSource {
  /** token -> ConfigMap `namespace/name` -> challenge. */
  private readonly byToken = new Map<string, Map<string, Challenge>>();
  private readonly tokenOf = new Map<string, string>();

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  upsert(cm: k8s.V1ConfigMap): void {
    const key = `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
    this.remove(cm);
    const { domain, token, keyAuthorization } = cm.data ?? {};
    const d = hostnameOf(domain);
    if (!d || !token || !acmeToken.test(token) || !keyAuthorization || cm.metadata?.labels?.[challengeLabel] === undefined) return;
    let same = this.byToken.get(token);
    if (!same) this.byToken.set(token, (same = new Map<string, Challenge>()));
    same.set(key, { domain: d, keyAuthorization });
    this.tokenOf.set(key, token);
  }

  remove(cm: k8s.V1ConfigMap): void {
    const key = `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
    const token = this.tokenOf.get(key);
    if (token === undefined) return;
    this.tokenOf.delete(key);
    const same = this.byToken.get(token);
    same?.delete(key);
    if (same?.size === 0) this.byToken.delete(token);
  }

  answer(hostname: string, token: string): string | undefined {
    if (!acmeToken.test(token)) return undefined;
    const h = hostnameOf(hostname);
    for (const c of this.byToken.get(token)?.values() ?? []) if (c.domain === h) return c.keyAuthorization;
    return undefined;
  }
}

/** The index fed by an informer of the namespace's challenge ConfigMaps. */
export class ChallengeStore implements ChallengeSource {
  readonly index = new ChallengeIndex();
  private readonly configMaps: k8s.ListWatch<k8s.V1ConfigMap>;

  constructor(kc: k8s.KubeConfig, opts: { namespace: string; log: Logger }) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    this.configMaps = new k8s.ListWatch<k8s.V1ConfigMap>(
      `/api/v1/namespaces/${opts.namespace}/configmaps`,
      new k8s.Watch(kc),
      () => core.listNamespacedConfigMap({ namespace: opts.namespace, labelSelector: challengeLabel }),
      false,
      challengeLabel,
    );
    for (const verb of ['add', 'update'] as const) this.configMaps.on(verb, (c) => this.index.upsert(c));
    this.configMaps.on('delete', (c) => this.index.remove(c));
    keepWatching(this.configMaps, 'acme challenges', opts.log);
  }

  start(): Promise<void> {
    return this.configMaps.start();
  }

  stop(): Promise<void> {
    return this.configMaps.stop();
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
