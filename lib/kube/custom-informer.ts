// A cluster-wide informer of one of the platform's custom resources (every account's Apps or
// Sandboxes), restarted with back-off on errors: what the API's repositories read from.
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../resources/index.js';
import type { Logger } from '../logger.js';
import { keepWatching } from './keep-watching.js';

export function customInformer<T extends k8s.KubernetesObject>(kc: k8s.KubeConfig, plural: string, log: Logger): { informer: k8s.ListWatch<T>; custom: k8s.CustomObjectsApi } {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const informer = new k8s.ListWatch<T>(
    `/apis/${group}/${version}/${plural}`,
    new k8s.Watch(kc),
    () => custom.listClusterCustomObject({ group, version, plural }) as Promise<k8s.KubernetesListObject<T>>,
    false,
  );
  keepWatching(informer, plural, log);
  return { informer, custom };
}
