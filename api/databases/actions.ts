// What the data group decides about databases: creating one (its name, size, deletion policy and the
// backup it restores, counted against the account's limits under its lock), deleting one, asking
// for a backup, and attaching one to an app or detaching it (one app at a time, decided on the App
// as written). Handlers parse, authorize and present; the decisions are made here and raise domain
// errors (lib/errors.ts); what changed is recorded as events.
import { randomBytes } from 'node:crypto';
import type { Backup } from '../../lib/backups.js';
import { storedBytes } from '../../lib/databases.js';
import { DomainError } from '../../lib/errors.js';
import type { Database } from '../../lib/resources/index.js';
import type { Actor } from '../deploys/actions.js';
import { within, type AccountLock } from '../quotas.js';
import type { AppRecord } from '../repositories/app-record.js';
import type { AppRepository } from '../repositories/apps.js';
import type { DatabaseRecord, DatabaseRepository } from '../repositories/databases.js';
import type { ApiDeps } from '../deps.js';
import type { AccountStorage } from '../storage/account-storage.js';

export interface NewDatabase {
  name: string;
  /** The size of its volume; undefined: the platform's default, which is not written down. */
  storageBytes?: number | undefined;
  deletionPolicy: 'drop' | 'retain';
  /** A backup of the account's (done, with a dump) to start as. */
  restoreFrom?: string | undefined;
}

export interface DatabaseActionDeps {
  databases: Pick<DatabaseRepository, 'records' | 'record' | 'create' | 'delete' | 'requestBackup'>;
  /** Which app a database is attached to is the Apps' spec.database. */
  apps: Pick<AppRepository, 'list' | 'updateSpec'>;
  backups: Pick<ApiDeps['backups'], 'list' | 'get'>;
  /** The account's limits, checked and taken under its lock (api/quotas.ts). */
  quota: {
    lock: Pick<AccountLock, 'hold'>;
    limits: { databases: number };
    storage: Pick<AccountStorage, 'assertFits'>;
  };
  usage: Pick<ApiDeps['usage'], 'storage'>;
  events: Pick<ApiDeps['events'], 'record'>;
  settings: {
    /** The size of a database that asks for none (SVC_DATABASE_DEFAULT_BYTES). */
    defaultBytes: number;
    /** What serves a new database (SVC_DATABASE_PROVIDER), written on it. */
    provider: NonNullable<Database['spec']['provider']>;
    /** A CloudNativePG Cluster's instances, each with a copy of the volume that the account's storage counts. */
    cnpg: { instances: number };
    /** Where this API serves stored artifacts: a restore's dump is fetched there, backups are sent to its origin. */
    artifactBaseUrl: string;
  };
  clock: () => Date;
}

const policyName = (policy: DatabaseRecord['deletionPolicy']) => (policy === 'Retain' ? 'retain' : 'drop');

export class DatabaseActions {
  constructor(private readonly d: DatabaseActionDeps) {}

  /** Where this API's machine listener takes backups (api/backups.ts). */
  get backupUrl(): string {
    return `${new URL(this.d.settings.artifactBaseUrl).origin}/backups`;
  }

  list(actor: Actor): DatabaseRecord[] {
    return this.d.databases.records(actor.namespace);
  }

  /** The App of the namespace that names the database, if any (what attachment is). */
  private holderOf(namespace: string, name: string): AppRecord | undefined {
    return this.d.apps.list(namespace).find((a) => a.spec.database === name);
  }

  /** A database, or one restored from a backup; counted against the account's databases and storage under its lock. */
  async create(actor: Actor, input: NewDatabase): Promise<DatabaseRecord> {
    const bytes = input.storageBytes ?? this.d.settings.defaultBytes;
    // Every copy counts: a CloudNativePG Cluster's instances each have a volume of this size.
    const stored = storedBytes({ spec: { storageBytes: bytes } }, this.d.settings);
    // A restore names a backup of this account that holds a dump (a failed one holds none).
    const backup = input.restoreFrom !== undefined ? await this.d.backups.get(actor.accountId, input.restoreFrom) : undefined;
    if (input.restoreFrom !== undefined && !backup) throw new DomainError('not_found', `backup ${input.restoreFrom} not found`);
    if (backup && (backup.status !== 'done' || !backup.digest))
      throw new DomainError('conflict', `backup ${backup.id} failed (${backup.error ?? 'no dump'}); restore from one that is done`);
    const provider = this.d.settings.provider;
    // Counted and made under the account's lock: parallel creates cannot all pass the count.
    const db = await this.d.quota.lock.hold(actor.accountId, async () => {
      within(
        this.d.databases.records(actor.namespace).length,
        1,
        this.d.quota.limits.databases,
        'databases (branches included)',
        'delete one first',
      );
      await this.d.quota.storage.assertFits(
        actor.accountId,
        actor.namespace,
        stored,
        stored === bytes
          ? `database ${input.name} needs ${bytes} bytes`
          : `database ${input.name} needs ${stored} bytes (${bytes} on each of ${stored / bytes} instances)`,
      );
      return this.d.databases.create(actor.namespace, input.name, {
        engine: 'postgres',
        // Written down: a later change of the platform's default does not move an existing database.
        provider,
        ...(input.storageBytes !== undefined ? { storageBytes: input.storageBytes } : {}),
        deletionPolicy: input.deletionPolicy === 'retain' ? 'Retain' : 'Drop',
        // This API's store holds the dump and keeps the backups: the Database says where, as an App's source does.
        ...(backup
          ? { restoreFrom: { backup: backup.id, digest: backup.digest!, url: `${this.d.settings.artifactBaseUrl}/${backup.digest}` } }
          : {}),
        backupUrl: this.backupUrl,
      });
    });
    await this.d.usage.storage(actor.accountId, `database/${db.name}`, stored);
    await this.d.events.record(actor.accountId, 'database.created', db.name, {
      database: db.name,
      storage_bytes: bytes,
      deletion_policy: input.deletionPolicy,
      ...(backup ? { restored_from: { database: backup.database, backup: backup.id } } : {}),
    });
    return db;
  }

