// What an exec in a sandbox is asked and answers, shared by the API (which validates a tenant's
// request and applies the platform's limits) and the agent in the sandbox (which runs it). The
// agent answers in the API's own wire format, so the API passes results and streams through as
// they come. docs/api/sandboxes.md documents every field.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { InstalledRuntime } from './runtimes.js';

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An exec as the agent receives it: every limit already decided by the API. */
export interface AgentExecRequest {
  /** A program and its arguments (no shell); exactly one of argv and code. */
  argv?: string[];
  /** Code to run with a runtime (eval): written to a file of its extension first. */
  code?: string;
  runtime?: string;
  cwd?: string;
  env?: Record<string, string>;
  /** Base64 of the bytes the process reads on its standard input. */
  stdin?: string;
  timeoutMs: number;
  /** Per stream: what is kept of stdout and of stderr; the rest is read and dropped. */
  maxOutputBytes: number;
}

/**
 * The agent's check of a request, by hand rather than with zod: the agent starts in every sandbox
 * pod, and loading zod costs ~45 ms of CPU per start, paid by every pool refill. Answers the
 * request, or what is wrong with it.
 */
export function parseAgentExecRequest(x: unknown): AgentExecRequest | string {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return 'body: must be an object';
  const r = x as Record<string, unknown>;
  const str = (v: unknown, max: number) => typeof v === 'string' && v.length <= max;
  const int = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
  if (
    r.argv !== undefined &&
    !(Array.isArray(r.argv) && r.argv.length >= 1 && r.argv.length <= 4096 && r.argv.every((a) => str(a, 128 * 1024)))
  )
    return 'argv: 1 to 4096 strings';
  if (r.code !== undefined && !str(r.code, 4 * 1024 * 1024)) return 'code: a string up to 4 MiB';
  if (r.runtime !== undefined && !str(r.runtime, 63)) return 'runtime: a name';
  if ((r.argv === undefined) === (r.code === undefined)) return 'body: exactly one of argv and code';
  if (r.code !== undefined && r.runtime === undefined) return 'runtime: code needs a runtime';
  if (r.cwd !== undefined && !(str(r.cwd, 4096) && (r.cwd as string).length > 0)) return 'cwd: a path';
  if (r.env !== undefined) {
    if (typeof r.env !== 'object' || r.env === null || Array.isArray(r.env)) return 'env: an object of strings';
    for (const [k, v] of Object.entries(r.env))
      if (!envName.test(k) || k.length > 256 || !str(v, 128 * 1024)) return `env.${k}: a variable name and a string value`;
  }
  if (r.stdin !== undefined && !str(r.stdin, 48 * 1024 * 1024)) return 'stdin: base64 up to 48 MiB';
  if (!int(r.timeoutMs, 1, 24 * 3600_000)) return 'timeoutMs: an integer of milliseconds';
  if (!int(r.maxOutputBytes, 0, 64 * 1024 * 1024)) return 'maxOutputBytes: an integer of bytes';
  return r as unknown as AgentExecRequest;
}

/**
 * How an exec ended: `ok` the process exited by itself (whatever its exit code); `timed_out` it
 * was killed at its timeout; `failed` it did not start, or something else killed it (out of memory).
 */
export type ExecStatus = 'ok' | 'timed_out' | 'failed';

export interface ExecResult {
  status: ExecStatus;
  exit_code: number | null;
  /** The signal that ended the process (`SIGKILL`), when one did. */
  signal: string | null;
  /** Why, when the status is not `ok` (`out of memory`, `no such file or directory: foo`). */
  reason: string | null;
  stdout: string;
  stderr: string;
  truncated: { stdout: boolean; stderr: boolean };
  /** Bytes each stream produced, kept or not. */
  bytes: { stdout: number; stderr: number };
  duration_ms: number;
}

/** One line of a streamed exec (NDJSON): output as it comes, then the result without the output. */
export type ExecEvent = { type: 'stdout' | 'stderr'; data: string } | ({ type: 'exit' } & Omit<ExecResult, 'stdout' | 'stderr'>);

/**
 * The bearer token of one sandbox pod's agent: derived from the platform's key and the pod's name,
 * so the controllers (which make the pod) and the API (which execs in it) agree without storing
 * one, and knowing one sandbox's token (its own code can read it) opens no other.
 */
export function agentToken(key: Buffer, podName: string): string {
  return createHmac('sha256', key).update(`svc-sandbox-agent-v1\0${podName}`).digest('base64url');
}

export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** What the agent's GET /info answers (`runtimes` only when asked with ?runtimes=1). */
export interface AgentInfo {
  runtimes?: InstalledRuntime[];
  started_at: string;
  last_activity_at: string;
  /** Execs running now. */
  running: number;
}

/** The agent's port in every sandbox pod. */
export const agentPort = 7070;
/** The directory code runs in by default (a size-limited tmpfs in the pod). */
export const sandboxHome = '/home/app';
