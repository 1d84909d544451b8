// One run of one container: a process in its own process group (so signals reach everything it
// starts), its output captured to the container's log, its end reported with the exit code the
// kubelet would report (128 + signal number when a signal ended it).
import { spawn, type ChildProcess } from 'node:child_process';
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

  constructor(argv: string[], opts: { env: Record<string, string>; cwd: string; log: ContainerLog }) {
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
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), Math.max(0, graceMs));
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
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
