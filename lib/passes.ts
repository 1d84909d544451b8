// The passes of a worker that looks at everything and acts (the certificate issuers): one at a
// time, every interval, soon after a nudge (coalesced: a burst of changes makes one pass), and one
// on demand that runs after the one in flight, so a caller (a test) sees a pass that began after
// it asked. A pass that throws is reported; the next one tries again.

export class Passes<R> {
  private timer: NodeJS.Timeout | undefined;
  private nudged: NodeJS.Timeout | undefined;
  private running: Promise<R> | undefined;
  private stopped = false;

  constructor(
    private readonly o: {
      run: () => Promise<R>;
      intervalMs: number;
      /** A nudge's delay, which coalesces the nudges within it (default 200 ms). */
      nudgeMs?: number;
      onError: (err: unknown) => void;
    },
  ) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.pass().catch(this.o.onError);
    }, this.o.intervalMs);
    this.timer.unref();
  }

  /** A pass soon, rather than at the next tick. */
  nudge(): void {
    if (this.stopped || this.nudged) return;
    this.nudged = setTimeout(() => {
      this.nudged = undefined;
      this.pass().catch(this.o.onError);
    }, this.o.nudgeMs ?? 200);
    this.nudged.unref();
  }

  /** One pass now, after the one running (if any). */
  async pass(): Promise<R> {
    while (this.running) await this.running.catch(() => undefined);
    const run = this.o.run();
    this.running = run;
    try {
      return await run;
    } finally {
      if (this.running === run) this.running = undefined;
    }
  }

  /** No more passes; the one running finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.nudged);
    await this.running?.catch(() => undefined);
  }
}
