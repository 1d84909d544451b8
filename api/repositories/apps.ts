// Apps as the API sees them: read from an informer's cache (no apiserver call per request; a cache
// miss right after a write falls back to one read), written as App custom resources in the
// account's namespace. A write returns once the cache shows it, so a read that follows it sees it
// (lib/kube/until-cached.ts). Kubernetes errors are translated here into domain errors (lib/errors.ts), never leaked.
import * as k8s from '@kubernetes/client-node';
import { kubeStatus, mergePatch, rejectionMessage } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { isAtLeast, untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import type { HostnameStore } from '../../lib/hostnames.js';
import { apiVersion, group, version, type App } from '../../lib/resources/index.js';
import { DomainError } from '../../lib/errors.js';
import { dnsLabel, labels, managers, pluralOf } from '../../lib/contract.js';
import { appRecord, type AppRecord } from './app-record.js';

const plural = pluralOf('App');

export class AppRepository {
  private readonly informer: k8s.ListWatch<App>;
  private readonly custom: k8s.CustomObjectsApi;

  /**
   * `identity`: how the machines of Apps created here verify identity assertions (spec.identity:
   * the API knows the issuer and where machines reach its keys; an App applied without it gets the
   * controllers' configured values).
   */
  constructor(
    kc: k8s.KubeConfig,
    log: Logger,
    private readonly identity?: { jwksUrl: string; issuer: string },
    /** Claims each new App's hostname across accounts first (lib/hostnames.ts). */
    private readonly hostnames?: { store: HostnameStore; appsDomain: string },
  ) {
    ({ informer: this.informer, custom: this.custom } = customInformer<App>(kc, plural, log));
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** The uids of every App in the cluster (sign-in data of any other uid belongs to a deleted App). */
  liveUids(): Set<string> {
    return new Set(this.informer.list().map((a) => a.metadata.uid!));
  }

  /** Every App in the cache. */
  all(): readonly App[] {
    return this.informer.list();
  }

  /** Every App in the cache, as [namespace, name]. */
  names(): Array<[string, string]> {
    return this.informer.list().map((a) => [a.metadata.namespace!, a.metadata.name!]);
  }

  list(namespace: string): AppRecord[] {
    return this.informer
      .list(namespace)
      .map(appRecord)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** By name or by ID (the App's uid). */
  async find(namespace: string, idOrName: string): Promise<AppRecord | undefined> {
    const cached = this.informer.get(idOrName, namespace) ?? this.informer.list(namespace).find((a) => a.metadata.uid === idOrName);
    if (cached) return appRecord(cached);
    return dnsLabel.test(idOrName) ? this.read(namespace, idOrName) : undefined;
  }

  async create(namespace: string, name: string, spec: App['spec']): Promise<AppRecord> {
    return this.createWith(namespace, { name }, spec);
  }

  /**
   * Merge-patches the App's spec (null removes a field). With `resourceVersion`, only if the App
   * has not changed since (409 otherwise), for writes that decide from what they read.
   */
  async patchSpec(namespace: string, name: string, spec: Record<string, unknown>, resourceVersion?: string): Promise<AppRecord> {
    try {
      const written = (await this.custom.patchNamespacedCustomObject(
        { group, version, namespace, plural, name, body: { ...(resourceVersion ? { metadata: { resourceVersion } } : {}), spec } },
        mergePatch,
      )) as App;
      await untilCached<App>(this.informer, namespace, name, (c) =>
        isAtLeast(c?.metadata.resourceVersion, written.metadata.resourceVersion),
      );
      return appRecord(written);
    } catch (err) {
      if (kubeStatus(err) === 404) throw new DomainError('not_found', `app ${name} not found`);
      if (kubeStatus(err) === 409) throw new DomainError('conflict', `app ${name} changed meanwhile; retry`);
      if (kubeStatus(err) === 422) throw new DomainError('invalid', `invalid app: ${rejectionMessage(err, 'App')}`);
      throw err;
    }
  }

  /**
   * A change of the App's spec decided from the App itself: written only if the App is still the
   * one decided from (its resourceVersion), so that two decisions at once cannot both land; when
   * it changed meanwhile (its status changes all the time) the decision is made again on the App
   * as the apiserver has it now. `decide` answers the spec patch, or undefined for no change; its
   * errors are the caller's. Answers the App as written (or as read, when nothing changed).
   */
  async updateSpec(namespace: string, name: string, decide: (app: AppRecord) => Record<string, unknown> | undefined): Promise<AppRecord> {
    for (let attempt = 1; ; attempt++) {
      const app = attempt === 1 ? await this.find(namespace, name) : await this.read(namespace, name);
      if (!app) throw new DomainError('not_found', `app ${name} not found`);
      const patch = decide(app);
      if (!patch) return app;
      try {
        return await this.patchSpec(namespace, name, patch, app.resourceVersion);
      } catch (err) {
        if (!(err instanceof DomainError && err.kind === 'conflict') || attempt >= 5) throw err;
      }
    }
  }

  /** From the apiserver, not the cache (what a write conditioned on its version needs). */
  private async read(namespace: string, name: string): Promise<AppRecord | undefined> {
    try {
      return appRecord((await this.custom.getNamespacedCustomObject({ group, version, namespace, plural, name })) as App);
    } catch (err) {
      if (kubeStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /** Creates an App with its full metadata (previews and forks carry labels and owners). */
  async createWith(
    namespace: string,
    metadata: { name: string; labels?: Record<string, string>; owner?: AppRecord },
    spec: App['spec'],
  ): Promise<AppRecord> {
    const claim = await this.claimHostname(namespace, metadata.name);
    try {
      const created = await createCustomObject<App>(
        this.custom,
        'App',
        namespace,
        {
          name: metadata.name,
          labels: { [labels.managedBy]: managers.api, ...metadata.labels },
          // Owned, not controlled: deleting the owner deletes this App (previews go with their app).
          ...(metadata.owner
            ? {
                ownerReferences: [
                  {
                    apiVersion,
                    kind: 'App',
                    name: metadata.owner.name,
                    uid: metadata.owner.id,
                    controller: false,
                    blockOwnerDeletion: true,
                  },
                ],
              }
            : {}),
        },
        this.identity && !spec.identity ? { ...spec, identity: { ...this.identity } } : spec,
      );
      await untilCached<App>(this.informer, namespace, metadata.name, (c) => c?.metadata.uid === created.metadata.uid);
      return appRecord(created);
    } catch (err) {
      if (claim?.fresh) await this.hostnames!.store.forget(namespace, metadata.name);
      if (kubeStatus(err) === 409) throw new DomainError('conflict', `an app named "${metadata.name}" already exists`);
      throw err;
    }
  }

  /** The hostname of a new App, claimed for its account; a 409 when another account holds it. */
  private async claimHostname(namespace: string, name: string): Promise<{ fresh: boolean } | undefined> {
    if (!this.hostnames) return undefined;
    const host = `${name}.${this.hostnames.appsDomain}`;
    const claim = await this.hostnames.store.claim(namespace, name);
    if (claim.ok) return claim;
    if (claim.reason === 'held') {
      throw new DomainError(
        'conflict',
        `the hostname ${host} is held until ${claim.until.toISOString()} for the account whose app used it; choose another name`,
      );
    }
    throw new DomainError('conflict', `the hostname ${host} belongs to another account's app; choose another name`);
  }

  /** Calls `fn` with every App the cache adds or changes (the deploy recorder follows status). */
  onChange(fn: (app: App) => void): void {
    this.informer.on('add', fn);
    this.informer.on('update', fn);
  }

  onDelete(fn: (app: App) => void): void {
    this.informer.on('delete', fn);
  }

  /** Deletes the App; its machines, Service and the rest go with it (owner references). */
  async delete(namespace: string, name: string): Promise<void> {
    try {
      await this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name });
      await untilCached<App>(this.informer, namespace, name, (c) => !c || c.metadata.deletionTimestamp !== undefined);
    } catch (err) {
      if (kubeStatus(err) === 404) throw new DomainError('not_found', `app ${name} not found`);
      throw err;
    }
  }
}
