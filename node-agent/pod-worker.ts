// Runs one pod bound to a node: its address, init containers in order, then its containers under
// the pod's restart policy with back-off, status reported after every change, and a graceful end
// (SIGTERM, the grace period, SIGKILL) when the pod is deleted.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../lib/logger.js';
import { ContainerProcess, type ExitResult } from './container-process.js';
import { ContainerCgroup, limitsOf } from './limits.js';
import { ContainerProber } from './probes.js';
import { prepareVolumes, VolumeError, type VolumeSources } from './volumes.js';
import { EnvError, resolveEnv, type EnvSources } from './env.js';
import { imageProblem, planLaunch, type Waiting } from './launch.js';
import type { ImageRule } from './images.js';
import type { PodNetwork } from './network.js';
import { ContainerLog } from './logs.js';
import { podStatus, type ContainerRecord, type PodRecord } from './status.js';

export interface WorkerDeps {
  hostIP: string;
  rules: readonly ImageRule[];
  network: PodNetwork;
  dataDir: string;
  logMaxBytes: number;
  envSources: EnvSources;
  volumeSources: VolumeSources;
  cgroups: 'v2' | 'v1' | 'none';
  reportStatus(pod: k8s.V1Pod, status: k8s.V1PodStatus): Promise<void>;
  /** A Kubernetes Event about the pod, as the kubelet records them (kubectl describe pod). */
  recordEvent(pod: k8s.V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** The kubelet's final delete (grace 0) once every container has ended. */
  deletePod(pod: k8s.V1Pod): Promise<void>;
  log: Logger;
}

export const sandboxRuntimeClass = 'svc-sandbox';
/** On a sandboxed pod, "true" gives it network access. */
export const networkAnnotation = 'svc.dev/network';

const initialBackoffMs = 1000;
const maxBackoffMs = 30_000;
/** A container that ran this long before failing restarts without accumulated back-off. */
const backoffResetMs = 10_000;

type RunOutcome = ExitResult | 'not-started';

/** A running container as the kubelet's stats see it. */
export interface RunningContainer {
  name: string;
  /** Distinct per container run, so usage rates never span two runs. */
  runId: string;
  startedAt: Date;
  pid: number | undefined;
  cgroup: ContainerCgroup;
}

export class PodWorker {
  private readonly record: PodRecord;
  private readonly processes = new Map<string, ContainerProcess>();
  private readonly currentLogs = new Map<string, ContainerLog>();
  private readonly cgroups = new Map<string, ContainerCgroup>();
  private stopping = false;
  private readonly sleepers = new Set<() => void>();
  private statusDirty = false;
  private flushing: Promise<void> | undefined;
  private lastStatus: k8s.V1PodStatus | undefined;
  private terminating: Promise<void> | undefined;
  private volumes = new Map<string, string>();
  readonly dir: string;

  constructor(
    private pod: k8s.V1Pod,
    private readonly deps: WorkerDeps,
  ) {
    const meta = pod.metadata!;
    this.dir = path.join(deps.dataDir, 'pods', `${meta.namespace}_${meta.name}_${meta.uid}`);
    const before = new Map((pod.status?.containerStatuses ?? []).map((s) => [s.name, s.restartCount]));
    const rec = (c: k8s.V1Container, reason: string): ContainerRecord => ({
      name: c.name,
      image: c.image ?? '',
      state: { kind: 'waiting', reason },
      restartCount: before.get(c.name) ?? 0,
      ready: false,
      started: false,
    });
    this.record = {
      podIP: undefined,
      hostIP: deps.hostIP,
      startTime: pod.status?.startTime ? new Date(pod.status.startTime) : new Date(),
      restartPolicy: (pod.spec?.restartPolicy as PodRecord['restartPolicy']) ?? 'Always',
      init: (pod.spec?.initContainers ?? []).map((c) => rec(c, 'PodInitializing')),
      containers: (pod.spec?.containers ?? []).map((c) => rec(c, pod.spec?.initContainers?.length ? 'PodInitializing' : 'ContainerCreating')),
      initialized: !pod.spec?.initContainers?.length,
      finished: false,
    };
    this.lastStatus = pod.status;
  }

  /** Pods of the sandbox RuntimeClass run with sandboxArgs (docs/node-agent.md). */
  get sandboxed(): boolean {
    return this.pod.spec?.runtimeClassName === sandboxRuntimeClass;
  }

