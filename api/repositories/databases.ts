// An account's Databases as the API reads and writes them: the custom resources (a cluster-wide
// informer; the controllers make each one's server, controllers/database/) and each one's
// credentials Secret, which only the API writes: the controllers never read Secrets, the server and
// attached machines get it through the kubelet. A cluster that cannot be asked is a DomainError.
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, labels, managers, pluralOf, version } from '../../lib/contract.js';
import { backupRequestAnnotation, credentialKeys, databaseObjects } from '../../lib/databases.js';
import { DomainError } from '../../lib/errors.js';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import type { Database } from '../../lib/resources/index.js';

const plural = pluralOf('Database');

export class DatabaseRepository {
  private readonly informer: k8s.ListWatch<Database>;
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;

  constructor(
    kc: k8s.KubeConfig,
    private readonly log: Logger,
  ) {
    ({ informer: this.informer, custom: this.custom } = customInformer<Database>(kc, plural, log));
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** The Databases' informer (database.ready is recorded from it: api/database-events.ts). */
  get watch(): k8s.ListWatch<Database> {
    return this.informer;
  }

  list(namespace: string): Database[] {
    return [...this.informer.list(namespace)].sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
  }

  get(namespace: string, name: string): Database | undefined {
    return this.informer.get(name, namespace);
  }

  /**
   * The credentials Secret first (a server never starts without it), kept if it is there already:
   * it belongs to the volume a Retain'ed database of this name left, whose data it opens. Then the
   * Database; if that fails, a Secret made here is removed (nothing half-written).
   */
  async create(namespace: string, name: string, spec: Database['spec']): Promise<Database> {
    const o = databaseObjects(name);
    let made = false;
    try {
      await this.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: o.secret, labels: { [labels.database]: name, [labels.managedBy]: managers.api } },
          type: 'Opaque',
          stringData: { [credentialKeys.username]: 'app', [credentialKeys.password]: randomBytes(24).toString('hex'), [credentialKeys.database]: name },
        },
      });
      made = true;
    } catch (err) {
      if (kubeStatus(err) !== 409) throw new DomainError('unavailable', 'cannot store the database credentials right now; retry later', err);
      this.log.info({ namespace, database: name }, 'Reusing the credentials of a kept volume of the same name');
    }
    try {
      const created = await createCustomObject<Database>(this.custom, 'Database', namespace, { name, labels: { [labels.managedBy]: managers.api } }, spec);
      await untilCached(this.informer, namespace, name, (c) => c?.metadata.uid === created.metadata.uid);
      return created;
    } catch (err) {
      if (made) await this.core.deleteNamespacedSecret({ namespace, name: o.secret }).catch(() => undefined);
      if (kubeStatus(err) === 409) throw new DomainError('conflict', `a database named "${name}" already exists`);
      throw err;
    }
  }

  /**
   * A branch of `source` for `owner` (a preview): its credentials the source's (the copied data has
   * the source's role and password), and both owned by `owner`, so they go with it. Idempotent: a
   * branch already there is returned. If the Database cannot be made, the Secret made here goes.
   */
  async createBranch(namespace: string, name: string, source: Database, owner: { name: string; id: string }): Promise<Database> {
    const existing = this.get(namespace, name);
    if (existing && existing.spec.branchOf === source.metadata.name) return existing;
    const o = databaseObjects(name);
    const ownerReferences = [{ apiVersion, kind: 'App', name: owner.name, uid: owner.id, controller: false, blockOwnerDeletion: true }];
    let data: Record<string, string> | undefined;
    try {
      data = (await this.core.readNamespacedSecret({ namespace, name: databaseObjects(source.metadata.name!).secret })).data;
      await this.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: o.secret, labels: { [labels.database]: name, [labels.managedBy]: managers.api }, ownerReferences }, type: 'Opaque', data },
      });
    } catch (err) {
      if (kubeStatus(err) !== 409) throw new DomainError('unavailable', `cannot copy the credentials of database ${source.metadata.name} right now; retry later`, err);
    }
    try {
      const created = await createCustomObject<Database>(
        this.custom,
        'Database',
        namespace,
        { name, labels: { [labels.managedBy]: managers.api, [labels.branchOf]: source.metadata.name! }, ownerReferences },
        {
          engine: 'postgres',
          // A physical copy is made between servers of our own.
          provider: 'pods',
          ...(source.spec.storageBytes ? { storageBytes: source.spec.storageBytes } : {}),
          deletionPolicy: 'Drop',
          branchOf: source.metadata.name,
          ...(source.spec.backupUrl ? { backupUrl: source.spec.backupUrl } : {}),
        },
      );
      await untilCached(this.informer, namespace, name, (c) => c?.metadata.uid === created.metadata.uid);
      return created;
    } catch (err) {
      await this.core.deleteNamespacedSecret({ namespace, name: o.secret }).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Asks the controllers for a backup now: a new value of the Database's request annotation, which
   * its controller answers with a backup Job. Returns the value (the Job is named after it).
   */
  async requestBackup(namespace: string, name: string, token: string): Promise<void> {
    try {
      await this.custom.patchNamespacedCustomObject({ group, version, plural, namespace, name, body: { metadata: { annotations: { [backupRequestAnnotation]: token } } } }, mergePatch);
    } catch (err) {
      if (kubeStatus(err) === 404) throw new DomainError('not_found', `database ${name} not found`);
      throw new DomainError('unavailable', `cannot ask for a backup of ${name} right now; retry later`, err);
    }
  }

  /** Deletes the Database (its controller applies the deletionPolicy to the volume); Drop removes its credentials too. */
  async delete(namespace: string, db: Database): Promise<void> {
    const name = db.metadata.name!;
    await this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name }).catch((err: unknown) => {
      if (kubeStatus(err) !== 404) throw err;
    });
    if ((db.spec.deletionPolicy ?? 'Drop') === 'Drop') {
      await this.core.deleteNamespacedSecret({ namespace, name: databaseObjects(name).secret }).catch((err: unknown) => {
        if (kubeStatus(err) !== 404) throw err;
      });
    }
    await untilCached(this.informer, namespace, name, (c) => !c || !!c.metadata.deletionTimestamp);
  }
}
