// The deploy history (table `deploys`): the one place that reads and writes it. The API records a
// deploy when it accepts one; its outcome is decided by the App controller (App.status.deploys) and
// written here by the API's deploy recorder (api/deploys/recorder.ts).
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { App } from './resources/index.js';
import { recordEvent } from './events.js';

export type DeployStatus = 'pending' | 'building' | 'deploying' | 'live' | 'failed';
export type DeployOrigin = 'files' | 'tarball' | 'image' | 'compose' | 'rollback' | 'fork' | 'preview' | 'build';
export type AppKind = NonNullable<App['spec']['kind']>;

/** The App spec fields a deploy decides; reapplying them reproduces what the deploy ran. */
export interface DeploySpec {
  kind: AppKind;
  image?: string;
  command?: string[];
  args?: string[];
  port?: number;
  source?: { digest: string; url?: string };
  env?: Array<{ name: string; value?: string }>;
  /** The authentication policy the deploy declared (compose x-svc, page meta tags, front matter). */
  auth?: NonNullable<App['spec']['auth']>;
  /** An HTML app's data bindings, compiled from its pages (docs/api/html-data.md). */
  data?: NonNullable<App['spec']['data']>;
  /** A compose file's public service: its name, the ports the app's other services reach, how it starts and is checked. */
  service?: string;
  ports?: number[];
  healthcheck?: NonNullable<App['spec']['healthcheck']>;
  dependsOn?: NonNullable<App['spec']['dependsOn']>;
  aliases?: string[];
  workingDir?: string;
  /** A compose file's other services, each with its own machines (docs/api/compose.md). */
  services?: ServiceSpec[];
}

/** One of an App's private services (spec.services). */
export type ServiceSpec = NonNullable<App['spec']['services']>[number];

export interface Deploy {
  id: string;
  /** Creation order across the whole table. */
  seq: number;
  accountId: string;
  appUid: string;
  appName: string;
  status: DeployStatus;
  reason: string | null;
  kind: AppKind;
  digest: string | null;
  image: string | null;
  origin: DeployOrigin;
  originDeploy: string | null;
  spec: DeploySpec;
  /** What the deploy contained, for people: file count and bytes, compose service, detected kind why. */
  summary: Record<string, unknown>;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  liveAt: Date | null;
}

interface DeployRow {
  id: string;
  seq: string;
  account_id: string;
  app_uid: string;
  app_name: string;
  status: DeployStatus;
  reason: string | null;
  kind: AppKind;
  digest: string | null;
  image: string | null;
  origin: DeployOrigin;
  origin_deploy: string | null;
  spec: DeploySpec;
  summary: Record<string, unknown>;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
  live_at: Date | null;
}

const fromRow = (r: DeployRow): Deploy => ({
  id: r.id,
  seq: Number(r.seq),
  accountId: r.account_id,
  appUid: r.app_uid,
  appName: r.app_name,
  status: r.status,
  reason: r.reason,
  kind: r.kind,
  digest: r.digest,
  image: r.image,
  origin: r.origin,
  originDeploy: r.origin_deploy,
  spec: r.spec,
  summary: r.summary,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  liveAt: r.live_at,
});

/** Deploy IDs are DNS labels (they label machines); order comes from `seq`, not from them. */
export function newDeployId(): string {
  return `dep-${randomBytes(8).toString('hex')}`;
}

export class DeployStore {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async create(d: {
    accountId: string;
    app: { uid: string; name: string };
    spec: DeploySpec;
    origin: DeployOrigin;
    originDeploy?: string;
    summary?: Record<string, unknown>;
    createdBy?: string;
    status?: DeployStatus;
    /** When the App was written first, naming this deploy. */
    id?: string;
  }): Promise<Deploy> {
    const now = this.clock();
    const id = d.id ?? newDeployId();
    const row = {
      id,
      account_id: d.accountId,
      app_uid: d.app.uid,
      app_name: d.app.name,
      status: d.status ?? 'deploying',
      kind: d.spec.kind,
      digest: d.spec.source?.digest ?? null,
      image: d.spec.image ?? null,
      origin: d.origin,
      origin_deploy: d.originDeploy ?? null,
      spec: JSON.stringify(d.spec),
      summary: JSON.stringify(d.summary ?? {}),
      created_by: d.createdBy ?? null,
      created_at: now,
      updated_at: now,
    };
    const [created] = await this.db.transaction(async (tx) => {
      const rows = await tx('deploys').insert(row).returning<DeployRow[]>('*');
      await recordEvent(tx, d.accountId, 'deploy.created', d.app.name, { deploy: id, origin: d.origin, kind: d.spec.kind });
      if (d.origin === 'rollback' && d.originDeploy)
        await recordEvent(tx, d.accountId, 'deploy.rolled_back', d.app.name, { deploy: id, to: d.originDeploy });
      return rows;
    });
    return fromRow(created!);
  }

