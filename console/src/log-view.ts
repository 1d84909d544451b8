// The logs page's pure parts: an app's log lines as GET /apps/{appID}/logs sends them in NDJSON
// (docs/api/logs.md), the cursor that resumes a followed log after a cut with no gap and no repeat
// (lib/logs/resume.ts, the one `svc logs -f` keeps too), the kept lines (at most maxLines, the oldest dropped), and the window of rows a virtualised list puts
// in the DOM (fixed row height: only the rows in view plus a margin). Unit-tested
// (test/unit/console-logs.test.ts).
export { LogCursor } from '../../lib/logs/resume.js';

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
