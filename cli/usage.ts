// `svc usage [--history [--days N | --months N]]`: what the account used this month (GET
// /account/usage), by meter and by app, or month by month or day by day (GET
// /account/usage/history). docs/api/usage.md says what each meter counts.
import { body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { formatBytes, moneyText, table } from './table.js';

type UsageAnswer = paths['/account/usage']['get']['responses'][200]['content']['application/json'];
type HistoryAnswer = paths['/account/usage/history']['get']['responses'][200]['content']['application/json'];
type Meters = UsageAnswer['meters'];

const usage = `usage:
  svc usage [--json]                           this month so far: each meter, and machine time by app
  svc usage --history [--months N | --days N] [--json]
                                               month by month (default 6), or day by day (--days)
example:
  svc usage --history --days 7`;

/** Seconds as hours with a decimal: meters of time are billed by the hour. */
const hours = (s: number) => `${Math.round((s / 3600) * 10) / 10} h`;

const meterCell: Record<keyof Meters, (v: number) => string> = {
  machine_seconds: hours,
  build_seconds: hours,
  sandbox_seconds: hours,
  stored_bytes: formatBytes,
  data_requests: (n) => String(Math.round(n)),
  data_bytes: formatBytes,
  domain_registrations: (n) => String(Math.round(n)),
};
const meterNames = Object.keys(meterCell) as Array<keyof Meters>;

function chargeLines(charges: UsageAnswer['charges']): string[] {
  const rows = Object.entries(charges).flatMap(([meter, byCurrency]) =>
    Object.entries(byCurrency).map(([currency, minor]) => [meter, moneyText(minor, currency)]),
  );
  return rows.length ? ['', ...table([['CHARGED FOR', 'AMOUNT'], ...rows])] : [];
}

export function describeUsage(u: UsageAnswer): string[] {
  const apps = Object.entries(u.apps).sort(([, a], [, b]) => b.machine_seconds - a.machine_seconds);
  return [
    `from ${u.start} to ${u.end}`,
    ...table([['METER', 'USED'], ...meterNames.map((m) => [m, meterCell[m](u.meters[m])])]),
    ...chargeLines(u.charges),
    '',
    ...(apps.length
      ? table([['APP', 'MACHINE TIME'], ...apps.map(([app, v]) => [app, hours(v.machine_seconds)])])
      : ['no machine time yet']),
  ];
}

export function historyTable(h: HistoryAnswer): string[] {
  if (h.history.length === 0) return ['no usage recorded'];
  return table([
    ['FROM', 'TO', ...meterNames.map((m) => m.toUpperCase())],
    ...h.history.map((p) => [p.start, p.end, ...meterNames.map((m) => meterCell[m](p.meters[m]))]),
  ]);
}

function count(value: string | undefined, flag: string, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new GroupUsageError(`${flag} is a number from 1 to ${max}`, usage);
  return n;
}

export const usageGroup: CommandGroup = {
  name: 'usage',
  synopsis: `  svc usage [--history [--months N | --days N]]
                                              what the account used this month, or month by month`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      history: { type: 'boolean' },
      months: { type: 'string' },
      days: { type: 'string' },
    });
    if (values.help) return printUsage(this, ctx);
    if (positionals.length) throw new GroupUsageError(`unexpected ${positionals.join(' ')}`, usage);
    const months = count(values.months, '--months', 24);
    const days = count(values.days, '--days', 93);
    const api = connect(ctx, values.token);
    if (!values.history) {
      if (months !== undefined || days !== undefined) throw new GroupUsageError('--months and --days go with --history', usage);
      show(ctx, values.json === true, await body(api.GET('/account/usage')), describeUsage);
      return 0;
    }
    if (months !== undefined && days !== undefined) throw new GroupUsageError('give --months or --days, not both', usage);
    const query =
      days !== undefined ? { bucket: 'day' as const, days } : { bucket: 'month' as const, ...(months !== undefined ? { months } : {}) };
    show(ctx, values.json === true, await body(api.GET('/account/usage/history', { params: { query } })), historyTable);
    return 0;
  },
};
