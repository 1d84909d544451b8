// GET /apps/{appID}/metrics/{path}: an app's request metrics (recorded by the auth proxy through
// lib/metrics/requests.ts, summed per step over a window) and its machines' CPU and memory now,
// read as metrics-server reads them: the kubelet Summary API of each node hosting a machine,
// through the apiserver's node proxy. docs/api/metrics.md describes the paths.
import { z } from 'zod';
import { parseDuration } from '../../lib/duration.js';
import {
  defaultRetentionDays,
  quantile,
  addTotals,
  emptyTotals,
  type RequestTotals,
  type SeriesPoint,
} from '../../lib/metrics/requests.js';
import type { AppRecord } from '../repositories/app-record.js';
import { ApiError, invalid } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { resolveApp, type AppLookup } from '../app-access.js';
import { parseSince } from '../../lib/duration.js';
import { labels } from '../../lib/contract.js';

type Deps = AppLookup &
  Pick<ApiDeps, 'requestMetrics' | 'clock'> & {
    /** The app's machine Pods, and each node's kubelet Summary. */
    machines: Pick<ApiDeps['machines'], 'list' | 'nodeSummary'>;
    /** A node that does not answer its Summary is logged. */
    log: Pick<ApiDeps['log'], 'warn'>;
  };

export const metricPaths = ['requests', 'latency', 'machines', 'summary'] as const;
type MetricPath = (typeof metricPaths)[number];

const minuteMs = 60_000;
export const defaultWindowMs = 3_600_000;
export const maxWindowMs = defaultRetentionDays * 86_400_000;
export const maxPoints = 1440;
/** Steps chosen when none is asked for: the smallest that gives at most 60 points. */
const autoSteps = [1, 5, 15, 30, 60, 180, 360, 720, 1440].map((m) => m * minuteMs);
/** How long a node may take to answer its Summary. */
const nodeDeadlineMs = 10_000;

const metricsQuery = z.strictObject({
  since: z
    .string()
    .refine(
      (v) => parseSince(v, 0) !== undefined,
      'must be a duration like 30m, 6h, 7d or 1h30m, or an RFC3339 time like 2026-11-22T04:40:00Z',
    )
    .optional()
    .describe('Start of the window: a duration back from now (default 1h, at most 30d) or an RFC3339 time. requests, latency and summary.'),
  step: z
    .string()
    .refine((v) => parseDuration(v) !== undefined, 'must be a duration like 1m, 5m, 1h or 1d')
    .optional()
    .describe(
      'Width of each point, whole minutes (default: the smallest of 1m, 5m, 15m, 30m, 1h, 3h, 6h, 12h, 1d giving at most 60 points). requests and latency.',
    ),
});
type MetricsQuery = z.infer<typeof metricsQuery>;

interface Window {
  start: Date;
  end: Date;
  stepMs: number;
}

/**
 * The window ends at the next whole minute (the current minute is counted as far as it is recorded)
 * and starts a whole number of steps before, covering at least `since`.
 */
export function windowOf(query: MetricsQuery, now: number): Window {
  const since = query.since !== undefined ? parseSince(query.since, now) : new Date(now - defaultWindowMs);
  const span = now - since!.getTime();
  if (span <= 0) throw invalid('invalid query: since: must be in the past');
  if (span > maxWindowMs) throw invalid(`invalid query: since: at most ${defaultRetentionDays}d back (metrics are kept that long)`);
  let stepMs: number;
  if (query.step !== undefined) {
    stepMs = parseDuration(query.step)!;
    if (stepMs % minuteMs !== 0) throw invalid('invalid query: step: must be whole minutes (1m, 5m, 1h, ...)');
  } else {
    stepMs = autoSteps.find((s) => Math.ceil(span / s) <= 60) ?? autoSteps[autoSteps.length - 1]!;
  }
  const points = Math.ceil(span / stepMs);
  if (points > maxPoints) throw invalid(`invalid query: step: ${points} points for this window; at most ${maxPoints} (use a larger step)`);
  const end = Math.ceil((now + 1) / minuteMs) * minuteMs;
  return { start: new Date(end - points * stepMs), end: new Date(end), stepMs };
}

