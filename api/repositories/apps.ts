// Apps as the API sees them: read from an informer's cache (no apiserver call per request; a cache
// miss right after a write falls back to one read), written as App custom resources in the
// account's namespace. Kubernetes errors are translated here, never leaked.
import * as k8s from '@kubernetes/client-node';
import { kubeStatus } from '../../lib/kube/client.js';
import { keepWatching } from '../../lib/kube/keep-watching.js';
import type { Logger } from '../../lib/logger.js';
import { apiVersion, group, version, type App } from '../../lib/resources/index.js';
import { ApiError, conflict, invalid } from '../errors.js';

export class AppRepository {
  private readonly informer: k8s.ListWatch<App>;
  private readonly custom: k8s.CustomObjectsApi;

  constructor(kc: k8s.KubeConfig, log: Logger) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.informer = new k8s.ListWatch<App>(
      `/apis/${group}/${version}/apps`,
      new k8s.Watch(kc),
      () => this.custom.listClusterCustomObject({ group, version, plural: 'apps' }) as Promise<k8s.KubernetesListObject<App>>,
      false,
    );
    keepWatching(this.informer, 'apps', log);
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  list(namespace: string): App[] {
    return [...this.informer.list(namespace)].sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
  }

  /** By name or by ID (the App's uid). */
  async find(namespace: string, idOrName: string): Promise<App | undefined> {
    const cached = this.informer.get(idOrName, namespace) ?? this.informer.list(namespace).find((a) => a.metadata.uid === idOrName);
    if (cached) return cached;
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(idOrName)) return undefined;
    try {
      return (await this.custom.getNamespacedCustomObject({ group, version, namespace, plural: 'apps', name: idOrName })) as App;
    } catch (err) {
      if (kubeStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async create(namespace: string, name: string, spec: App['spec']): Promise<App> {
    try {
      return (await this.custom.createNamespacedCustomObject({
        group,
        version,
        namespace,
        plural: 'apps',
        body: { apiVersion, kind: 'App', metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'svc-api' } }, spec },
      })) as App;
    } catch (err) {
      if (kubeStatus(err) === 409) throw conflict(`an app named "${name}" already exists`);
      if (kubeStatus(err) === 422) throw invalid(`invalid app: ${statusMessage(err)}`);
      throw err;
    }
  }

  /** Deletes the App; its machines, Service and the rest go with it (owner references). */
  async delete(namespace: string, name: string): Promise<void> {
    try {
      await this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural: 'apps', name });
    } catch (err) {
      if (kubeStatus(err) === 404) throw new ApiError('not_found', `app ${name} not found`);
      throw err;
    }
  }
}

function statusMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  try {
    const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: string };
    return (parsed.message ?? 'rejected').replace(/^App\.svc\.dev "[^"]*" is invalid: /, '');
  } catch {
    return 'rejected';
  }
}
