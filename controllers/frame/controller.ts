// The reconciler frame every kind uses, in the spirit of controller-runtime and korifi's
// PatchingReconciler: the primary kind's informer and the informers of what it owns feed one keyed
// work queue (controllers/frame/queue.ts); a periodic resync puts every key back, so whatever
// events were coalesced or lost, every object converges; the frame reads the object from the cache,
// calls the kind's reconciler, and owns the status write: observedGeneration, the Ready condition
// and the kind's other conditions, written only when they changed and only over the version it
// decided from (a conflict means the cache was behind: the key is looked at again, quietly).
//
// A kind's reconciler is `plan(observed) → desired` (pure, in its desired.ts) plus a thin apply of
// the plan; it returns what its status should say, never writes status itself. The apply side is
// the frame's too: server-side apply with a memory of what was applied (apply.ts; the frame forgets
// a key when what it applied is deleted), finalizers (finalizers.ts), Events (events.ts); and a
// kind's setup (controllers/<kind>/setup.ts, on frame/setup.ts) declares what its controller watches.
import type * as k8s from '@kubernetes/client-node';
import { kubeStatus } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import type { Applier } from './apply.js';
import { WorkQueue, type Backoff, type QueueStats } from './queue.js';
import { condition, mergePatchBetween, sameJson, type Condition, type ConditionInput } from './status.js';

export interface Outcome<S> {
  /** The kind's own status fields; the frame adds observedGeneration and conditions. */
  status?: S;
  /** The Ready condition; without it (and without status) no status is written. */
  ready?: Omit<ConditionInput, 'type'>;
  /** The kind's other conditions, after Ready. */
  conditions?: ConditionInput[];
  /** Look again after this long even without a change (deadlines, expiry). */
  requeueMs?: number;
  /** The reconcile deleted the object (an expired App): there is no status to write. */
  deleted?: boolean;
}

export interface Reconciler<T, S> {
  reconcile(obj: T, now: Date): Promise<Outcome<S>>;
  /** The object left the cache (deleted): drop what was remembered about it. */
  forget?(obj: T): void;
}

/** Writes an object's whole status as a merge patch carrying the resourceVersion it was decided from. */
export type StatusWriter<T> = (obj: T, patch: unknown) => Promise<void>;

/** What the status subresource's merge patch for a custom resource of `plural` needs. */
export function customStatusWriter<T extends k8s.KubernetesObject>(
  custom: k8s.CustomObjectsApi,
  group: string,
  version: string,
  plural: string,
  options: k8s.ConfigurationOptions,
): StatusWriter<T> {
  return async (obj, status) => {
    await custom.patchNamespacedCustomObjectStatus(
      {
        group,
        version,
        plural,
        namespace: obj.metadata!.namespace!,
        name: obj.metadata!.name!,
        body: { metadata: { resourceVersion: obj.metadata!.resourceVersion }, status },
      },
      options,
    );
  };
}

/** The part of an informer the frame reads: its events and its cache. */
export type Informer<T extends k8s.KubernetesObject> = Pick<k8s.ListWatch<T>, 'on' | 'get' | 'list'>;

export interface ControllerOptions<T extends k8s.KubernetesObject, S> {
  kind: string;
  primary: Informer<T>;
  reconciler: Reconciler<T, S>;
  /** Without one, the reconciler's status is not written (a kind whose status is not ours). */
  writeStatus?: StatusWriter<T>;
  /** What the reconciler applies through: the frame forgets what it applied when that goes. */
  applier?: Pick<Applier, 'forget'>;
  /** The applier's key of a primary object, forgotten when the object is deleted (default: none). */
  appliedKeyOf?: (obj: T) => string;
  log: Logger;
  concurrency?: number;
  /** Every key is reconciled again this often, changed or not. */
  resyncMs?: number;
  backoff?: Backoff;
  /** Retry a status conflict after this long (the cache catches up meanwhile). */
  conflictRetryMs?: number;
  clock?: () => Date;
}

export const defaultResyncMs = 60_000;

type WithStatus = k8s.KubernetesObject & { status?: object };

export function keyOf(obj: k8s.KubernetesObject): string {
  return obj.metadata?.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata!.name!;
}

function splitKey(key: string): [namespace: string | undefined, name: string] {
  const slash = key.indexOf('/');
  return slash === -1 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
}

