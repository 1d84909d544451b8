// The account's usage (docs/api/usage.md): this month's totals per meter (GET /account/usage, with
// machine time per app), and each meter by UTC day over the last 7, 30 or 93 days
// (GET /account/usage/history?bucket=day) as a small bar chart drawn here in inline SVG (account.ts
// has the scaling), each with an accessible name and a table of its numbers.
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  amountInWords,
  axisTicks,
  barsOf,
  formatNumber,
  meters,
  usageSeriesByDay,
  type ChartBox,
  type DayValue,
  type UsageNow,
  type UsagePeriod,
} from '../account.js';
import { api, data } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { hrefOf } from '../router.js';
import { TableHead } from '../components/table-head.js';

const spans = [
  { days: 7, label: 'Last 7 days' },
  { days: 30, label: 'Last 30 days' },
  { days: 93, label: 'Last 93 days' },
] as const;

const box: ChartBox = { width: 640, height: 160, left: 48, right: 8, top: 8, bottom: 22 };

/** A meter by day as bars, with its numbers in a table the chart names as its description. */
export function BarChart({ id, title, unit, days }: { id: string; title: string; unit: string; days: readonly DayValue[] }) {
  const { top, bars, y } = barsOf(
    days.map((d) => d.value),
    box,
  );
  const total = days.reduce((sum, d) => sum + d.value, 0);
  return (
    <figure class="chart" id={id}>
      <figcaption id={`${id}-title`}>
        {title} per day ({unit})
      </figcaption>
      <svg viewBox={`0 0 ${box.width} ${box.height}`} role="img" aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
        {axisTicks(top).map((v) => (
          <g key={v} class="grid">
            <line x1={box.left} x2={box.width - box.right} y1={y(v)} y2={y(v)} />
            <text x={box.left - 4} y={y(v) + 4} text-anchor="end">
              {formatNumber(v)}
            </text>
          </g>
        ))}
        {bars.map((b, i) => (
          <rect key={days[i]!.day} class="bar" x={b.x} y={b.y} width={b.width} height={b.height}>
            <title>
              {days[i]!.day}: {formatNumber(days[i]!.value)} {unit}
            </title>
          </rect>
        ))}
        {days.length > 0 && (
          <>
            <text class="axis" x={box.left} y={box.height - 6}>
              {days[0]!.day}
            </text>
            <text class="axis" x={box.width - box.right} y={box.height - 6} text-anchor="end">
              {days.at(-1)!.day}
            </text>
          </>
        )}
      </svg>
      <p class="muted small" id={`${id}-summary`}>
        {days.length} days from {days[0]?.day ?? '–'} to {days.at(-1)?.day ?? '–'}: {formatNumber(total)} {unit} in all, at most{' '}
        {formatNumber(Math.max(0, ...days.map((d) => d.value)))} in a day.
      </p>
      <details>
        <summary>The numbers of {title.toLowerCase()}</summary>
        <table class="apps chart-table" id={`${id}-table`}>
          <caption class="visually-hidden">
            {title} per UTC day ({unit})
          </caption>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col">
                {title} ({unit})
              </th>
            </tr>
          </thead>
          <tbody>
            {days.map((d) => (
              <tr key={d.day}>
                <th scope="row">
                  <time dateTime={d.day}>{d.day}</time>
                </th>
                <td>{formatNumber(d.value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

export function UsagePage() {
  const [now, setNow] = useState<UsageNow | undefined>(undefined);
  const [nowError, setNowError] = useState<unknown>(undefined);
  const [history, setHistory] = useState<UsagePeriod[] | undefined>(undefined);
  const [historyError, setHistoryError] = useState<unknown>(undefined);
  const [days, setDays] = useState<number>(30);

  useEffect(() => {
    let live = true;
    data(api.GET('/account/usage')).then(
      (u) => live && setNow(u),
      (err: unknown) => live && setNowError(err),
    );
    return () => {
      live = false;
    };
  }, []);
  useEffect(() => {
    let live = true;
    setHistory(undefined);
    setHistoryError(undefined);
    data(api.GET('/account/usage/history', { params: { query: { bucket: 'day', days } } })).then(
      (h) => live && setHistory(h.history),
      (err: unknown) => live && setHistoryError(err),
    );
    return () => {
      live = false;
    };
  }, [days]);

  const apps = now ? Object.entries(now.apps).sort((a, b) => b[1].machine_seconds - a[1].machine_seconds) : [];
  return (
    <>
      <PageHeading title="Usage">Usage</PageHeading>
      <section aria-labelledby="usage-month-heading">
        <h2 id="usage-month-heading">This month</h2>
        {nowError !== undefined && <ErrorMessage doing="Reading this month's usage" error={nowError} />}
        {!now && nowError === undefined && <p role="status">Loading this month's usage…</p>}
        {now && (
          <>
            <p class="muted">
              From {now.start.slice(0, 10)} to now ({now.end.slice(0, 16).replace('T', ' ')} UTC).
            </p>
            <dl class="facts" id="usage-month">
              {meters.map((m) => (
                <Fragment key={m.meter}>
                  <dt>{m.label}</dt>
                  <dd data-meter={m.meter}>{amountInWords(m.meter, now.meters[m.meter])}</dd>
                </Fragment>
              ))}
            </dl>
            {apps.length > 0 && (
              <table class="apps" id="usage-apps">
                <caption>Machine time by app this month</caption>
                <TableHead columns={['App', 'Machine time']} />
                <tbody>
                  {apps.map(([name, u]) => (
                    <tr key={name}>
                      <th scope="row">
                        <a href={hrefOf({ page: 'app', name })}>{name}</a>
                      </th>
                      <td>{amountInWords('machine_seconds', u.machine_seconds)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </section>
      <section aria-labelledby="usage-days-heading">
        <h2 id="usage-days-heading">By day</h2>
        <p class="toolbar">
          <label for="usage-days">Period</label>{' '}
          <select id="usage-days" value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            {spans.map((s) => (
              <option key={s.days} value={String(s.days)}>
                {s.label}
              </option>
            ))}
          </select>
        </p>
        {historyError !== undefined && <ErrorMessage doing="Reading usage by day" error={historyError} />}
        {!history && historyError === undefined && <p role="status">Loading usage by day…</p>}
        {history &&
          meters.map((m) => {
            const series = usageSeriesByDay(history, m.meter);
            return (
              <BarChart key={m.meter} id={`usage-${m.meter.replace('_', '-')}`} title={m.label} unit={series.unit} days={series.days} />
            );
          })}
      </section>
    </>
  );
}
