// What a Database is made of, named once for the API (which writes its credentials Secret) and the
// controllers (which make the rest): every object is prefixed `db-` so a database never collides
// with an app of the same name (an app's Service is named after the app).
import { createHash } from 'node:crypto';

export const databasePort = 5432;
/** Longest Database name: `db-<name>` must stay a Service name (63) with room for its suffixes. */
export const maxDatabaseName = 40;
/** The finalizer that applies a Database's deletionPolicy to its volume before the Database goes. */
export const databaseFinalizer = 'svc.dev/database';

export function databaseObjects(name: string) {
  return {
    service: `db-${name}`,
    pod: `db-${name}-0`,
    claim: `db-${name}-data`,
    /**
     * Written by the API: keys username, password, database (the server and attached machines read
     * them through the kubelet) and replication-password (the server's and its branches' only).
     */
    secret: `db-${name}-credentials`,
    policy: `db-${name}`,
  };
}

/**
 * The branch of database `source` a preview app gets: `<source>-<6 hex of the preview's name>`,
 * within the 40 characters of a Database name.
 */
export function branchName(source: string, previewApp: string): string {
  return `${source.slice(0, maxDatabaseName - 7).replace(/-+$/, '')}-${createHash('sha256').update(previewApp).digest('hex').slice(0, 6)}`;
}

/** The size of a Database's volume: its own, or the platform's default. */
export function databaseBytes(db: { spec: { storageBytes?: number | undefined } }, defaultBytes: number): number {
  return db.spec.storageBytes ?? defaultBytes;
}

/**
 * What a Database takes of its account's storage: its volume's size once per copy of it, and a
 * CloudNativePG Cluster keeps one on each instance (docs/decisions/0039-cloudnative-pg.md).
 */
export function storedBytes(
  db: { spec: { storageBytes?: number | undefined; provider?: 'pods' | 'cloudnative-pg' | undefined } },
  defaults: { defaultBytes: number; provider: 'pods' | 'cloudnative-pg'; cnpg: { instances: number } },
): number {
  const copies = (db.spec.provider ?? defaults.provider) === 'cloudnative-pg' ? defaults.cnpg.instances : 1;
  return databaseBytes(db, defaults.defaultBytes) * copies;
}

/** The annotation by which the API asks the controllers for a backup now: a new value, a new backup Job. */
export const backupRequestAnnotation = 'svc.dev/backup-requested';

/** Credentials Secret keys: the tenant role's, which the server and attached machines get. */
export const credentialKeys = { username: 'username', password: 'password', database: 'database' } as const;

/**
 * The credentials Secret's key for the password of the server's `svc_replicator` role, with which a
 * branch's server copies it (docs/decisions/0017-databases.md): the server and its branches' servers
 * get it, attached machines never do.
 */
export const replicationKey = 'replication-password';
