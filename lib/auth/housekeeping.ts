// Sign-in data that has served its purpose leaves PostgreSQL: everything of a deleted app (its app
// users, sessions, links, invitations, passkeys: an app created later under the same name is a new
// app with a new uid and starts with none of it), and ended sessions, links, flows and challenges
// once they are of no more use. The API runs it on every replica (deletes are idempotent): at once
// when its App cache sees an App go, and hourly as a sweep that also catches Apps deleted while no
// API was running (docs/decisions/0010-sign-in.md).
import type { Knex } from 'knex';
import type { Logger } from '../logger.js';

/** Ended sessions and expired or revoked links stay this long (who signed in when), then go. */
export const keepEndedMs = 30 * 24 * 3600_000;
/**
 * An app's rows are orphans only when older than this: ingress-auth may create a session for an
 * App this API's cache has not seen yet.
 */
export const orphanGraceMs = 10 * 60_000;
const sweepEveryMs = 3600_000;

/**
 * Tables keyed by app uid, children first (sessions and passkeys also go with their app user), and
 * the app's HTML data (its records and their change log: decision 0034), which goes with it too.
 */
const appTables = [
  ['html_data_changes', 'at'],
  ['html_data_records', 'created_at'],
  // Its running totals (kept by a trigger): found through the records, so no age of their own.
  ['html_data_totals', undefined],
  ['app_sessions', 'created_at'],
  ['passkey_challenges', 'expires_at'],
  ['passkey_credentials', 'created_at'],
  ['auth_flows', 'expires_at'],
  ['auth_links', 'created_at'],
  ['auth_recipients', 'invited_at'],
  ['app_users', 'created_at'],
] as const;

/** Deletes every sign-in row of these apps; returns how many rows went. */
export async function forgetApps(db: Knex, appUids: readonly string[]): Promise<number> {
  if (!appUids.length) return 0;
  return db.transaction(async (trx) => {
    let n = 0;
    for (const [table] of appTables) n += await trx(table).whereIn('app_uid', appUids).delete();
    return n;
  });
}

/** App uids that own sign-in rows older than the grace period but are not among `live`. */
export async function orphanedApps(db: Knex, live: ReadonlySet<string>, now: Date): Promise<string[]> {
  const before = new Date(now.getTime() - orphanGraceMs);
  const uids = new Set<string>();
  for (const [table, column] of appTables) {
    if (column === undefined) continue;
    const rows = (await db(table).distinct('app_uid').where(column, '<', before)) as Array<{ app_uid: string }>;
    for (const r of rows) if (!live.has(r.app_uid)) uids.add(r.app_uid);
  }
  return [...uids];
}

/** Deletes ended sessions, links and flows past their use; returns the counts by table. */
export async function sweepEnded(db: Knex, now: Date): Promise<Record<string, number>> {
  const kept = new Date(now.getTime() - keepEndedMs);
  return {
    // Past their absolute end, or revoked, a month ago. (Idle-expired ones reach their absolute end too.)
    app_sessions: await db('app_sessions').where('expires_at', '<', kept).orWhere('revoked_at', '<', kept).delete(),
    auth_links: await db('auth_links').where('expires_at', '<', kept).orWhere('revoked_at', '<', kept).delete(),
    auth_flows: await db('auth_flows').where('expires_at', '<', now).delete(),
    passkey_challenges: await db('passkey_challenges').where('expires_at', '<', now).delete(),
  };
}

export interface AppSource {
  /** Uids of every App that exists (an informer cache that has synced). */
  liveUids(): Set<string>;
  onDelete(fn: (app: { metadata: { uid?: string; name?: string; namespace?: string } }) => void): void;
}

export class AuthHousekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly db: Knex,
    private readonly apps: AppSource,
    private readonly log: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  start(): void {
    this.apps.onDelete((app) => {
      const uid = app.metadata.uid;
      if (!uid) return;
      forgetApps(this.db, [uid]).then(
        (n) =>
          n && this.log.info({ app: app.metadata.name, ns: app.metadata.namespace, rows: n }, 'Deleted the sign-in data of a deleted app'),
        (err: unknown) =>
          this.log.warn({ err, app: app.metadata.name }, 'Deleting the sign-in data of a deleted app failed; the hourly sweep retries'),
      );
    });
    // The first sweep soon after start (Apps deleted while no API ran), then hourly.
    this.timer = setTimeout(() => this.tick(), 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One sweep; also what the timer runs. */
  async sweep(): Promise<{ orphans: number; ended: Record<string, number> }> {
    const now = this.clock();
    const orphanUids = await orphanedApps(this.db, this.apps.liveUids(), now);
    const orphans = await forgetApps(this.db, orphanUids);
    const ended = await sweepEnded(this.db, now);
    if (orphans || Object.values(ended).some(Boolean))
      this.log.info({ orphanApps: orphanUids.length, orphanRows: orphans, ended }, 'Swept sign-in data');
    return { orphans, ended };
  }

  private tick(): void {
    this.running = this.sweep()
      .then(() => undefined)
      .catch((err: unknown) => this.log.warn({ err }, 'Sweeping sign-in data failed; next try in an hour'))
      .finally(() => {
        this.running = undefined;
        if (this.timer) {
          this.timer = setTimeout(() => this.tick(), sweepEveryMs);
          this.timer.unref();
        }
      });
  }
}
