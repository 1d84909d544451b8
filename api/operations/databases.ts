// The data group's databases: a PostgreSQL server per Database (controllers/database/), listed,
// created and deleted per account, and attached to one app at a time through the App spec's
// `database` field (the GitOps form of the same thing), which gives the app's machines
// DATABASE_URL and the PG* variables (docs/api/data.md). Attaching hands the database's credentials
// to the app's code, so it needs authority over the database as well as the app: a token restricted
// to apps holds none over the account's databases (docs/api/tokens.md). The decisions are the
// database actions' (api/databases/actions.ts).
import { z } from 'zod';
import { dnsLabel } from '../../lib/contract.js';
import { maxDatabaseName } from '../../lib/databases.js';
import { actorOf } from '../actor.js';
import { resolveApp } from '../app-access.js';
import { ApiError } from '../errors.js';
import { op, type Operation } from '../operation.js';
import { backupSchema, databaseSchema, presentBackup, presentDatabase } from '../presenters/databases.js';
import type { DatabaseRecord } from '../repositories/databases.js';
import type { ApiDeps } from '../deps.js';

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

type Deps = {
  /** Finding the app of /apps/{appID}/database (api/app-access.ts). */
  apps: Pick<ApiDeps['apps'], 'find'>;
  databaseActions: Pick<ApiDeps['databaseActions'], 'list' | 'create' | 'delete' | 'backups' | 'backup' | 'attach' | 'detach'>;
  /** The size a database that asked for none is shown with. */
  config: { databases: Pick<ApiDeps['config']['databases'], 'defaultBytes'> };
};

export function databaseOperations(s: Deps): Operation[] {
  const present = (db: DatabaseRecord) => presentDatabase(db, s.config.databases.defaultBytes);
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
      handler: async ({ caller }) => ({ body: { databases: s.databaseActions.list(actorOf(caller)).map(present) } }),
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
        const db = await s.databaseActions.create(actorOf(caller), {
          name: body.name,
          storageBytes: body.storage_bytes,
          deletionPolicy: body.deletion_policy,
          restoreFrom: body.restore_from?.backup,
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
        await s.databaseActions.delete(actorOf(caller), params.name!);
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
        const backups = await s.databaseActions.backups(actorOf(caller), params.name!);
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
        const asked = await s.databaseActions.backup(actorOf(caller), params.name!);
        return { status: 202, body: { database: asked.database, requested_at: asked.requestedAt.toISOString() } };
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
        const target = await resolveApp(s, caller, params.appID!);
        // Databases are the account's: a token restricted to apps may state an attachment that is
        // already there (nothing changes) but not make one, before it learns whether the database
        // exists, and again on the App as written.
        const apps = caller.principal.authority.apps;
        if (apps && target.spec.database !== body.name) {
          throw new ApiError(
            'forbidden',
            `token lacks account-wide access: attaching database ${body.name} to app ${target.name} hands the app its credentials, and databases are the account's (this token is restricted to apps ${[...apps].join(', ') || '(none)'})`,
          );
        }
        const db = await s.databaseActions.attach(actorOf(caller), target, body.name, (app) => {
          if (apps && app.spec.database !== body.name)
            throw new ApiError(
              'forbidden',
              `token lacks account-wide access: app ${app.name} no longer has database ${body.name} attached, and attaching one needs authority over the account's databases`,
            );
        });
        return { body: { app: target.name, database: present(db) } };
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
        const app = await resolveApp(s, caller, params.appID!);
        await s.databaseActions.detach(actorOf(caller), app);
        return { status: 204, body: undefined };
      },
    }),
  ];
}
