// An app's request metrics (GET /apps/{appID}/metrics/requests and /latency, docs/api/metrics.md):
// charts of requests, errors (4xx and 5xx) and latency (p50, p90, p99) over a window, drawn as
// inline SVG by LineChart (charts.ts has the scaling), each with an accessible name and a table of
// its numbers beside it.
import { useEffect, useState } from 'preact/hooks';
import { api, data } from '../api.js';
import { formatValue, linePath, scaleOf, ticks, type Box, type Point } from '../charts.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import type { paths } from '../../../lib/client/schema.gen.js';
import { hrefOf } from '../router.js';

type MetricsAnswer = paths['/apps/{appID}/metrics/{path}']['get']['responses'][200]['content']['application/json'];
type RequestsAnswer = Extract<MetricsAnswer, { points: unknown; total: { status: unknown } }>;
type LatencyAnswer = Extract<MetricsAnswer, { unit: 'ms' }>;

const windows = [
  { since: '1h', label: 'Last hour' },
  { since: '6h', label: 'Last 6 hours' },
  { since: '1d', label: 'Last day' },
  { since: '7d', label: 'Last 7 days' },
] as const;

interface Series {
  label: string;
  /** A CSS class (its colour). */
  tone: string;
  points: Point[];
}

const box: Box = { width: 640, height: 200, left: 44, right: 8, top: 8, bottom: 22 };

const clock = (t: number) => new Date(t).toISOString().slice(11, 16);

export function LineChart({
  id,
  title,
  unit,
  series,
  start,
  end,
}: {
  id: string;
  title: string;
  unit: string;
  series: Series[];
  start: number;
  end: number;
}) {
  const scale = scaleOf(
    series.flatMap((s) => s.points),
    box,
    start,
    end,
  );
  const times = series[0]?.points.map((p) => p.t) ?? [];
  return (
    <figure class="chart" id={id}>
      <figcaption id={`${id}-title`}>
        {title} ({unit})
        <span class="chart-legend">
          {series.map((s) => (
            <span key={s.label} class={`legend ${s.tone}`}>
              <span class="swatch" aria-hidden="true" /> {s.label}
            </span>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${box.width} ${box.height}`} role="img" aria-labelledby={`${id}-title`} aria-describedby={`${id}-table`}>
        {ticks(scale.top).map((v) => (
          <g key={v} class="grid">
            <line x1={box.left} x2={box.width - box.right} y1={scale.y(v)} y2={scale.y(v)} />
            <text x={box.left - 4} y={scale.y(v) + 4} text-anchor="end">
              {formatValue(v)}
            </text>
          </g>
        ))}
        <text class="axis" x={box.left} y={box.height - 6}>
          {clock(start)}
        </text>
        <text class="axis" x={box.width - box.right} y={box.height - 6} text-anchor="end">
          {clock(end)}
        </text>
        {series.map((s) => (
          <path key={s.label} class={`series ${s.tone}`} d={linePath(s.points, scale)} />
        ))}
      </svg>
      <details>
        <summary>The numbers of {title.toLowerCase()}</summary>
        <table class="apps chart-table" id={`${id}-table`}>
          <caption class="visually-hidden">
            {title} per step ({unit})
          </caption>
          <thead>
            <tr>
              <th scope="col">Time (UTC)</th>
              {series.map((s) => (
                <th key={s.label} scope="col">
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {times.map((t, i) => (
              <tr key={t}>
                <th scope="row">
                  <time dateTime={new Date(t).toISOString()}>{new Date(t).toISOString().slice(0, 16).replace('T', ' ')}</time>
                </th>
                {series.map((s) => (
                  <td key={s.label}>{formatValue(s.points[i]?.v ?? null)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

interface Loaded {
  requests: RequestsAnswer;
  latency: LatencyAnswer;
}

export function AppMetricsPage({ name }: { name: string }) {
  const [since, setSince] = useState<string>('1h');
  const [loaded, setLoaded] = useState<Loaded | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [refreshes, setRefreshes] = useState(0);
  useEffect(() => {
    let live = true;
    setError(undefined);
    const get = (path: 'requests' | 'latency') =>
      data(api.GET('/apps/{appID}/metrics/{path}', { params: { path: { appID: name, path }, query: { since } } }));
    Promise.all([get('requests'), get('latency')]).then(
      ([requests, latency]) => live && setLoaded({ requests: requests as RequestsAnswer, latency: latency as LatencyAnswer }),
      (err: unknown) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [name, since, refreshes]);
  // Fresh numbers each minute (the API's finest step).
  useEffect(() => {
    const timer = setInterval(() => setRefreshes((n) => n + 1), 60_000);
    return () => clearInterval(timer);
  }, []);

  const r = loaded?.requests;
  const l = loaded?.latency;
  const start = r ? Date.parse(r.start) : 0;
  const end = r ? Date.parse(r.end) : 0;
  const at = (p: { time: string }) => Date.parse(p.time);
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / metrics
      </p>
      <PageHeading title={`Metrics of ${name}`}>Metrics of {name}</PageHeading>
      <div class="log-controls">
        <label>
          Window{' '}
          <select id="metrics-window" value={since} onChange={(e) => setSince((e.target as HTMLSelectElement).value)}>
            {windows.map((w) => (
              <option key={w.since} value={w.since}>
                {w.label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" class="secondary" onClick={() => setRefreshes((n) => n + 1)}>
          Refresh
        </button>
      </div>
      {error !== undefined && <ErrorMessage doing={`Loading the metrics of ${name}`} error={error} />}
      {!loaded && error === undefined && <p role="status">Loading…</p>}
      {r && l && (
        <>
          <p id="metrics-totals">
            {r.total.requests.toLocaleString('en')} requests from {r.start.slice(0, 16).replace('T', ' ')} to{' '}
            {r.end.slice(0, 16).replace('T', ' ')} UTC: 2xx {r.total.status['2xx']}, 3xx {r.total.status['3xx']}, 4xx{' '}
            {r.total.status['4xx']}, 5xx {r.total.status['5xx']}; latency p50 {formatValue(l.total.p50)} ms, p99 {formatValue(l.total.p99)}{' '}
            ms. Each point is {r.step_seconds / 60} minutes.
          </p>
          <LineChart
            id="chart-requests"
            title="Requests"
            unit="per step"
            start={start}
            end={end}
            series={[{ label: 'Requests', tone: 's1', points: r.points.map((p) => ({ t: at(p), v: p.requests })) }]}
          />
          <LineChart
            id="chart-errors"
            title="Errors"
            unit="responses per step"
            start={start}
            end={end}
            series={[
              { label: '4xx', tone: 's2', points: r.points.map((p) => ({ t: at(p), v: p.status['4xx'] })) },
              { label: '5xx', tone: 's3', points: r.points.map((p) => ({ t: at(p), v: p.status['5xx'] })) },
            ]}
          />
          <LineChart
            id="chart-latency"
            title="Latency"
            unit="ms"
            start={start}
            end={end}
            series={[
              { label: 'p50', tone: 's1', points: l.points.map((p) => ({ t: at(p), v: p.p50 })) },
              { label: 'p90', tone: 's2', points: l.points.map((p) => ({ t: at(p), v: p.p90 })) },
              { label: 'p99', tone: 's3', points: l.points.map((p) => ({ t: at(p), v: p.p99 })) },
            ]}
          />
        </>
      )}
    </>
  );
}
