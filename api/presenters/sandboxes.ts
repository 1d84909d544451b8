// Sandboxes, exec results and runtimes as the API shows them: the response schemas and their
// presenters, shared by every route that answers with a sandbox.
import { z } from 'zod';
import type { SandboxRecord } from '../sandboxes/repository.js';

export const runtimesSchema = z.object({
  runtimes: z.array(
    z.object({
      name: z.string(),
      language: z.string(),
      version: z.string(),
      extension: z.string(),
      aliases: z.array(z.string()),
      eval: z.boolean(),
    }),
  ),
});

export const sandboxSchema = z.object({
  id: z.string(),
  runtime: z.string(),
  network: z.boolean(),
  state: z.enum(['pending', 'ready', 'ended', 'failed']),
  reason: z.string().nullable().describe('Starting, Claimed, Started; Expired, IdleTimeout, Deleted; PodFailed, PodGone, StartTimeout'),
  message: z.string().nullable(),
  launch: z.enum(['warm', 'cold']).nullable(),
  launch_reason: z.string().nullable().describe('Why the launch was cold'),
  resources: z.object({ cpu: z.string(), memory: z.string(), disk: z.string() }),
  idle_timeout_seconds: z.number(),
  max_lifetime_seconds: z.number(),
  created_at: z.string().nullable(),
  ready_at: z.string().nullable(),
  last_activity_at: z.string().nullable(),
  idle_expires_at: z.string().nullable().describe('When it ends if nothing runs in it before (as the controllers last knew its activity)'),
  expires_at: z.string().nullable(),
  ended_at: z.string().nullable(),
});

/** What an exec answers (api/sandboxes/service.ts ExecAnswer, already in the API's spelling). */
export const execResultSchema = z.object({
  status: z.enum(['ok', 'timed_out', 'failed']),
  exit_code: z.number().nullable(),
  signal: z.string().nullable(),
  reason: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.object({ stdout: z.boolean(), stderr: z.boolean() }),
  bytes: z.object({ stdout: z.number(), stderr: z.number() }),
  duration_ms: z.number(),
  sandbox: z.string(),
  launch: z.enum(['warm', 'cold']).nullable(),
});

/** What an eval answers: the exec's result and the runtime its alias resolved to. */
export const evalResultSchema = execResultSchema.extend({ runtime: z.string() });

export const uploadResultSchema = z.object({ path: z.string(), size: z.number() });

export function presentSandbox(s: SandboxRecord): z.infer<typeof sandboxSchema> {
  return {
    id: s.id,
    runtime: s.runtime,
    network: s.network,
    state: (s.phase ?? 'Pending').toLowerCase() as z.infer<typeof sandboxSchema>['state'],
    reason: s.reason ?? null,
    message: s.message ?? null,
    launch: s.launch ?? null,
    launch_reason: s.launchReason ?? null,
    resources: { ...s.resources },
    idle_timeout_seconds: s.idleTimeoutSeconds,
    max_lifetime_seconds: s.maxLifetimeSeconds,
    created_at: s.createdAt ? s.createdAt.toISOString() : null,
    ready_at: s.readyAt ?? null,
    last_activity_at: s.lastActivityAt ?? null,
    idle_expires_at: s.idleExpiresAt ?? null,
    expires_at: s.expiresAt ?? null,
    ended_at: s.endedAt ?? null,
  };
}