const statusSchema = z.object({ '2xx': z.number(), '3xx': z.number(), '4xx': z.number(), '5xx': z.number() });
const latencySchema = z.object({
  p50: z.number().nullable(),
  p90: z.number().nullable(),
  p99: z.number().nullable(),
  mean: z.number().nullable(),
});
const machineSchema = z.object({
  machine: z.number().nullable(),
  service: z.string().nullable().describe('The service the machine runs, in an app with several; null otherwise.'),
  pod: z.string(),
  node: z.string().nullable(),
  phase: z.string(),
  cpu_cores: z.number().nullable(),
  memory_bytes: z.number().nullable(),
  memory_usage_bytes: z.number().nullable(),
  sampled_at: z.string().nullable(),
  unavailable: z.string().nullable(),
});
const windowFields = { app: z.string(), app_id: z.string(), start: z.string(), end: z.string(), step_seconds: z.number() };

export const metricsResponse = z.union([
  z.object({
    ...windowFields,
    total: z.object({ requests: z.number(), status: statusSchema }),
    points: z.array(z.object({ time: z.string(), requests: z.number(), status: statusSchema })),
  }),
  z.object({
    ...windowFields,
    unit: z.literal('ms'),
    total: latencySchema.extend({ requests: z.number() }),
    points: z.array(latencySchema.extend({ time: z.string(), requests: z.number() })),
  }),
  z.object({ app: z.string(), app_id: z.string(), time: z.string(), machines: z.array(machineSchema) }),
  z.object({
    app: z.string(),
    app_id: z.string(),
    start: z.string(),
    end: z.string(),
    requests: z.object({ total: z.number(), per_second: z.number(), status: statusSchema }),
    latency: latencySchema.extend({ unit: z.literal('ms') }),
    machines: z.array(machineSchema),
  }),
]);

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

function latencyOf(t: RequestTotals): z.infer<typeof latencySchema> {
  return {
    p50: quantile(t.latency, 0.5),
    p90: quantile(t.latency, 0.9),
    p99: quantile(t.latency, 0.99),
    mean: t.requests ? round(t.durationMsSum / t.requests, 3) : null,
  };
}

function totalOf(points: SeriesPoint[]): RequestTotals {
  const total = emptyTotals();
  for (const p of points) addTotals(total, p);
  return total;
}

/** The kubelet Summary API, the fields read here. */
interface Summary {
  pods?: Array<{
    podRef?: { uid?: string };
    cpu?: { time?: string; usageNanoCores?: number };
    memory?: { time?: string; workingSetBytes?: number; usageBytes?: number };
  }>;
}

type Machine = z.infer<typeof machineSchema>;

/** The app's machines with their CPU and memory now, one Summary per node hosting one of them. */
async function machinesOf(s: Pick<Deps, 'machines' | 'log'>, app: AppRecord): Promise<Machine[]> {
  let pods = await s.machines.list(app.namespace, app.name);
  // Only this app's machines: pods of an earlier app of the same name may still be ending.
  pods = pods.filter((p) => p.metadata?.ownerReferences?.some((o) => o.uid === app.id));
  const nodes = [...new Set(pods.flatMap((p) => (p.status?.phase === 'Running' && p.spec?.nodeName ? [p.spec.nodeName] : [])))];
  const summaries = new Map<string, Summary | Error>(
    await Promise.all(
      nodes.map(async (node): Promise<[string, Summary | Error]> => {
        let timer: NodeJS.Timeout | undefined;
        try {
          const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), nodeDeadlineMs)));
          return [node, (await Promise.race([s.machines.nodeSummary(node), deadline])) as Summary];
        } catch (err) {
          s.log.warn({ err, node }, 'Node stats summary not read');
          return [node, err instanceof Error ? err : new Error(String(err))];
        } finally {
          clearTimeout(timer);
        }
      }),
    ),
  );
  const machines = pods.map((pod): Machine => {
    const ordinal = pod.metadata?.labels?.[labels.machine];
    const node = pod.spec?.nodeName ?? null;
    const phase = pod.status?.phase ?? 'Pending';
    const base = {
      machine: ordinal !== undefined && /^\d+$/.test(ordinal) ? Number(ordinal) : null,
      service: pod.metadata?.labels?.[labels.service] ?? null,
      pod: pod.metadata!.name!,
      node,
      phase,
      cpu_cores: null,
      memory_bytes: null,
      memory_usage_bytes: null,
      sampled_at: null,
    };
    if (phase !== 'Running' || !node) return { ...base, unavailable: 'the machine is not running' };
    const summary = summaries.get(node);
    if (!summary || summary instanceof Error) return { ...base, unavailable: `node ${node} did not report usage` };
    const stats = summary.pods?.find((p) => p.podRef?.uid === pod.metadata?.uid);
    if (!stats?.cpu || !stats.memory) return { ...base, unavailable: `node ${node} reports no usage for this machine yet` };
    return {
      ...base,
      cpu_cores: round((stats.cpu.usageNanoCores ?? 0) / 1e9, 6),
      memory_bytes: stats.memory.workingSetBytes ?? null,
      memory_usage_bytes: stats.memory.usageBytes ?? null,
      sampled_at: stats.memory.time ?? stats.cpu.time ?? null,
      unavailable: null,
    };
  });
  return machines.sort(
    (a, b) =>
      (a.service ?? '').localeCompare(b.service ?? '') || (a.machine ?? Infinity) - (b.machine ?? Infinity) || a.pod.localeCompare(b.pod),
  );
}

