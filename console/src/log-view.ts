// The logs page's pure parts: an app's log lines as GET /apps/{appID}/logs sends them in NDJSON
// (docs/api/logs.md), the cursor that resumes a followed log after a cut with no gap and no repeat
// (the same way as `svc logs -f`, cli/logs.ts: reconnect with since=<the oldest last line of the
// machines writing lately> and tail=0, and skip once each line already shown that comes again), the
// kept lines (at most maxLines, the oldest dropped), and the window of rows a virtualised list puts
// in the DOM (fixed row height: only the rows in view plus a margin). Unit-tested
// (test/unit/console-logs.test.ts).

/** One NDJSON line of the app's log (docs/api/logs.md); the OpenAPI document gives it no schema. */
export interface LogLine {
  time: string;
  machine: number | null;
  service?: string;
  pod: string;
  line: string;
}

/** A line as kept: `seq` numbers the lines shown, in order, from 1 (a row's key). */
export interface ShownLine extends LogLine {
  seq: number;
}

/** How many lines the page keeps (the newest). */
export const maxLines = 100_000;

/** A line of the NDJSON body, or undefined (blank, or not a log line: a proxy's page in a 200). */
export function parseLogLine(text: string): LogLine | undefined {
  if (!text.trim()) return undefined;
  try {
    const v = JSON.parse(text) as Partial<LogLine> | null;
    if (v && typeof v.time === 'string' && typeof v.pod === 'string' && typeof v.line === 'string')
      return {
        time: v.time,
        machine: typeof v.machine === 'number' ? v.machine : null,
        pod: v.pod,
        line: v.line,
        ...(v.service ? { service: v.service } : {}),
      };
  } catch {
    // Not JSON: left out.
  }
  return undefined;
}

/** The whole lines at the start of `buffer`, and the text left for the next chunk. */
export function splitLines(buffer: string): { lines: string[]; rest: string } {
  const lines = buffer.split('\n');
  const rest = lines.pop() ?? '';
  return { lines, rest };
}

/** Who wrote a line, as the API's text form has it: `m0`, `worker/m0`, or the pod. */
export function writerOf(l: LogLine): string {
  return l.machine === null ? l.pod : `${l.service ? `${l.service}/` : ''}m${l.machine}`;
}

/** How far back, from the newest line seen, a machine still counts as writing (and its lines are kept to skip). */
const lagMs = 60_000;

/**
 * Where a followed log is, to resume it after a cut (cli/logs.ts's LogCursor): each machine's lines
 * come in order but machines' lines interleave, so the resume point is the oldest "last line" of the
 * machines writing lately, and every line shown since then is remembered (with its count: an app may
 * write the same line twice in one millisecond) to be skipped once when it comes again.
 */
export class LogCursor {
  private readonly lastByPod = new Map<string, number>();
  private readonly order: Array<{ at: number; key: string }> = [];
  private replay = new Map<string, number>();
  private newest = -Infinity;

  /** Whether to show this line (false: it was shown before the reconnection). `key`: the line's exact text. */
  accept(key: string, l: LogLine): boolean {
    const waiting = this.replay.get(key);
    if (waiting) {
      if (waiting === 1) this.replay.delete(key);
      else this.replay.set(key, waiting - 1);
      return false;
    }
    const at = Date.parse(l.time);
    this.lastByPod.set(l.pod, Math.max(this.lastByPod.get(l.pod) ?? -Infinity, at));
    this.newest = Math.max(this.newest, at);
    this.order.push({ at, key });
    this.forget();
    return true;
  }

  /** The `since` to reconnect with (undefined: nothing shown yet, start afresh), arming the skips. */
  resume(): string | undefined {
    if (this.newest === -Infinity) return undefined;
    const writing = [...this.lastByPod.values()].filter((at) => at >= this.newest - lagMs);
    const from = Math.min(...writing);
    this.replay = new Map();
    for (const { at, key } of this.order) if (at >= from) this.replay.set(key, (this.replay.get(key) ?? 0) + 1);
    return new Date(from).toISOString();
  }

  /** Forgets what is older than lagMs before the newest line: memory stays bounded. */
  private forget(): void {
    const horizon = this.newest - lagMs;
    let drop = 0;
    while (drop < this.order.length && this.order[drop]!.at < horizon) drop++;
    if (drop) this.order.splice(0, drop);
    for (const [pod, at] of this.lastByPod) if (at < horizon) this.lastByPod.delete(pod);
  }
}

/** The kept lines: appended in place (a 100,000-line log is not copied per line); `version` changes with them. */
export class LogStore {
  lines: ShownLine[] = [];
  /** Lines dropped from the start to keep at most `max`. */
  dropped = 0;
  version = 0;
  private seq = 0;
  constructor(readonly max = maxLines) {}

  append(incoming: readonly LogLine[]): void {
    if (incoming.length === 0) return;
    for (const l of incoming) this.lines.push({ ...l, seq: ++this.seq });
    const excess = this.lines.length - this.max;
    if (excess > 0) {
      this.lines.splice(0, excess);
      this.dropped += excess;
    }
    this.version++;
  }

  clear(): void {
    this.lines = [];
    this.dropped = 0;
    this.version++;
  }
}

export interface WindowInput {
  /** Lines in all. */
  total: number;
  scrollTop: number;
  viewportHeight: number;
  rowHeight: number;
  /** Rows rendered above and below the view. */
  overscan?: number;
}

export interface RowWindow {
  /** The first row rendered. */
  first: number;
  /** One past the last row rendered. */
  end: number;
  /** Space above the rendered rows, px. */
  offsetTop: number;
  /** The height of every row together (the spacer), px. */
  totalHeight: number;
}

/** The rows to render for a scroll position: those in view and `overscan` more each side (O(1)). */
export function rowWindow({ total, scrollTop, viewportHeight, rowHeight, overscan = 20 }: WindowInput): RowWindow {
  const totalHeight = total * rowHeight;
  if (total === 0 || rowHeight <= 0) return { first: 0, end: 0, offsetTop: 0, totalHeight };
  const top = Math.min(Math.max(0, scrollTop), Math.max(0, totalHeight - viewportHeight));
  const inView = Math.ceil(Math.max(0, viewportHeight) / rowHeight) + 1;
  const first = Math.max(0, Math.floor(top / rowHeight) - overscan);
  const end = Math.min(total, Math.floor(top / rowHeight) + inView + overscan);
  return { first, end, offsetTop: first * rowHeight, totalHeight };
}

/** Whether a scroll position is at the bottom (within a row): new lines keep it there. */
export function atBottom(scrollTop: number, viewportHeight: number, scrollHeight: number, rowHeight: number): boolean {
  return scrollTop + viewportHeight >= scrollHeight - rowHeight;
}

/** How long to wait before reconnecting after `failures` failed attempts in a row: 0.5 s doubling to 10 s (as `svc logs -f`). */
export function logReconnectDelay(failures: number): number {
  return Math.min(10_000, 500 * 2 ** Math.max(0, failures - 1));
}
