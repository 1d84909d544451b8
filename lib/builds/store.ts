// Builds as PostgreSQL keeps their record (table builds, migration 0019): what was asked, how it went
// (moved forward from the Build's status by every API replica: a phase is written once, and its
// event and usage with it, in one transaction), its log once it ended, and the deploy it made.
import type { Knex } from 'knex';
import { recordEvent } from '../events.js';
import type { EventKind } from '../event-kinds.js';
import type { Build } from '../resources/index.js';
import type { BuildPhase } from './index.js';
import type { BuildPlan } from './plan.js';

export type BuildSource = { artifact: { digest: string } } | { git: { url: string; ref?: string; commit?: string; path?: string } };

export interface BuildRecord {
  id: string;
  accountId: string;
  app: string;
  source: BuildSource;
  deploy: boolean;
  phase: BuildPhase;
  reason: string | null;
  message: string | null;
  plan: BuildPlan | null;
  artifactDigest: string | null;
  artifactBytes: number | null;
  image: string | null;
  reusedFrom: string | null;
  deployId: string | null;
  /** Why the output could not be deployed, when it could not. */
  deployError: string | null;
  createdBy: string | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  hasLog: boolean;
  logTruncated: boolean;
}

interface Row {
  id: string;
  account_id: string;
  app: string;
  source: BuildSource;
  deploy: boolean;
  phase: BuildPhase;
  reason: string | null;
  message: string | null;
  plan: BuildPlan | null;
  artifact_digest: string | null;
  artifact_bytes: string | number | null;
  image: string | null;
  reused_from: string | null;
  deploy_id: string | null;
  deploy_error: string | null;
  created_by: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  has_log: boolean;
  log_truncated: boolean;
}

const columns = [
  'id',
  'account_id',
  'app',
  'source',
  'deploy',
  'phase',
  'reason',
  'message',
  'plan',
  'artifact_digest',
  'artifact_bytes',
  'image',
  'reused_from',
  'deploy_id',
  'deploy_error',
  'created_by',
  'created_at',
  'started_at',
  'completed_at',
  'log_truncated',
];

const recordOf = (r: Row): BuildRecord => ({
  id: r.id,
  accountId: r.account_id,
  app: r.app,
  source: r.source,
  deploy: r.deploy,
  phase: r.phase,
  reason: r.reason,
  message: r.message,
  plan: r.plan,
  artifactDigest: r.artifact_digest,
  artifactBytes: r.artifact_bytes === null ? null : Number(r.artifact_bytes),
  image: r.image,
  reusedFrom: r.reused_from,
  deployId: r.deploy_id && r.deploy_id !== claimed ? r.deploy_id : null,
  deployError: r.deploy_error,
  createdBy: r.created_by,
  createdAt: new Date(r.created_at),
  startedAt: r.started_at ? new Date(r.started_at) : null,
  completedAt: r.completed_at ? new Date(r.completed_at) : null,
  hasLog: r.has_log,
  logTruncated: r.log_truncated,
});

/** An ended build's kept log: stored by digest, or (kept before logs went to the store) its text. */
export type KeptLog = { digest: string; bytes: number; truncated: boolean } | { text: string; truncated: boolean };

const rank: Record<BuildPhase, number> = { Queued: 0, Building: 1, Succeeded: 2, Failed: 2, Canceled: 2 };
const eventOf: Partial<Record<BuildPhase, EventKind>> = {
  Building: 'build.started',
  Succeeded: 'build.succeeded',
  Failed: 'build.failed',
  Canceled: 'build.canceled',
};
/** deploy_id while the replica that claimed the deploy makes it. */
const claimed = '-';

export class BuildStore {
  constructor(private readonly db: Knex) {}

  private select(q: Knex.QueryBuilder): Knex.QueryBuilder {
    return q.select(...columns, this.db.raw('(log is not null or log_digest is not null) as has_log'));
  }

  /** Records a new build (and its build.queued event); nothing when it is recorded already. */
  async create(b: {
    id: string;
    accountId: string;
    app: string;
    source: BuildSource;
    deploy: boolean;
    createdBy: string | null;
    createdAt: Date;
  }): Promise<void> {
    await this.db.transaction(async (tx) => {
      const inserted = (await tx('builds')
        .insert({
          id: b.id,
          account_id: b.accountId,
          app: b.app,
          source: JSON.stringify(b.source),
          deploy: b.deploy,
          phase: 'Queued',
          created_by: b.createdBy,
          created_at: b.createdAt,
        })
        .onConflict('id')
        .ignore()
        .returning('id')) as unknown[];
      if (inserted.length)
        await recordEvent(tx, b.accountId, 'build.queued', b.id, {
          build: b.id,
          app: b.app,
          source: 'artifact' in b.source ? 'upload' : 'git',
          deploy: b.deploy,
        });
    });
  }

