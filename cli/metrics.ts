// `svc metrics APP [requests|latency|machines|summary]`: an app's request counts, response times
// and machines' CPU and memory (GET /apps/{appID}/metrics/{path}, docs/api/metrics.md). Without a
// path, the summary: the window's totals and each machine now.
import { body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { formatBytes, table } from './table.js';

type MetricsAnswer = paths['/apps/{appID}/metrics/{path}']['get']['responses'][200]['content']['application/json'];
type RequestsAnswer = Extract<MetricsAnswer, { points: unknown; total: { status: unknown } }>;
type LatencyAnswer = Extract<MetricsAnswer, { unit: 'ms' }>;
type MachinesAnswer = Exclude<Extract<MetricsAnswer, { machines: unknown }>, { requests: unknown }>;
type SummaryAnswer = Extract<MetricsAnswer, { latency: unknown }>;
type MachineMetric = MachinesAnswer['machines'][number];

/** The paths docs/api/metrics.md lists; the API answers any other with 404 and the list. */
const metricPaths = ['summary', 'requests', 'latency', 'machines'] as const;

const usage = `usage:
  svc metrics APP [summary|requests|latency|machines] [--since T] [--step S] [--json]
      summary    the window's requests, status classes, rate and latency, and each machine now
      requests   requests per step, by status class
      latency    p50, p90, p99 and mean response time per step, in ms
      machines   each machine's CPU and memory now
  --since T      start of the window: 30m, 6h, 7d (default 1h, at most 30d) or an RFC3339 time
  --step S       width of each point: 1m, 5m, 1h, 1d (default: at most 60 points)
example:
  svc metrics shop requests --since 6h --step 1h`;

const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v * 10) / 10}`);
const cores = (v: number | null) => (v === null ? '-' : v.toFixed(3));

function machineRows(machines: MachineMetric[]): string[] {
  if (machines.length === 0) return ['no machines'];
  return table([
    ['MACHINE', 'PHASE', 'NODE', 'CPU', 'MEMORY', 'NOTE'],
    ...machines.map((m) => [
      m.machine === null ? m.pod : `${m.service ? `${m.service}/` : ''}m${m.machine}`,
      m.phase,
      m.node ?? '-',
      cores(m.cpu_cores),
      m.memory_bytes === null ? '-' : formatBytes(m.memory_bytes),
      m.unavailable ?? '',
    ]),
  ]);
}

/** The lines of each path's answer. */
export function describeMetrics(path: (typeof metricPaths)[number], a: MetricsAnswer): string[] {
  switch (path) {
    case 'summary': {
      const s = a as SummaryAnswer;
      const st = s.requests.status;
      return [
        `${s.app} from ${s.start} to ${s.end}`,
        `requests: ${s.requests.total} (${Math.round(s.requests.per_second * 1000) / 1000}/s): 2xx ${st['2xx']}, 3xx ${st['3xx']}, 4xx ${st['4xx']}, 5xx ${st['5xx']}`,
        `latency:  p50 ${ms(s.latency.p50)} ms, p90 ${ms(s.latency.p90)} ms, p99 ${ms(s.latency.p99)} ms, mean ${ms(s.latency.mean)} ms`,
        '',
        ...machineRows(s.machines),
      ];
    }
    case 'requests': {
      const r = a as RequestsAnswer;
      return table([
        ['TIME', 'REQUESTS', '2XX', '3XX', '4XX', '5XX'],
        ...r.points.map((p) => [p.time, ...[p.requests, p.status['2xx'], p.status['3xx'], p.status['4xx'], p.status['5xx']].map(String)]),
        [
          'total',
          ...[r.total.requests, r.total.status['2xx'], r.total.status['3xx'], r.total.status['4xx'], r.total.status['5xx']].map(String),
        ],
      ]);
    }
    case 'latency': {
      const l = a as LatencyAnswer;
      return table([
        ['TIME', 'REQUESTS', 'P50 MS', 'P90 MS', 'P99 MS', 'MEAN MS'],
        ...l.points.map((p) => [p.time, String(p.requests), ms(p.p50), ms(p.p90), ms(p.p99), ms(p.mean)]),
        ['total', String(l.total.requests), ms(l.total.p50), ms(l.total.p90), ms(l.total.p99), ms(l.total.mean)],
      ]);
    }
    case 'machines': {
      const m = a as MachinesAnswer;
      return [`${m.app} at ${m.time}`, ...machineRows(m.machines)];
    }
  }
}

export const metricsGroup: CommandGroup = {
  name: 'metrics',
  synopsis: `  svc metrics APP [summary|requests|latency|machines] [--since T] [--step S]
                                              an app's requests, response times, CPU and memory`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      since: { type: 'string' },
      step: { type: 'string' },
    });
    const [app, which = 'summary', extra] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!app || extra !== undefined) throw new GroupUsageError('svc metrics APP [summary|requests|latency|machines]', usage);
    const path = metricPaths.find((p) => p === which);
    if (!path) throw new GroupUsageError(`no metrics "${which}"; one of ${metricPaths.join(', ')}`, usage);
    const query = { ...(values.since ? { since: values.since } : {}), ...(values.step ? { step: values.step } : {}) };
    const answer = await body(
      connect(ctx, values.token).GET('/apps/{appID}/metrics/{path}', { params: { path: { appID: app, path }, query } }),
    );
    show(ctx, values.json === true, answer, (a) => describeMetrics(path, a));
    return 0;
  },
};
