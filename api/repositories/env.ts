// An app's environment: kept in an immutable Secret per version (`<app>-env-<hash>`), owned by the
// App and named in its spec. A change writes a new Secret and points the App at it, which changes
// the machines' revision, so the App controller rolls them; the previous Secrets are then removed.
import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { apiVersion, group, version } from '../../lib/resources/index.js';
import type { AppRecord } from './app-record.js';
import { labels, pluralOf } from '../../lib/contract.js';

export type Env = Record<string, string>;

const appLabel = labels.app;
const envLabel = labels.env;

export function envSecretName(app: string, env: Env): string {
  const canonical = JSON.stringify(
    Object.keys(env)
      .sort()
      .map((k) => [k, env[k]]),
  );
  return `${app}-env-${createHash('sha256').update(canonical).digest('hex').slice(0, 10)}`;
}

function ownerOf(app: AppRecord): k8s.V1OwnerReference {
  return { apiVersion, kind: 'App', name: app.name, uid: app.id, controller: false };
}

export class EnvRepository {
  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly custom: k8s.CustomObjectsApi,
  ) {}

  async read(app: AppRecord): Promise<Env> {
    const name = app.spec.envSecretName;
    if (!name) return {};
    try {
      const secret = await this.core.readNamespacedSecret({ namespace: app.namespace, name });
      return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    } catch (err) {
      if (kubeStatus(err) === 404) return {};
      throw err;
    }
  }

  /** Creates the Secret of `env`; says whether it was created now (false: it existed already). */
  private async createSecret(namespace: string, appName: string, env: Env, owner?: AppRecord): Promise<{ name: string; created: boolean }> {
    const name = envSecretName(appName, env);
    const created = await this.core
      .createNamespacedSecret({
        namespace,
        body: {
          metadata: {
            name,
            labels: { [appLabel]: appName, [envLabel]: 'true' },
            ...(owner ? { ownerReferences: [ownerOf(owner)] } : {}),
          },
          immutable: true,
          stringData: env,
        },
      })
      .then(
        () => true,
        (err: unknown) => {
          if (kubeStatus(err) !== 409) throw err;
          return false;
        },
      );
    return { name, created };
  }

  /**
   * For an App about to be created with this environment (forks, previews): the Secret exists before
   * the App names it, so its first machines already have the variables. adopt() then ties it to the
   * App; discard() removes it if the App could not be created.
   */
  async prepare(
    namespace: string,
    appName: string,
    env: Env,
  ): Promise<{ name: string; adopt: (app: AppRecord) => Promise<void>; discard: () => Promise<void> }> {
    const { name, created } = await this.createSecret(namespace, appName, env);
    return {
      name,
      adopt: async (app) => {
        await this.core.patchNamespacedSecret({ namespace, name, body: { metadata: { ownerReferences: [ownerOf(app)] } } }, mergePatch);
      },
      // Only what this call made: a Secret that existed belongs to someone else.
      discard: async () => {
        if (created) await this.core.deleteNamespacedSecret({ namespace, name }).catch(() => undefined);
      },
    };
  }

  /** Makes `env` the app's whole environment. */
  async write(app: AppRecord, env: Env): Promise<void> {
    const namespace = app.namespace;
    const appName = app.name;
    const name = envSecretName(appName, env);
    if (name === app.spec.envSecretName) return;
    await this.createSecret(namespace, appName, env, app);
    await this.custom.patchNamespacedCustomObject(
      { group, version, namespace, plural: pluralOf('App'), name: appName, body: { spec: { envSecretName: name } } },
      mergePatch,
    );
    // Older versions are no longer referenced (their machines are being replaced).
    const old = await this.core.listNamespacedSecret({ namespace, labelSelector: `${appLabel}=${appName},${envLabel}=true` });
    for (const s of old.items) {
      if (s.metadata?.name !== name) await this.core.deleteNamespacedSecret({ namespace, name: s.metadata!.name! }).catch(() => undefined);
    }
  }
}
