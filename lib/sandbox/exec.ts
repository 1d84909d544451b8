// What an exec in a sandbox is asked and answers, shared by the API (which validates a tenant's
// request and applies the platform's limits) and the agent in the sandbox (which runs it). The
// agent answers in the API's own wire format, so the API passes results and streams through as
// they come. docs/api/sandboxes.md documents every field.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An exec as the agent receives it: every limit already decided by the API. */
export const agentExecRequest = z
  .object({
    argv: z.array(z.string().max(128 * 1024)).min(1).max(4096).optional(),
    /** Code to run with a runtime (eval): written to a file of its extension first. */
    code: z.string().max(4 * 1024 * 1024).optional(),
    runtime: z.string().max(63).optional(),
    cwd: z.string().min(1).max(4096).optional(),
    env: z.record(z.string().regex(envName).max(256), z.string().max(128 * 1024)).optional(),
    /** Base64 of the bytes the process reads on its standard input. */
    stdin: z.string().max(48 * 1024 * 1024).optional(),
    timeoutMs: z.number().int().min(1).max(24 * 3600_000),
    /** Per stream: what is kept of stdout and of stderr; the rest is read and dropped. */
    maxOutputBytes: z.number().int().min(0).max(64 * 1024 * 1024),
  })
  .refine((r) => (r.argv ? 1 : 0) + (r.code !== undefined ? 1 : 0) === 1, 'exactly one of argv and code')
  .refine((r) => r.code === undefined || r.runtime !== undefined, 'code needs a runtime');
export type AgentExecRequest = z.infer<typeof agentExecRequest>;

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
export type ExecEvent =
  | { type: 'stdout' | 'stderr'; data: string }
  | ({ type: 'exit' } & Omit<ExecResult, 'stdout' | 'stderr'>);

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

/** The agent's port in every sandbox pod. */
export const agentPort = 7070;
/** The directory code runs in by default (a size-limited tmpfs in the pod). */
export const sandboxHome = '/home/app';
