// Databases' backups as PostgreSQL keeps their record (table database_backups, migration 0018): a
// dump in the artifact store, or a failure with why. Recorded with their event in one transaction.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { recordEvent } from './events.js';

/** Done backups kept per database; older ones' records go (a restore names one of these). */
export const keptBackups = 7;

export interface Backup {
  id: string;
  database: string;
  status: 'done' | 'failed';
  digest: string | null;
  bytes: number | null;
  error: string | null;
  createdAt: Date;
}

interface Row {
  id: string;
  database: string;
  status: 'done' | 'failed';
  digest: string | null;
  bytes: string | number | null;
  error: string | null;
  created_at: Date;
}

const backupOf = (r: Row): Backup => ({
  id: r.id,
  database: r.database,
  status: r.status,
  digest: r.digest,
  bytes: r.bytes === null ? null : Number(r.bytes),
  error: r.error,
  createdAt: new Date(r.created_at),
});

export async function recordBackup(
  db: Knex,
  accountId: string,
  database: string,
  outcome: { digest: string; bytes: number } | { error: string },
  now: Date,
): Promise<Backup> {
  const id = `bk-${randomBytes(8).toString('hex')}`;
  return db.transaction(async (tx) => {
    const [row] = (await tx('database_backups')
      .insert({
        id,
        account_id: accountId,
        database,
        status: 'digest' in outcome ? 'done' : 'failed',
        digest: 'digest' in outcome ? outcome.digest : null,
        bytes: 'digest' in outcome ? outcome.bytes : null,
        error: 'error' in outcome ? outcome.error.slice(0, 2000) : null,
        created_at: now,
      })
      .returning('*')) as Row[];
    if ('digest' in outcome) {
      await recordEvent(tx, accountId, 'database.backup_done', database, { database, backup: id, bytes: outcome.bytes });
      // The newest `keptBackups` done ones stay listed; failures older than the oldest kept go too.
      const kept = await tx('database_backups')
        .where({ account_id: accountId, database, status: 'done' })
        .orderBy('created_at', 'desc')
        .offset(keptBackups - 1)
        .first<{ created_at: Date } | undefined>('created_at');
      if (kept) await tx('database_backups').where({ account_id: accountId, database }).where('created_at', '<', kept.created_at).delete();
    } else {
      await recordEvent(tx, accountId, 'database.backup_failed', database, { database, backup: id, error: outcome.error.slice(0, 500) });
    }
    return backupOf(row!);
  });
}

export async function listBackups(db: Knex, accountId: string, database: string): Promise<Backup[]> {
  return ((await db('database_backups').where({ account_id: accountId, database }).orderBy('created_at', 'desc')) as Row[]).map(backupOf);
}

export async function getBackup(db: Knex, accountId: string, id: string): Promise<Backup | undefined> {
  const row = (await db('database_backups').where({ account_id: accountId, id }).first()) as Row | undefined;
  return row ? backupOf(row) : undefined;
}
