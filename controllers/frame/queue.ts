// A keyed work queue, as client-go's rate-limited queue: a key waiting is queued once however often
// it is added (events coalesce); one key is worked on at a time, and a key added while it is being
// worked on runs once more after; a failure retries the key with per-key exponential back-off and
// jitter; a key may ask to be looked at again after a delay. Nothing here knows what a key means.

export interface Backoff {
  /** The first retry's delay. */
  readonly baseMs: number;
  /** No retry waits longer. */
  readonly maxMs: number;
}

export const defaultBackoff: Backoff = { baseMs: 500, maxMs: 60_000 };

export interface QueueStats {
  /** Keys waiting to be worked on now. */
  waiting: number;
  /** Keys being worked on. */
  active: number;
  /** Keys waiting for a timer (retry or requeue). */
  delayed: number;
  /** Keys whose last attempt failed. */
  failing: number;
}

export class WorkQueue {
  private readonly waiting = new Set<string>();
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private running = 0;
  private stopped = false;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(
    private readonly work: (key: string) => Promise<{ requeueMs?: number }>,
    private readonly onError: (key: string, err: unknown, retryMs: number, attempt: number) => void,
    private readonly concurrency = 4,
    private readonly backoff: Backoff = defaultBackoff,
    private readonly random: () => number = Math.random,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    if (this.active.has(key)) {
      this.dirty.add(key);
      return;
    }
    this.waiting.add(key);
    this.pump();
  }

  /** Whether the key waits or is being worked on now. */
  queued(key: string): boolean {
    return this.waiting.has(key) || this.active.has(key);
  }

  /** Adds the key after `ms`, unless it is already due sooner (the earlier time wins). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    const at = Date.now() + ms;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        this.add(key);
      },
      Math.min(ms, 2 ** 31 - 1),
    );
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** How long the `attempt`th retry of a key waits: doubling from the base, capped, ±20 % jitter. */
  retryDelay(attempt: number): number {
    const plain = Math.min(this.backoff.baseMs * 2 ** (attempt - 1), this.backoff.maxMs);
    return Math.round(plain * (0.8 + 0.4 * this.random()));
  }

  stats(): QueueStats {
    return { waiting: this.waiting.size, active: this.active.size, delayed: this.timers.size, failing: this.failures.size };
  }

  /** Resolves once nothing waits or runs (timers aside): for tests and orderly shutdown. */
  idle(): Promise<void> {
    if (!this.waiting.size && !this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    this.waiting.clear();
  }

  private pump(): void {
    while (this.running < this.concurrency && this.waiting.size) {
      const key = this.waiting.values().next().value!;
      this.waiting.delete(key);
      this.active.add(key);
      this.running += 1;
      void this.process(key);
    }
    if (!this.waiting.size && !this.running) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async process(key: string): Promise<void> {
    try {
      const { requeueMs } = await this.work(key);
      this.failures.delete(key);
      if (requeueMs !== undefined) this.addAfter(key, requeueMs);
    } catch (err) {
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      const retryMs = this.retryDelay(attempt);
      this.onError(key, err, retryMs, attempt);
      this.addAfter(key, retryMs);
    } finally {
      this.active.delete(key);
      this.running -= 1;
      if (this.dirty.delete(key)) this.add(key);
      this.pump();
    }
  }
}
