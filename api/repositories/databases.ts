// An account's Databases as the API reads and writes them: the custom resources (a cluster-wide
// informer; the controllers make each one's server, controllers/database/) and each one's
// credentials Secret, which only the API writes: the controllers never read Secrets, the server and
// attached machines get it through the kubelet. Every database has passwords of its own, a branch
// too (docs/decisions/0017-databases.md). A cluster that cannot be asked is a DomainError.
// Handlers and actions read a Database as a DatabaseRecord (its fields named and typed, read once);
// list and get answer the custom resources themselves, for the deploy actions' branches and the
// storage count (api/deploys/actions.ts, api/storage/account-storage.ts).
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, labels, managers, pluralOf, version } from '../../lib/contract.js';
import { backupRequestAnnotation, credentialKeys, databaseObjects, replicationKey } from '../../lib/databases.js';
import { DomainError } from '../../lib/errors.js';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import type { Database } from '../../lib/resources/index.js';

const plural = pluralOf('Database');

export type DatabaseCondition = NonNullable<NonNullable<Database['status']>['conditions']>[number];

/** A Database as the API's handlers and actions see it: the custom resource read once into named, typed fields. */
export interface DatabaseRecord {
  readonly name: string;
  readonly namespace: string;
  readonly engine: NonNullable<Database['spec']['engine']>;
  /** What serves it, as written on it; undefined: the controllers' default (SVC_DATABASE_PROVIDER). */
  readonly provider: Database['spec']['provider'];
  /** The size of its volume as asked for; undefined: the platform's default (lib/databases.ts databaseBytes). */
  readonly storageBytes: number | undefined;
  /** What goes with it when it is deleted: Drop, its data; Retain keeps its volume (and credentials). */
  readonly deletionPolicy: NonNullable<Database['spec']['deletionPolicy']>;
  /** Whether it is being deleted (its controller is letting its server go). */
  readonly deleting: boolean;
  /** Its server's phase as the controller reports it; Pending until it has. */
  readonly phase: NonNullable<NonNullable<Database['status']>['phase']>;
  /** The controller's Ready condition, if it has reported one. */
  readonly ready: DatabaseCondition | undefined;
  /** The app whose machines have its credentials, as the controller reports it. */
  readonly attachedTo: string | undefined;
  readonly host: string | undefined;
  readonly port: number | undefined;
  /** The name of the PostgreSQL database in its server. */
  readonly databaseName: string | undefined;
  /** What its data takes on its volume, as last measured. */
  readonly usedBytes: number | undefined;
  /** The Database it is a branch of (a preview's copy). */
  readonly branchOf: string | undefined;
  readonly createdAt: Date;
}

const records = new WeakMap<Database, DatabaseRecord>();

/**
 * The record of a Database as read (informer objects are immutable: one record each). The
 * apiserver sets a name, a namespace and a creation time on everything it stores: a resource
 * without them is not one it answered, and is refused as a DomainError rather than shown half.
 */
export function databaseRecord(db: Database): DatabaseRecord {
  const known = records.get(db);
  if (known) return known;
  const m = db.metadata;
  const createdAt = new Date(m.creationTimestamp ?? Number.NaN);
  const missing = [
    !m.name && 'metadata.name',
    !m.namespace && 'metadata.namespace',
    Number.isNaN(createdAt.getTime()) && 'metadata.creationTimestamp',
  ]
    .filter(Boolean)
    .join(', ');
  if (missing)
    throw new DomainError('unavailable', `cannot read database ${m.name ?? '(unnamed)'}: the cluster answered it without ${missing}`);
  const record: DatabaseRecord = Object.freeze({
    name: m.name!,
    namespace: m.namespace!,
    engine: db.spec.engine ?? 'postgres',
    provider: db.spec.provider,
    storageBytes: db.spec.storageBytes,
    deletionPolicy: db.spec.deletionPolicy ?? 'Drop',
    deleting: !!m.deletionTimestamp,
    phase: db.status?.phase ?? 'Pending',
    ready: db.status?.conditions?.find((c) => c.type === 'Ready'),
    attachedTo: db.status?.attachedTo,
    host: db.status?.host,
    port: db.status?.port,
    databaseName: db.status?.databaseName,
    usedBytes: db.status?.usedBytes,
    branchOf: db.spec.branchOf,
    createdAt,
  });
  records.set(db, record);
  return record;
}