  private get networkAllowed(): boolean {
    return this.pod.metadata?.annotations?.[networkAnnotation] === 'true';
  }

  get name(): string {
    return `${this.pod.metadata?.namespace}/${this.pod.metadata?.name}`;
  }

  get nodeName(): string | undefined {
    return this.pod.spec?.nodeName;
  }

  get podRef(): { name: string; namespace: string; uid: string } {
    const meta = this.pod.metadata!;
    return { name: meta.name!, namespace: meta.namespace!, uid: meta.uid! };
  }

  get startTime(): Date {
    return this.record.startTime;
  }

  /** The containers running now (init containers included while they run). */
  runningContainers(): RunningContainer[] {
    return [...this.processes].flatMap(([name, proc]) => {
      const cgroup = this.cgroups.get(name);
      const rec = [...this.record.containers, ...this.record.init].find((c) => c.name === name);
      if (!cgroup || !rec) return [];
      return [{ name, runId: `${this.pod.metadata!.uid}/${name}/${rec.restartCount}`, startedAt: proc.startedAt, pid: proc.pid, cgroup }];
    });
  }

  start(): void {
    this.run().catch((err: unknown) => this.deps.log.error({ err, pod: this.name }, 'Pod worker failed'));
  }

  /** The informer's newer copy of the pod; a deletion timestamp starts the graceful end. */
  update(pod: k8s.V1Pod): void {
    this.pod = pod;
    if (pod.metadata?.deletionTimestamp) {
      const graceSeconds = pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      void this.terminate(graceSeconds * 1000, true);
    }
  }

  /** Stops every container (SIGTERM, then SIGKILL after graceMs); with deleteAfter, removes the pod. */
  terminate(graceMs: number, deleteAfter: boolean): Promise<void> {
    this.terminating ??= (async () => {
      this.stopping = true;
      for (const wake of this.sleepers) wake();
      for (const name of this.processes.keys()) this.event('Normal', 'Killing', `Stopping container ${name}`);
      await Promise.all([...this.processes.values()].map((p) => p.stop(graceMs)));
      this.deps.log.info({ pod: this.name, graceMs }, 'Stopped pod containers');
      if (deleteAfter) {
        this.report();
        await this.flushing;
        await this.deps.deletePod(this.pod).catch((err: unknown) => this.deps.log.warn({ err, pod: this.name }, 'Final pod delete failed'));
      }
      await this.deps.network.teardown(this.pod.metadata!.uid!);
    })();
    return this.terminating;
  }

  /** The log of a container's current run, or of its previous one. */
  logFile(container: string, previous: boolean): string | undefined {
    const rec = [...this.record.containers, ...this.record.init].find((c) => c.name === container);
    if (!rec) return undefined;
    const run = previous ? rec.restartCount - 1 : rec.restartCount;
    return run < 0 ? undefined : this.logPath(container, run);
  }

  /** The live log of a running container, for followers. */
  liveLog(container: string): ContainerLog | undefined {
    const log = this.currentLogs.get(container);
    return log && !log.closed ? log : undefined;
  }

  private logPath(container: string, run: number): string {
    return path.join(this.dir, 'logs', container, `${run}.log`);
  }

  private async run(): Promise<void> {
    const spec = this.pod.spec!;
    const uid = this.pod.metadata!.uid!;
    const everyContainer = () => [...this.record.init, ...this.record.containers];
    const podIP = await this.retrying(
      () => this.deps.network.setup(uid, this.pod.status?.podIP, this.sandboxed && !this.networkAllowed),
      () => true,
      (err) => {
        for (const c of everyContainer()) c.state = { kind: 'waiting', reason: 'CreatePodSandboxError', message: `pod network setup failed: ${err.message}` };
      },
    );
    if (podIP === undefined) return;
    this.record.podIP = podIP;
    mkdirSync(path.join(this.dir, 'root'), { recursive: true });
    // As the kubelet does: a missing secret, config map or claim may appear later.
    const volumes = await this.retrying(
      () => prepareVolumes(this.pod, this.dir, this.deps.volumeSources),
      (err) => err instanceof VolumeError,
      (err) => {
        for (const c of everyContainer()) c.state = { kind: 'waiting', reason: 'ContainerCreating', message: `MountVolume failed: ${err.message}` };
        this.event('Warning', 'FailedMount', `MountVolume failed: ${err.message}`);
      },
    );
    if (!volumes) return;
    this.volumes = volumes;
    this.report();
    const inits = spec.initContainers ?? [];
    for (let i = 0; i < inits.length; i++) {
      const ok = await this.runInit(inits[i]!, this.record.init[i]!);
      if (!ok) {
        this.record.finished = true;
        this.report();
        return;
      }
    }
    this.record.initialized = true;
    for (const c of this.record.containers) if (c.state.kind === 'waiting') c.state = { kind: 'waiting', reason: 'ContainerCreating' };
    this.report();
    await Promise.all(spec.containers.map((c, i) => this.supervise(c, this.record.containers[i]!)));
    if (!this.stopping) {
      this.record.finished = true;
      this.report();
    }
  }

