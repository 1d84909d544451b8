// The kubelet's Summary API, the subset metrics-server and the platform API read
// (GET /stats/summary): per pod and container, cumulative CPU time, the current CPU rate and
// memory. Usage comes from each container's cgroup (limits.ts); a container without one (no
// writable hierarchy) is measured from /proc, summing the processes of its process group.
import { readdirSync, readFileSync } from 'node:fs';
import type { CgroupUsage } from './limits.js';
import type { PodWorker, RunningContainer } from './pod-worker.js';

/** How often usage is sampled in the background, so a rate covers the last few seconds (as cAdvisor's housekeeping). */
export const sampleIntervalMs = 10_000;
/** A rate needs samples at least this far apart to mean something. */
const minRateWindowMs = 1_000;
// Linux reports process times in clock ticks and resident memory in pages; both are fixed by the
// kernel ABI on the platforms node-agent runs on.
const clockTicksPerSecond = 100;
const pageBytes = 4096;

export interface CpuStats {
  time: string;
  usageNanoCores: number;
  usageCoreNanoSeconds: number;
}

export interface MemoryStats {
  time: string;
  workingSetBytes: number;
  usageBytes: number;
}

export interface ContainerStats {
  name: string;
  startTime: string;
  cpu: CpuStats;
  memory: MemoryStats;
}

export interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerStats[];
  cpu: CpuStats;
  memory: MemoryStats;
}

export interface Summary {
  node: { nodeName: string; startTime: string };
  pods: PodStats[];
}

interface Sample {
  at: number;
  cpuNanoSeconds: number;
}

export type UsageSource = 'cgroup' | 'proc';

/** A process's CPU ticks (own and reaped children's), resident pages and process group. */
function procStat(pid: string): { pgrp: number; ticks: number; rssPages: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command, from field 3 (state) on.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const n = (i: number) => Number(f[i - 3] ?? 0);
    return { pgrp: n(5), ticks: n(14) + n(15) + n(16) + n(17), rssPages: n(24) };
  } catch {
    return undefined;
  }
}

/** Usage of every process group, from one pass over /proc. */
export function processGroupUsage(): Map<number, CgroupUsage> {
  const groups = new Map<number, CgroupUsage>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return groups;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const p = procStat(entry);
    if (!p) continue;
    const g = groups.get(p.pgrp) ?? { cpuNanoSeconds: 0, memoryUsageBytes: 0, workingSetBytes: 0 };
    g.cpuNanoSeconds += (p.ticks * 1e9) / clockTicksPerSecond;
    // Resident memory, shared pages counted once per process: an upper bound of the working set.
    g.memoryUsageBytes += p.rssPages * pageBytes;
    g.workingSetBytes = g.memoryUsageBytes;
    groups.set(p.pgrp, g);
  }
  return groups;
}

/** The usage of each running container now, by its run ID, and where it came from. */
export function measure(containers: RunningContainer[]): Map<string, CgroupUsage & { source: UsageSource }> {
  const out = new Map<string, CgroupUsage & { source: UsageSource }>();
  let groups: Map<number, CgroupUsage> | undefined;
  for (const c of containers) {
    const fromCgroup = c.cgroup.usage();
    if (fromCgroup) {
      out.set(c.runId, { ...fromCgroup, source: 'cgroup' });
      continue;
    }
    // Each container is started as the leader of its own process group (container-process.ts).
    if (c.pid === undefined) continue;
    groups ??= processGroupUsage();
    const g = groups.get(c.pid);
    if (g) out.set(c.runId, { ...g, source: 'proc' });
  }
  return out;
}

/**
 * Recent CPU samples per container run, so usageNanoCores is the rate over the last seconds
 * rather than since the container started.
 */
export class UsageHistory {
  private readonly samples = new Map<string, Sample[]>();

  note(runId: string, s: Sample): void {
    const list = this.samples.get(runId) ?? [];
    list.push(s);
    if (list.length > 3) list.shift();
    this.samples.set(runId, list);
  }

  /** Forgets runs that ended. */
  retain(runIds: Set<string>): void {
    for (const id of this.samples.keys()) if (!runIds.has(id)) this.samples.delete(id);
  }

  /**
   * Nanocores: against the newest sample at least minRateWindowMs old; without one (a container
   * younger than a sample interval), the average since the container started.
   */
  rate(runId: string, now: Sample, startedAt: Date): number {
    const base = [...(this.samples.get(runId) ?? [])].reverse().find((s) => now.at - s.at >= minRateWindowMs);
    const from = base ?? { at: startedAt.getTime(), cpuNanoSeconds: 0 };
    const ms = now.at - from.at;
    if (ms <= 0) return 0;
    // A /proc total can drop when a process ends unreaped by the group: no negative rates.
    return Math.max(0, Math.round(((now.cpuNanoSeconds - from.cpuNanoSeconds) / ms) * 1e3));
  }
}

/** Samples the node's containers every sampleIntervalMs; stop() ends it. */
export function startSampling(pods: () => PodWorker[], history: UsageHistory): { stop: () => void } {
  const tick = () => {
    const running = pods().flatMap((p) => p.runningContainers());
    const at = Date.now();
    for (const [runId, u] of measure(running)) history.note(runId, { at, cpuNanoSeconds: u.cpuNanoSeconds });
    history.retain(new Set(running.map((c) => c.runId)));
  };
  const timer = setInterval(tick, sampleIntervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** The Summary of the node's running pods now; containers that cannot be measured are left out. */
export function summarize(nodeName: string, nodeStart: Date, pods: PodWorker[], history: UsageHistory): Summary {
  const at = Date.now();
  const time = new Date(at).toISOString();
  const out: PodStats[] = [];
  for (const pod of pods) {
    const running = pod.runningContainers();
    const usage = measure(running);
    const containers: ContainerStats[] = [];
    for (const c of running) {
      const u = usage.get(c.runId);
      if (!u) continue;
      containers.push({
        name: c.name,
        startTime: c.startedAt.toISOString(),
        cpu: { time, usageNanoCores: history.rate(c.runId, { at, cpuNanoSeconds: u.cpuNanoSeconds }, c.startedAt), usageCoreNanoSeconds: Math.round(u.cpuNanoSeconds) },
        memory: { time, workingSetBytes: u.workingSetBytes, usageBytes: u.memoryUsageBytes },
      });
    }
    if (!containers.length) continue;
    const sum = (f: (c: ContainerStats) => number) => containers.reduce((n, c) => n + f(c), 0);
    out.push({
      podRef: pod.podRef,
      startTime: pod.startTime.toISOString(),
      containers,
      cpu: { time, usageNanoCores: sum((c) => c.cpu.usageNanoCores), usageCoreNanoSeconds: sum((c) => c.cpu.usageCoreNanoSeconds) },
      memory: { time, workingSetBytes: sum((c) => c.memory.workingSetBytes), usageBytes: sum((c) => c.memory.usageBytes) },
    });
  }
  return { node: { nodeName, startTime: nodeStart.toISOString() }, pods: out };
}
