// Host -> App -> machines, from informer caches (no apiserver call per request): every App of the
// cluster, and the EndpointSlices of the apps' Services (the controller labels each Service with
// `svc.dev/app`, and the EndpointSlice controller copies a Service's labels onto its slices, which
// keeps this cache to app slices only).
//
// App names are unique per namespace only, while a hostname is global: the oldest App of a name
// holds its hostname (docs/decisions/0008-ingress-routing.md). A verified custom domain (Domain
// objects, a third informer: domains.ts) serves the App it names in its own namespace.
import * as k8s from '@kubernetes/client-node';
import { keepWatching } from '../lib/kube/keep-watching.js';
import type { Logger } from '../lib/logger.js';
import { group, version, type App, type Domain } from '../lib/resources/index.js';
import { labels, pluralOf } from '../lib/contract.js';
import { DomainIndex } from './domains.js';

export interface Backend {
  address: string;
  port: number;
  /** `http://address:port`: one keep-alive pool each. */
  origin: string;
}

const serviceNameLabel = 'kubernetes.io/service-name';
const appLabel = labels.app;

/**
 * Apps by name; `holder(name)` is the App whose hostname `<name>.<apps domain>` is, `app(namespace,
 * name)` the App a custom domain of that namespace serves.
 */
export class HostIndex {
  private readonly byName = new Map<string, Map<string, App>>();
  /** By `namespace/name`, then uid: a deleted App and its successor of one name may overlap in the cache. */
  private readonly byKey = new Map<string, Map<string, App>>();

  upsert(app: App): void {
    const name = app.metadata.name;
    const uid = app.metadata.uid;
    if (!name || !uid) return;
    add(this.byName, name, uid, app);
    if (app.metadata.namespace) add(this.byKey, `${app.metadata.namespace}/${name}`, uid, app);
  }

  remove(app: App): void {
    const uid = app.metadata.uid ?? '';
    drop(this.byName, app.metadata.name ?? '', uid);
    drop(this.byKey, `${app.metadata.namespace}/${app.metadata.name}`, uid);
  }

  /** The App `name` of `namespace`, unless it is being deleted (it holds no hostname either). */
  app(namespace: string, name: string): App | undefined {
    return oldestLive(this.byKey.get(`${namespace}/${name}`));
  }

  /** The oldest App of the name (creation time, then uid, so every replica agrees), if any. */
  holder(name: string): App | undefined {
    return oldestLive(this.byName.get(name));
  }
}

/** The oldest of these Apps not being deleted (creation time, then uid: every replica agrees). */
function oldestLive(same: Map<string, App> | undefined): App | undefined {
  let best: App | undefined;
  for (const app of same?.values() ?? []) {
    if (app.metadata.deletionTimestamp) continue;
    if (!best || older(app, best)) best = app;
  }
  return best;
}

function add(index: Map<string, Map<string, App>>, key: string, uid: string, app: App): void {
  let same = index.get(key);
  if (!same) index.set(key, (same = new Map<string, App>()));
  same.set(uid, app);
}

function drop(index: Map<string, Map<string, App>>, key: string, uid: string): void {
  const same = index.get(key);
  if (!same) return;
  same.delete(uid);
  if (same.size === 0) index.delete(key);
}

function created(app: App): number {
  const t = app.metadata.creationTimestamp;
  return t ? new Date(t).getTime() : Number.POSITIVE_INFINITY;
}

function older(a: App, b: App): boolean {
  const ta = created(a);
  const tb = created(b);
  return ta !== tb ? ta < tb : (a.metadata.uid ?? '') < (b.metadata.uid ?? '');
}

interface SliceBackends {
  service: string;
  ready: Backend[];
  /** Serving but terminating: used only when nothing is ready (a machine draining still answers). */
  draining: Backend[];
}

