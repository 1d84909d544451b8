// PUT /backups/<namespace>/<database> (and POST .../failed): where a database's backup Job sends its
// dump, on the machine listener (pods hold no API token). The Job shows a backup credential the
// Database controller minted for exactly that database (lib/artifacts/credential.ts): it adds
// backups of it and opens nothing. The dump goes into the artifact store by its digest, streamed,
// never buffered, as the account's (counted against its storage; refused past its limit); its record
// and event are written together (lib/backups.ts).
import type Koa from 'koa';
import type { Knex } from 'knex';
import { accountIdOfNamespace } from '../lib/accounts.js';
import { bearerOf, checkBackupCredential } from '../lib/artifacts/credential.js';
import { UploadTooLarge, type ArtifactStore } from '../lib/artifacts/store.js';
import { recordBackup } from '../lib/backups.js';
import type { Logger } from '../lib/logger.js';
import { readLimited } from '../lib/http/body.js';
import { DomainError } from '../lib/errors.js';
import type { AccountStorage } from './storage/account-storage.js';

export const backupPrefix = '/backups/';
const name = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function backupEndpoint(d: {
  store: ArtifactStore;
  /** Dumps are the account's, counted against its storage: past its limit one is refused and recorded as failed. */
  storage: Pick<AccountStorage, 'admit'>;
  db: Knex;
  key: Buffer | undefined;
  limitBytes: number;
  log: Logger;
  clock: () => Date;
}): Koa.Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(backupPrefix)) return next() as Promise<void>;
    const fail = (status: number, error: string) => {
      ctx.status = status;
      ctx.body = { error };
    };
    const [namespace, database, failed, ...rest] = ctx.path.slice(backupPrefix.length).split('/');
    const isFailure = failed === 'failed';
    if (!namespace || !database || !name.test(namespace) || !name.test(database) || rest.length || (failed !== undefined && !isFailure)) {
      return fail(
        404,
        'backups are sent to /backups/<namespace>/<database> (PUT) and failures to /backups/<namespace>/<database>/failed (POST)',
      );
    }
    if (ctx.method !== (isFailure ? 'POST' : 'PUT')) {
      ctx.set('Allow', isFailure ? 'POST' : 'PUT');
      return fail(405, `method ${ctx.method} not allowed on ${ctx.path}`);
    }
    if (!d.key) return fail(503, 'backup credentials are not configured on this API (SVC_ARTIFACT_KEY)');
    const check = checkBackupCredential(d.key, namespace, database, bearerOf(ctx.get('Authorization')), d.clock());
    if (!check.ok) {
      if (check.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="backups"');
      return fail(check.status, check.error);
    }
    const account = await accountIdOfNamespace(d.db, namespace);
    if (!account) return fail(404, `no account has namespace ${namespace}`);
    if (isFailure) {
      // What pg_dump said: the backup Job sends its last 2,000 bytes (hack/images/postgres-entrypoint.sh).
      const said = await readLimited(ctx.req, 4000);
      if (!said) return fail(413, 'a failure report larger than 4000 bytes is refused');
      const text = said.toString('utf8');
      const backup = await recordBackup(
        d.db,
        account,
        database,
        { error: text.trim() || 'the backup failed without saying why' },
        d.clock(),
      );
      d.log.warn({ namespace, database, backup: backup.id, error: backup.error }, 'Database backup failed');
      ctx.status = 201;
      ctx.body = { id: backup.id, status: backup.status };
      return;
    }
    let staged;
    try {
      staged = await d.store.stage(ctx.req, d.limitBytes);
    } catch (err) {
      if (err instanceof UploadTooLarge) return fail(413, `a backup larger than ${d.limitBytes} bytes is refused`);
      throw err;
    }
    if (staged.size === 0) {
      await staged.discard();
      return fail(400, 'the backup is empty');
    }
    try {
      await d.storage.admit(account, namespace, staged, `a backup of database ${database}`);
    } catch (err) {
      if (!(err instanceof DomainError && err.kind === 'quota_exceeded')) throw err;
      // Listed as a failed backup saying why, as pg_dump's failures are.
      const refused = await recordBackup(d.db, account, database, { error: err.message }, d.clock());
      d.log.warn(
        { namespace, database, backup: refused.id, bytes: staged.size },
        'Database backup refused: the account is at its storage limit',
      );
      return fail(403, err.message);
    }
    const backup = await recordBackup(d.db, account, database, { digest: staged.digest, bytes: staged.size }, d.clock());
    d.log.info({ namespace, database, backup: backup.id, bytes: staged.size, digest: staged.digest }, 'Database backed up');
    ctx.status = 201;
    ctx.body = { id: backup.id, status: backup.status, digest: backup.digest, bytes: backup.bytes };
  };
}
