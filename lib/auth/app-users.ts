// App users (table app_users): the people of one app, admitted by `required` or `emails`
// policies. One record per app and verified address, created at their first sign-in (rule 3);
// disabling one ends its sessions at once and refuses its sign-ins until it is enabled again.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { accountIdOfNamespace } from '../accounts.js';
import { recordEvent } from '../events.js';
import type { SessionStore } from './sessions.js';

export interface AppUser {
  id: string;
  appUid: string;
  email: string;
  name: string | null;
  lastProvider: string | null;
  createdAt: Date;
  lastSignInAt: Date | null;
  disabledAt: Date | null;
}

interface AppUserRow {
  id: string;
  app_uid: string;
  app_namespace: string;
  app_name: string;
  email: string;
  name: string | null;
  last_provider: string | null;
  created_at: Date;
  last_sign_in_at: Date | null;
  disabled_at: Date | null;
}

const toUser = (r: AppUserRow): AppUser => ({
  id: r.id,
  appUid: r.app_uid,
  email: r.email,
  name: r.name,
  lastProvider: r.last_provider,
  createdAt: r.created_at,
  lastSignInAt: r.last_sign_in_at,
  disabledAt: r.disabled_at,
});

export interface AppRef {
  uid: string;
  namespace: string;
  name: string;
}

export class AppUserStore {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * The app user of a verified address, created on first sign-in; its sign-in time and provider
   * are recorded. Undefined when the user is disabled.
   */
  async signIn(app: AppRef, email: string, provider: string, name?: string): Promise<AppUser | undefined> {
    const now = this.clock();
    const address = email.toLowerCase();
    const account = await accountIdOfNamespace(this.db, app.namespace);
    return this.db.transaction(async (tx) => {
      const [row] = (await tx('app_users')
        .insert({
          id: `au_${randomBytes(8).toString('hex')}`,
          app_uid: app.uid,
          app_namespace: app.namespace,
          app_name: app.name,
          email: address,
          name: name ?? null,
          last_provider: provider,
          created_at: now,
          last_sign_in_at: now,
        })
        .onConflict(['app_uid', 'email'])
        .merge({
          last_sign_in_at: now,
          last_provider: provider,
          ...(name ? { name } : {}),
        })
        .returning('*')) as AppUserRow[];
      if (!row || row.disabled_at) return undefined;
      if (account)
        await recordEvent(tx, account, 'app_user.signed_in', app.name, {
          user: row.id,
          email: row.email,
          provider,
        });
      return toUser(row);
    });
  }

  async get(appUid: string, id: string): Promise<AppUser | undefined> {
    const row = (await this.db('app_users').where({ app_uid: appUid, id }).first()) as AppUserRow | undefined;
    return row && toUser(row);
  }

  async byEmail(appUid: string, email: string): Promise<AppUser | undefined> {
    const row = (await this.db('app_users').where({ app_uid: appUid, email: email.toLowerCase() }).first()) as AppUserRow | undefined;
    return row && toUser(row);
  }

  /** One page of an app's users, oldest first, after the cursor (a user id). */
  async list(appUid: string, opts: { limit: number; after?: string }): Promise<AppUser[]> {
    let q = this.db('app_users').where({ app_uid: appUid });
    if (opts.after) {
      const cursor = await this.db('app_users')
        .where({ app_uid: appUid, id: opts.after })
        .first<{ created_at: Date } | undefined>('created_at');
      if (cursor)
        q = q.where((w) => {
          w.where('created_at', '>', cursor.created_at).orWhere((x) => {
            x.where('created_at', cursor.created_at).andWhere('id', '>', opts.after!);
          });
        });
    }
    const rows = (await q.orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(opts.limit)) as AppUserRow[];
    return rows.map(toUser);
  }

  /** Disables a user and ends its sessions in the same step; idempotent. */
  async disable(appUid: string, id: string, sessions: SessionStore): Promise<AppUser | undefined> {
    const existing = await this.get(appUid, id);
    if (!existing) return undefined;
    if (!existing.disabledAt) {
      await this.db.transaction(async (tx) => {
        const [row] = (await tx('app_users')
          .where({ app_uid: appUid, id })
          .whereNull('disabled_at')
          .update({ disabled_at: this.clock() })
          .returning('*')) as AppUserRow[];
        if (row) await this.recordFor(tx, row, 'app_user.disabled');
      });
    }
    await sessions.revoke(appUid, { appUserId: id });
    // And every other session of the same address (a workforce identity admitted by email).
    await sessions.revoke(appUid, { email: existing.email, anyIdentity: true });
    return this.get(appUid, id);
  }

  async enable(appUid: string, id: string): Promise<AppUser | undefined> {
    const existing = await this.get(appUid, id);
    if (!existing) return undefined;
    if (existing.disabledAt) {
      await this.db.transaction(async (tx) => {
        const [row] = (await tx('app_users')
          .where({ app_uid: appUid, id })
          .whereNotNull('disabled_at')
          .update({ disabled_at: null })
          .returning('*')) as AppUserRow[];
        if (row) await this.recordFor(tx, row, 'app_user.enabled');
      });
    }
    return this.get(appUid, id);
  }

  private async recordFor(tx: Knex.Transaction, row: AppUserRow, type: 'app_user.disabled' | 'app_user.enabled'): Promise<void> {
    const account = await accountIdOfNamespace(tx, row.app_namespace);
    if (account)
      await recordEvent(tx, account, type, row.app_name, {
        user: row.id,
        email: row.email,
      });
  }
}
