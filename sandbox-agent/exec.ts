// Runs one exec: a process in a process group of its own, its output kept up to a cap per stream
// (the rest read and dropped, so a flood never blocks it nor fills memory), killed with its whole
// group at its timeout, and its group killed too when it ends (whatever it left behind). Children
// get the highest OOM score, so when the sandbox runs out of memory the kernel kills them, not the
// agent.
import { spawn } from 'node:child_process';
import { access, constants, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AgentExecRequest, ExecEvent, ExecResult } from '../lib/sandbox/exec.js';
import { runtimeNamed } from '../lib/sandbox/runtimes.js';

export interface ExecEnvironment {
  /** The default working directory and HOME. */
  home: string;
  /** Where eval writes code; default the OS temp directory. */
  tmp?: string;
  /** PATH of the processes. */
  path: string;
  /** Reads the sandbox's OOM-kill count, to tell an out-of-memory kill from another SIGKILL. */
  oomKills?: () => Promise<number | undefined>;
}

// The shell sets the OOM score of itself and so of what it execs; unprivileged processes may raise theirs.
const oomWrapper = ['/bin/sh', '-c', 'echo 1000 >/proc/self/oom_score_adj 2>/dev/null; exec "$@"', 'sh'];

class Capture {
  private readonly chunks: Buffer[] = [];
  kept = 0;
  total = 0;
  constructor(private readonly cap: number) {}
  /** Keeps what fits under the cap; returns the kept part (for streaming). */
  push(chunk: Buffer): Buffer {
    this.total += chunk.length;
    const room = this.cap - this.kept;
    if (room <= 0) return Buffer.alloc(0);
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(part);
    this.kept += part.length;
    return part;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
  get truncated(): boolean {
    return this.total > this.kept;
  }
}

/** Whether a process of the group is alive (not a zombie waiting for PID 1 to reap it). */
async function groupAlive(pgid: number): Promise<boolean> {
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => undefined);
    if (!stat) continue;
    // After "(comm)": state, ppid, pgrp, ...; comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

/** Kills a process group until nothing of it runs (a fork bomb keeps adding to it while the first kill lands). */
async function killGroup(pgid: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      return; // ESRCH: nobody left
    }
    await new Promise((r) => setTimeout(r, 5));
    if (!(await groupAlive(pgid))) return;
  }
}

function describeSpawnError(err: NodeJS.ErrnoException, what: string, cwd: string): string {
  if (err.code === 'ENOENT') return `no such file or directory: ${what} (or the working directory ${cwd})`;
  if (err.code === 'EACCES') return `permission denied: ${what}`;
  if (err.code === 'EAGAIN') return 'too many processes in the sandbox (its process limit)';
  return `${err.code ?? 'error'}: ${err.message}`;
}