  async get(accountId: string, id: string): Promise<BuildRecord | undefined> {
    const row = (await this.select(this.db('builds').where({ account_id: accountId, id })).first()) as Row | undefined;
    return row && recordOf(row);
  }

  /** The app's builds, newest first. */
  async list(accountId: string, app: string, limit = 20): Promise<BuildRecord[]> {
    const rows = (await this.select(this.db('builds').where({ account_id: accountId, app }))
      .orderBy('created_at', 'desc')
      .limit(limit)) as Row[];
    return rows.map(recordOf);
  }

  /**
   * Moves the record forward to the Build's status (never back): the phase's event, and for an
   * ended build that ran its `build_seconds`, written with it. Answers whether it moved.
   */
  async advance(accountId: string, b: Build): Promise<boolean> {
    const st = b.status;
    const phase = st?.phase;
    if (!phase) return false;
    return this.db.transaction(async (tx) => {
      const row = await tx('builds')
        .where({ id: b.metadata.name! })
        .forUpdate()
        .first<{ phase: BuildPhase; app: string } | undefined>('phase', 'app');
      if (!row || rank[phase] <= rank[row.phase]) return false;
      const fields = {
        phase,
        reason: st.reason ?? null,
        message: st.message?.slice(0, 4000) ?? null,
        ...(st.plan ? { plan: JSON.stringify(st.plan) } : {}),
        artifact_digest: st.artifact?.digest ?? null,
        artifact_bytes: st.artifact?.sizeBytes ?? null,
        image: st.image ?? null,
        reused_from: st.reusedFrom ?? null,
        started_at: st.startedAt ? new Date(st.startedAt) : null,
        completed_at: st.completedAt ? new Date(st.completedAt) : null,
      };
      await tx('builds').where({ id: b.metadata.name! }).update(fields);
      const kind = eventOf[phase];
      const build = b.metadata.name!;
      if (kind) {
        await recordEvent(tx, accountId, kind, build, {
          build,
          app: row.app,
          ...(rank[phase] === 2 ? { reason: st.reason ?? null, message: st.message?.slice(0, 500) ?? null } : {}),
          ...(phase === 'Succeeded'
            ? { artifact: st.artifact?.digest ?? null, image: st.image ?? null, reused_from: st.reusedFrom ?? null }
            : {}),
        });
      }
      // The seconds its Job ran (a reused build ran none).
      if (rank[phase] === 2 && st.startedAt && st.completedAt && !st.reusedFrom) {
        const started = new Date(st.startedAt);
        const ended = new Date(st.completedAt);
        if (ended > started) {
          await tx('usage_records')
            .insert({
              account_id: accountId,
              meter: 'build_seconds',
              subject: build,
              quantity: (ended.getTime() - started.getTime()) / 1000,
              started_at: started,
              ended_at: ended,
            })
            .onConflict(['account_id', 'meter', 'subject', 'started_at'])
            .ignore();
        }
      }
      return true;
    });
  }

  /**
   * Where an ended build's kept log is: an object of the artifact store (`digest`), or, for a log
   * kept before logs went there, its text in the record.
   */
  async log(accountId: string, id: string): Promise<KeptLog | undefined> {
    const row = await this.db('builds')
      .where({ account_id: accountId, id })
      .whereRaw('(log is not null or log_digest is not null)')
      .first<{ log: string | null; log_digest: string | null; log_bytes: string | number | null; log_truncated: boolean } | undefined>(
        'log',
        'log_digest',
        'log_bytes',
        'log_truncated',
      );
    if (!row) return undefined;
    return row.log_digest
      ? { digest: row.log_digest, bytes: Number(row.log_bytes ?? 0), truncated: row.log_truncated }
      : { text: row.log ?? '', truncated: row.log_truncated };
  }

  /** Records an ended build's log, stored by digest (the first one stays: every replica's is the same). */
  async keepLog(id: string, digest: string, bytes: number, truncated: boolean): Promise<void> {
    await this.db('builds')
      .where({ id })
      .whereNull('log')
      .whereNull('log_digest')
      .update({ log_digest: digest, log_bytes: bytes, log_truncated: truncated });
  }

  /** Whether this caller is the one to deploy the build's output (once, whichever replica asks first). */
  async claimDeploy(id: string): Promise<boolean> {
    const rows = (await this.db('builds').where({ id }).whereNull('deploy_id').update({ deploy_id: claimed }).returning('id')) as unknown[];
    return rows.length > 0;
  }

  /** The deploy the build made, or why it could not make one. */
  async deployed(id: string, outcome: { deployId: string } | { error: string }): Promise<void> {
    await this.db('builds')
      .where({ id })
      .update('deployId' in outcome ? { deploy_id: outcome.deployId } : { deploy_error: outcome.error.slice(0, 2000) });
  }
}
