// A cluster-wide informer of one of the platform's custom resources (every account's Apps or
// Sandboxes), restarted with back-off on errors: what the API's repositories read from.
import * as k8s from '@kubernetes/client-node';
import { pluralOf } from '../contract.js';
import { DomainError } from '../errors.js';
import { apiVersion, group, version, type Kind } from '../resources/index.js';
import { kubeStatus, rejectionMessage } from './client.js';
import type { Logger } from '../logger.js';
import { keepWatching } from './keep-watching.js';

export function customInformer<T extends k8s.KubernetesObject>(
  kc: k8s.KubeConfig,
  plural: string,
  log: Logger,
): { informer: k8s.ListWatch<T>; custom: k8s.CustomObjectsApi } {
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

/**
 * Creates one of the platform's custom objects for a tenant. The apiserver's 422 (the CRD's schema
 * or validation rules refused it) is the caller's input refused: a DomainError('invalid') naming the
 * field; anything else (a 409 among them, whose wording is the caller's) is thrown as it came.
 */
export async function createCustomObject<T extends k8s.KubernetesObject>(
  custom: k8s.CustomObjectsApi,
  kind: Kind,
  namespace: string,
  metadata: k8s.V1ObjectMeta,
  spec: unknown,
): Promise<T> {
  try {
    return (await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: pluralOf(kind),
      body: { apiVersion, kind, metadata, spec },
    })) as T;
  } catch (err) {
    if (kubeStatus(err) === 422) throw new DomainError('invalid', `invalid ${kind.toLowerCase()}: ${rejectionMessage(err, kind)}`);
    throw err;
  }
}
