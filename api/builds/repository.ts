// Builds as the API sees them now: read from an informer's cache of every account's Build objects,
// written as Build custom resources in the account's namespace, owned by their App (they go with
// it). The records that outlive them are lib/builds/store.ts's. Handlers and actions read a Build
// as a BuildRecord (its fields named and typed, read once); the recorder, the log stream and the
// builders' endpoint read the custom resources themselves (all, ofApp, get, until).
import * as k8s from '@kubernetes/client-node';
import { buildAnnotations, type BuildPhase } from '../../lib/builds/index.js';
import type { BuildPlan } from '../../lib/builds/plan.js';
import { apiVersion, labels, managers, pluralOf } from '../../lib/contract.js';
import { DomainError } from '../../lib/errors.js';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import { group, version, type Build, type BuildSpec } from '../../lib/resources/index.js';
import type { AppRecord } from '../repositories/app-record.js';

const plural = pluralOf('Build');

/**
 * A Build as the API's handlers and actions see it: the custom resource read once into named, typed
 * fields. What its status has not said yet is undefined (the build's stored record says it then).
 */
export interface BuildRecord {
  readonly id: string;
  readonly namespace: string;
  readonly app: string;
  readonly source: BuildSpec['source'];
  readonly deploy: boolean;
  readonly phase: BuildPhase | undefined;
  readonly reason: string | undefined;
  readonly message: string | undefined;
  /** The builder's plan (lib/builds/plan.ts), once made. */
  readonly plan: BuildPlan | undefined;
  readonly artifactDigest: string | undefined;
  readonly artifactBytes: number | undefined;
  readonly image: string | undefined;
  /** The earlier Build of the same source whose output this one is. */
  readonly reusedFrom: string | undefined;
  readonly startedAt: Date | undefined;
  readonly completedAt: Date | undefined;
}

const records = new WeakMap<Build, BuildRecord>();
const dateOf = (s: string | undefined) => (s ? new Date(s) : undefined);

/**
 * The record of a Build as read (informer objects are immutable: one record each). The apiserver
 * sets a name and a namespace on everything it stores, and a Build names its app: a resource
 * without them is not one it answered, and is refused as a DomainError rather than shown half.
 */
export function buildRecord(b: Build): BuildRecord {
  const known = records.get(b);
  if (known) return known;
  const m = b.metadata;
  const missing = [!m?.name && 'metadata.name', !m?.namespace && 'metadata.namespace', !b.spec?.app && 'spec.app']
    .filter(Boolean)
    .join(', ');
  if (missing)
    throw new DomainError('unavailable', `cannot read build ${m?.name ?? '(unnamed)'}: the cluster answered it without ${missing}`);
  const st = b.status;
  const record: BuildRecord = Object.freeze({
    id: m.name!,
    namespace: m.namespace!,
    app: b.spec.app,
    source: b.spec.source,
    deploy: b.spec.deploy ?? false,
    phase: st?.phase,
    reason: st?.reason ?? undefined,
    message: st?.message ?? undefined,
    plan: (st?.plan as BuildPlan | undefined) ?? undefined,
    artifactDigest: st?.artifact?.digest ?? undefined,
    artifactBytes: st?.artifact?.sizeBytes ?? undefined,
    image: st?.image ?? undefined,
    reusedFrom: st?.reusedFrom ?? undefined,
    startedAt: dateOf(st?.startedAt),
    completedAt: dateOf(st?.completedAt),
  });
  records.set(b, record);
  return record;
}

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

  /** The Build's record, as cached. */
  record(namespace: string, id: string): BuildRecord | undefined {
    const b = this.get(namespace, id);
    return b && buildRecord(b);
  }

  /** Every Build in the cache (the recorder goes through them at start). */
  all(): readonly Build[] {
    return this.informer.list();
  }

  /** The app's Builds in the cache. */
  ofApp(namespace: string, app: string): Build[] {
    return this.informer.list(namespace).filter((b) => b.spec.app === app);
  }

  async create(namespace: string, id: string, app: AppRecord, spec: BuildSpec): Promise<BuildRecord> {
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
    return buildRecord(created);
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

  /** The Build's record once `done` holds for it in the cache, or as last cached after `timeoutMs`. */
  async untilRecord(namespace: string, id: string, done: (b: BuildRecord) => boolean, timeoutMs: number): Promise<BuildRecord | undefined> {
    const b = await this.until(namespace, id, (c) => done(buildRecord(c)), timeoutMs);
    return b && buildRecord(b);
  }
}