  async get(accountId: string, id: string): Promise<Deploy | undefined> {
    const row = (await this.db('deploys').where({ account_id: accountId, id }).first()) as DeployRow | undefined;
    return row && fromRow(row);
  }

  /** An app's deploys, newest first; `before` is the cursor (a deploy ID). */
  async list(accountId: string, appUid: string, opts: { limit: number; before?: string }): Promise<Deploy[]> {
    const q = this.db('deploys').where({ account_id: accountId, app_uid: appUid }).orderBy('seq', 'desc').limit(opts.limit);
    if (opts.before) q.where('seq', '<', this.db('deploys').select('seq').where({ id: opts.before }));
    return ((await q) as DeployRow[]).map(fromRow);
  }

  /** The newest deploy of the app that went live before `beforeId` (for rollback to "the previous"). */
  async previousLive(appUid: string, beforeId: string): Promise<Deploy | undefined> {
    const row = (await this.db('deploys')
      .where({ app_uid: appUid, status: 'live' })
      .where('seq', '<', this.db('deploys').select('seq').where({ id: beforeId }))
      .orderBy('seq', 'desc')
      .first()) as DeployRow | undefined;
    return row && fromRow(row);
  }

  /**
   * Moves a deploy on, only forward (a live or failed deploy stays so), with the time the App
   * controller decided it. Says whether it moved, was already final, or is not (yet) written.
   */
  async finish(
    id: string,
    outcome: { status: 'live' } | { status: 'failed'; reason: string },
    at: Date = this.clock(),
  ): Promise<'moved' | 'final' | 'missing'> {
    return this.db.transaction(async (tx) => {
      const changed = await tx('deploys')
        .where({ id })
        .whereIn('status', ['pending', 'building', 'deploying'])
        .update({
          status: outcome.status,
          reason: outcome.status === 'failed' ? outcome.reason : null,
          updated_at: at,
          ...(outcome.status === 'live' ? { live_at: at } : {}),
        })
        .returning(['app_name', 'account_id']);
      const first = changed[0] as { app_name: string; account_id: string } | undefined;
      if (!first) return (await tx('deploys').where({ id }).first('id')) ? 'final' : 'missing';
      await recordEvent(tx, first.account_id, `deploy.${outcome.status}`, first.app_name, {
        deploy: id,
        ...(outcome.status === 'failed' ? { reason: outcome.reason } : {}),
      });
      return 'moved';
    });
  }

  /**
   * The app's deploys still in flight that are older than `id`, which ended: they never will. Not
   * those in `spare` (the App's status reports their outcome: it is theirs to be written).
   */
  async replaceOlder(appUid: string, id: string, at: Date = this.clock(), spare: readonly string[] = []): Promise<number> {
    return this.failWhere(
      (q) =>
        q
          .where({ app_uid: appUid })
          .where('seq', '<', this.db('deploys').select('seq').where({ id }))
          .whereNotIn('id', [...spare]),
      `replaced by ${id} before it went live`,
      at,
    );
  }

  /** Deploys in flight of any App not in `liveUids` (deleted): they never will go live. */
  async failOrphans(liveUids: ReadonlySet<string>, reason: string): Promise<number> {
    const uids = (await this.db('deploys').distinct('app_uid').whereIn('status', ['pending', 'building', 'deploying'])) as Array<{
      app_uid: string;
    }>;
    const gone = uids.map((r) => r.app_uid).filter((u) => !liveUids.has(u));
    return gone.length ? this.failWhere((q) => q.whereIn('app_uid', gone), reason, this.clock()) : 0;
  }

  private async failWhere(scope: (q: Knex.QueryBuilder) => Knex.QueryBuilder, reason: string, at: Date): Promise<number> {
    return this.db.transaction(async (tx) => {
      const rows = await scope(tx('deploys'))
        .whereIn('status', ['pending', 'building', 'deploying'])
        .update({ status: 'failed', reason, updated_at: at })
        .returning<Array<{ id: string; app_name: string; account_id: string }>>(['id', 'app_name', 'account_id']);
      for (const r of rows) await recordEvent(tx, r.account_id, 'deploy.failed', r.app_name, { deploy: r.id, reason });
      return rows.length;
    });
  }
}
