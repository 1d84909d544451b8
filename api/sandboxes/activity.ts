// The API's side of a sandbox's use: which execs and transfers of each sandbox run now, held to
// a limit the API keeps (the agent's own limit is the tenant's to lift), and when the sandbox was
// last used, written on the Sandbox for its controller's idle timeout (lib/sandbox/activity.ts).
//
// A write costs an apiserver patch and a reconcile, so they are coalesced per sandbox: at most one
// in flight, and a new "last used" only once a tenth of the idle timeout has passed since the last
// one (between 1 and 30 s). "Busy until" is written at once when it grows, so a long exec is never
// taken for idleness.
import type { Logger } from '../../lib/logger.js';
import type { Sandbox } from '../../lib/resources/index.js';
import { formatActivity, type SandboxActivity } from '../../lib/sandbox/activity.js';
import { ApiError } from '../errors.js';
import type { SandboxRecord } from './repository.js';

/** A sandbox whose use is kept: its record, or the Sandbox itself. */
export type UsedSandbox = Pick<SandboxRecord, 'namespace' | 'id' | 'idleTimeoutSeconds'> | Sandbox;

/** Where the sandbox is and how long it may idle, from either form. */
const refOf = (s: UsedSandbox): Pick<SandboxRecord, 'namespace' | 'id' | 'idleTimeoutSeconds'> =>
  'metadata' in s ? { namespace: s.metadata.namespace!, id: s.metadata.name!, idleTimeoutSeconds: s.spec.idleTimeoutSeconds ?? 300 } : s;

export type ActivityWriter = (namespace: string, name: string, value: string) => Promise<void>;

interface Tracked {
  namespace: string;
  name: string;
  slackMs: number;
  execs: number;
  /** Deadlines of what runs now (execs and transfers). */
  running: Map<number, number>;
  lastUsed: number;
  written?: { at: number; busyUntil: number | undefined; when: number };
  writing: boolean;
  timer?: NodeJS.Timeout | undefined;
}

export class SandboxUse {
  private readonly tracked = new Map<string, Tracked>();
  private seq = 0;

  constructor(
    private readonly write: ActivityWriter,
    private readonly maxExecs: number,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts an exec (or a transfer: `exec` false) of the sandbox as running until the returned
   * function is called; `deadlineMs` from now is the latest it can end. An exec past the limit is
   * refused with 429.
   */
  begin(s: UsedSandbox, deadlineMs: number, exec = true): () => void {
    const t = this.entry(s);
    if (exec && t.execs >= this.maxExecs) {
      throw new ApiError('rate_limited', `${t.execs} execs are running in sandbox ${t.name} already (at most ${this.maxExecs} at once)`, {
        'Retry-After': '1',
      });
    }
    const id = ++this.seq;
    if (exec) t.execs += 1;
    t.running.set(id, this.now() + deadlineMs);
    this.schedule(t);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (exec) t.execs -= 1;
      t.running.delete(id);
      t.lastUsed = this.now();
      this.schedule(t);
    };
  }

  /** Execs of the sandbox running now (for tests and logs). */
  running(s: UsedSandbox): number {
    return this.tracked.get(key(refOf(s)))?.execs ?? 0;
  }

  close(): void {
    for (const t of this.tracked.values()) clearTimeout(t.timer);
    this.tracked.clear();
  }

  private entry(used: UsedSandbox): Tracked {
    const s = refOf(used);
    const k = key(s);
    let t = this.tracked.get(k);
    if (!t) {
      const idleMs = s.idleTimeoutSeconds * 1000;
      t = {
        namespace: s.namespace,
        name: s.id,
        slackMs: Math.min(30_000, Math.max(1000, idleMs / 10)),
        execs: 0,
        running: new Map(),
        lastUsed: this.now(),
        writing: false,
      };
      this.tracked.set(k, t);
    }
    return t;
  }

  private desired(t: Tracked): { at: number; busyUntil: number | undefined } {
    const busyUntil = t.running.size ? Math.max(...t.running.values()) : undefined;
    return { at: t.running.size ? this.now() : t.lastUsed, busyUntil };
  }

  /** When the next write is due (0: now), or undefined when what is written stands. */
  private due(t: Tracked): number | undefined {
    const want = this.desired(t);
    const had = t.written;
    if (!had) return 0;
    if (want.busyUntil !== undefined && (had.busyUntil === undefined || want.busyUntil > had.busyUntil)) return 0;
    const stale = want.at - had.at >= t.slackMs || (want.busyUntil === undefined && had.busyUntil !== undefined);
    if (!stale) return undefined;
    return Math.max(0, had.when + t.slackMs - this.now());
  }

  private schedule(t: Tracked): void {
    if (t.writing || t.timer) return;
    const wait = this.due(t);
    if (wait === undefined) {
      if (!t.running.size) this.tracked.delete(`${t.namespace}/${t.name}`);
      return;
    }
    t.timer = setTimeout(() => {
      t.timer = undefined;
      void this.flush(t);
    }, wait);
    t.timer.unref();
  }

  private async flush(t: Tracked): Promise<void> {
    const want = this.desired(t);
    const value: SandboxActivity = {
      at: new Date(want.at),
      ...(want.busyUntil !== undefined ? { busyUntil: new Date(want.busyUntil) } : {}),
    };
    t.writing = true;
    try {
      await this.write(t.namespace, t.name, formatActivity(value));
      t.written = { ...want, when: this.now() };
    } catch (err) {
      // The sandbox may be gone; its controller then ends it as idle at worst.
      this.log.warn({ err, sandbox: `${t.namespace}/${t.name}` }, "Recording a sandbox's use failed");
      t.written = { ...want, when: this.now() };
    } finally {
      t.writing = false;
    }
    this.schedule(t);
  }
}

const key = (s: Pick<SandboxRecord, 'namespace' | 'id'>) => `${s.namespace}/${s.id}`;
