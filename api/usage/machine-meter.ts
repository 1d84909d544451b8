// machine_seconds: how long each app machine's container ran, metered from the Pods the App
// controller made (a cluster-wide informer of the machine label), per machine and per app (the
// usage row's subject is `<app>/<pod>`). The controllers hold no database credentials (decision
// 0015), so the API, which does, writes what the cluster shows: every replica meters, and the
// usage row's unique key (account, meter, subject, start) with its `open` flag make each start and
// each end count once, and their events (machine.started, machine.stopped, machine.crashed) be
// recorded once, in the transaction that writes them.
//
// A run is a container's life from its `startedAt`: open while it runs (its end moved to now on
// every flush), closed at its `finishedAt` when the kubelet reports it ended (a crash shows as the
// restarted container's last termination), or when its Pod goes. A meter that starts after a crash
// or a restart goes on with the runs it finds still running (the same start, so the same row) and
// closes the open rows of Pods gone meanwhile at their last flush: at most one flush interval of
// a machine that went while no meter ran is not counted.
import type * as k8s from '@kubernetes/client-node';
import type { Knex } from 'knex';
import { NamespaceAccounts } from '../../lib/accounts.js';
import { containers, labels } from '../../lib/contract.js';
import { recordEvent } from '../../lib/events.js';
import type { Logger } from '../../lib/logger.js';

const meter = 'machine_seconds';

/** One run of a machine's container. */
export interface MachineRun {
  subject: string;
  app: string;
  machine: number;
  pod: string;
  node: string | undefined;
  startedAt: Date;
  /** When it ended; undefined while it runs. */
  endedAt?: Date;
  /** How it ended, from the kubelet's termination record. */
  exit?: { reason: string | undefined; exitCode: number | undefined };
}

/** The runs a Pod shows of its machine container: the one before the last restart, and the current or final one. Pure. */
export function runsOf(pod: k8s.V1Pod): MachineRun[] {
  const app = pod.metadata?.labels?.[labels.app];
  const name = pod.metadata?.name;
  const status = pod.status?.containerStatuses?.find((c) => c.name === containers.machine);
  if (!app || !name || !status) return [];
  const base = {
    subject: `${app}/${name}`,
    app,
    machine: Number(pod.metadata?.labels?.[labels.machine] ?? 0),
    pod: name,
    node: pod.spec?.nodeName,
  };
  const runs: MachineRun[] = [];
  const ended = (t: k8s.V1ContainerStateTerminated | undefined): MachineRun | undefined =>
    t?.startedAt && t.finishedAt
      ? { ...base, startedAt: new Date(t.startedAt), endedAt: new Date(t.finishedAt), exit: { reason: t.reason, exitCode: t.exitCode } }
      : undefined;
  const last = ended(status.lastState?.terminated);
  if (last) runs.push(last);
  const now = status.state?.running?.startedAt
    ? { ...base, startedAt: new Date(status.state.running.startedAt) }
    : ended(status.state?.terminated);
  if (now) runs.push(now);
  return runs;
}

/** How a run that ended is told: stopped (deleted, replaced, exited cleanly) or crashed, and why. */
export function endOf(
  run: MachineRun,
  podDeleted: boolean,
): { type: 'machine.stopped' | 'machine.crashed'; reason: string; exitCode?: number } {
  if (podDeleted) return { type: 'machine.stopped', reason: 'deleted' };
  const code = run.exit?.exitCode;
  if (run.exit?.reason === 'OOMKilled' || (code !== undefined && code !== 0)) {
    return { type: 'machine.crashed', reason: run.exit?.reason ?? 'Error', ...(code !== undefined ? { exitCode: code } : {}) };
  }
  return { type: 'machine.stopped', reason: run.exit?.reason ?? 'exited' };
}

export interface PodFeed {
  list(): readonly k8s.V1Pod[];
  on(event: 'add' | 'update' | 'delete', fn: (pod: k8s.V1Pod) => void): void;
}

export class MachineMeter {
  private timer: NodeJS.Timeout | undefined;
  private readonly accounts: NamespaceAccounts;
  /** Writes in order per subject, so a run's close never overtakes its start. */
  private readonly chains = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(
    private readonly db: Knex,
    private readonly pods: PodFeed,
    private readonly log: Logger,
    private readonly clock: () => Date = () => new Date(),
    private readonly flushMs = 30_000,
  ) {
    this.accounts = new NamespaceAccounts(db);
  }

