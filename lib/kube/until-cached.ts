// Read-your-writes over an informer cache. The API answers reads from its caches, so a client that
// writes and then reads at once (PUT then GET) could see the object as it was before its own write:
// the watch event that updates the cache arrives a few milliseconds after the write's response.
// Writes therefore wait, briefly and bounded, until the cache shows them.
import type { KubernetesObject } from '@kubernetes/client-node';

/** The part of a ListWatch this needs (a fake in unit tests). */
export interface ObjectCache<T extends KubernetesObject> {
  get(name: string, namespace?: string): T | undefined;
  on(verb: 'add' | 'update' | 'delete', cb: (obj: T) => void): void;
  off(verb: 'add' | 'update' | 'delete', cb: (obj: T) => void): void;
}

const verbs = ['add', 'update', 'delete'] as const;

/**
 * Resolves true once `done(cached object)` holds for namespace/name, false after `timeoutMs`
 * (the write stands either way; only a following read may be stale then).
 */
export function untilCached<T extends KubernetesObject>(
  cache: ObjectCache<T>,
  namespace: string,
  name: string,
  done: (cached: T | undefined) => boolean,
  timeoutMs = 3000,
): Promise<boolean> {
  if (done(cache.get(name, namespace))) return Promise.resolve(true);
  return new Promise((resolve) => {
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      for (const v of verbs) cache.off(v, check);
      resolve(ok);
    };
    const check = (obj: T) => {
      if (obj.metadata?.name === name && obj.metadata.namespace === namespace && done(cache.get(name, namespace))) finish(true);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    for (const v of verbs) cache.on(v, check);
  });
}

/**
 * Whether a cached resourceVersion is the written one or later. Versions are opaque strings by
 * the API conventions, but the apiserver's are etcd revisions (decimal integers), which Kubernetes
 * 1.35 made officially comparable for objects of one resource (KEP-5504); anything else counts
 * only when equal.
 */
export function isAtLeast(cached: string | undefined, written: string | undefined): boolean {
  if (!cached || !written) return false;
  if (cached === written) return true;
  return /^\d+$/.test(cached) && /^\d+$/.test(written) && BigInt(cached) >= BigInt(written);
}