export async function runExec(req: AgentExecRequest, env: ExecEnvironment, onEvent?: (e: ExecEvent) => void): Promise<ExecResult> {
  const started = performance.now();
  const cwd = req.cwd ? path.resolve(env.home, req.cwd) : env.home;
  let argv = req.argv;
  let codeDir: string | undefined;
  if (req.code !== undefined) {
    const runtime = runtimeNamed(req.runtime ?? '');
    if (!runtime) return failure(started, `unknown runtime ${req.runtime}`);
    codeDir = await mkdtemp(path.join(env.tmp ?? os.tmpdir(), 'eval-'));
    const file = path.join(codeDir, `main${runtime.extension}`);
    await writeFile(file, req.code);
    argv = [...runtime.run, file];
  }
  try {
    const cwdStat = await stat(cwd).catch(() => undefined);
    if (!cwdStat?.isDirectory()) return failure(started, `no such directory: ${cwd}`);
    const why = await unrunnable(argv![0]!, req.env?.PATH ?? env.path, cwd);
    if (why) return failure(started, why);
    return await run(argv!, cwd, req, env, started, onEvent);
  } finally {
    if (codeDir) await rm(codeDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * Why the program cannot be run, if it cannot: looked up as exec would (PATH unless it names a
 * path), because the OOM wrapper's shell would otherwise turn "not found" into an exit code 127
 * indistinguishable from a program's own.
 */
async function unrunnable(program: string, searchPath: string, cwd: string): Promise<string | undefined> {
  const candidates = program.includes('/')
    ? [path.resolve(cwd, program)]
    : searchPath
        .split(':')
        .filter(Boolean)
        .map((d) => path.join(d, program));
  let denied = false;
  for (const file of candidates) {
    const s = await stat(file).catch(() => undefined);
    if (!s?.isFile()) continue;
    if (
      await access(file, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return undefined;
    denied = true;
  }
  return denied
    ? `permission denied: ${program} is not executable`
    : `no such file or directory: ${program}${program.includes('/') ? '' : ' (not found on PATH)'}`;
}

function failure(started: number, reason: string): ExecResult {
  return {
    status: 'failed',
    exit_code: null,
    signal: null,
    reason,
    stdout: '',
    stderr: '',
    truncated: { stdout: false, stderr: false },
    bytes: { stdout: 0, stderr: 0 },
    duration_ms: Math.round(performance.now() - started),
  };
}

async function run(
  argv: string[],
  cwd: string,
  req: AgentExecRequest,
  env: ExecEnvironment,
  started: number,
  onEvent?: (e: ExecEvent) => void,
): Promise<ExecResult> {
  const oomBefore = await env.oomKills?.();
  const out = new Capture(req.maxOutputBytes);
  const err = new Capture(req.maxOutputBytes);
  const child = spawn(oomWrapper[0]!, [...oomWrapper.slice(1), ...argv], {
    cwd,
    env: { PATH: env.path, HOME: env.home, LANG: 'C.UTF-8', TMPDIR: env.tmp ?? os.tmpdir(), ...req.env },
    detached: true, // a process group of its own, killed as one
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    if (child.pid) void killGroup(child.pid);
  }, req.timeoutMs);
  child.stdout.on('data', (c: Buffer) => {
    const kept = out.push(c);
    if (kept.length && onEvent) onEvent({ type: 'stdout', data: kept.toString('utf8') });
  });
  child.stderr.on('data', (c: Buffer) => {
    const kept = err.push(c);
    if (kept.length && onEvent) onEvent({ type: 'stderr', data: kept.toString('utf8') });
  });
  child.stdin.on('error', () => undefined); // a process that does not read its input
  child.stdin.end(req.stdin ? Buffer.from(req.stdin, 'base64') : undefined);

  // Ended when the process exited and its output closed (what it left running may hold the output
  // open: then at the timeout), or it never started.
  const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: NodeJS.ErrnoException }>((resolve) => {
    child.once('error', (e: NodeJS.ErrnoException) => resolve({ code: null, signal: null, error: e }));
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  clearTimeout(timer);
  if (child.pid) await killGroup(child.pid);
  let status: ExecResult['status'] = 'ok';
  let reason: string | null = null;
  const outOfMemory = async () => {
    const after = await env.oomKills?.();
    return oomBefore !== undefined && after !== undefined && after > oomBefore;
  };
  const oomReason = "out of memory: killed by the kernel at the sandbox's memory limit";
  if (ended.error) {
    status = 'failed';
    reason = describeSpawnError(ended.error, argv[0]!, cwd);
  } else if (timedOut) {
    status = 'timed_out';
    reason = `killed after the timeout of ${req.timeoutMs / 1000} s`;
  } else if (ended.signal) {
    status = 'failed';
    reason = ended.signal === 'SIGKILL' && (await outOfMemory()) ? oomReason : `killed by ${ended.signal}`;
  } else if (ended.code === 128 + 9 && (await outOfMemory())) {
    // A shell reporting that its child was killed (128 + SIGKILL) by the OOM killer.
    status = 'failed';
    reason = oomReason;
  }
  const result: ExecResult = {
    status,
    exit_code: timedOut ? null : ended.code,
    signal: timedOut ? 'SIGKILL' : ended.signal,
    reason,
    stdout: out.text(),
    stderr: err.text(),
    truncated: { stdout: out.truncated, stderr: err.truncated },
    bytes: { stdout: out.total, stderr: err.total },
    duration_ms: Math.round(performance.now() - started),
  };
  return result;
}

/** The memory cgroup's OOM-kill count as the container sees it (cgroup v1 or v2), if readable. */
export async function readOomKills(): Promise<number | undefined> {
  for (const [file, pattern] of [
    ['/sys/fs/cgroup/memory.events', /^oom_kill (\d+)$/m],
    ['/sys/fs/cgroup/memory/memory.oom_control', /^oom_kill (\d+)$/m],
  ] as const) {
    const text = await readFile(file, 'utf8').catch(() => undefined);
    const m = text && pattern.exec(text);
    if (m) return Number(m[1]);
  }
  return undefined;
}
