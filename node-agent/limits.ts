// CPU and memory limits through cgroups, as far as the machine allows: cgroup v2 when the unified
// hierarchy is mounted and writable, else the v1 memory and cpu controllers; where neither can be
// written, the pod says so in its `svc.dev/LimitsEnforced` condition instead of pretending.
// Every container gets a cgroup when the hierarchy is writable, limits or not, because its CPU and
// memory usage (the kubelet's /stats/summary) is read from there.
import { existsSync, mkdirSync, readFileSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';

const root = '/sys/fs/cgroup';
const group = 'svc-node-agent';

export interface Limits {
  memoryBytes?: number;
  /** CPU in millicores. */
  cpuMillis?: number;
}

const units: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };

/** Kubernetes quantities: "128Mi", "1G", "500m" (cpu), "0.5". */
export function parseQuantity(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(q.trim());
  if (!m) throw new Error(`bad quantity ${JSON.stringify(q)}`);
  const n = Number(m[1]);
  return m[2] === 'm' ? n / 1000 : n * units[m[2] ?? '']!;
}

export function limitsOf(container: k8s.V1Container): Limits {
  const l = container.resources?.limits ?? {};
  return {
    ...(l.memory ? { memoryBytes: Math.floor(parseQuantity(String(l.memory))) } : {}),
    ...(l.cpu ? { cpuMillis: Math.round(parseQuantity(String(l.cpu)) * 1000) } : {}),
  };
}

type Mode = 'v2' | 'v1' | 'none';

