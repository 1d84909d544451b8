// When a sandbox was last used, as the platform saw it: the API writes it on the Sandbox (the
// `svc.dev/activity` annotation) as execs and file transfers start and end, and the Sandbox
// controller ends the sandbox once it has been idle for its idle timeout. What the agent in the
// sandbox says of its activity is never asked: the agent runs as the tenant, so a tenant could
// keep a sandbox open for ever by forging it (issue 30).
import { annotations } from '../contract.js';

export interface SandboxActivity {
  /** The last moment the platform saw it in use (the end of its last exec or transfer). */
  at: Date;
  /** While an exec or transfer runs: the latest it can end (its deadline); not idle before. */
  busyUntil?: Date | undefined;
}

export function formatActivity(a: SandboxActivity): string {
  return JSON.stringify({ at: a.at.toISOString(), ...(a.busyUntil ? { busyUntil: a.busyUntil.toISOString() } : {}) });
}

/** The activity an annotation value says, or undefined for none or one that does not parse. */
export function parseActivity(value: string | undefined): SandboxActivity | undefined {
  if (!value || value.length > 256) return undefined;
  try {
    const o = JSON.parse(value) as { at?: unknown; busyUntil?: unknown };
    const at = typeof o.at === 'string' ? new Date(o.at) : undefined;
    if (!at || Number.isNaN(at.getTime())) return undefined;
    const busy = typeof o.busyUntil === 'string' ? new Date(o.busyUntil) : undefined;
    return { at, ...(busy && !Number.isNaN(busy.getTime()) ? { busyUntil: busy } : {}) };
  } catch {
    return undefined;
  }
}

export const activityAnnotation = annotations.activity;
