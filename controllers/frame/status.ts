// The status part every kind shares, as Kubernetes API conventions describe it: observedGeneration,
// and conditions whose lastTransitionTime moves only when their status does. Pure functions.

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/** A condition as a reconciler states it; the frame adds the generation and transition time. */
export interface ConditionInput {
  type: string;
  ok: boolean;
  reason: string;
  message: string;
}

/** `next` as a condition, keeping the previous transition time when its status did not change. */
export function condition(previous: readonly Condition[] | undefined, next: ConditionInput, generation: number, now: Date): Condition {
  const status: ConditionStatus = next.ok ? 'True' : 'False';
  const before = previous?.find((c) => c.type === next.type);
  return {
    type: next.type,
    status,
    reason: next.reason,
    message: next.message,
    observedGeneration: generation,
    lastTransitionTime: before?.status === status ? before.lastTransitionTime : now.toISOString(),
  };
}

/** JSON with object keys sorted: the apiserver re-encodes what it stores in its own key order. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** Whether two JSON values are the same, whatever their keys' order. */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/**
 * The JSON merge patch (RFC 7386) that turns `from` into `to`: a key `to` lacks becomes null, so
 * a field the reconciler no longer reports is removed rather than left stale; arrays are replaced.
 */
export function mergePatchBetween(from: unknown, to: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
  if (!isObject(from) || !isObject(to)) return to === undefined ? null : to;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(from)) if (to[key] === undefined && from[key] !== undefined) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    if (value === undefined || sameJson(from[key], value)) continue;
    patch[key] = isObject(value) && isObject(from[key]) ? mergePatchBetween(from[key], value) : value;
  }
  return patch;
}
