// A keyed work queue: a key waiting is queued once however often it is added; one key is worked
// on at a time; a failure retries with back-off (0.5 s doubling to 60 s); a key may ask to be
// looked at again after a delay.
export class WorkQueue {
  private readonly waiting = new Set<string>();
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private running = 0;
  private stopped = false;

  constructor(
    private readonly work: (key: string) => Promise<{ requeueMs?: number }>,
    private readonly onError: (key: string, err: unknown, retryMs: number) => void,
    private readonly concurrency = 4,
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

  addAfter(key: string, ms: number): void {
    clearTimeout(this.timers.get(key));
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, Math.min(ms, 2 ** 31 - 1));
    timer.unref();
    this.timers.set(key, timer);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
  }

  private pump(): void {
    while (this.running < this.concurrency && this.waiting.size) {
      const key = this.waiting.values().next().value!;
      this.waiting.delete(key);
      this.active.add(key);
      this.running += 1;
      void this.process(key);
    }
  }

  private async process(key: string): Promise<void> {
    try {
      const { requeueMs } = await this.work(key);
      this.failures.delete(key);
      if (requeueMs !== undefined) this.addAfter(key, requeueMs);
    } catch (err) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      const retryMs = Math.min(500 * 2 ** (n - 1), 60_000);
      this.onError(key, err, retryMs);
      this.addAfter(key, retryMs);
    } finally {
      this.active.delete(key);
      this.running -= 1;
      if (this.dirty.delete(key)) this.add(key);
      this.pump();
    }
  }
}