  /** Deletes a database no app has attached; its controller drops or keeps the volume as its policy says. */
  async delete(actor: Actor, name: string): Promise<void> {
    const ns = actor.namespace;
    const db = this.d.databases.record(ns, name);
    if (!db) throw new DomainError('not_found', `database ${name} not found`);
    const holder = this.holderOf(ns, db.name);
    if (holder)
      throw new DomainError(
        'conflict',
        `database ${db.name} is attached to app ${holder.name}: detach it first (DELETE /apps/${holder.name}/database)`,
      );
    await this.d.databases.delete(ns, db);
    // A retained volume is still stored; a dropped one is not.
    if (db.deletionPolicy !== 'Retain') await this.d.usage.storage(actor.accountId, `database/${db.name}`, 0);
    await this.d.events.record(actor.accountId, 'database.deleted', db.name, {
      database: db.name,
      deletion_policy: policyName(db.deletionPolicy),
    });
  }

  /** The database's backups, newest first; a deleted database's stay listed (and restorable) while they are kept. */
  async backups(actor: Actor, name: string): Promise<Backup[]> {
    const backups = await this.d.backups.list(actor.accountId, name);
    if (!backups.length && !this.d.databases.record(actor.namespace, name))
      throw new DomainError('not_found', `database ${name} not found`);
    return backups;
  }

  /** Asks the database's controller for a backup now; its server must be Ready. */
  async backup(actor: Actor, name: string): Promise<{ database: string; requestedAt: Date }> {
    const db = this.d.databases.record(actor.namespace, name);
    if (!db || db.deleting) throw new DomainError('not_found', `database ${name} not found`);
    if (db.phase !== 'Ready') throw new DomainError('conflict', `database ${name} is ${db.phase}: a backup needs its server Ready`);
    const requestedAt = this.d.clock();
    await this.d.databases.requestBackup(actor.namespace, name, `${requestedAt.toISOString()} ${randomBytes(4).toString('hex')}`);
    return { database: name, requestedAt };
  }

  /**
   * Attaches database `name` to `app` (nothing changes when it is attached already). Decided on the
   * App as written, so two attaches at once cannot both win: `authorize` is the caller's authority,
   * asked of that App once no other app holds the database; it throws to refuse.
   */
  async attach(actor: Actor, app: AppRecord, name: string, authorize: (app: AppRecord) => void): Promise<DatabaseRecord> {
    const ns = actor.namespace;
    const db = this.d.databases.record(ns, name);
    if (!db || db.deleting) throw new DomainError('not_found', `database ${name} not found`);
    let attached = false;
    await this.d.apps.updateSpec(ns, app.name, (fresh) => {
      const holder = this.holderOf(ns, name);
      if (holder && holder.name !== fresh.name)
        throw new DomainError('conflict', `database ${name} is attached to app ${holder.name}; a database attaches to one app`);
      authorize(fresh);
      if (fresh.spec.database && fresh.spec.database !== name)
        throw new DomainError('conflict', `app ${fresh.name} has database ${fresh.spec.database} attached: detach it first`);
      attached = fresh.spec.database !== name;
      return attached ? { database: name } : undefined;
    });
    if (attached) await this.d.events.record(actor.accountId, 'database.attached', name, { database: name, app: app.name });
    return db;
  }

  /** Detaches the app's database (its machines lose DATABASE_URL); answers its name. */
  async detach(actor: Actor, app: AppRecord): Promise<string> {
    let detached: string | undefined;
    await this.d.apps.updateSpec(actor.namespace, app.name, (fresh) => {
      detached = fresh.spec.database;
      if (!detached) throw new DomainError('invalid', `app ${fresh.name} has no database attached`);
      return { database: null };
    });
    await this.d.events.record(actor.accountId, 'database.detached', detached!, { database: detached, app: app.name });
    return detached!;
  }
}
