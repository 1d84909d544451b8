// A cluster-wide informer of the Pods carrying a label (every account's machines), restarted with
// back-off on errors: what the API's machine meter reads from.
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../logger.js';
import { keepWatching } from './keep-watching.js';

export function podInformer(kc: k8s.KubeConfig, labelSelector: string, log: Logger): k8s.ListWatch<k8s.V1Pod> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const informer = new k8s.ListWatch<k8s.V1Pod>(
    '/api/v1/pods',
    new k8s.Watch(kc),
    () => core.listPodForAllNamespaces({ labelSelector }),
    false,
    labelSelector,
  );
  keepWatching(informer, `pods (${labelSelector})`, log);
  return informer;
}
