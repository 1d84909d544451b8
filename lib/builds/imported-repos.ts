// Apps imported from Git as PostgreSQL keeps them (table app_repositories, migration 0020): the
// repository, its default branch, the secret its push webhook is signed with, and the commit last
// built per branch. A head moves once (an update conditioned on where it was), so a push delivered
// twice, or seen by the webhook and by the poll, builds once.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';

export interface ImportedRepository {
  accountId: string;
  app: string;
  url: string;
  defaultBranch: string;
  path: string | null;
  /** The Secret holding its token, when it needs one. */
  secretName: string | null;
  hookId: string;
  hookSecret: string;
  heads: Record<string, string>;
  createdAt: Date;
}

interface Row {
  account_id: string;
  app: string;
  url: string;
  default_branch: string;
  path: string | null;
  secret_name: string | null;
  hook_id: string;
  hook_secret: string;
  heads: Record<string, string>;
  created_at: Date;
}

const recordOf = (r: Row): ImportedRepository => ({
  accountId: r.account_id,
  app: r.app,
  url: r.url,
  defaultBranch: r.default_branch,
  path: r.path,
  secretName: r.secret_name,
  hookId: r.hook_id,
  hookSecret: r.hook_secret,
  heads: r.heads ?? {},
  createdAt: new Date(r.created_at),
});

export class ImportedRepoStore {
  constructor(private readonly db: Knex) {}

  async create(r: {
    accountId: string;
    app: string;
    url: string;
    defaultBranch: string;
    path: string | null;
    secretName: string | null;
    commit: string;
    now: Date;
  }): Promise<ImportedRepository> {
    const [row] = (await this.db('app_repositories')
      .insert({
        account_id: r.accountId,
        app: r.app,
        url: r.url,
        default_branch: r.defaultBranch,
        path: r.path,
        secret_name: r.secretName,
        hook_id: `hook_${randomBytes(12).toString('hex')}`,
        hook_secret: `whsec_${randomBytes(24).toString('base64')}`,
        heads: JSON.stringify({ [r.defaultBranch]: r.commit }),
        created_at: r.now,
      })
      .returning('*')) as Row[];
    return recordOf(row!);
  }

  async get(accountId: string, app: string): Promise<ImportedRepository | undefined> {
    const row = (await this.db('app_repositories').where({ account_id: accountId, app }).first()) as Row | undefined;
    return row && recordOf(row);
  }

  async byHook(hookId: string): Promise<ImportedRepository | undefined> {
    const row = (await this.db('app_repositories').where({ hook_id: hookId }).first()) as Row | undefined;
    return row && recordOf(row);
  }

  async delete(accountId: string, app: string): Promise<void> {
    await this.db('app_repositories').where({ account_id: accountId, app }).delete();
  }

  /**
   * Moves `branch` to `commit` (null: the branch is gone) if it is not there already; answers
   * whether it moved (the caller builds, or deletes the branch's preview, only then).
   */
  async moveHead(accountId: string, app: string, branch: string, commit: string | null): Promise<boolean> {
    const rows = (await this.db('app_repositories')
      .where({ account_id: accountId, app })
      .whereRaw('heads->>? is distinct from ?', [branch, commit])
      .update({
        heads:
          commit === null ? this.db.raw('heads - ?', [branch]) : this.db.raw('heads || ?::jsonb', [JSON.stringify({ [branch]: commit })]),
      })
      .returning('app')) as unknown[];
    return rows.length > 0;
  }

  /** Whether this push delivery is new (a redelivery of one seen is not acted on again). */
  async firstDelivery(hookId: string, deliveryId: string, now: Date): Promise<boolean> {
    const rows = (await this.db('git_deliveries')
      .insert({ hook_id: hookId, delivery_id: deliveryId, received_at: now })
      .onConflict(['hook_id', 'delivery_id'])
      .ignore()
      .returning('delivery_id')) as unknown[];
    return rows.length > 0;
  }

  /**
   * The repositories due a poll (not polled for `everyMs`), claimed by this caller: a replica that
   * polls one moves its polled_at first, so replicas share the work without a leader.
   */
  async claimDue(now: Date, everyMs: number, limit = 20): Promise<ImportedRepository[]> {
    const rows = (await this.db('app_repositories')
      .whereIn(
        ['account_id', 'app'],
        this.db('app_repositories')
          .select('account_id', 'app')
          .where('polled_at', '<', new Date(now.getTime() - everyMs))
          .orWhereNull('polled_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .update({ polled_at: now })
      .returning('*')) as Row[];
    return rows.map(recordOf);
  }
}
