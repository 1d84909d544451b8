// Records in the deploy history (PostgreSQL) how deploys ended, as the App controller decided it in
// App.status.deploys: the controller is the one owner of the lifecycle (it decides live or failed,
// and keeps the last live revision serving); this only writes its decisions down. One API replica
// does it, the holder of a Lease, so replicas never race on a row; the writes only move a deploy
// forward, so a new leader repeating its predecessor's last writes changes nothing. Until a row is
// written, reads already show the outcome from status (presentDeploy). The controllers keep no
// database credentials: status is the hand-over. docs/decisions/0015-controllers-own-the-lifecycle.md.
import { doublingDelayMs } from '../../lib/backoff.js';
import type { DeployStore } from '../../lib/deploys.js';
import type { LeaderElection } from '../../lib/kube/leader.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';

/** Where the recorder sees Apps: the API's informer cache. */
export interface AppFeed {
  all(): readonly App[];
  onChange(fn: (app: App) => void): void;
  onDelete(fn: (app: App) => void): void;
}

/** A pass that takes longer than this is abandoned and retried (a connection that hangs). */
const recordDeadlineMs = 15_000;

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the database within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** How often in-flight deploys of deleted Apps are looked for, besides on each delete. */
const sweepEveryMs = 60_000;

/**
 * Writes the outcomes an App's status reports, oldest first, skipping those in `skip`: each
 * deploy's row moved forward to what the controller decided, and the older ones still in flight
 * marked replaced. Only forward, so any replica may run it at any time (the recorder as it leads,
 * the API before it answers from the rows: a rollback's target). What was written, or found final.
 */
export async function recordOutcomes(
  deploys: Pick<DeployStore, 'finish' | 'replaceOlder'>,
  appUid: string,
  outcomes: NonNullable<App['status']>['deploys'],
  skip: ReadonlySet<string> = new Set(),
): Promise<Array<{ id: string; state: 'live' | 'failed'; reason: string | undefined; moved: boolean; replaced: number }>> {
  const written = [];
  const reported = (outcomes ?? []).map((o) => o.id);
  for (const o of [...(outcomes ?? [])].reverse()) {
    if (skip.has(o.id)) continue;
    const at = new Date(o.at);
    const result = await deploys.finish(
      o.id,
      o.state === 'live' ? { status: 'live' } : { status: 'failed', reason: o.reason ?? 'the rollout failed' },
      at,
    );
    // The App may name a deploy whose row is not written yet (an App created with its first
    // deploy writes the row just after): look again on the App's next change.
    if (result === 'missing') continue;
    // Never one the controller reports an outcome of: its row is moved to that outcome instead
    // (here, or by whichever pass has not skipped it), even where the row fell behind.
    const replaced = await deploys.replaceOlder(appUid, o.id, at, reported);
    written.push({ id: o.id, state: o.state, reason: o.reason, moved: result === 'moved', replaced });
  }
  return written;
}

export class DeployRecorder {
  private leading = false;
  private stopped = false;
  /** Deploys whose outcome this term has written (or found written). */
  private readonly recorded = new Set<string>();
  /** One pass at a time per App; a change seen meanwhile runs once more after. */
  private readonly running = new Map<string, { again: App | undefined }>();
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Failed attempts per App uid and the pending retry. */
  private readonly retries = new Map<string, { attempt: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly apps: AppFeed,
    private readonly deploys: Pick<DeployStore, 'finish' | 'replaceOlder' | 'failOrphans'>,
    private readonly election: Pick<LeaderElection, 'run' | 'release'>,
    private readonly log: Logger,
    /**
     * Runs after each pass over an App's status (email invitations and their revocation, which
     * follow what the App controller reports, whatever changed the policy).
     */
    private readonly afterRecord?: (app: App) => Promise<unknown>,
    /** Runs for each App deleted while this replica leads (the app.expired event). */
    private readonly onDeleted?: (app: App) => Promise<unknown>,
  ) {}

  start(): void {
    this.apps.onChange((app) => {
      if (this.leading) this.schedule(app);
    });
    this.apps.onDelete((app) => {
      if (!this.leading) return;
      void this.sweep();
      this.onDeleted?.(app).catch((err: unknown) => this.log.warn({ err, app: app.metadata.name }, 'Recording a deleted App failed'));
    });
    void this.campaign();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.leading = false;
    clearInterval(this.sweepTimer);
    for (const r of this.retries.values()) clearTimeout(r.timer);
    await this.election.release();
  }

  private async campaign(): Promise<void> {
    const led = await this.election.run(() => {
      this.leading = false;
      clearInterval(this.sweepTimer);
      if (!this.stopped) void this.campaign();
    });
    if (!led || this.stopped) return;
    this.leading = true;
    this.recorded.clear();
    // A new term catches up on everything decided while no replica recorded.
    for (const app of this.apps.all()) this.schedule(app);
    void this.sweep();
    this.sweepTimer = setInterval(() => void this.sweep(), sweepEveryMs);
    this.sweepTimer.unref();
  }

  private schedule(app: App): void {
    const uid = app.metadata.uid!;
    const busy = this.running.get(uid);
    if (busy) {
      busy.again = app;
      return;
    }
    const slot = { again: undefined as App | undefined };
    this.running.set(uid, slot);
    void (async () => {
      let next: App | undefined = app;
      while (next && this.leading) {
        slot.again = undefined;
        const failed = await withDeadline(this.record(next), recordDeadlineMs).then(
          () => false,
          (err: unknown) => {
            this.log.warn({ err, app: next!.metadata.name }, 'Recording deploy outcomes failed; retrying');
            return true;
          },
        );
        // PostgreSQL away: the App may not change again, so look again after a while by itself.
        if (failed) this.retryLater(uid);
        else {
          clearTimeout(this.retries.get(uid)?.timer);
          this.retries.delete(uid);
        }
        next = slot.again;
      }
      this.running.delete(uid);
    })();
  }

  /** One retry timer per App, 0.5 s doubling to 5 s: recording is cheap, and an outage's end should show at once. */
  private retryLater(uid: string): void {
    const attempt = (this.retries.get(uid)?.attempt ?? 0) + 1;
    clearTimeout(this.retries.get(uid)?.timer);
    const timer = setTimeout(
      () => {
        const app = this.apps.all().find((a) => a.metadata.uid === uid);
        if (app && this.leading) this.schedule(app);
      },
      doublingDelayMs(attempt, 500, 5000),
    );
    timer.unref();
    this.retries.set(uid, { attempt, timer });
  }

  /** Writes the outcomes an App's status reports that are not written yet. Visible for tests. */
  async record(app: App): Promise<void> {
    for (const written of await recordOutcomes(this.deploys, app.metadata.uid!, app.status?.deploys, this.recorded)) {
      this.recorded.add(written.id);
      if (written.moved)
        this.log.info(
          { app: app.metadata.name, deploy: written.id, status: written.state, reason: written.reason, replaced: written.replaced },
          `Deploy ${written.state}`,
        );
    }
    await this.afterRecord?.(app);
  }

  /** Deploys still in flight whose App is gone never go live. Visible for tests. */
  async sweep(): Promise<void> {
    if (!this.leading) return;
    const uids = new Set(this.apps.all().map((a) => a.metadata.uid!));
    const failed = await this.deploys.failOrphans(uids, 'the app was deleted').catch((err: unknown) => {
      this.log.warn({ err }, 'Sweeping deploys of deleted apps failed; retrying');
      return 0;
    });
    if (failed) this.log.info({ failed }, 'Deploys of deleted apps marked failed');
  }
}
