// Request metrics of apps: the auth proxy (ingress-auth) records every request it proxies; the
// recorder sums them in memory per app and minute (count, status classes, a latency histogram)
// and adds them to app_request_metrics every few seconds, so a request costs no database write.
// The API sums the rows of a window into steps (GET /apps/{appID}/metrics, docs/api/metrics.md).
import type { Db } from '../db/connection.js';
import type { Logger } from '../logger.js';

/**
 * Upper bounds (ms, inclusive) of the latency buckets; one more bucket counts what is slower.
 * Stored as arrays in app_request_metrics: changing them needs a migration of the stored rows.
 */
export const latencyBoundsMs = [1, 2, 5, 10, 20, 50, 100, 200, 300, 500, 750, 1000, 2000, 5000, 10_000, 30_000] as const;
export const bucketCount = latencyBoundsMs.length + 1;

export const statusClasses = ['2xx', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof statusClasses)[number];
export type ClassCounts = Record<StatusClass, number>;

const minuteMs = 60_000;

export interface RequestSample {
  /** The account's namespace, where the App lives. */
  namespace: string;
  /** The App's name and uid: rows are per uid, so a recreated app starts from nothing. */
  app: string;
  appUid: string;
  status: number;
  durationMs: number;
  /** When the response ended; default now. */
  at?: Date;
}

/** The sums of one app over some time: one minute in memory, one step of a query. */
export interface RequestTotals {
  requests: number;
  status: ClassCounts;
  durationMsSum: number;
  /** Counts per latency bucket (bucketCount long). */
  latency: number[];
}

export function emptyTotals(): RequestTotals {
  return {
    requests: 0,
    status: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 },
    durationMsSum: 0,
    latency: new Array<number>(bucketCount).fill(0),
  };
}

/** The class of a status, or undefined for 1xx and anything out of range (counted only in requests). */
export function statusClass(status: number): StatusClass | undefined {
  const c = Math.floor(status / 100);
  return c >= 2 && c <= 5 ? (`${c}xx` as StatusClass) : undefined;
}

/** The latency bucket a duration falls in. */
export function bucketOf(durationMs: number): number {
  // A loop, not findIndex: no closure on every recorded request.
  for (let i = 0; i < latencyBoundsMs.length; i++) if (durationMs <= latencyBoundsMs[i]!) return i;
  return latencyBoundsMs.length;
}

export function addSample(t: RequestTotals, status: number, durationMs: number): void {
  const ms = Number.isFinite(durationMs) && durationMs > 0 ? durationMs : 0;
  t.requests += 1;
  const c = statusClass(status);
  if (c) t.status[c] += 1;
  t.durationMsSum += ms;
  t.latency[bucketOf(ms)]! += 1;
}

/** Adds `b` into `a`. */
export function addTotals(a: RequestTotals, b: RequestTotals): void {
  a.requests += b.requests;
  for (const c of statusClasses) a.status[c] += b.status[c];
  a.durationMsSum += b.durationMsSum;
  for (let i = 0; i < bucketCount; i++) a.latency[i]! += b.latency[i] ?? 0;
}

/**
 * The q-quantile (0 < q < 1) of a latency histogram, interpolated linearly inside its bucket (as
 * Prometheus' histogram_quantile); null without requests. In the open-ended last bucket the answer
 * is the highest bound: the histogram knows no more than "slower than that".
 */
export function quantile(latency: readonly number[], q: number): number | null {
  const total = latency.reduce((n, c) => n + c, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < latency.length; i++) {
    const count = latency[i] ?? 0;
    if (count > 0 && below + count >= rank) {
      if (i >= latencyBoundsMs.length) return latencyBoundsMs[latencyBoundsMs.length - 1]!;
      const lower = i === 0 ? 0 : latencyBoundsMs[i - 1]!;
      const upper = latencyBoundsMs[i]!;
      return Math.round((lower + ((upper - lower) * (rank - below)) / count) * 1000) / 1000;
    }
    below += count;
  }
  return latencyBoundsMs[latencyBoundsMs.length - 1]!;
}

interface PendingMinute {
  appUid: string;
  namespace: string;
  app: string;
  minute: number;
  totals: RequestTotals;
}