  /** Call once the feed's cache is filled: closes what went meanwhile, then follows changes. */
  async start(): Promise<void> {
    this.pods.on('add', (pod) => this.observe(pod, false));
    this.pods.on('update', (pod) => this.observe(pod, false));
    this.pods.on('delete', (pod) => this.observe(pod, true));
    for (const pod of this.pods.list()) this.observe(pod, false);
    await this.settled();
    await this.closeOrphans();
    this.timer = setInterval(
      () => void this.flush().catch((err: unknown) => this.log.warn({ err }, 'Metering machines failed; retrying at the next flush')),
      this.flushMs,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.settled();
  }

  /** Every write queued so far, done. */
  async settled(): Promise<void> {
    while (this.chains.size) await Promise.allSettled([...this.chains.values()]);
  }

  /** Moves the end of every running machine's open run to now. */
  async flush(): Promise<void> {
    const now = this.clock();
    for (const pod of this.pods.list()) {
      if (pod.metadata?.deletionTimestamp) continue;
      for (const run of runsOf(pod)) if (!run.endedAt) this.queue(run.subject, () => this.extend(pod, run, now));
    }
    await this.settled();
  }

  private observe(pod: k8s.V1Pod, deleted: boolean): void {
    if (this.stopped) return;
    const gone = deleted || !!pod.metadata?.deletionTimestamp;
    for (const run of runsOf(pod)) {
      if (run.endedAt) this.queue(run.subject, () => this.close(pod, run, run.endedAt!, endOf(run, gone)));
      else if (deleted) this.queue(run.subject, () => this.close(pod, run, this.clock(), endOf(run, true)));
      else this.queue(run.subject, () => this.open(pod, run));
    }
  }

  private queue(subject: string, work: () => Promise<void>): void {
    const next = (this.chains.get(subject) ?? Promise.resolve())
      .then(work)
      .catch((err: unknown) => this.log.warn({ err, machine: subject }, 'Metering a machine failed; the next change or flush writes it'))
      .finally(() => {
        if (this.chains.get(subject) === next) this.chains.delete(subject);
      });
    this.chains.set(subject, next);
  }

  private accountOf(pod: k8s.V1Pod): Promise<string | undefined> {
    return this.accounts.of(pod.metadata!.namespace!);
  }

  /** The run's row, inserted open if it is not there yet (with machine.started, once). */
  private async ensureRow(tx: Knex.Transaction, account: string, run: MachineRun, end: Date): Promise<void> {
    const ended = new Date(Math.max(end.getTime(), run.startedAt.getTime()));
    const inserted = (await tx('usage_records')
      .insert({
        account_id: account,
        meter,
        subject: run.subject,
        quantity: (ended.getTime() - run.startedAt.getTime()) / 1000,
        started_at: run.startedAt,
        ended_at: ended,
        open: true,
      })
      .onConflict(['account_id', 'meter', 'subject', 'started_at'])
      .ignore()
      .returning('id')) as unknown[];
    if (inserted.length)
      await recordEvent(tx, account, 'machine.started', run.app, { machine: run.machine, pod: run.pod, node: run.node ?? null });
  }

  private async open(pod: k8s.V1Pod, run: MachineRun): Promise<void> {
    const account = await this.accountOf(pod);
    if (!account) return;
    await this.db.transaction((tx) => this.ensureRow(tx, account, run, this.clock()));
  }

  private async extend(pod: k8s.V1Pod, run: MachineRun, now: Date): Promise<void> {
    const account = await this.accountOf(pod);
    if (!account) return;
    await this.db.transaction(async (tx) => {
      await this.ensureRow(tx, account, run, now);
      await tx('usage_records')
        .where({ account_id: account, meter, subject: run.subject, started_at: run.startedAt, open: true })
        .where('ended_at', '<', now)
        .update({ ended_at: now, quantity: tx.raw('extract(epoch from (?::timestamptz - started_at))', [now]) });
    });
  }

  private async close(pod: k8s.V1Pod, run: MachineRun, at: Date, end: ReturnType<typeof endOf>): Promise<void> {
    const account = await this.accountOf(pod);
    if (!account) return;
    await this.db.transaction(async (tx) => {
      await this.ensureRow(tx, account, run, at);
      const [row] = await tx('usage_records')
        .where({ account_id: account, meter, subject: run.subject, started_at: run.startedAt, open: true })
        .update({
          open: false,
          ended_at: tx.raw('greatest(started_at, ?::timestamptz)', [at]),
          quantity: tx.raw('extract(epoch from (greatest(started_at, ?::timestamptz) - started_at))', [at]),
        })
        .returning<Array<{ quantity: number }>>('quantity');
      if (!row) return;
      await recordEvent(tx, account, end.type, run.app, {
        machine: run.machine,
        pod: run.pod,
        reason: end.reason,
        ...(end.exitCode !== undefined ? { exit_code: end.exitCode } : {}),
        seconds: Math.round(row.quantity * 10) / 10,
      });
    });
  }

  /** Open runs of this database's accounts whose Pod is gone: closed at their last flush. */
  private async closeOrphans(): Promise<void> {
    const present = new Set(this.pods.list().flatMap((p) => runsOf(p).map((r) => `${r.subject}@${r.startedAt.getTime()}`)));
    const open = await this.db('usage_records').where({ meter, open: true }).select<
      Array<{
        account_id: string;
        subject: string;
        started_at: Date;
        ended_at: Date;
      }>
    >('account_id', 'subject', 'started_at', 'ended_at');
    for (const r of open) {
      if (present.has(`${r.subject}@${r.started_at.getTime()}`)) continue;
      await this.db.transaction(async (tx) => {
        const n = await tx('usage_records')
          .where({ account_id: r.account_id, meter, subject: r.subject, started_at: r.started_at, open: true })
          .update({ open: false });
        if (!n) return;
        const [app, pod] = r.subject.split('/') as [string, string];
        const seconds = (r.ended_at.getTime() - r.started_at.getTime()) / 1000;
        await recordEvent(tx, r.account_id, 'machine.stopped', app, {
          pod,
          reason: 'gone while no meter ran',
          seconds: Math.round(seconds * 10) / 10,
        });
      });
      this.log.info({ machine: r.subject, endedAt: r.ended_at }, 'Closed the run of a machine that went while no meter ran');
    }
  }
}