function writable(dir: string): boolean {
  try {
    const probe = path.join(dir, `${group}-probe-${process.pid}`);
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

export function detectCgroups(): Mode {
  if (existsSync(path.join(root, 'cgroup.controllers')) && writable(root)) return 'v2';
  if (existsSync(path.join(root, 'memory', 'cgroup.procs')) && writable(path.join(root, 'memory'))) return 'v1';
  return 'none';
}

/** Cumulative CPU time and current memory of a container, as the kubelet reports them. */
export interface CgroupUsage {
  cpuNanoSeconds: number;
  memoryUsageBytes: number;
  /** Usage less inactive file cache: what the kernel cannot easily reclaim (cAdvisor's definition). */
  workingSetBytes: number;
}

function mkdirQuietly(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

function statField(file: string, key: string): number | undefined {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'));
  return m ? Number(m[1]) : undefined;
}

/** One container run's cgroup (or nothing, when the hierarchy is not writable). */
export class ContainerCgroup {
  private readonly dirs: string[] = [];
  /** Where usage is read: the v2 group, or the v1 memory and cpuacct groups. */
  private readonly accounting: { v2?: string; memory?: string; cpuacct?: string } = {};

  /** Creates the cgroup with the limits; `enforced` says which limits hold. */
  constructor(
    private readonly mode: Mode,
    id: string,
    limits: Limits,
    readonly enforced: { memory: boolean; cpu: boolean } = { memory: false, cpu: false },
  ) {
    if (mode === 'none') return;
    const limited = limits.memoryBytes !== undefined || limits.cpuMillis !== undefined;
    const period = 100_000;
    const quota = limits.cpuMillis !== undefined ? Math.max(1000, Math.round((limits.cpuMillis / 1000) * period)) : undefined;
    if (mode === 'v2') {
      const dir = path.join(root, group, id);
      // Without limits the group only measures: failing to make it must not stop the container.
      try {
        mkdirSync(dir, { recursive: true });
        writeFileSync(path.join(root, group, 'cgroup.subtree_control'), '+memory +cpu');
      } catch (err) {
        if (limited) throw err;
        return;
      }
      if (limits.memoryBytes !== undefined) writeFileSync(path.join(dir, 'memory.max'), String(limits.memoryBytes));
      if (quota !== undefined) writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${period}`);
      this.dirs.push(dir);
      this.accounting.v2 = dir;
      this.enforced = { memory: limits.memoryBytes !== undefined, cpu: quota !== undefined };
      return;
    }
    const memoryDir = path.join(root, 'memory', group, id);
    if (limits.memoryBytes !== undefined) {
      mkdirSync(memoryDir, { recursive: true });
      writeFileSync(path.join(memoryDir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      this.dirs.push(memoryDir);
      this.enforced.memory = true;
    } else if (mkdirQuietly(memoryDir)) {
      this.dirs.push(memoryDir);
    }
    if (this.dirs.includes(memoryDir)) this.accounting.memory = memoryDir;
    if (quota !== undefined && existsSync(path.join(root, 'cpu'))) {
      const dir = path.join(root, 'cpu', group, id);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(period));
      writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quota));
      this.dirs.push(dir);
      this.enforced.cpu = true;
    }
    // cpuacct is often mounted together with cpu (cpu,cpuacct): then it is the same directory.
    const cpuacct = path.join(root, 'cpuacct');
    if (existsSync(path.join(cpuacct, 'cpuacct.usage'))) {
      const dir = path.join(realpathSync(cpuacct), group, id);
      const same = this.dirs.some((d) => d === dir || (existsSync(d) && realpathSync(d) === dir));
      if (same || mkdirQuietly(dir)) {
        if (!same) this.dirs.push(dir);
        this.accounting.cpuacct = dir;
      }
    }
  }

  /** Whether usage() can answer: the container's processes are in a group that measures them. */
  get measured(): boolean {
    return this.accounting.v2 !== undefined || (this.accounting.memory !== undefined && this.accounting.cpuacct !== undefined);
  }

  /** CPU and memory of the container's processes now; undefined when not measured or unreadable. */
  usage(): CgroupUsage | undefined {
    if (!this.measured) return undefined;
    try {
      const a = this.accounting;
      if (a.v2) {
        const usage = Number(readFileSync(path.join(a.v2, 'memory.current'), 'utf8').trim());
        const inactive = statField(path.join(a.v2, 'memory.stat'), 'inactive_file') ?? 0;
        return {
          cpuNanoSeconds: (statField(path.join(a.v2, 'cpu.stat'), 'usage_usec') ?? 0) * 1000,
          memoryUsageBytes: usage,
          workingSetBytes: Math.max(0, usage - inactive),
        };
      }
      const usage = Number(readFileSync(path.join(a.memory!, 'memory.usage_in_bytes'), 'utf8').trim());
      const inactive = statField(path.join(a.memory!, 'memory.stat'), 'total_inactive_file') ?? 0;
      return {
        cpuNanoSeconds: Number(readFileSync(path.join(a.cpuacct!, 'cpuacct.usage'), 'utf8').trim()),
        memoryUsageBytes: usage,
        workingSetBytes: Math.max(0, usage - inactive),
      };
    } catch {
      // The group went away with its container.
      return undefined;
    }
  }

  /**
   * The argv that joins the cgroup before running `argv`: the first process moves itself in and
   * then execs, so everything it starts is inside from its first instruction on.
   */
  wrap(argv: string[]): string[] {
    if (!this.dirs.length) return argv;
    const procs = this.dirs.map((d) => path.join(d, 'cgroup.procs')).join(' ');
    return ['sh', '-c', `echo $$ | tee ${procs} >/dev/null && exec "$@"`, 'svc-cgroup', ...argv];
  }

  /** Whether the kernel killed a process of this cgroup for memory. */
  oomKilled(): boolean {
    for (const dir of this.dirs) {
      try {
        if (this.mode === 'v2') {
          if (/^oom_kill [1-9]/m.test(readFileSync(path.join(dir, 'memory.events'), 'utf8'))) return true;
        } else if (dir.includes('/memory/')) {
          if (/^oom_kill [1-9]/m.test(readFileSync(path.join(dir, 'memory.oom_control'), 'utf8'))) return true;
        }
      } catch {
        // No such file on this kernel.
      }
    }
    return false;
  }

  remove(): void {
    for (const dir of this.dirs) {
      try {
        rmdirSync(dir);
      } catch {
        // Still has processes for a moment, or gone.
      }
    }
  }
}
