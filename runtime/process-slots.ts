// A bound on the per-request processes of a handler tree (.sh, .py). Each request of such a route
// starts a process: without a bound, a burst of requests forks as many as it likes and the machine's
// memory, not the app, decides what fails. Over the bound, requests wait in a short queue; over the
// queue, they are refused at once (503 with Retry-After), the way a busy server sheds load.

export class ProcessSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly max: number,
    readonly maxWaiting: number,
  ) {}

  /**
   * Resolves with a release function once a slot is free, or with undefined at once when the queue
   * is full too. `gone` (the client left) takes a waiting request out of the queue.
   */
  acquire(gone: AbortSignal): Promise<(() => void) | undefined> {
    if (this.running < this.max) return Promise.resolve(this.slot());
    if (this.waiting.length >= this.maxWaiting || gone.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const turn = () => {
        gone.removeEventListener('abort', leave);
        resolve(this.slot());
      };
      const leave = () => {
        const i = this.waiting.indexOf(turn);
        if (i !== -1) this.waiting.splice(i, 1);
        resolve(undefined);
      };
      gone.addEventListener('abort', leave, { once: true });
      this.waiting.push(turn);
    });
  }

  get inUse(): number {
    return this.running;
  }

  private slot(): () => void {
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      this.waiting.shift()?.();
    };
  }
}

const positive = (v: string | undefined, fallback: number): number => {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 ? n : fallback;
};

/** SVC_HANDLER_MAX_PROCESSES (default 16) at once, and SVC_HANDLER_MAX_WAITING (default 4 times that) queued. */
export function slotsFromEnv(env: NodeJS.ProcessEnv = process.env): ProcessSlots {
  const max = positive(env.SVC_HANDLER_MAX_PROCESSES, 16);
  return new ProcessSlots(max, positive(env.SVC_HANDLER_MAX_WAITING, max * 4));
}