/** Backends of one EndpointSlice: its endpoints on the port named `http`. */
export function backendsOfSlice(slice: k8s.V1EndpointSlice): Omit<SliceBackends, 'service'> {
  const ready: Backend[] = [];
  const draining: Backend[] = [];
  const port = slice.ports?.find((p) => p.name === 'http')?.port;
  if (port === undefined || (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6')) return { ready, draining };
  for (const e of slice.endpoints ?? []) {
    const address = e.addresses[0];
    if (!address) continue;
    const host = slice.addressType === 'IPv6' ? `[${address}]` : address;
    const b = { address, port, origin: `http://${host}:${port}` };
    // An unknown readiness counts as ready, as the EndpointSlice API asks of consumers.
    if (e.conditions?.ready !== false) ready.push(b);
    else if (e.conditions?.serving === true && e.conditions.terminating === true) draining.push(b);
  }
  return { ready, draining };
}

/** Ready backends per Service (`namespace/name`), from its slices. */
export class EndpointIndex {
  private readonly slices = new Map<string, SliceBackends>();
  private readonly byService = new Map<string, Backend[]>();
  private readonly slicesOf = new Map<string, Set<string>>();
  /** Requests waiting for a Service's first ready backend (whenBackends). */
  private readonly waiting = new Map<string, Set<() => void>>();

  /**
   * The Service's backends once it has any, or none after `timeoutMs`: for a deployed App with no
   * ready machine here yet (its EndpointSlice, written by another controller, may still be coming).
   */
  whenBackends(namespace: string, service: string, timeoutMs: number): Promise<Backend[]> {
    const key = `${namespace}/${service}`;
    const now = this.backends(namespace, service);
    if (now.length) return Promise.resolve(now);
    return new Promise((resolve) => {
      let waiters = this.waiting.get(key);
      if (!waiters) this.waiting.set(key, (waiters = new Set()));
      let timedOut = false;
      const done = () => {
        const list = this.backends(namespace, service);
        if (list.length === 0 && !timedOut) return; // a change that brought none: keep waiting
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiting.get(key) === waiters) this.waiting.delete(key);
        resolve(list);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        done();
      }, timeoutMs);
      timer.unref();
      waiters.add(done);
    });
  }

  private changed(service: string): void {
    this.byService.delete(service);
    for (const wake of [...(this.waiting.get(service) ?? [])]) wake();
  }

  upsert(slice: k8s.V1EndpointSlice): void {
    const ns = slice.metadata?.namespace;
    const svc = slice.metadata?.labels?.[serviceNameLabel];
    if (!ns || !svc || !slice.metadata?.name) return;
    const key = `${ns}/${slice.metadata.name}`;
    const service = `${ns}/${svc}`;
    this.slices.set(key, { service, ...backendsOfSlice(slice) });
    let keys = this.slicesOf.get(service);
    if (!keys) this.slicesOf.set(service, (keys = new Set()));
    keys.add(key);
    this.changed(service);
  }

  remove(slice: k8s.V1EndpointSlice): void {
    const key = `${slice.metadata?.namespace}/${slice.metadata?.name}`;
    const s = this.slices.get(key);
    if (!s) return;
    this.slices.delete(key);
    const keys = this.slicesOf.get(s.service);
    keys?.delete(key);
    if (keys?.size === 0) this.slicesOf.delete(s.service);
    this.changed(s.service);
  }

  backends(namespace: string, service: string): Backend[] {
    const key = `${namespace}/${service}`;
    let list = this.byService.get(key);
    if (list) return list;
    const ready = new Map<string, Backend>();
    const draining = new Map<string, Backend>();
    for (const sliceKey of this.slicesOf.get(key) ?? []) {
      const s = this.slices.get(sliceKey)!;
      for (const b of s.ready) ready.set(b.origin, b);
      for (const b of s.draining) draining.set(b.origin, b);
    }
    list = [...(ready.size ? ready : draining).values()];
    this.byService.set(key, list);
    return list;
  }

  /** Every origin some slice names (pools for others can go). */
  origins(): Set<string> {
    const all = new Set<string>();
    for (const s of this.slices.values()) for (const b of [...s.ready, ...s.draining]) all.add(b.origin);
    return all;
  }
}

