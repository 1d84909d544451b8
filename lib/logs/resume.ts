// Where a followed log is, to resume it after a cut with no gap and no repeat: what `svc logs -f`
// (cli/logs.ts) and the console's log view (console/src/follow-logs.ts) both keep. Pure (no Node or
// DOM), so the CLI and the browser bundle share it. The API's answer to a reconnect with
// since=<resume()> and tail=0 is every line from that time on (docs/api/logs.md).

/** What the cursor reads of a line: its time (RFC 3339) and the machine that wrote it. */
export interface PlacedLine {
  time: string;
  pod: string;
}

/** How far back, from the newest line seen, a machine still counts as writing (and its lines are kept to skip). */
export const resumeLagMs = 60_000;

/**
 * Each machine's lines come in order but machines' lines interleave as they arrive, so the resume
 * point is the oldest "last line" of the machines writing lately, and every line passed on since
 * then is remembered (with its count: an app may write the same line twice in one millisecond) to
 * be skipped once when it comes again.
 */
export class LogCursor {
  /** Each machine's last line's time. */
  private readonly lastByPod = new Map<string, number>();
  /** Lines passed on since about resumeLagMs before the newest, by their exact text. */
  private readonly order: Array<{ at: number; key: string }> = [];
  /** After a reconnect: the lines passed on before it that may come again, to skip once each. */
  private replay = new Map<string, number>();
  private newest = -Infinity;

  /** Whether to pass this line on (false: it was, before the reconnect). `key`: the line's exact text. */
  accept(key: string, l: PlacedLine): boolean {
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

  /** The `since` to reconnect with (undefined: nothing passed on yet, start afresh), arming the skips. */
  resume(): string | undefined {
    if (this.newest === -Infinity) return undefined;
    const writing = [...this.lastByPod.values()].filter((at) => at >= this.newest - resumeLagMs);
    const from = Math.min(...writing);
    this.replay = new Map();
    for (const { at, key } of this.order) if (at >= from) this.replay.set(key, (this.replay.get(key) ?? 0) + 1);
    return new Date(from).toISOString();
  }

  /** Forgets what is older than resumeLagMs before the newest line: memory stays bounded however long it follows. */
  private forget(): void {
    const horizon = this.newest - resumeLagMs;
    let drop = 0;
    while (drop < this.order.length && this.order[drop]!.at < horizon) drop++;
    if (drop) this.order.splice(0, drop);
    for (const [pod, at] of this.lastByPod) if (at < horizon) this.lastByPod.delete(pod);
  }
}
