// The account-level pages' pure parts (webhooks, usage, an app's access): webhook and delivery
// states in words, the event filters typed into the webhook form, usage by day as series per meter
// with units a person reads, the bars of a bar chart, and an app's policy and users in words.
// Pure (no DOM): unit-tested (test/unit/console-account.test.ts).
import { knownFilter } from '../../lib/event-kinds.js';
import type { paths } from '../../lib/client/schema.gen.js';

export type Webhook = paths['/account/webhooks']['get']['responses'][200]['content']['application/json']['webhooks'][number];
export type WebhookCreated = paths['/account/webhooks']['post']['responses'][201]['content']['application/json'];
export type Delivery =
  paths['/account/webhooks/{webhookID}/deliveries']['get']['responses'][200]['content']['application/json']['deliveries'][number];
export type DeliveryDetail =
  paths['/account/webhooks/{webhookID}/deliveries/{deliveryID}']['get']['responses'][200]['content']['application/json'];
export type UsageNow = paths['/account/usage']['get']['responses'][200]['content']['application/json'];
export type UsagePeriod = paths['/account/usage/history']['get']['responses'][200]['content']['application/json']['history'][number];
export type Meter = keyof UsagePeriod['meters'];
export type AppUser = paths['/apps/{appID}/auth/users']['get']['responses'][200]['content']['application/json']['users'][number];
export type AuthProvider =
  paths['/apps/{appID}/auth/providers']['get']['responses'][200]['content']['application/json']['providers'][number];

export type Tone = 'ok' | 'busy' | 'bad' | 'idle';

/** A webhook's state: active, failing (every attempt failing since when) or disabled (and why). */
export function webhookStateInWords(w: Pick<Webhook, 'disabled_at' | 'disabled_reason' | 'failing_since'>): { text: string; tone: Tone } {
  if (w.disabled_at) return { text: `Disabled: ${w.disabled_reason ?? 'by its owner'}`, tone: 'bad' };
  if (w.failing_since)
    return { text: `Failing: every attempt has failed since ${w.failing_since.slice(0, 16).replace('T', ' ')} UTC`, tone: 'busy' };
  return { text: 'Active', tone: 'ok' };
}

/** What one attempt's outcome was: the response code, or the error when there was no answer. */
export function responseInWords(status: number | null, error: string | null): string {
  if (status !== null) return `HTTP ${status}`;
  return error ?? 'no answer';
}

/** A delivery's status in words (docs/api/webhooks.md: pending, succeeded, failed, canceled). */
export function deliveryStateInWords(d: Pick<Delivery, 'status' | 'attempts' | 'last_status' | 'last_error' | 'next_attempt_at'>): {
  text: string;
  tone: Tone;
} {
  const last = d.attempts > 0 ? responseInWords(d.last_status, d.last_error) : undefined;
  switch (d.status) {
    case 'succeeded':
      return { text: `Delivered${last ? ` (${last})` : ''}`, tone: 'ok' };
    case 'pending':
      return d.attempts === 0
        ? { text: 'Sending', tone: 'busy' }
        : { text: `Retrying: attempt ${d.attempts} failed (${last})`, tone: 'busy' };
    case 'failed':
      return { text: `Failed after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}${last ? ` (${last})` : ''}`, tone: 'bad' };
    case 'canceled':
      return { text: 'Canceled: its webhook was disabled', tone: 'idle' };
  }
}

/** The event kinds typed into the form (commas or spaces between), and those the API would refuse. */
export function parseEventFilters(text: string): { filters: string[]; unknown: string[] } {
  const filters = [...new Set(text.split(/[\s,]+/).filter(Boolean))];
  return { filters, unknown: filters.filter((f) => !knownFilter(f)) };
}

/** A webhook URL the API could accept: http or https, absolute. Undefined when it is; else why not. */
export function webhookUrlProblem(text: string): string | undefined {
  const value = text.trim();
  if (!value) return 'Enter the URL to send the events to.';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `"${value}" is not a URL (it starts with https://).`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `A webhook URL is http or https, not ${url.protocol.slice(0, -1)}.`;
  return undefined;
}

// ---- usage ----

interface MeterInfo {
  label: string;
  /** Units from the smallest: the factor of one unit in the meter's own unit. */
  units: Array<{ name: string; size: number }>;
}

export const meters: ReadonlyArray<{ meter: Meter } & MeterInfo> = [
  { meter: 'machine_seconds', label: 'Machine time', units: timeUnits() },
  { meter: 'build_seconds', label: 'Build time', units: timeUnits() },
  { meter: 'sandbox_seconds', label: 'Sandbox time', units: timeUnits() },
  { meter: 'stored_bytes', label: 'Storage', units: byteUnits() },
  {
    meter: 'data_requests',
    label: 'HTML data requests',
    units: [
      { name: 'requests', size: 1 },
      { name: 'thousand requests', size: 1000 },
      { name: 'million requests', size: 1000 ** 2 },
    ],
  },
  { meter: 'data_bytes', label: 'HTML data stored', units: byteUnits() },
  { meter: 'domain_registrations', label: 'Domain orders', units: [{ name: 'orders', size: 1 }] },
];

