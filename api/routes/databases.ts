// The data group's databases: a PostgreSQL server per Database (controllers/database/), listed,
// created and deleted per account, and attached to one app at a time through the App spec's
// `database` field (the GitOps form of the same thing), which gives the app's machines
// DATABASE_URL and the PG* variables (docs/api/data.md). Attaching hands the database's credentials
// to the app's code, so it needs authority over the database as well as the app: a token restricted
// to apps holds none over the account's databases (docs/api/tokens.md).
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Backup } from '../../lib/backups.js';
import { dnsLabel } from '../../lib/contract.js';
import { databaseBytes, maxDatabaseName } from '../../lib/databases.js';
import type { Database } from '../../lib/resources/index.js';
import { ApiError, conflict, invalid, notFound } from '../errors.js';
import { within } from '../quotas.js';
import { op, type Operation } from '../operation.js';
import type { Services } from '../services.js';
import { resolveApp } from '../app-access.js';

const databaseSchema = z.object({
  name: z.string(),
  engine: z.string(),
  phase: z.enum(['Pending', 'Ready', 'Deleting', 'Failed']),
  message: z.string().nullable(),
  attached_to: z.string().nullable(),
  host: z.string().nullable(),
  port: z.number().nullable(),
  database: z.string().nullable(),
  storage_bytes: z.number(),
  used_bytes: z.number().nullable().describe('What its data takes on its volume, as last measured; null until measured'),
  deletion_policy: z.enum(['drop', 'retain']),
  created_at: z.string(),
});

const createBody = z.strictObject({
  name: z
    .string()
    .max(maxDatabaseName, `must be at most ${maxDatabaseName} characters`)
    .regex(dnsLabel, 'must be lower-case letters, digits and dashes, starting and ending with a letter or digit'),
  storage_bytes: z
    .number()
    .int()
    .min(128 * 1024 * 1024)
    .max(1099511627776)
    .optional()
    .describe(
      'Size of its volume, at least 128 MiB (an initialized server takes about 46 MiB, and its write-ahead log grows in 16 MiB segments); default 1 GiB',
    ),
  deletion_policy: z.enum(['drop', 'retain']).default('drop').describe('drop: the data goes with the database; retain: its volume is kept'),
  restore_from: z
    .strictObject({
      backup: z.string().min(1).max(64).describe("A backup of one of the account's databases (GET /databases/{name}/backups)"),
    })
    .optional()
    .describe('Start as that backup: a new database, loaded once'),
});

const backupSchema = z.object({
  id: z.string(),
  database: z.string(),
  status: z.enum(['done', 'failed']),
  bytes: z.number().nullable(),
  error: z.string().nullable(),
  created_at: z.string(),
});

const presentBackup = (b: Backup): z.infer<typeof backupSchema> => ({
  id: b.id,
  database: b.database,
  status: b.status,
  bytes: b.bytes,
  error: b.error,
  created_at: b.createdAt.toISOString(),
});

export function presentDatabase(db: Database, defaultBytes: number): z.infer<typeof databaseSchema> {
  const ready = db.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    name: db.metadata.name!,
    engine: db.spec.engine ?? 'postgres',
    phase: db.metadata.deletionTimestamp ? 'Deleting' : (db.status?.phase ?? 'Pending'),
    message: ready?.message ?? null,
    attached_to: db.status?.attachedTo ?? null,
    host: db.status?.host ?? null,
    port: db.status?.port ?? null,
    database: db.status?.databaseName ?? null,
    storage_bytes: databaseBytes(db, defaultBytes),
    used_bytes: db.status?.usedBytes ?? null,
    deletion_policy: db.spec.deletionPolicy === 'Retain' ? 'retain' : 'drop',
    created_at: new Date(db.metadata.creationTimestamp as unknown as string).toISOString(),
  };
}

/** Where this API's machine listener takes backups (api/backups.ts). */
export const backupUrlOf = (s: Services) => `${new URL(s.config.deploys.artifactBaseUrl).origin}/backups`;