export function appMetricsOperations(s: Deps): Operation[] {
  const handlers: Record<MetricPath, (app: AppRecord, query: MetricsQuery) => Promise<unknown>> = {
    requests: async (app, query) => {
      const w = windowOf(query, s.clock().getTime());
      const points = await s.requestMetrics.series(app.id, w.start, w.end, w.stepMs);
      const total = totalOf(points);
      return {
        ...windowBody(app, w),
        total: { requests: total.requests, status: total.status },
        points: points.map((p) => ({ time: p.start.toISOString(), requests: p.requests, status: p.status })),
      };
    },
    latency: async (app, query) => {
      const w = windowOf(query, s.clock().getTime());
      const points = await s.requestMetrics.series(app.id, w.start, w.end, w.stepMs);
      const total = totalOf(points);
      return {
        ...windowBody(app, w),
        unit: 'ms',
        total: { requests: total.requests, ...latencyOf(total) },
        points: points.map((p) => ({ time: p.start.toISOString(), requests: p.requests, ...latencyOf(p) })),
      };
    },
    machines: async (app) => ({ app: app.name, app_id: app.id, time: new Date().toISOString(), machines: await machinesOf(s, app) }),
    summary: async (app, query) => {
      const w = windowOf({ ...query, step: undefined }, s.clock().getTime());
      // One step over the whole window.
      const [total] = await s.requestMetrics.series(app.id, w.start, w.end, w.end.getTime() - w.start.getTime());
      const t = total ?? { ...emptyTotals(), start: w.start };
      return {
        app: app.name,
        app_id: app.id,
        start: w.start.toISOString(),
        end: w.end.toISOString(),
        requests: {
          total: t.requests,
          per_second: round(t.requests / ((w.end.getTime() - w.start.getTime()) / 1000), 6),
          status: t.status,
        },
        latency: { unit: 'ms', ...latencyOf(t) },
        machines: await machinesOf(s, app),
      };
    },
  };
  return [
    op({
      method: 'GET',
      path: '/apps/{appID}/metrics/{path}',
      operationId: 'queryAppMetrics',
      tag: 'apps',
      summary: 'Query app metrics (requests, latency, machines, summary)',
      action: 'read',
      query: metricsQuery,
      response: metricsResponse,
      handler: async ({ caller, params, query }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const path = params.path!;
        if (!(metricPaths as readonly string[]).includes(path)) {
          throw new ApiError('not_found', `no metrics path "${path}"; known paths: ${metricPaths.join(', ')}`);
        }
        return { body: await handlers[path as MetricPath](app, query), headers: { 'Cache-Control': 'no-store' } };
      },
    }),
  ];
}

function windowBody(app: AppRecord, w: Window) {
  return { app: app.name, app_id: app.id, start: w.start.toISOString(), end: w.end.toISOString(), step_seconds: w.stepMs / 1000 };
}