const keyOf = (appUid: string, minute: number) => `${appUid}@${minute}`;

export interface RecorderOptions {
  flushIntervalMs?: number;
  /** Rows older than this many days are deleted (at most once an hour, after a flush). */
  retentionDays?: number;
  /** App-minutes held in memory at most while the database cannot be written; the oldest go first. */
  maxPending?: number;
  log?: Logger;
  clock?: () => Date;
}

export const defaultFlushIntervalMs = 5_000;
export const defaultRetentionDays = 30;
const upsertBatch = 500;

/** In-memory sums per app and minute, flushed to app_request_metrics. One per proxy process. */
export class RequestRecorder {
  private pending = new Map<string, PendingMinute>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private lastPrune = 0;
  /** The app-minute last recorded into, while it is in `pending`. */
  private last: PendingMinute | undefined;
  /** The time now in ms: Date.now() unless a clock was given (no Date per request). */
  private readonly now: () => number;
  private readonly flushIntervalMs: number;
  private readonly retentionDays: number;
  private readonly maxPending: number;
  private readonly clock: () => Date;

  constructor(
    private readonly db: Db,
    private readonly opts: RecorderOptions = {},
  ) {
    this.flushIntervalMs = opts.flushIntervalMs ?? defaultFlushIntervalMs;
    this.retentionDays = opts.retentionDays ?? defaultRetentionDays;
    this.maxPending = opts.maxPending ?? 100_000;
    this.clock = opts.clock ?? (() => new Date());
    const clock = opts.clock;
    this.now = clock ? () => clock().getTime() : Date.now;
  }

  /** App-minutes not yet written. */
  get pendingMinutes(): number {
    return this.pending.size;
  }

  record(s: RequestSample): void {
    const minute = Math.floor((s.at ? s.at.getTime() : this.now()) / minuteMs) * minuteMs;
    // The app-minute just recorded into gets most of the next requests too: no key to build then.
    // Whatever takes minutes out of `pending` (write, bound) forgets it.
    let p = this.last;
    if (!p || p.minute !== minute || p.appUid !== s.appUid) {
      const key = keyOf(s.appUid, minute);
      p = this.pending.get(key);
      if (!p) {
        p = { appUid: s.appUid, namespace: s.namespace, app: s.app, minute, totals: emptyTotals() };
        this.pending.set(key, p);
        this.bound();
      }
      if (this.pending.get(key) === p) this.last = p;
    }
    addSample(p.totals, s.status, s.durationMs);
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch(() => undefined), this.flushIntervalMs);
    this.timer.unref();
  }

  /** Writes what was recorded so far; flushes never overlap. On failure the sums stay for the next one. */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.write());
    this.flushing = run.catch(() => undefined);
    return run;
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.last = undefined;
    const rows = [...batch.values()].map((p) => ({
      app_uid: p.appUid,
      namespace: p.namespace,
      app_name: p.app,
      minute: new Date(p.minute),
      requests: p.totals.requests,
      status_2xx: p.totals.status['2xx'],
      status_3xx: p.totals.status['3xx'],
      status_4xx: p.totals.status['4xx'],
      status_5xx: p.totals.status['5xx'],
      duration_ms_sum: p.totals.durationMsSum,
      latency_buckets: p.totals.latency,
    }));
    try {
      // One transaction: a failed flush wrote nothing, so retrying it cannot count anything twice.
      await this.db.transaction(async (trx) => {
        for (let i = 0; i < rows.length; i += upsertBatch) await upsertRows(trx, rows.slice(i, i + upsertBatch));
      });
    } catch (err) {
      for (const [key, p] of batch) {
        const now = this.pending.get(key);
        if (now) addTotals(now.totals, p.totals);
        else this.pending.set(key, p);
      }
      this.bound();
      this.opts.log?.warn({ err, minutes: batch.size }, 'Request metrics not written; retrying with the next flush');
      throw err;
    }
    await this.prune();
  }

  /** Drops the oldest minutes past maxPending: memory must not grow while the database is away. */
  private bound(): void {
    if (this.pending.size <= this.maxPending) return;
    const oldest = [...this.pending.entries()].sort((a, b) => a[1].minute - b[1].minute);
    const drop = oldest.slice(0, this.pending.size - this.maxPending);
    for (const [key] of drop) this.pending.delete(key);
    this.last = undefined;
    this.opts.log?.warn({ dropped: drop.length }, 'Request metrics dropped: too many minutes waiting to be written');
  }

  private async prune(): Promise<void> {
    const now = this.clock().getTime();
    if (now - this.lastPrune < 3_600_000) return;
    this.lastPrune = now;
    try {
      await pruneRequestMetrics(this.db, new Date(now - this.retentionDays * 86_400_000));
    } catch (err) {
      this.opts.log?.warn({ err }, 'Old request metrics not deleted');
    }
  }
}

