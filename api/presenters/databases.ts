// A database and its backups as the API shows them: the response schemas and their presenters,
// shared by every route that answers with a database.
import { z } from 'zod';
import type { Backup } from '../../lib/backups.js';
import type { DatabaseRecord } from '../repositories/databases.js';

export const databaseSchema = z.object({
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

export const backupSchema = z.object({
  id: z.string(),
  database: z.string(),
  status: z.enum(['done', 'failed']),
  bytes: z.number().nullable(),
  error: z.string().nullable(),
  created_at: z.string(),
});

/** How the API spells a deletion policy (the Database's Drop and Retain). */
const deletionPolicyName = (policy: DatabaseRecord['deletionPolicy']): 'drop' | 'retain' => (policy === 'Retain' ? 'retain' : 'drop');

/** A database as the API shows it; `defaultBytes` is the size of one that asked for none (SVC_DATABASE_DEFAULT_BYTES). */
export function presentDatabase(db: DatabaseRecord, defaultBytes: number): z.infer<typeof databaseSchema> {
  return {
    name: db.name,
    engine: db.engine,
    phase: db.deleting ? 'Deleting' : db.phase,
    message: db.ready?.message ?? null,
    attached_to: db.attachedTo ?? null,
    host: db.host ?? null,
    port: db.port ?? null,
    database: db.databaseName ?? null,
    // As lib/databases.ts databaseBytes counts it.
    storage_bytes: db.storageBytes ?? defaultBytes,
    used_bytes: db.usedBytes ?? null,
    deletion_policy: deletionPolicyName(db.deletionPolicy),
    created_at: db.createdAt.toISOString(),
  };
}

export const presentBackup = (b: Backup): z.infer<typeof backupSchema> => ({
  id: b.id,
  database: b.database,
  status: b.status,
  bytes: b.bytes,
  error: b.error,
  created_at: b.createdAt.toISOString(),
});
