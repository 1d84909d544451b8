// One run of one container: a process in its own process group (so signals reach everything it
// starts), its output captured to the container's log, its end reported with the exit code the
// kubelet would report (128 + signal number when a signal ended it).
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import type { ContainerLog } from './logs.js';

export interface ExitResult {
  exitCode: number;
  signal?: number;
  /** Set when the process could not be started at all. */
  startError?: string;
  startedAt: Date;
  finishedAt: Date;
}

export class ContainerProcess {
  private child: ChildProcess | undefined;
  readonly startedAt = new Date();
  readonly exited: Promise<ExitResult>;

  private readonly leaderIsWrapper: boolean;

  /**
   * With `wrapped`, argv starts with a wrapper (bwrap) that runs the container's process as its
   * child: SIGTERM then goes to the container's processes, not the wrapper, so a container that
   * handles or ignores it gets its grace period as it would in a container runtime.
   */
  constructor(argv: string[], opts: { env: Record<string, string>; cwd: string; log: ContainerLog; wrapped?: boolean }) {
    this.leaderIsWrapper = opts.wrapped ?? false;
    this.exited = new Promise<ExitResult>((resolve) => {
      let done = false;
      const finish = (r: Omit<ExitResult, 'startedAt' | 'finishedAt'>) => {
        if (done) return;
        done = true;
        opts.log.close();
        resolve({ ...r, startedAt: this.startedAt, finishedAt: new Date() });
      };
      let child: ChildProcess;
      try {
        child = spawn(argv[0]!, argv.slice(1), { env: opts.env, cwd: opts.cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (err) {
        finish({ exitCode: 128, startError: (err as Error).message });
        return;
      }
      this.child = child;
      child.stdout!.on('data', (d: Buffer) => opts.log.write('stdout', d));
      child.stderr!.on('data', (d: Buffer) => opts.log.write('stderr', d));
      child.once('error', (err: NodeJS.ErrnoException) => {
        const reason = err.code === 'ENOENT' ? `exec: "${argv[0]}": executable file not found in $PATH` : err.message;
        finish({ exitCode: 128, startError: reason });
      });
      // As in a container, the end of the main process ends the others it left behind; the result
      // is reported on 'close', once every byte of output has been read.
      let result: Omit<ExitResult, 'startedAt' | 'finishedAt'> | undefined;
      child.once('exit', (code, signal) => {
        const signo = signal ? constants.signals[signal] : undefined;
        result = signo ? { exitCode: 128 + signo, signal: signo } : { exitCode: code ?? 0 };
        this.signal('SIGKILL');
      });
      child.once('close', () => finish(result ?? { exitCode: 0 }));
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** SIGTERM to the process group, SIGKILL after graceMs; resolves when the process has ended. */
  async stop(graceMs: number): Promise<ExitResult> {
    if (this.leaderIsWrapper) this.signalMembers('SIGTERM');
    else this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), Math.max(0, graceMs));
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Signals every process of the group but its leader. */
  private signalMembers(sig: NodeJS.Signals): void {
    const leader = this.child?.pid;
    if (leader === undefined) return;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === leader) continue;
      try {
        // Fields after the parenthesised command: state, ppid, pgrp.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
        if (pgrp === leader) process.kill(Number(entry), sig);
      } catch {
        // Gone meanwhile.
      }
    }
  }

  signal(sig: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // The group is gone already.
    }
  }
}
