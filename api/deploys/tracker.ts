// Follows deploys to their end from what the App controller reports: a deploy is live once the
// App's ready machines serve it (status.currentDeploy), and failed when its rollout fails
// (Progressing=False, RolloutFailed) or a newer deploy replaced it first. A failed deploy is rolled
// back to the last live one, so it never takes down what serves. Every replica runs this; the
// writes are conditional (deploy status moves only forward, the App patch carries the
// resourceVersion it decided from), so replicas agree without a leader.
import type { DeployStore } from '../../lib/deploys.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { ApiError } from '../errors.js';
import type { AppRepository } from '../repositories/apps.js';
import { specPatch } from './deployer.js';

export class DeployTracker {
  /** One check at a time per App; a change seen meanwhile runs once more after. */
  private readonly running = new Map<string, { again: App | undefined }>();

  constructor(
    private readonly apps: AppRepository,
    private readonly deploys: DeployStore,
    private readonly log: Logger,
    /** Runs once per deploy that goes live, on the replica that recorded it (invitations). */
    private readonly onLive?: (app: App) => Promise<unknown>,
  ) {}

  start(): void {
    this.apps.onChange((app) => this.schedule(app));
    // A deploy of an App deleted before it went live will never go live.
    this.apps.onDelete((app) => {
      void (async () => {
        for (const d of await this.deploys.inFlight(app.metadata.uid!)) await this.deploys.finish(d.id, { status: 'failed', reason: 'the app was deleted' });
      })().catch((err: unknown) => this.log.error({ err, app: app.metadata.name }, 'Deploy tracking failed'));
    });
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
      while (next) {
        slot.again = undefined;
        await this.check(next).catch((err: unknown) => this.log.error({ err, app: next!.metadata.name }, 'Deploy tracking failed'));
        next = slot.again;
      }
      this.running.delete(uid);
    })();
  }

  /** Visible for tests: one pass over one App. */
  async check(app: App): Promise<void> {
    const current = app.spec.deployId;
    if (!current) return;
    const inFlight = await this.deploys.inFlight(app.metadata.uid!);
    if (!inFlight.length) return;
    const mine = inFlight.find((d) => d.id === current);
    for (const d of inFlight) {
      // Older than what the App names: a newer deploy replaced it. (A newer one the App does not
      // name yet is being written right now.)
      if (mine && d.seq < mine.seq) await this.deploys.finish(d.id, { status: 'failed', reason: `replaced by ${current} before it went live` });
    }
    if (!mine) return;
    if (app.status?.currentDeploy === current) {
      if (await this.deploys.finish(current, { status: 'live' })) {
        this.log.info({ app: app.metadata.name, deploy: current }, 'Deploy live');
        await this.onLive?.(app);
      }
      return;
    }
    const progressing = app.status?.conditions?.find((c) => c.type === 'Progressing');
    const settled = app.status?.observedGeneration === app.metadata.generation;
    if (!settled || progressing?.status !== 'False' || progressing.reason !== 'RolloutFailed') return;
    await this.fail(app, current, progressing.message);
  }

  private async fail(app: App, deployId: string, reason: string): Promise<void> {
    const name = app.metadata.name!;
    const previous = await this.deploys.previousLive(app.metadata.uid!, deployId);
    if (previous) {
      try {
        await this.apps.patchSpec(app.metadata.namespace!, name, { ...specPatch(previous.spec), deployId: previous.id }, app.metadata.resourceVersion);
      } catch (err) {
        // Someone changed the App meanwhile (a new deploy, another replica's rollback): look again then.
        if (err instanceof ApiError && (err.code === 'conflict' || err.code === 'not_found')) return;
        throw err;
      }
    }
    if (await this.deploys.finish(deployId, { status: 'failed', reason })) {
      this.log.warn({ app: name, deploy: deployId, reason, restored: previous?.id }, 'Deploy failed');
    }
  }
}
