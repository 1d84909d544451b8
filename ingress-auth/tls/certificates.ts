// The certificate of a TLS connection, chosen by its SNI name (docs/decisions/0028-https.md), from
// `kubernetes.io/tls` Secrets of one namespace (lib/certificates/contract.ts) held in an informer
// cache: never an apiserver call per handshake.
//
// - A custom domain's certificate (a Secret labelled `certificateLabel`, annotated with its domain,
//   `shop.example` or `*.shop.example`, and its Domain's namespace) is served only while the name
//   routes to an App of that namespace (`routedIn`: appAtHost on the route table, the same lookup
//   requests take). A Secret left behind serves nobody, and one account's wildcard never shows for a
//   name another account's Domain routes.
// - The platform's Secret (`certificates.platformSecret`, labelled or not) serves `<label>.<apps
//   domain>`, one label, nothing else.
// - Anything else (another name, no SNI) gets no certificate: the handshake ends.
// Every certificate is also checked against the name (X509Certificate.checkHost) before it is
// served, so a wrong annotation never shows a certificate for a name it does not cover.
//
// One informer on the namespace (field selector `type=kubernetes.io/tls`) filtering in code rather
// than a label-selected one plus a second watch of the platform Secret by name: the platform Secret
// may carry no label, the namespace holds certificates and little else (the ACME account Secret is
// Opaque, left out by the selector), and one watch is one cache to keep in sync and one RBAC rule.
import { X509Certificate } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import * as k8s from '@kubernetes/client-node';
import { certificateAnnotations, certificateLabel } from '../../lib/certificates/contract.js';
import { dnsLabel } from '../../lib/contract.js';
import { keepWatching } from '../../lib/kube/keep-watching.js';
import type { Logger } from '../../lib/logger.js';

/** What the TLS listener asks: the context to serve for an SNI name, or none (the handshake ends). */
export interface CertificateSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  contextFor(servername: string | undefined): SecureContext | undefined;
}

export const tlsSecretType = 'kubernetes.io/tls';

interface Entry {
  /** `namespace/name` of the Secret. */
  key: string;
  /** The name it serves, normalized: `shop.example` or `*.shop.example` (unused for the platform's). */
  domain: string;
  /** The namespace of the Domain it was issued for (unused for the platform's). */
  namespace: string | undefined;
  context: SecureContext;
  cert: X509Certificate;
  notAfter: number;
}

export interface CertificateIndexOptions {
  appsDomain: string;
  /** The platform's Secret (`*.<apps domain>`) by name, if any. */
  platformSecret: string | undefined;
  /**
   * The namespace of the App a custom domain routes to now (appAtHost on the route table), if it
   * routes: only then, and only a certificate issued for that namespace, is served.
   */
  routedIn: (hostname: string) => string | undefined;
  log: Logger;
}

/** A name from an SNI extension or an annotation: lowercased, one trailing dot dropped. */
function normalize(name: string | undefined | null | false): string | undefined {
  if (!name) return undefined;
  let n = name.trim().toLowerCase();
  if (n.endsWith('.')) n = n.slice(0, -1);
  return n || undefined;
}

/** A DNS hostname (labels only) and not an IPv4 address spelled as one. */
function isHostname(h: string): boolean {
  if (h.length > 253) return false;
  const labels = h.split('.');
  if (!labels.every((l) => dnsLabel.test(l))) return false;
  return !/^(\d+|0x[0-9a-f]*)$/.test(labels[labels.length - 1]!);
}

/** The certificates by name; no Kubernetes in here, so it is tested without a cluster. */
export class CertificateIndex {
  private readonly byDomain = new Map<string, Map<string, Entry>>();
  private readonly bySecret = new Map<string, Entry>();
  private platform: Entry | undefined;
  /** Versions of Secrets already reported unusable (`uid/resourceVersion`): each is logged once. */
  private readonly reported = new Set<string>();
  private readonly appsDomain: string;

  constructor(private readonly opts: CertificateIndexOptions) {
    this.appsDomain = opts.appsDomain.toLowerCase();
  }

