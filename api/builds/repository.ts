// Builds as the API sees them now: read from an informer's cache of every account's Build objects,
// written as Build custom resources in the account's namespace, owned by their App (they go with
// it). The records that outlive them are lib/builds/store.ts's.
import * as k8s from '@kubernetes/client-node';
import { buildAnnotations } from '../../lib/builds/index.js';
import { apiVersion, labels, managers, pluralOf } from '../../lib/contract.js';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import { group, version, type Build, type BuildSpec } from '../../lib/resources/index.js';
import type { AppRecord } from '../repositories/app-record.js';

const plural = pluralOf('Build');

export class BuildRepository {
  private readonly informer: k8s.ListWatch<Build>;
  private readonly custom: k8s.CustomObjectsApi;

  constructor(kc: k8s.KubeConfig, log: Logger) {
    ({ informer: this.informer, custom: this.custom } = customInformer<Build>(kc, plural, log));
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  get(namespace: string, id: string): Build | undefined {
    return this.informer.get(id, namespace);
  }

  /** Every Build in the cache (the recorder goes through them at start). */
  all(): readonly Build[] {
    return this.informer.list();
  }

  /** The app's Builds in the cache. */
  ofApp(namespace: string, app: string): Build[] {
    return this.informer.list(namespace).filter((b) => b.spec.app === app);
  }

  async create(namespace: string, id: string, app: AppRecord, spec: BuildSpec): Promise<Build> {
    const created = await createCustomObject<Build>(
      this.custom,
      'Build',
      namespace,
      {
        name: id,
        labels: { [labels.managedBy]: managers.api },
        ownerReferences: [{ apiVersion, kind: 'App', name: app.name, uid: app.id }],
      },
      spec,
    );
    await untilCached(this.informer, namespace, id, (c) => c !== undefined);
    return created;
  }

  /** Writes annotations on the Build (the builder's plan and output, a cancel); false when it is gone. */
  async annotate(namespace: string, id: string, annotations: Record<string, string>): Promise<boolean> {
    try {
      await this.custom.patchNamespacedCustomObject(
        { group, version, namespace, plural, name: id, body: { metadata: { annotations } } },
        mergePatch,
      );
      return true;
    } catch (err) {
      if (kubeStatus(err) === 404) return false;
      throw err;
    }
  }

  cancel(namespace: string, id: string, at: Date): Promise<boolean> {
    return this.annotate(namespace, id, { [buildAnnotations.cancel]: at.toISOString() });
  }

  /** Calls `fn` with every Build the cache adds or changes (the recorder follows them). */
  onChange(fn: (b: Build) => void): void {
    this.informer.on('add', fn);
    this.informer.on('update', fn);
  }

  /** The Build once `done` holds for it in the cache, or as last cached after `timeoutMs`. */
  async until(namespace: string, id: string, done: (b: Build) => boolean, timeoutMs: number): Promise<Build | undefined> {
    await untilCached<Build>(this.informer, namespace, id, (c) => c !== undefined && done(c), timeoutMs);
    return this.informer.get(id, namespace);
  }
}