  /** Runs an init container to success; false when the pod must stop here. */
  private async runInit(spec: k8s.V1Container, rec: ContainerRecord): Promise<boolean> {
    let backoff = initialBackoffMs;
    for (;;) {
      const outcome = await this.runOnce(spec, rec, true);
      if (this.stopping || outcome === 'not-started') return false;
      if (outcome.exitCode === 0) return true;
      if (this.record.restartPolicy === 'Never') return false;
      backoff = await this.backoff(rec, backoff);
      if (this.stopping) return false;
    }
  }

  private async supervise(spec: k8s.V1Container, rec: ContainerRecord): Promise<void> {
    let backoff = initialBackoffMs;
    for (;;) {
      const outcome = await this.runOnce(spec, rec, false);
      if (this.stopping || outcome === 'not-started') return;
      const policy = this.record.restartPolicy;
      if (policy === 'Never' || (policy === 'OnFailure' && outcome.exitCode === 0)) return;
      if (outcome.finishedAt.getTime() - outcome.startedAt.getTime() >= backoffResetMs) backoff = initialBackoffMs;
      backoff = await this.backoff(rec, backoff);
      if (this.stopping) return;
    }
  }

  /** CrashLoopBackOff: waits, then counts the restart; returns the next back-off. */
  private async backoff(rec: ContainerRecord, ms: number): Promise<number> {
    rec.lastState = rec.state;
    this.event('Warning', 'BackOff', `Back-off ${ms / 1000}s restarting failed container ${rec.name}`);
    rec.state = { kind: 'waiting', reason: 'CrashLoopBackOff', message: `back-off ${ms / 1000}s restarting failed container=${rec.name} pod=${this.pod.metadata?.name}` };
    this.report();
    await this.sleep(ms);
    rec.restartCount += 1;
    return Math.min(ms * 2, maxBackoffMs);
  }

