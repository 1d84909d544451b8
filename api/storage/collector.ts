// The artifact collector (issue 30 finding 3; docs/decisions/0024-artifact-retention.md): on a
// schedule, in one API replica at a time (a PostgreSQL advisory lock tried, not waited for), it reads
// what is (the Apps in the cache, deploys, builds, backups, holds, the store's files), asks
// lib/artifacts/retention.ts what each account keeps, and then:
//
// - takes a hold for a kept artifact the account does not hold yet (one stored before holds existed);
// - releases every other hold not used within the grace period (its bytes stop counting);
// - deletes a file no account holds that was written before the grace period, under that digest's
//   lock with the holds read again (an upload of the same bytes meanwhile keeps it), unless it is a
//   build's log still kept (the platform's record, held by no account);
// - deletes staged uploads left by a process that ended mid-upload.
//
// The API runs it because it owns the store and the database (the controllers have neither). An
// account's pass (`reclaim`) releases only that account's holds: a storage check runs it before it
// refuses.
import type { Knex } from 'knex';
import type { ArtifactHolds, Hold } from '../../lib/artifacts/holds.js';
import { keptBuildLogs, retainedArtifacts, type Observed, type ObservedApp, type RetentionPolicy } from '../../lib/artifacts/retention.js';
import type { ArtifactStore } from '../../lib/artifacts/store.js';
import { terminalPhases, type BuildPhase } from '../../lib/builds/index.js';
import type { BuildSource } from '../../lib/builds/store.js';
import type { DeployStatus } from '../../lib/deploys.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { recordStorageSample } from '../../lib/usage.js';
import { artifactsSubject, digestLockClass } from './account-storage.js';

/** What the collector observed, its holds with their sizes (what a release reports). */
type HeldObserved = Observed & { holds: readonly Hold[] };

/** The advisory lock class of the collector's run (one replica at a time). */
const collectorLockClass = 30_002;

export interface Collection {
  /** Another replica was collecting: this run did nothing. */
  skipped: boolean;
  adopted: Array<{ accountId: string; digest: string; bytes: number }>;
  released: Array<{ accountId: string; digest: string; bytes: number }>;
  /** Files deleted, with their sizes. */
  removed: Array<{ digest: string; bytes: number }>;
  staleStaged: number;
}

export interface CollectorDeps {
  db: Knex;
  holds: ArtifactHolds;
  store: Pick<ArtifactStore, 'list' | 'size' | 'remove' | 'removeStaleStaged'>;
  apps: { all(): readonly App[] };
  policy: RetentionPolicy & { collectEveryMs: number };
  log: Logger;
  clock: () => Date;
}

export class ArtifactCollector {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(private readonly d: CollectorDeps) {}

