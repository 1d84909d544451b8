// The metrics page's charts, the pure parts: a "nice" scale for a series' values, and the SVG path
// of a line through points over time (a gap where a value is null: a step without requests has no
// latency, docs/api/metrics.md). Unit-tested (test/unit/console-logs.test.ts).

export interface Point {
  /** ms since the epoch. */
  t: number;
  v: number | null;
}

export interface Box {
  width: number;
  height: number;
  /** Room left for the axis labels. */
  left: number;
  bottom: number;
  top: number;
  right: number;
}

/** The axis' top: at least `max`, a 1, 2, 2.5 or 5 times a power of ten (1 when everything is 0). */
export function niceMax(max: number): number {
  if (!(max > 0) || !Number.isFinite(max)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * power >= max - 1e-9 * power) return m * power;
  return 10 * power;
}

/** Evenly spaced axis values from 0 to `top` (`count` intervals). */
export function ticks(top: number, count = 4): number[] {
  return Array.from({ length: count + 1 }, (_, i) => Math.round(((top * i) / count) * 1e6) / 1e6);
}

export interface Scale {
  x: (t: number) => number;
  y: (v: number) => number;
  top: number;
}

/** Where times and values go in the box: time left to right over [start, end], values bottom to top over [0, niceMax]. */
export function scaleOf(points: readonly Point[], box: Box, start: number, end: number): Scale {
  const top = niceMax(Math.max(0, ...points.map((p) => p.v ?? 0)));
  const span = Math.max(1, end - start);
  const w = box.width - box.left - box.right;
  const h = box.height - box.top - box.bottom;
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    x: (t) => round(box.left + ((t - start) / span) * w),
    y: (v) => round(box.top + h - (Math.min(v, top) / top) * h),
    top,
  };
}

/** The `d` of a line through the points, in time order; a null value breaks the line. */
export function linePath(points: readonly Point[], scale: Scale): string {
  let d = '';
  let pen = false;
  for (const p of points) {
    if (p.v === null) {
      pen = false;
      continue;
    }
    d += `${d ? ' ' : ''}${pen ? 'L' : 'M'}${scale.x(p.t)} ${scale.y(p.v)}`;
    pen = true;
  }
  return d;
}

/** A number for an axis or a table: whole when large, else up to one decimal (null: "-"). */
export function formatValue(v: number | null): string {
  if (v === null) return '–';
  if (Math.abs(v) >= 100 || Number.isInteger(v)) return String(Math.round(v));
  return String(Math.round(v * 10) / 10);
}
