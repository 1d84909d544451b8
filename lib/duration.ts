/** Parses a duration such as 90s, 30m, 12h, 7d or 2w into milliseconds; undefined when invalid. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d{1,6})(s|m|h|d|w)$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 }[m[2] as 's' | 'm' | 'h' | 'd' | 'w'];
  const ms = Number(m[1]) * unit;
  return ms > 0 ? ms : undefined;
}