  /**
   * Collects every `collectEveryMs` from now on (the first run after one period), on the wall clock:
   * a test that moves its clock ahead calls collect() itself.
   */
  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.collect(new Date())
        .catch((err: unknown) => this.d.log.warn({ err }, 'Collecting artifacts failed; the next run retries'))
        .finally(() => (this.running = undefined));
    }, this.d.policy.collectEveryMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One run over every account and the whole store; skipped while another replica runs one. */
  async collect(now: Date = this.d.clock()): Promise<Collection> {
    const none: Collection = { skipped: true, adopted: [], released: [], removed: [], staleStaged: 0 };
    return this.d.db.transaction(async (trx) => {
      const got = await trx.raw<{ rows: Array<{ ok: boolean }> }>('select pg_try_advisory_xact_lock(?, 0) as ok', [collectorLockClass]);
      if (!got.rows[0]?.ok) return none;
      const before = new Date(now.getTime() - this.d.policy.graceMs);
      const observed = await this.observe(now);
      const kept = retainedArtifacts(observed, this.d.policy);
      const result: Collection = { ...none, skipped: false };

      const held = new Set(observed.holds.map((h) => `${h.accountId} ${h.digest}`));
      for (const [accountId, digests] of kept) {
        for (const digest of digests.keys()) {
          if (held.has(`${accountId} ${digest}`)) continue;
          const bytes = await this.d.store.size(digest);
          if (bytes === undefined) continue;
          await this.d.holds.take(accountId, digest, bytes, now);
          result.adopted.push({ accountId, digest, bytes });
        }
      }
      result.released = await this.release(observed, kept, before);
      await this.sample([...result.adopted, ...result.released], now);

      const stillHeld = new Set((await this.d.db('artifact_holds').distinct<Array<{ digest: string }>>('digest')).map((r) => r.digest));
      const logs = keptBuildLogs(observed, this.d.policy);
      for (const file of await this.d.store.list()) {
        if (stillHeld.has(file.digest) || logs.has(file.digest) || file.writtenAt >= before) continue;
        const removed = await this.d.db.transaction(async (t) => {
          await t.raw('select pg_advisory_xact_lock(?, hashtext(?))', [digestLockClass, file.digest]);
          if (await this.d.holds.held(file.digest, t)) return false;
          await this.d.store.remove(file.digest);
          return true;
        });
        if (removed) result.removed.push({ digest: file.digest, bytes: file.bytes });
      }
      result.staleStaged = await this.d.store.removeStaleStaged(before);
      if (result.adopted.length || result.released.length || result.removed.length || result.staleStaged) {
        this.d.log.info(
          {
            adopted: result.adopted.length,
            released: result.released.length,
            removed: result.removed.length,
            freedBytes: result.removed.reduce((n, r) => n + r.bytes, 0),
            staleStaged: result.staleStaged,
          },
          'Collected artifacts',
        );
      }
      return result;
    });
  }

  /** Releases what one account holds and no longer needs (files stay for the next run); answers the bytes released. */
  async reclaim(accountId: string): Promise<number> {
    const now = this.d.clock();
    const observed = await this.observe(now, accountId);
    const released = await this.release(
      observed,
      retainedArtifacts(observed, this.d.policy),
      new Date(now.getTime() - this.d.policy.graceMs),
    );
    await this.sample(released, now);
    return released.reduce((n, r) => n + r.bytes, 0);
  }

  private async release(observed: HeldObserved, kept: Map<string, Map<string, string>>, before: Date): Promise<Collection['released']> {
    const released: Collection['released'] = [];
    for (const h of observed.holds) {
      if (kept.get(h.accountId)?.has(h.digest)) continue;
      if (await this.d.holds.release(h.accountId, h.digest, before))
        released.push({ accountId: h.accountId, digest: h.digest, bytes: h.bytes });
    }
    return released;
  }

  /** A stored_bytes sample of what each account whose holds changed holds now. */
  private async sample(changed: ReadonlyArray<{ accountId: string }>, now: Date): Promise<void> {
    for (const accountId of new Set(changed.map((c) => c.accountId))) {
      await recordStorageSample(this.d.db, accountId, artifactsSubject, await this.d.holds.bytes(accountId), now);
    }
  }

  /** What is, of every account or of one. */
  private async observe(now: Date, accountId?: string): Promise<HeldObserved> {
    const db = this.d.db;
    const scoped = (q: Knex.QueryBuilder) => (accountId ? q.where({ account_id: accountId }) : q);
    const accounts = await (accountId ? db('accounts').where({ id: accountId }) : db('accounts')).select<
      Array<{ id: string; namespace: string }>
    >('id', 'namespace');
    const accountOf = new Map(accounts.map((a) => [a.namespace, a.id]));
    const apps: ObservedApp[] = [];
    for (const app of this.d.apps.all()) {
      const owner = accountOf.get(app.metadata.namespace ?? '');
      // A deleted App (gone, or going) is rolled back no more.
      if (!owner || app.metadata.deletionTimestamp) continue;
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- the generated type of status.live.spec is {} (the CRD keeps it schemaless); the rule takes {} for the same type
      const live = app.status?.live?.spec as Partial<App['spec']> | undefined;
      apps.push({
        accountId: owner,
        uid: app.metadata.uid ?? '',
        name: app.metadata.name ?? '',
        preview: app.spec.preview !== undefined,
        digests: [app.spec.source?.digest, live?.source?.digest].filter((d): d is string => !!d),
        deploys: [app.status?.currentDeploy, app.spec.deployId, app.status?.live?.deploy].filter((d): d is string => !!d),
      });
    }
    const deploys = (await scoped(
      db('deploys').whereNotNull('digest').select('id', 'seq', 'account_id', 'app_uid', 'digest', 'status'),
    )) as Array<{
      id: string;
      seq: string;
      account_id: string;
      app_uid: string;
      digest: string;
      status: DeployStatus;
    }>;
    const builds = (await scoped(
      db('builds').select('id', 'account_id', 'phase', 'source', 'artifact_digest', 'deploy_id', 'completed_at', 'log_digest'),
    )) as Array<{
      id: string;
      account_id: string;
      phase: BuildPhase;
      source: BuildSource;
      artifact_digest: string | null;
      deploy_id: string | null;
      completed_at: Date | null;
      log_digest: string | null;
    }>;
    const backups = (await scoped(
      db('database_backups').where({ status: 'done' }).whereNotNull('digest').select('account_id', 'database', 'digest'),
    )) as Array<{ account_id: string; database: string; digest: string }>;
    return {
      now,
      apps,
      deploys: deploys.map((r) => ({
        accountId: r.account_id,
        id: r.id,
        appUid: r.app_uid,
        seq: Number(r.seq),
        digest: r.digest,
        status: r.status,
      })),
      builds: builds.map((r) => ({
        accountId: r.account_id,
        id: r.id,
        ended: terminalPhases.has(r.phase),
        sourceDigest: 'artifact' in r.source ? r.source.artifact.digest : null,
        outputDigest: r.artifact_digest,
        // '-' while the replica that claimed the deploy makes it (lib/builds/store.ts).
        deployed: r.deploy_id !== null && r.deploy_id !== '-',
        completedAt: r.completed_at ? new Date(r.completed_at) : null,
        logDigest: r.log_digest,
      })),
      backups: backups.map((r) => ({ accountId: r.account_id, database: r.database, digest: r.digest })),
      holds: await this.d.holds.list(accountId),
    };
  }
}