  private async runOnce(spec: k8s.V1Container, rec: ContainerRecord, isInit: boolean): Promise<RunOutcome> {
    const wait = (w: Waiting): 'not-started' => {
      rec.state = { kind: 'waiting', ...w.waiting };
      this.event('Warning', w.waiting.reason, `container ${spec.name}: ${w.waiting.message}`);
      this.report();
      return 'not-started';
    };
    const badImage = imageProblem(spec.image, this.deps.rules);
    if (badImage) return wait(badImage);
    const env = await this.retrying(
      () => resolveEnv(this.pod, spec, this.record.podIP!, this.deps.envSources),
      (err) => err instanceof EnvError,
      (err) => {
        rec.state = { kind: 'waiting', reason: 'CreateContainerConfigError', message: err.message };
        this.event('Warning', 'Failed', `Error: ${err.message}`);
      },
    );
    if (!env) return 'not-started';
    // terminate() may have run while the env was read: a process started now would outlive it.
    if (this.stopping) return 'not-started';
    const plan = planLaunch({
      spec,
      rules: this.deps.rules,
      env,
      home: path.join(this.dir, 'root'),
      volumes: this.volumes,
      podName: this.pod.metadata!.name!,
      sandbox: this.sandboxed ? { unshareNet: !this.deps.network.isolates && !this.networkAllowed } : undefined,
    });
    if ('waiting' in plan) return wait(plan);
    const limits = limitsOf(spec);
    const cgroup = new ContainerCgroup(this.deps.cgroups, `${this.pod.metadata!.uid}-${spec.name}-${rec.restartCount}`, limits);
    this.noteLimits(spec.name, limits, cgroup.enforced);
    const log = new ContainerLog(this.logPath(spec.name, rec.restartCount), this.deps.logMaxBytes);
    this.currentLogs.set(spec.name, log);
    const proc = new ContainerProcess(cgroup.wrap(this.deps.network.wrap(this.pod.metadata!.uid!, plan.argv)), {
      cwd: plan.cwd,
      log,
      wrapped: plan.wrapped,
      env: plan.env,
    });
    this.processes.set(spec.name, proc);
    this.cgroups.set(spec.name, cgroup);
    this.event('Normal', 'Started', `Started container ${spec.name}`);
    rec.state = { kind: 'running', startedAt: proc.startedAt };
    rec.started = !spec.startupProbe;
    rec.ready = false;
    const prober = isInit
      ? undefined
      : new ContainerProber(spec, { podIP: this.record.podIP!, ports: spec.ports ?? [], env: plan.env, cwd: plan.cwd, wrap: (a) => this.deps.network.wrap(this.pod.metadata!.uid!, a) }, {
          started: () => {
            rec.started = true;
            this.report();
          },
          ready: (ready) => {
            if (rec.ready === ready) return;
            rec.ready = ready;
            this.report();
          },
          unhealthy: (reason) => {
            this.deps.log.info({ pod: this.name, container: spec.name, reason }, 'Restarting unhealthy container');
            this.event('Warning', 'Unhealthy', `container ${spec.name}: ${reason}; restarting it`);
            void proc.stop((this.pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000);
          },
        });
    prober?.start();
    this.report();
    const result = await proc.exited;
    prober?.stop();
    const oomKilled = cgroup.oomKilled();
    cgroup.remove();
    this.processes.delete(spec.name);
    this.cgroups.delete(spec.name);
    rec.ready = false;
    rec.state = {
      kind: 'terminated',
      exitCode: result.exitCode,
      reason: result.startError ? 'StartError' : oomKilled ? 'OOMKilled' : result.exitCode === 0 ? 'Completed' : 'Error',
      ...(result.startError ? { message: result.startError } : {}),
      ...(result.signal ? { signal: result.signal } : {}),
      startedAt: result.startedAt,
      finishedAt: result.finishedAt,
    };
    this.report();
    return result;
  }

  private readonly unenforced = new Map<string, string[]>();

  /** Records which limits of a container hold, for the pod's svc.dev/LimitsEnforced condition. */
  private noteLimits(container: string, limits: { memoryBytes?: number; cpuMillis?: number }, enforced: { memory: boolean; cpu: boolean }): void {
    const missing = [
      ...(limits.memoryBytes !== undefined && !enforced.memory ? ['memory'] : []),
      ...(limits.cpuMillis !== undefined && !enforced.cpu ? ['cpu'] : []),
    ];
    this.unenforced.set(container, missing);
    const any = limits.memoryBytes !== undefined || limits.cpuMillis !== undefined || this.record.limits !== undefined;
    if (!any) return;
    const lacking = [...this.unenforced].filter(([, m]) => m.length).map(([c, m]) => `${m.join(' and ')} of container ${c}`);
    this.record.limits = lacking.length
      ? { enforced: false, message: `not enforced (no writable cgroup hierarchy on this machine): ${lacking.join('; ')}` }
      : { enforced: true, message: `enforced with cgroups (${this.deps.cgroups})` };
  }

  /**
   * Retries `attempt` every 2 s while it fails with an error `retryable` accepts, reporting the
   * state `waiting` sets meanwhile; undefined once the pod is stopping.
   */
  private lastEvent = '';

  /** Records an Event, once per distinct reason and message in a row (retries repeat themselves). */
  private event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    const key = `${type}/${reason}/${message}`;
    if (key === this.lastEvent) return;
    this.lastEvent = key;
    this.deps.recordEvent(this.pod, type, reason, message);
  }

  private async retrying<T>(attempt: () => Promise<T>, retryable: (err: unknown) => boolean, waiting: (err: Error) => void): Promise<T | undefined> {
    for (;;) {
      try {
        return await attempt();
      } catch (err) {
        if (!retryable(err)) throw err;
        waiting(err as Error);
        this.report();
        await this.sleep(2000);
        if (this.stopping) return undefined;
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  private report(): void {
    this.statusDirty = true;
    this.flushing ??= this.flushStatus();
  }

  private async flushStatus(): Promise<void> {
    while (this.statusDirty) {
      this.statusDirty = false;
      const status = podStatus(this.record, this.lastStatus);
      try {
        await this.deps.reportStatus(this.pod, status);
        this.lastStatus = status;
      } catch (err) {
        this.deps.log.warn({ err, pod: this.name }, 'Pod status update failed');
      }
    }
    this.flushing = undefined;
  }
}