function byteUnits() {
  return [
    { name: 'bytes', size: 1 },
    { name: 'KiB', size: 1024 },
    { name: 'MiB', size: 1024 ** 2 },
    { name: 'GiB', size: 1024 ** 3 },
    { name: 'TiB', size: 1024 ** 4 },
  ];
}

function timeUnits() {
  return [
    { name: 'seconds', size: 1 },
    { name: 'minutes', size: 60 },
    { name: 'hours', size: 3600 },
  ];
}

/** The largest unit of the meter in which `max` is at least 1 (the smallest for 0). */
export function unitOf(meter: Meter, max: number): { name: string; size: number } {
  const units = meters.find((m) => m.meter === meter)!.units;
  let chosen = units[0]!;
  for (const u of units) if (max >= u.size) chosen = u;
  return chosen;
}

/** A number as the tables show it: whole when 100 or more, else at most two decimals. */
export function formatNumber(v: number): string {
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en');
  return String(Math.round(v * 100) / 100);
}

/** A meter's quantity in words with its unit ("2.5 hours", "40 MiB"). */
export function amountInWords(meter: Meter, value: number): string {
  const unit = unitOf(meter, value);
  return `${formatNumber(value / unit.size)} ${unit.name}`;
}

export interface DayValue {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  /** In the series' unit. */
  value: number;
}

/**
 * One meter by day, oldest first (the API answers newest first), in a unit fit for its largest
 * value; a day the answer lacks is not invented.
 */
export function usageSeriesByDay(history: readonly UsagePeriod[], meter: Meter): { unit: string; days: DayValue[] } {
  const sorted = [...history].sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
  const unit = unitOf(meter, Math.max(0, ...sorted.map((p) => p.meters[meter])));
  return {
    unit: unit.name,
    days: sorted.map((p) => ({ day: p.start.slice(0, 10), value: Math.round((p.meters[meter] / unit.size) * 1000) / 1000 })),
  };
}

/** The axis' top: at least `max`, 1, 2, 2.5 or 5 times a power of ten (1 when everything is 0). */
export function axisTop(max: number): number {
  if (!(max > 0) || !Number.isFinite(max)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5]) if (m * power >= max - 1e-9 * power) return m * power;
  return 10 * power;
}

export interface ChartBox {
  width: number;
  height: number;
  /** Room for the axis labels. */
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export interface Bar {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * The bars of `values` in the box, evenly spaced left to right with a gap between them, heights
 * from 0 to the axis' top (a positive value gets at least 1 unit of height, so it shows).
 */
export function barsOf(values: readonly number[], box: ChartBox): { top: number; bars: Bar[]; y: (v: number) => number } {
  const top = axisTop(Math.max(0, ...values));
  const w = box.width - box.left - box.right;
  const h = box.height - box.top - box.bottom;
  const slot = values.length ? w / values.length : w;
  const gap = Math.min(4, slot * 0.2);
  const round = (n: number) => Math.round(n * 10) / 10;
  const y = (v: number) => round(box.top + h - (Math.min(Math.max(v, 0), top) / top) * h);
  const bars = values.map((v, i) => {
    const height = v > 0 ? Math.max(1, round((Math.min(v, top) / top) * h)) : 0;
    return { x: round(box.left + i * slot + gap / 2), y: round(box.top + h - height), width: round(slot - gap), height };
  });
  return { top, bars, y };
}

/** Evenly spaced axis values from 0 to `top`. */
export function axisTicks(top: number, count = 4): number[] {
  return Array.from({ length: count + 1 }, (_, i) => Math.round(((top * i) / count) * 1e6) / 1e6);
}

// ---- an app's access ----

const providerWords: Record<AuthProvider['name'], string> = {
  email: 'app users signing in with an emailed link',
  passkey: 'app users signing in with a passkey',
  svc: 'the owning account (signed in to this platform)',
  idp: 'identities of the general identity provider',
  codehost: 'identities of the code-hosting provider',
};

/**
 * The app's policy in words, from what the API says of it (GET …/auth/providers: which providers
 * it admits, and which this platform is set up for). Nothing admitted: the app is public.
 */
export function policyInWords(providers: readonly AuthProvider[]): { public: boolean; lines: string[] } {
  const admitted = providers.filter((p) => p.in_policy);
  if (admitted.length === 0) return { public: true, lines: ['Public: the app declares no authentication policy, so anyone can open it.'] };
  return {
    public: false,
    lines: [
      'Protected: a visitor must sign in as one of these.',
      ...admitted.map(
        (p) =>
          `${providerWords[p.name][0]!.toUpperCase()}${providerWords[p.name].slice(1)}${p.configured ? '' : ' (not set up on this platform: nobody can sign in this way yet)'}`,
      ),
    ],
  };
}

/** An app user's state in words. */
export function appUserStateInWords(u: Pick<AppUser, 'disabled' | 'active_sessions'>): { text: string; tone: Tone } {
  if (u.disabled) return { text: 'Disabled: cannot sign in', tone: 'bad' };
  return {
    text:
      u.active_sessions === 0 ? 'Active, not signed in now' : `Active, ${u.active_sessions} session${u.active_sessions === 1 ? '' : 's'}`,
    tone: 'ok',
  };
}
