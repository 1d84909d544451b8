// Finalizers as every kind that holds its objects uses them (controller-runtime's controllerutil
// AddFinalizer/RemoveFinalizer, written at once): a merge patch of metadata.finalizers carrying the
// resourceVersion it was decided from, so a finalizer list changed meanwhile is never overwritten
// (the patch is refused with 409 and the key is looked at again).
import type * as k8s from '@kubernetes/client-node';
import { mergePatch } from '../../lib/kube/client.js';

/** Writes a merge patch of an object's metadata (the object's own kind's patch call). */
export type MetadataPatcher<T extends k8s.KubernetesObject> = (obj: T, metadata: Record<string, unknown>) => Promise<unknown>;

/** The metadata patcher of a namespaced custom resource. */
export function customMetadataPatcher<T extends k8s.KubernetesObject>(
  custom: k8s.CustomObjectsApi,
  group: string,
  version: string,
  plural: string,
): MetadataPatcher<T> {
  return (obj, metadata) =>
    custom.patchNamespacedCustomObject(
      { group, version, plural, namespace: obj.metadata!.namespace!, name: obj.metadata!.name!, body: { metadata } },
      mergePatch,
    );
}

export function hasFinalizer(obj: k8s.KubernetesObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/** Adds `finalizer` unless the object has it. Whether it wrote. */
export async function ensureFinalizer<T extends k8s.KubernetesObject>(
  patch: MetadataPatcher<T>,
  obj: T,
  finalizer: string,
): Promise<boolean> {
  if (hasFinalizer(obj, finalizer)) return false;
  await patch(obj, { resourceVersion: obj.metadata?.resourceVersion, finalizers: [...(obj.metadata?.finalizers ?? []), finalizer] });
  return true;
}

/** Removes `finalizer` if the object has it (the object may then go). Whether it wrote. */
export async function removeFinalizer<T extends k8s.KubernetesObject>(
  patch: MetadataPatcher<T>,
  obj: T,
  finalizer: string,
): Promise<boolean> {
  if (!hasFinalizer(obj, finalizer)) return false;
  await patch(obj, {
    resourceVersion: obj.metadata?.resourceVersion,
    finalizers: obj.metadata!.finalizers!.filter((f) => f !== finalizer),
  });
  return true;
}
