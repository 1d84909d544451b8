// The apply side every kind shares: server-side apply (forced, as the controllers' field manager)
// of the objects a reconciler plans, and a memory of what was last applied per key (a hash of the
// shape, and the resourceVersion the apply returned where a kind needs it), so an unchanged shape
// costs no apiserver write. The frame forgets a key when an object it applied is deleted (the
// informers' delete events; controllers/frame/controller.ts), so the next reconcile applies it again.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { managers } from '../../lib/contract.js';
import { serverSideApply } from '../../lib/kube/client.js';

/** The API clients applies go through; only those of the kinds a reconciler applies are needed. */
export interface ApplyClients {
  core?: k8s.CoreV1Api;
  networking?: k8s.NetworkingV1Api;
  batch?: k8s.BatchV1Api;
  custom?: k8s.CustomObjectsApi;
}

/** What was last applied under a key. */
export interface Applied {
  /** The hash of the shape (applier.hash). */
  hash: string;
  /** The resourceVersion the apply returned, when the kind remembered it. */
  resourceVersion?: string | undefined;
}

function need<C>(client: C | undefined, what: string): C {
  if (!client) throw new Error(`no API client to apply ${what} with`);
  return client;
}

/**
 * Each reconciler has an Applier of its own: keys are only unique within one kind (an App's uid, a
 * namespace's name), so two kinds sharing one would forget each other's applies.
 */
export class Applier {
  private readonly applied = new Map<string, Applied>();
  // How many forgets there were: an apply that began before a forget (the object deleted while it
  // was being applied) must not be remembered over it, or it would never be applied again. One
  // count for all keys (not a map that would keep every deleted key): a forget of another key
  // only costs one more apply.
  private forgets = 0;
  private readonly forgetHooks: Array<(key: string) => void> = [];

  constructor(
    private readonly clients: ApplyClients,
    private readonly fieldManager: string = managers.controllers,
  ) {}

  /** The hash of a shape (any JSON value): what is remembered of it. */
  static hash(shape: unknown): string {
    return createHash('sha256')
      .update(typeof shape === 'string' ? shape : JSON.stringify(shape))
      .digest('base64url');
  }

  /** What was last applied under `key`, if anything (since it was last forgotten). */
  last(key: string): Applied | undefined {
    return this.applied.get(key);
  }

  /** Whether `shape` is what was last applied under `key`. */
  unchanged(key: string, shape: unknown): boolean {
    return this.applied.get(key)?.hash === Applier.hash(shape);
  }

  /** A mark to pass to remember(), taken before an apply begins. */
  mark(): number {
    return this.forgets;
  }

  /**
   * Remembers `shape` as applied under `key` (with the resourceVersion the apply returned, if
   * wanted), unless the key was forgotten since `since` (mark(), taken before applying).
   */
  remember(key: string, shape: unknown, resourceVersion?: string, since?: number): void {
    if (since !== undefined && since !== this.forgets) return;
    this.applied.set(key, { hash: Applier.hash(shape), ...(resourceVersion !== undefined ? { resourceVersion } : {}) });
  }

  /** What was applied under `key` is gone (or untrusted): the next apply of it goes through. Whether anything was remembered. */
  forget(key: string): boolean {
    const had = this.applied.delete(key);
    this.forgets += 1;
    for (const hook of this.forgetHooks) hook(key);
    return had;
  }

  /** Called with every key forgotten: for what a kind remembers beside its applies. */
  onForget(hook: (key: string) => void): void {
    this.forgetHooks.push(hook);
  }

  /**
   * Server-side applies one object (forced: a hand edit of a field we own is undone) through the
   * client of its kind. A custom resource needs its plural.
   */
  async apply<T extends k8s.KubernetesObject>(namespace: string, obj: T, opts: { plural?: string } = {}): Promise<T> {
    const base = { namespace, name: obj.metadata!.name!, fieldManager: this.fieldManager, force: true };
    const what = `${obj.kind} ${namespace}/${base.name}`;
    const { core, networking, batch, custom } = this.clients;
    const body = obj as never;
    switch (`${obj.apiVersion}/${obj.kind}`) {
      case 'v1/Service':
        return (await need(core, what).patchNamespacedService({ ...base, body }, serverSideApply)) as T;
      case 'v1/LimitRange':
        return (await need(core, what).patchNamespacedLimitRange({ ...base, body }, serverSideApply)) as T;
      case 'v1/ResourceQuota':
        return (await need(core, what).patchNamespacedResourceQuota({ ...base, body }, serverSideApply)) as T;
      case 'v1/ConfigMap':
        return (await need(core, what).patchNamespacedConfigMap({ ...base, body }, serverSideApply)) as T;
      case 'v1/Secret':
        return (await need(core, what).patchNamespacedSecret({ ...base, body }, serverSideApply)) as T;
      case 'networking.k8s.io/v1/NetworkPolicy':
        return (await need(networking, what).patchNamespacedNetworkPolicy({ ...base, body }, serverSideApply)) as T;
      case 'batch/v1/CronJob':
        return (await need(batch, what).patchNamespacedCronJob({ ...base, body }, serverSideApply)) as T;
    }
    const slash = obj.apiVersion?.indexOf('/') ?? -1;
    if (!opts.plural || slash === -1) throw new Error(`cannot apply ${what}: not a kind the applier knows, and no plural`);
    return (await need(custom, what).patchNamespacedCustomObject(
      { ...base, group: obj.apiVersion!.slice(0, slash), version: obj.apiVersion!.slice(slash + 1), plural: opts.plural, body },
      serverSideApply,
    )) as T;
  }

  /**
   * Applies `objects` in order, unless they are what was last applied under `key` (and `force` is
   * not set: something applied is missing from the cache); then remembers them. Whether it applied.
   */
  async applyAll(key: string, namespace: string, objects: readonly k8s.KubernetesObject[], force = false): Promise<boolean> {
    if (!force && this.unchanged(key, objects)) return false;
    const since = this.mark();
    for (const obj of objects) await this.apply(namespace, obj);
    this.remember(key, objects, undefined, since);
    return true;
  }
}