/**
 * Where the server finds apps and their machines (the informers; a fixed table in bench/proxy).
 * Handlers never ask it directly which App a Host is: appAtHost (host.ts) does, from both lookups.
 */
export interface RouteSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The App holding `<name>.<apps domain>`. */
  app(name: string): App | undefined;
  /** The App a verified custom domain serves at `hostname` (normalized); absent: no custom domains. */
  domainApp?(hostname: string): App | undefined;
  /** Its machines to send requests to (ready ones, else draining ones). */
  backends(app: App): Backend[];
  /** The same, waiting up to `timeoutMs` for the first one to appear. */
  whenBackends(app: App, timeoutMs: number): Promise<Backend[]>;
  /** Every machine any app may still route to. */
  origins(): Set<string>;
}

/** The three informers feeding the indexes. */
export class RouteTable implements RouteSource {
  readonly hosts = new HostIndex();
  readonly endpoints = new EndpointIndex();
  readonly domains = new DomainIndex();
  private readonly apps: k8s.ListWatch<App>;
  private readonly slices: k8s.ListWatch<k8s.V1EndpointSlice>;
  private readonly domainObjects: k8s.ListWatch<Domain>;

  constructor(kc: k8s.KubeConfig, log: Logger) {
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
    this.apps = new k8s.ListWatch<App>(
      `/apis/${group}/${version}/${pluralOf('App')}`,
      new k8s.Watch(kc),
      () => custom.listClusterCustomObject({ group, version, plural: pluralOf('App') }) as Promise<k8s.KubernetesListObject<App>>,
      false,
    );
    this.slices = new k8s.ListWatch<k8s.V1EndpointSlice>(
      '/apis/discovery.k8s.io/v1/endpointslices',
      new k8s.Watch(kc),
      () => discovery.listEndpointSliceForAllNamespaces({ labelSelector: appLabel }),
      false,
      appLabel,
    );
    this.domainObjects = new k8s.ListWatch<Domain>(
      `/apis/${group}/${version}/${pluralOf('Domain')}`,
      new k8s.Watch(kc),
      () => custom.listClusterCustomObject({ group, version, plural: pluralOf('Domain') }) as Promise<k8s.KubernetesListObject<Domain>>,
      false,
    );
    for (const verb of ['add', 'update'] as const) {
      this.apps.on(verb, (a) => this.hosts.upsert(a));
      this.slices.on(verb, (s) => this.endpoints.upsert(s));
      this.domainObjects.on(verb, (d) => this.domains.upsert(d));
    }
    this.apps.on('delete', (a) => this.hosts.remove(a));
    this.slices.on('delete', (s) => this.endpoints.remove(s));
    this.domainObjects.on('delete', (d) => this.domains.remove(d));
    keepWatching(this.apps, 'apps', log);
    keepWatching(this.slices, 'endpointslices', log);
    keepWatching(this.domainObjects, 'domains', log);
  }

  /** Resolves once every cache holds a first full list. */
  async start(): Promise<void> {
    await Promise.all([this.apps.start(), this.slices.start(), this.domainObjects.start()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.apps.stop(), this.slices.stop(), this.domainObjects.stop()]);
  }

  app(name: string): App | undefined {
    return this.hosts.holder(name);
  }

  domainApp(hostname: string): App | undefined {
    const target = this.domains.target(hostname);
    return target && this.hosts.app(target.namespace, target.app);
  }

  backends(app: App): Backend[] {
    return this.endpoints.backends(app.metadata.namespace!, app.metadata.name!);
  }

  whenBackends(app: App, timeoutMs: number): Promise<Backend[]> {
    return this.endpoints.whenBackends(app.metadata.namespace!, app.metadata.name!, timeoutMs);
  }

  origins(): Set<string> {
    return this.endpoints.origins();
  }
}
