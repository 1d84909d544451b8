// An app's environment: kept in an immutable Secret per version (`<app>-env-<hash>`), owned by the
// App and named in its spec. A change writes a new Secret and points the App at it, which changes
// the machines' revision, so the App controller rolls them; the previous Secrets are then removed.
import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { kubeStatus } from '../../lib/kube/client.js';
import { apiVersion, group, version, type App } from '../../lib/resources/index.js';

export type Env = Record<string, string>;

const appLabel = 'svc.dev/app';
const envLabel = 'svc.dev/env';

export function envSecretName(app: string, env: Env): string {
  const canonical = JSON.stringify(Object.keys(env).sort().map((k) => [k, env[k]]));
  return `${app}-env-${createHash('sha256').update(canonical).digest('hex').slice(0, 10)}`;
}

export class EnvRepository {
  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly custom: k8s.CustomObjectsApi,
  ) {}

  async read(app: App): Promise<Env> {
    const name = app.spec.envSecretName;
    if (!name) return {};
    try {
      const secret = await this.core.readNamespacedSecret({ namespace: app.metadata.namespace!, name });
      return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    } catch (err) {
      if (kubeStatus(err) === 404) return {};
      throw err;
    }
  }

  /** Makes `env` the app's whole environment. */
  async write(app: App, env: Env): Promise<void> {
    const namespace = app.metadata.namespace!;
    const appName = app.metadata.name!;
    const name = envSecretName(appName, env);
    if (name === app.spec.envSecretName) return;
    await this.core
      .createNamespacedSecret({
        namespace,
        body: {
          metadata: {
            name,
            labels: { [appLabel]: appName, [envLabel]: 'true' },
            ownerReferences: [{ apiVersion, kind: 'App', name: appName, uid: app.metadata.uid!, controller: false }],
          },
          immutable: true,
          stringData: env,
        },
      })
      .catch((err: unknown) => {
        if (kubeStatus(err) !== 409) throw err;
      });
    await this.custom.patchNamespacedCustomObject(
      { group, version, namespace, plural: 'apps', name: appName, body: { spec: { envSecretName: name } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    // Older versions are no longer referenced (their machines are being replaced).
    const old = await this.core.listNamespacedSecret({ namespace, labelSelector: `${appLabel}=${appName},${envLabel}=true` });
    for (const s of old.items) {
      if (s.metadata?.name !== name) await this.core.deleteNamespacedSecret({ namespace, name: s.metadata!.name! }).catch(() => undefined);
    }
  }
}
