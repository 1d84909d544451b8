// CPU and memory limits through cgroups, as far as the machine allows: cgroup v2 when the unified
// hierarchy is mounted and writable, else the v1 memory and cpu controllers; where neither can be
// written, the pod says so in its `svc.dev/LimitsEnforced` condition instead of pretending.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
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

/** One container run's cgroup (or nothing, when limits cannot be enforced). */
export class ContainerCgroup {
  private readonly dirs: string[] = [];

  /** Creates the cgroup with the limits; `enforced` says which limits hold. */
  constructor(
    private readonly mode: Mode,
    id: string,
    limits: Limits,
    readonly enforced: { memory: boolean; cpu: boolean } = { memory: false, cpu: false },
  ) {
    if (mode === 'none' || (limits.memoryBytes === undefined && limits.cpuMillis === undefined)) return;
    const period = 100_000;
    const quota = limits.cpuMillis !== undefined ? Math.max(1000, Math.round((limits.cpuMillis / 1000) * period)) : undefined;
    if (mode === 'v2') {
      const dir = path.join(root, group, id);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(root, group, 'cgroup.subtree_control'), '+memory +cpu');
      if (limits.memoryBytes !== undefined) writeFileSync(path.join(dir, 'memory.max'), String(limits.memoryBytes));
      if (quota !== undefined) writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${period}`);
      this.dirs.push(dir);
      this.enforced = { memory: limits.memoryBytes !== undefined, cpu: quota !== undefined };
      return;
    }
    if (limits.memoryBytes !== undefined) {
      const dir = path.join(root, 'memory', group, id);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      this.dirs.push(dir);
      this.enforced.memory = true;
    }
    if (quota !== undefined && existsSync(path.join(root, 'cpu'))) {
      const dir = path.join(root, 'cpu', group, id);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(period));
      writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quota));
      this.dirs.push(dir);
      this.enforced.cpu = true;
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
