// The values of a pod's fields as env `fieldRef` and downward API volumes read them.
import type * as k8s from '@kubernetes/client-node';

export class FieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldError';
  }
}

/** A pod field by its fieldPath; `metadata.labels` without a key is every label, one `k="v"` a line. */
export function podField(pod: k8s.V1Pod, fieldPath: string, podIP?: string): string {
  const m = /^metadata\.(labels|annotations)(?:\['(.+)'\])?$/.exec(fieldPath);
  if (m) {
    const map = (m[1] === 'labels' ? pod.metadata?.labels : pod.metadata?.annotations) ?? {};
    if (m[2] !== undefined) return map[m[2]] ?? '';
    return Object.entries(map)
      .map(([k, v]) => `${k}="${v}"`)
      .join('\n');
  }
  const values: Record<string, string | undefined> = {
    'metadata.name': pod.metadata?.name,
    'metadata.namespace': pod.metadata?.namespace,
    'metadata.uid': pod.metadata?.uid,
    'spec.nodeName': pod.spec?.nodeName,
    'spec.serviceAccountName': pod.spec?.serviceAccountName,
    'status.podIP': podIP ?? pod.status?.podIP,
    'status.hostIP': pod.status?.hostIP,
  };
  if (!(fieldPath in values)) throw new FieldError(`unsupported fieldRef ${fieldPath}`);
  return values[fieldPath] ?? '';
}