/** A new password: 48 hex digits (so a URL holds it unescaped). */
const newPassword = () => randomBytes(24).toString('hex');

/** A Secret's value, decoded. */
const valueOf = (secret: k8s.V1Secret, key: string): string | undefined =>
  secret.data?.[key] === undefined ? undefined : Buffer.from(secret.data[key], 'base64').toString('utf8');

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

  async start(): Promise<void> {
    await this.informer.start();
    // Secrets written before servers had a replication role get its password; the server takes it
    // at its next start (until then no branch can copy it). In the background: start does not wait.
    void this.addReplicationKeys().catch((err: unknown) =>
      this.log.warn({ err }, "Adding replication passwords to databases' credentials failed; the next start tries again"),
    );
  }

  /** Adds a replication password to each Database's credentials Secret that has none. */
  private async addReplicationKeys(): Promise<void> {
    for (const db of this.informer.list()) {
      const { namespace, name } = db.metadata as { namespace: string; name: string };
      if ((db.spec.provider ?? 'pods') !== 'pods') continue;
      await this.ensureReplicationKey(namespace, name).catch((err: unknown) => {
        // No Secret (yet), or a namespace that is no account's (the API holds Secrets only there).
        if (![403, 404].includes(kubeStatus(err) ?? 0))
          this.log.warn({ err, namespace, database: name }, "Could not add a replication password to the database's credentials");
      });
    }
  }

  /** The Secret of database `name`, with a replication password added if it had none. */
  private async ensureReplicationKey(namespace: string, name: string): Promise<k8s.V1Secret> {
    const secretName = databaseObjects(name).secret;
    const secret = await this.core.readNamespacedSecret({ namespace, name: secretName });
    if (secret.data?.[replicationKey] !== undefined) return secret;
    // Guarded by resourceVersion: a Secret changed meanwhile is not overwritten (its next reading adds it).
    const patched = await this.core.patchNamespacedSecret(
      {
        namespace,
        name: secretName,
        body: { metadata: { resourceVersion: secret.metadata?.resourceVersion }, stringData: { [replicationKey]: newPassword() } },
      },
      mergePatch,
    );
    this.log.info({ namespace, database: name }, "Added a replication password to the database's credentials");
    return patched;
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** The Databases' informer (database.ready is recorded from it: api/database-events.ts). */
  get watch(): k8s.ListWatch<Database> {
    return this.informer;
  }

  /** The account's Databases as custom resources, by name (what the deploy actions and the storage count read). */
  list(namespace: string): Database[] {
    return [...this.informer.list(namespace)].sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
  }

  /** A Database as its custom resource. */
  get(namespace: string, name: string): Database | undefined {
    return this.informer.get(name, namespace);
  }

  /** The account's databases, by name. */
  records(namespace: string): DatabaseRecord[] {
    return this.list(namespace).map(databaseRecord);
  }

  /** Database `name` of the account, if there is one (one being deleted included). */
  record(namespace: string, name: string): DatabaseRecord | undefined {
    const db = this.get(namespace, name);
    return db && databaseRecord(db);
  }

  /**
   * The credentials Secret first (a server never starts without it), kept if it is there already:
   * it belongs to the volume a Retain'ed database of this name left, whose data it opens. Then the
   * Database; if that fails, a Secret made here is removed (nothing half-written).
   */
  async create(namespace: string, name: string, spec: Database['spec']): Promise<DatabaseRecord> {
    const o = databaseObjects(name);
    let made = false;
    try {
      await this.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: o.secret, labels: { [labels.database]: name, [labels.managedBy]: managers.api } },
          type: 'Opaque',
          stringData: {
            [credentialKeys.username]: 'app',
            [credentialKeys.password]: newPassword(),
            [credentialKeys.database]: name,
            [replicationKey]: newPassword(),
          },
        },
      });
      made = true;
    } catch (err) {
      if (kubeStatus(err) !== 409)
        throw new DomainError('unavailable', 'cannot store the database credentials right now; retry later', err);
      this.log.info({ namespace, database: name }, 'Reusing the credentials of a kept volume of the same name');
    }
    try {
      const created = await createCustomObject<Database>(
        this.custom,
        'Database',
        namespace,
        { name, labels: { [labels.managedBy]: managers.api } },
        spec,
      );
      await untilCached<Database>(this.informer, namespace, name, (c) => c?.metadata.uid === created.metadata.uid);
      return databaseRecord(created);
    } catch (err) {
      if (made) await this.core.deleteNamespacedSecret({ namespace, name: o.secret }).catch(() => undefined);
      if (kubeStatus(err) === 409) throw new DomainError('conflict', `a database named "${name}" already exists`);
      throw err;
    }
  }

  /**
   * A branch of `source` for `owner` (a preview): another database, with credentials of its own:
   * the source's username and database name (the copied data holds them) and new passwords, which
   * its server sets on the copy before it listens; it copies the source with the source's
   * replication password, which its server reads from the source's Secret and never hands on. Both
   * owned by `owner`, so they go with it. Idempotent: a branch already there is returned. If the
   * Database cannot be made, the Secret made here goes.
   */
  async createBranch(namespace: string, name: string, source: Database, owner: { name: string; id: string }): Promise<Database> {
    const existing = this.get(namespace, name);
    if (existing && existing.spec.branchOf === source.metadata.name) return existing;
    const o = databaseObjects(name);
    const ownerReferences = [{ apiVersion, kind: 'App', name: owner.name, uid: owner.id, controller: false, blockOwnerDeletion: true }];
    // The source's Secret: a replication password added first if it predates them.
    const from = await this.ensureReplicationKey(namespace, source.metadata.name!).catch((err: unknown) => {
      throw new DomainError('unavailable', `cannot read the credentials of database ${source.metadata.name} right now; retry later`, err);
    });
    const username = valueOf(from, credentialKeys.username);
    const database = valueOf(from, credentialKeys.database);
    if (!username || !database)
      throw new DomainError(
        'conflict',
        `database ${source.metadata.name}'s credentials Secret has no ${!username ? credentialKeys.username : credentialKeys.database}: it cannot be branched`,
      );
    try {
      await this.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: o.secret, labels: { [labels.database]: name, [labels.managedBy]: managers.api }, ownerReferences },
          type: 'Opaque',
          stringData: {
            [credentialKeys.username]: username,
            [credentialKeys.password]: newPassword(),
            [credentialKeys.database]: database,
            [replicationKey]: newPassword(),
          },
        },
      });
    } catch (err) {
      if (kubeStatus(err) !== 409)
        throw new DomainError(
          'unavailable',
          `cannot make the credentials of a branch of database ${source.metadata.name} right now; retry later`,
          err,
        );
    }
    try {
      const created = await createCustomObject<Database>(
        this.custom,
        'Database',
        namespace,
        { name, labels: { [labels.managedBy]: managers.api, [labels.branchOf]: source.metadata.name! }, ownerReferences },
        {
          engine: 'postgres',
          // A server of our own, whatever serves the source: a preview's copy needs no failover.
          provider: 'pods',
          ...(source.spec.storageBytes ? { storageBytes: source.spec.storageBytes } : {}),
          deletionPolicy: 'Drop',
          branchOf: source.metadata.name,
          ...(source.spec.backupUrl ? { backupUrl: source.spec.backupUrl } : {}),
        },
      );
      await untilCached<Database>(this.informer, namespace, name, (c) => c?.metadata.uid === created.metadata.uid);
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
      await this.custom.patchNamespacedCustomObject(
        { group, version, plural, namespace, name, body: { metadata: { annotations: { [backupRequestAnnotation]: token } } } },
        mergePatch,
      );
    } catch (err) {
      if (kubeStatus(err) === 404) throw new DomainError('not_found', `database ${name} not found`);
      throw new DomainError('unavailable', `cannot ask for a backup of ${name} right now; retry later`, err);
    }
  }

  /** Deletes the Database (its controller applies the deletionPolicy to the volume); Drop removes its credentials too. */
  async delete(namespace: string, db: Pick<DatabaseRecord, 'name' | 'deletionPolicy'>): Promise<void> {
    const name = db.name;
    await this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name }).catch((err: unknown) => {
      if (kubeStatus(err) !== 404) throw err;
    });
    if (db.deletionPolicy === 'Drop') {
      await this.core.deleteNamespacedSecret({ namespace, name: databaseObjects(name).secret }).catch((err: unknown) => {
        if (kubeStatus(err) !== 404) throw err;
      });
    }
    await untilCached<Database>(this.informer, namespace, name, (c) => !c || !!c.metadata.deletionTimestamp);
  }
}