type Row = Record<string, unknown>;

/** Adds rows to what is stored for the same app and minute (or inserts them). */
async function upsertRows(db: Db, rows: Row[]): Promise<void> {
  const add = (c: string) => db.raw(`app_request_metrics.${c} + excluded.${c}`);
  await db('app_request_metrics')
    .insert(rows)
    .onConflict(['app_uid', 'minute'])
    .merge({
      requests: add('requests'),
      status_2xx: add('status_2xx'),
      status_3xx: add('status_3xx'),
      status_4xx: add('status_4xx'),
      status_5xx: add('status_5xx'),
      duration_ms_sum: add('duration_ms_sum'),
      latency_buckets: db.raw(
        'ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0) FROM unnest(app_request_metrics.latency_buckets, excluded.latency_buckets) WITH ORDINALITY AS u(a, b, i) ORDER BY i)',
      ),
    });
}

export async function pruneRequestMetrics(db: Db, before: Date): Promise<number> {
  return db('app_request_metrics').where('minute', '<', before).delete();
}

export interface SeriesPoint extends RequestTotals {
  start: Date;
}

/**
 * The app's sums per step in [start, end): end - start must be a whole number of steps, and steps
 * whole minutes (rows are per minute). Steps without requests are there with zeros.
 */
export async function requestSeries(db: Db, appUid: string, start: Date, end: Date, stepMs: number): Promise<SeriesPoint[]> {
  const n = Math.round((end.getTime() - start.getTime()) / stepMs);
  const points: SeriesPoint[] = Array.from({ length: n }, (_, i) => ({ start: new Date(start.getTime() + i * stepMs), ...emptyTotals() }));
  const slot = db.raw('floor(extract(epoch from (minute - ?::timestamptz)) * 1000 / ?)::int', [start, stepMs]);
  const rows = db('app_request_metrics').where({ app_uid: appUid }).where('minute', '>=', start).where('minute', '<', end);
  const sums = await rows
    .clone()
    .select({ slot })
    .sum({ requests: 'requests', s2: 'status_2xx', s3: 'status_3xx', s4: 'status_4xx', s5: 'status_5xx', ms: 'duration_ms_sum' })
    .groupByRaw<Array<Record<'slot' | 'requests' | 's2' | 's3' | 's4' | 's5' | 'ms', string | number>>>('1');
  for (const r of sums) {
    const p = points[Number(r.slot)];
    if (!p) continue;
    p.requests = Number(r.requests);
    p.status = { '2xx': Number(r.s2), '3xx': Number(r.s3), '4xx': Number(r.s4), '5xx': Number(r.s5) };
    p.durationMsSum = Number(r.ms);
  }
  const buckets = await db
    .from(rows.clone().select({ slot, latency_buckets: 'latency_buckets' }).as('t'))
    .joinRaw('CROSS JOIN LATERAL unnest(t.latency_buckets) WITH ORDINALITY AS u(v, i)')
    .select('t.slot', 'u.i')
    .sum({ count: 'u.v' })
    .groupBy<Array<{ slot: number; i: string | number; count: string | number }>>('t.slot', 'u.i');
  for (const b of buckets) {
    const p = points[Number(b.slot)];
    const i = Number(b.i) - 1;
    if (p && i >= 0 && i < bucketCount) p.latency[i] = Number(b.count);
  }
  return points;
}
