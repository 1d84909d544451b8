// What a Build leaves in the account's records, from its status as the controllers write it: its
// record moved forward (each phase once, with its event, and build_seconds when it ends: lib/builds/
// store.ts), its log kept once it ended (the Job and its Pod go an hour later), and, for a Build
// that asks for it, a deploy of its output. Every API replica follows the Build cache; the record's
// row decides who writes what (a phase moves once, the deploy is claimed once), so two replicas
// seeing the same change write it once. A Build made with kubectl gets its record when first seen.
import type * as k8s from '@kubernetes/client-node';
import { NamespaceAccounts } from '../../lib/accounts.js';
import { terminalPhases } from '../../lib/builds/index.js';
import type { BuildSource, BuildStore } from '../../lib/builds/store.js';
import { labels } from '../../lib/contract.js';
import type { Db } from '../../lib/db/connection.js';
import type { Logger } from '../../lib/logger.js';
import type { Build } from '../../lib/resources/index.js';
import type { ArtifactStore } from '../../lib/artifacts/store.js';
import { collectLog } from './logs.js';

/**
 * Where ended builds' logs are kept: objects of the artifact store that no account holds (the
 * platform's records, not counted in an account's storage), left there by the collector for
 * SVC_ARTIFACT_BUILD_LOG_DAYS (lib/artifacts/retention.ts keptBuildLogs).
 */
export interface LogKeeping {
  artifacts: Pick<ArtifactStore, 'stageBytes' | 'put'>;
  /** A log longer than this keeps its end. */
  limitBytes: number;
  /** How long after a failed store a log is tried again (30 s). */
  retryMs?: number;
}

/** The last `limit` bytes of `text`, from the first whole UTF-8 character on. */
export function endOf(text: Buffer, limit: number): Buffer {
  let end = text.subarray(-limit);
  while (end.length && (end[0]! & 0xc0) === 0x80) end = end.subarray(1);
  return end;
}

export type DeployOutcome = { deployId: string } | { error: string };

export class BuildRecorder {
  /** Builds whose end this process has recorded whole (log kept, deploy done). */
  private readonly finished = new Set<string>();
  /** One pass at a time per Build; a change seen meanwhile runs once more after. */
  private readonly running = new Map<string, { again: Build | undefined }>();
  private readonly accounts: NamespaceAccounts;

  constructor(
    db: Db,
    private readonly store: BuildStore,
    private readonly core: k8s.CoreV1Api,
    /** Deploys a succeeded build's output to its app. */
    private readonly deploy: (accountId: string, b: Build) => Promise<DeployOutcome>,
    private readonly logs: LogKeeping,
    private readonly log: Logger,
  ) {
    this.accounts = new NamespaceAccounts(db);
  }

  observe(b: Build): void {
    const id = b.metadata.uid!;
    if (this.finished.has(id)) return;
    const run = this.running.get(id);
    if (run) {
      run.again = b;
      return;
    }
    const state = { again: undefined as Build | undefined };
    this.running.set(id, state);
    void (async () => {
      let next: Build | undefined = b;
      while (next) {
        state.again = undefined;
        await this.record(next).catch((err: unknown) =>
          this.log.warn(
            { err, build: next!.metadata.name, namespace: next!.metadata.namespace },
            'Recording a build failed; its next change retries',
          ),
        );
        next = state.again;
      }
      this.running.delete(id);
    })();
  }

  private async record(b: Build): Promise<void> {
    const ns = b.metadata.namespace!;
    const id = b.metadata.name!;
    const account = b.metadata.labels?.[labels.account] || (await this.accounts.of(ns));
    if (!account) return;
    // The record never names a token's Secret.
    const { secretName: _secret, ...git } = b.spec.source.git ?? { url: '' };
    const source: BuildSource = b.spec.source.artifact ? { artifact: { digest: b.spec.source.artifact.digest } } : { git };
    await this.store.create({
      id,
      accountId: account,
      app: b.spec.app,
      source,
      deploy: b.spec.deploy ?? false,
      createdBy: null,
      createdAt: new Date(b.metadata.creationTimestamp as unknown as string),
    });
    await this.store.advance(account, b);
    const phase = b.status?.phase;
    if (!phase || !terminalPhases.has(phase)) return;
    if (phase === 'Succeeded' && b.spec.deploy && (await this.store.claimDeploy(id))) {
      const outcome = await this.deploy(account, b).catch((err: unknown): DeployOutcome => ({
        error: err instanceof Error ? err.message : String(err),
      }));
      await this.store.deployed(id, outcome);
      if ('error' in outcome)
        this.log.warn({ build: id, namespace: ns, app: b.spec.app, error: outcome.error }, "Deploying a build's output failed");
      else this.log.info({ build: id, namespace: ns, app: b.spec.app, deploy: outcome.deployId }, "Deployed a build's output");
    }
    // After the deploy: a store that cannot take the log now does not hold the app's deploy up.
    // An ended Build changes no more, so a failure is tried again on a timer (its Job, whose
    // containers the log is read from, stays an hour).
    if (!(await this.store.log(account, id))) {
      try {
        const text = Buffer.from((await collectLog(this.core, ns, id)) ?? '');
        const cut = text.length > this.logs.limitBytes;
        // Stored first, then named: a record never names a log the store does not have.
        const staged = await this.logs.artifacts.stageBytes(cut ? endOf(text, this.logs.limitBytes) : text);
        await this.logs.artifacts.put(staged).catch(async (err: unknown) => {
          await staged.discard();
          throw err;
        });
        await this.store.keepLog(id, staged.digest, staged.size, cut);
      } catch (err) {
        this.log.warn({ err, build: id, namespace: ns }, "Keeping a build's log failed; trying again in 30 s");
        setTimeout(() => this.observe(b), this.logs.retryMs ?? 30_000).unref();
        return;
      }
    }
    this.finished.add(b.metadata.uid!);
  }
}