export function databaseOperations(s: Services): Operation[] {
  const present = (db: Database) => presentDatabase(db, s.config.databases.defaultBytes);
  /** The App of the namespace that names the database, if any (what attachment is). */
  const holderOf = (namespace: string, name: string) => s.apps.list(namespace).find((a) => a.spec.database === name);
  return [
    op({
      method: 'GET',
      path: '/databases',
      operationId: 'listDatabases',
      tag: 'data',
      summary: 'List databases',
      action: 'read',
      accountWide: true,
      response: z.object({ databases: z.array(databaseSchema) }),
      handler: async ({ caller }) => ({ body: { databases: s.databases.list(caller.account.namespace).map(present) } }),
    }),
    op({
      method: 'POST',
      path: '/databases',
      operationId: 'createDatabase',
      tag: 'data',
      summary: 'Create database',
      action: 'write',
      accountWide: true,
      status: 201,
      body: createBody,
      response: databaseSchema,
      handler: async ({ caller, body }) => {
        const limits = s.config.databases;
        const bytes = body.storage_bytes ?? limits.defaultBytes;
        // A restore names a backup of this account that holds a dump (a failed one holds none).
        const backup = body.restore_from ? await s.backups.get(caller.account.id, body.restore_from.backup) : undefined;
        if (body.restore_from && !backup) throw notFound(`backup ${body.restore_from.backup}`);
        if (backup && (backup.status !== 'done' || !backup.digest))
          throw conflict(`backup ${backup.id} failed (${backup.error ?? 'no dump'}); restore from one that is done`);
        const provider = s.config.databases.provider;
        if (backup && provider !== 'pods')
          throw conflict(`restoring a backup into a ${provider} database is not built: CloudNativePG restores from its own backups`);
        // Counted and made under the account's lock: parallel creates cannot all pass the count.
        const db = await s.accountLock.hold(caller.account.id, async () => {
          within(
            s.databases.list(caller.account.namespace).length,
            1,
            limits.maxPerAccount,
            'databases (branches included)',
            'delete one first',
          );
          await s.storage.assertFits(caller.account.id, caller.account.namespace, bytes, `database ${body.name} needs ${bytes} bytes`);
          return s.databases.create(caller.account.namespace, body.name, {
            engine: 'postgres',
            // Written down: a later change of the platform's default does not move an existing database.
            provider,
            ...(body.storage_bytes !== undefined ? { storageBytes: body.storage_bytes } : {}),
            deletionPolicy: body.deletion_policy === 'retain' ? 'Retain' : 'Drop',
            // This API's store holds the dump and keeps the backups: the Database says where, as an App's source does.
            ...(backup
              ? { restoreFrom: { backup: backup.id, digest: backup.digest!, url: `${s.config.deploys.artifactBaseUrl}/${backup.digest}` } }
              : {}),
            backupUrl: backupUrlOf(s),
          });
        });
        await s.usage.storage(caller.account.id, `database/${db.metadata.name}`, bytes);
        await s.events.record(caller.account.id, 'database.created', db.metadata.name!, {
          database: db.metadata.name,
          storage_bytes: bytes,
          deletion_policy: body.deletion_policy,
          ...(backup ? { restored_from: { database: backup.database, backup: backup.id } } : {}),
        });
        return { status: 201, body: present(db) };
      },
    }),
    op({
      method: 'DELETE',
      path: '/databases/{name}',
      operationId: 'deleteDatabase',
      tag: 'data',
      summary: 'Delete database',
      action: 'write',
      accountWide: true,
      status: 204,
      handler: async ({ caller, params }) => {
        const ns = caller.account.namespace;
        const db = s.databases.get(ns, params.name!);
        if (!db) throw notFound(`database ${params.name}`);
        const holder = holderOf(ns, db.metadata.name!);
        if (holder)
          throw conflict(
            `database ${db.metadata.name} is attached to app ${holder.name}: detach it first (DELETE /apps/${holder.name}/database)`,
          );
        await s.databases.delete(ns, db);
        // A retained volume is still stored; a dropped one is not.
        if (db.spec.deletionPolicy !== 'Retain') await s.usage.storage(caller.account.id, `database/${db.metadata.name}`, 0);
        await s.events.record(caller.account.id, 'database.deleted', db.metadata.name!, {
          database: db.metadata.name,
          deletion_policy: db.spec.deletionPolicy === 'Retain' ? 'retain' : 'drop',
        });
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'GET',
      path: '/databases/{name}/backups',
      operationId: 'listDatabaseBackups',
      tag: 'data',
      summary: 'List database backups',
      action: 'read',
      accountWide: true,
      response: z.object({ backups: z.array(backupSchema) }),
      handler: async ({ caller, params }) => {
        const backups = await s.backups.list(caller.account.id, params.name!);
        // A deleted database's backups stay listed (and restorable) while they are kept.
        if (!backups.length && !s.databases.get(caller.account.namespace, params.name!)) throw notFound(`database ${params.name}`);
        return { body: { backups: backups.map(presentBackup) } };
      },
    }),
    op({
      method: 'POST',
      path: '/databases/{name}/backups',
      operationId: 'backupDatabase',
      tag: 'data',
      summary: 'Back up a database now',
      action: 'write',
      accountWide: true,
      status: 202,
      response: z.object({ database: z.string(), requested_at: z.string() }),
      handler: async ({ caller, params }) => {
        const db = s.databases.get(caller.account.namespace, params.name!);
        if (!db || db.metadata.deletionTimestamp) throw notFound(`database ${params.name}`);
        if (db.status?.phase !== 'Ready')
          throw conflict(`database ${params.name} is ${db.status?.phase ?? 'Pending'}: a backup needs its server Ready`);
        const at = s.clock().toISOString();
        await s.databases.requestBackup(caller.account.namespace, params.name!, `${at} ${randomBytes(4).toString('hex')}`);
        return { status: 202, body: { database: params.name!, requested_at: at } };
      },
    }),
    op({
      method: 'PUT',
      path: '/apps/{appID}/database',
      operationId: 'attachDatabase',
      tag: 'apps',
      summary: 'Attach an app database',
      action: 'write',
      body: z.strictObject({ name: z.string().min(1).max(63).describe('The database to attach') }),
      response: z.object({ app: z.string(), database: databaseSchema }),
      handler: async ({ caller, params, body }) => {
        const ns = caller.account.namespace;
        const target = await resolveApp(s, caller, params.appID!);
        const { name } = target;
        // Databases are the account's: a token restricted to apps may state an attachment that is
        // already there (nothing changes) but not make one, before it learns whether the database exists.
        const apps = caller.principal.authority.apps;
        if (apps && target.spec.database !== body.name) {
          throw new ApiError(
            'forbidden',
            `token lacks account-wide access: attaching database ${body.name} to app ${name} hands the app its credentials, and databases are the account's (this token is restricted to apps ${[...apps].join(', ') || '(none)'})`,
          );
        }
        const db = s.databases.get(ns, body.name);
        if (!db || db.metadata.deletionTimestamp) throw notFound(`database ${body.name}`);
        let attached = false;
        // Decided on the App as written: two attaches at once cannot both win.
        await s.apps.updateSpec(ns, name, (app) => {
          const holder = holderOf(ns, body.name);
          if (holder && holder.name !== app.name)
            throw conflict(`database ${body.name} is attached to app ${holder.name}; a database attaches to one app`);
          if (apps && app.spec.database !== body.name)
            throw new ApiError(
              'forbidden',
              `token lacks account-wide access: app ${app.name} no longer has database ${body.name} attached, and attaching one needs authority over the account's databases`,
            );
          if (app.spec.database && app.spec.database !== body.name)
            throw conflict(`app ${app.name} has database ${app.spec.database} attached: detach it first`);
          attached = app.spec.database !== body.name;
          return attached ? { database: body.name } : undefined;
        });
        if (attached) await s.events.record(caller.account.id, 'database.attached', body.name, { database: body.name, app: name });
        return { body: { app: name, database: present(db) } };
      },
    }),
    op({
      method: 'DELETE',
      path: '/apps/{appID}/database',
      operationId: 'detachDatabase',
      tag: 'apps',
      summary: 'Detach an app database',
      action: 'write',
      status: 204,
      handler: async ({ caller, params }) => {
        const { name } = await resolveApp(s, caller, params.appID!);
        let detached: string | undefined;
        await s.apps.updateSpec(caller.account.namespace, name, (app) => {
          detached = app.spec.database;
          if (!detached) throw invalid(`app ${app.name} has no database attached`);
          return { database: null };
        });
        await s.events.record(caller.account.id, 'database.detached', detached!, { database: detached, app: name });
        return { status: 204, body: undefined };
      },
    }),
  ];
}