  upsert(secret: k8s.V1Secret): void {
    const meta = secret.metadata;
    if (!meta?.name) return;
    const key = `${meta.namespace ?? ''}/${meta.name}`;
    const platform = meta.name === this.opts.platformSecret;
    if (!platform && (meta.labels?.[certificateLabel] === undefined || secret.type !== tlsSecretType)) {
      // Not (or no longer) a certificate of ours.
      this.drop(key);
      return;
    }
    const domain = platform ? `*.${this.appsDomain}` : normalize(meta.annotations?.[certificateAnnotations.domain]);
    const bare = domain?.startsWith('*.') ? domain.slice(2) : domain;
    if (!domain || !bare || !isHostname(bare)) return this.unusable(secret, `no valid ${certificateAnnotations.domain} annotation`);
    const namespace = meta.annotations?.[certificateAnnotations.namespace];
    if (!platform && !namespace) return this.unusable(secret, `no ${certificateAnnotations.namespace} annotation`);
    let entry: Entry;
    try {
      const cert = Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64');
      const keyPem = Buffer.from(secret.data?.['tls.key'] ?? '', 'base64');
      if (!cert.length || !keyPem.length) throw new Error('tls.crt or tls.key is empty');
      const x509 = new X509Certificate(cert);
      entry = {
        key,
        domain,
        namespace,
        context: createSecureContext({ cert, key: keyPem }),
        cert: x509,
        notAfter: Date.parse(x509.validTo),
      };
    } catch (err) {
      // A broken update keeps the Secret's previous certificate, if it had one that worked.
      return this.unusable(secret, (err as Error).message);
    }
    this.drop(key);
    if (platform) {
      this.platform = entry;
      return;
    }
    this.bySecret.set(key, entry);
    let same = this.byDomain.get(domain);
    if (!same) this.byDomain.set(domain, (same = new Map<string, Entry>()));
    same.set(key, entry);
  }

  remove(secret: k8s.V1Secret): void {
    const meta = secret.metadata;
    if (!meta?.name) return;
    this.drop(`${meta.namespace ?? ''}/${meta.name}`);
  }

  private drop(key: string): void {
    if (this.platform?.key === key) this.platform = undefined;
    const e = this.bySecret.get(key);
    if (!e) return;
    this.bySecret.delete(key);
    const same = this.byDomain.get(e.domain);
    same?.delete(key);
    if (same?.size === 0) this.byDomain.delete(e.domain);
  }

  private unusable(secret: k8s.V1Secret, reason: string): void {
    const id = `${secret.metadata?.uid ?? secret.metadata?.name}/${secret.metadata?.resourceVersion ?? ''}`;
    if (this.reported.has(id)) return;
    if (this.reported.size > 10_000) this.reported.clear();
    this.reported.add(id);
    this.opts.log.warn(
      { secret: `${secret.metadata?.namespace}/${secret.metadata?.name}`, reason },
      'A certificate Secret is unusable; it is not served',
    );
  }

  /**
   * The context for an SNI name: under the apps domain, the platform's certificate for one label;
   * any other name, while it routes, its own certificate, else the wildcard's one label up.
   */
  contextFor(servername: string | undefined): SecureContext | undefined {
    const h = normalize(servername);
    if (!h || !isHostname(h)) return undefined;
    const apps = this.appsDomain;
    if (h === apps || h.endsWith(`.${apps}`)) {
      const label = h.slice(0, -(apps.length + 1));
      const p = this.platform;
      return p && dnsLabel.test(label) && p.cert.checkHost(h) !== undefined ? p.context : undefined;
    }
    const namespace = this.opts.routedIn(h);
    if (namespace === undefined) return undefined;
    const exact = latest(this.byDomain.get(h), h, namespace);
    if (exact) return exact.context;
    const dot = h.indexOf('.');
    return dot === -1 ? undefined : latest(this.byDomain.get(`*.${h.slice(dot + 1)}`), h, namespace)?.context;
  }

  /** How many certificates are held (the platform's included): for logs and tests. */
  get size(): number {
    return this.bySecret.size + (this.platform ? 1 : 0);
  }
}

/** Of several certificates for one name, the one that lasts longest, among those of `namespace` covering `host`. */
function latest(same: Map<string, Entry> | undefined, host: string, namespace: string): Entry | undefined {
  let best: Entry | undefined;
  for (const e of same?.values() ?? []) {
    if (e.namespace !== namespace || e.cert.checkHost(host) === undefined) continue;
    if (!best || e.notAfter > best.notAfter || (e.notAfter === best.notAfter && e.key < best.key)) best = e;
  }
  return best;
}

/** The index fed by an informer of the namespace's TLS Secrets. */
export class CertificateStore implements CertificateSource {
  readonly index: CertificateIndex;
  private readonly secrets: k8s.ListWatch<k8s.V1Secret>;

  constructor(kc: k8s.KubeConfig, opts: CertificateIndexOptions & { namespace: string }) {
    this.index = new CertificateIndex(opts);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const fieldSelector = `type=${tlsSecretType}`;
    this.secrets = new k8s.ListWatch<k8s.V1Secret>(
      `/api/v1/namespaces/${opts.namespace}/secrets`,
      new k8s.Watch(kc),
      () => core.listNamespacedSecret({ namespace: opts.namespace, fieldSelector }),
      false,
      undefined,
      fieldSelector,
    );
    for (const verb of ['add', 'update'] as const) this.secrets.on(verb, (s) => this.index.upsert(s));
    this.secrets.on('delete', (s) => this.index.remove(s));
    keepWatching(this.secrets, 'certificate secrets', opts.log);
  }

  start(): Promise<void> {
    return this.secrets.start();
  }

  stop(): Promise<void> {
    return this.secrets.stop();
  }

  contextFor(servername: string | undefined): SecureContext | undefined {
    return this.index.contextFor(servername);
  }
}