export class Controller<T extends WithStatus, S extends object> {
  readonly queue: WorkQueue;
  private resyncTimer: NodeJS.Timeout | undefined;
  private readonly clock: () => Date;
  private reconciles = 0;
  private statusWrites = 0;
  private conflicts = 0;
  /** Status writes that only a resync brought about: a change no event announced (or one lost). */
  private resyncRepairs = 0;
  /** Keys on the queue because of the resync alone (an event since takes a key out). */
  private readonly viaResync = new Set<string>();
  private statsTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: ControllerOptions<T, S>) {
    this.clock = opts.clock ?? (() => new Date());
    this.queue = new WorkQueue(
      (key) => this.process(key),
      (key, err, retryMs, attempt) => opts.log.warn({ err, kind: opts.kind, key, retryMs, attempt }, 'Reconcile failed; retrying'),
      opts.concurrency ?? 4,
      opts.backoff,
    );
    const enqueue = (obj: T) => this.add(keyOf(obj));
    opts.primary.on('add', enqueue);
    opts.primary.on('update', enqueue);
    opts.primary.on('delete', (obj: T) => {
      if (opts.applier && opts.appliedKeyOf) opts.applier.forget(opts.appliedKeyOf(obj));
      opts.reconciler.forget?.(obj);
    });
  }

  /**
   * Reconcile the owner whenever something it owns changes (controller-runtime's Owns and
   * Watches): `owners` maps the child to the keys of the objects to look at again. With `forget`,
   * a deleted child's applier keys are forgotten first (the reconcile that follows must not trust
   * the old apply), so it is applied again.
   */
  watches<C extends k8s.KubernetesObject>(
    child: Informer<C>,
    owners: (child: C) => string[],
    opts: { forget?: (child: C) => string[] } = {},
  ): this {
    const enqueue = (c: C) => {
      for (const key of owners(c)) this.add(key);
    };
    child.on('add', enqueue);
    child.on('update', enqueue);
    child.on('delete', (c: C) => {
      if (opts.forget) this.forgetApplied(opts.forget(c), 'info');
      enqueue(c);
    });
    return this;
  }

  /**
   * When a child is deleted, its applier keys are forgotten (it is applied again on the owner's
   * next reconcile) and, with `requeue`, those keys are put on the queue now.
   */
  forgets<C extends k8s.KubernetesObject>(child: Informer<C>, keys: (child: C) => string[], opts: { requeue?: boolean } = {}): this {
    child.on('delete', (c: C) => {
      const gone = keys(c);
      this.forgetApplied(gone, 'debug');
      if (opts.requeue) for (const key of gone) this.add(key);
    });
    return this;
  }

  private forgetApplied(keys: readonly string[], level: 'info' | 'debug'): void {
    for (const key of keys)
      if (this.opts.applier?.forget(key))
        this.opts.log[level]({ kind: this.opts.kind, key }, 'An object it applied was deleted; it is applied again');
  }

  /** The kind it reconciles (its metrics' label). */
  get kind(): string {
    return this.opts.kind;
  }

  /** Puts a key on the queue because something about it changed. */
  add(key: string): void {
    this.viaResync.delete(key);
    this.queue.add(key);
  }

  /** Puts every cached object's key on the queue (the periodic resync does this). */
  resync(): void {
    for (const obj of this.opts.primary.list()) {
      const key = keyOf(obj);
      // A key already on the queue is there for an event: the resync adds nothing to it.
      if (this.queue.queued(key)) continue;
      this.viaResync.add(key);
      this.queue.add(key);
    }
  }

  /** Call once the informers have started: every object is reconciled now, and again each resync. */
  start(): void {
    // The first pass is no resync: every object is new to this process.
    for (const obj of this.opts.primary.list()) this.add(keyOf(obj));
    this.resyncTimer = setInterval(() => this.resync(), this.opts.resyncMs ?? defaultResyncMs);
    this.resyncTimer.unref();
    // What the controller did lately, when it did anything: enough to see a backlog or a storm.
    let last = '';
    this.statsTimer = setInterval(() => {
      const stats = this.stats();
      const now = JSON.stringify([stats.reconciles, stats.statusWrites, stats.conflicts, stats.failing, stats.waiting]);
      if (now !== last) this.opts.log.info({ kind: this.opts.kind, ...stats }, 'Controller activity');
      last = now;
    }, 30_000);
    this.statsTimer.unref();
  }

  stop(): void {
    clearInterval(this.resyncTimer);
    clearInterval(this.statsTimer);
    this.queue.stop();
  }

  stats(): QueueStats & { reconciles: number; statusWrites: number; conflicts: number; resyncRepairs: number } {
    return {
      ...this.queue.stats(),
      reconciles: this.reconciles,
      statusWrites: this.statusWrites,
      conflicts: this.conflicts,
      resyncRepairs: this.resyncRepairs,
    };
  }

  private async process(key: string): Promise<{ requeueMs?: number }> {
    const resynced = this.viaResync.delete(key);
    const [namespace, name] = splitKey(key);
    const obj = this.opts.primary.get(name, namespace);
    if (!obj) return {};
    this.reconciles += 1;
    const now = this.clock();
    const outcome = await this.opts.reconciler.reconcile(obj, now);
    const again = outcome.requeueMs !== undefined ? { requeueMs: outcome.requeueMs } : {};
    if (outcome.deleted || !this.opts.writeStatus || (!outcome.status && !outcome.ready)) return again;
    const status = this.statusOf(obj, outcome, now);
    if (sameJson(obj.status ?? {}, status)) return again;
    try {
      await this.opts.writeStatus(obj, mergePatchBetween(obj.status ?? {}, status));
      this.statusWrites += 1;
      if (resynced) {
        this.resyncRepairs += 1;
        this.opts.log.info({ kind: this.opts.kind, key }, 'The resync found a status change no event had brought');
      }
    } catch (err) {
      const code = kubeStatus(err);
      if (code === 404) return {};
      if (code !== 409) throw err;
      // Written by someone since the version in the cache (often our own last write): decide again
      // from the newer version, which the watch is about to deliver.
      this.conflicts += 1;
      this.opts.log.debug({ kind: this.opts.kind, key }, 'Status changed since the cached version; reconciling again');
      return { requeueMs: Math.min(outcome.requeueMs ?? Infinity, this.opts.conflictRetryMs ?? 1000) };
    }
    return again;
  }

  private statusOf(obj: T, outcome: Outcome<S>, now: Date): Record<string, unknown> {
    const generation = obj.metadata?.generation ?? 0;
    const previous = (obj.status as { conditions?: Condition[] } | undefined)?.conditions;
    const inputs = [...(outcome.ready ? [{ type: 'Ready', ...outcome.ready }] : []), ...(outcome.conditions ?? [])];
    return {
      ...(outcome.status as Record<string, unknown> | undefined),
      observedGeneration: generation,
      conditions: inputs.map((c) => condition(previous, c, generation, now)),
    };
  }
}
