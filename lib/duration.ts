/** Parses a duration such as 90s, 30m, 12h, 7d or 2w into milliseconds; undefined when invalid. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d{1,6})(s|m|h|d|w)$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 }[m[2] as 's' | 'm' | 'h' | 'd' | 'w'];
  const ms = Number(m[1]) * unit;
  return ms > 0 ? ms : undefined;
}

const compoundDuration = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;
const rfc3339Pattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/i;

/** `since` as an instant: a duration back from `now` (90s, 5m, 2h, 1d, 1h30m) or an RFC3339 time. */
export function parseSince(value: string, now: number): Date | undefined {
  const d = value !== '' ? compoundDuration.exec(value) : null;
  if (d) {
    const [days, hours, minutes, seconds] = d.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number];
    return new Date(now - (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000);
  }
  if (!rfc3339Pattern.test(value)) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : new Date(t);
}
