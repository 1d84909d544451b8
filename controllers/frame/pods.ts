// What the controllers read the same way off any Pod they made: whether it serves, and which of a
// container's waiting reasons do not get better by waiting.
import type * as k8s from '@kubernetes/client-node';

/** Container waiting reasons that do not get better by waiting. */
export const hopelessWaiting: ReadonlySet<string> = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CrashLoopBackOff',
]);

/** Ready, and not on its way out. */
export function podReady(pod: k8s.V1Pod): boolean {
  return !pod.metadata?.deletionTimestamp && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}
