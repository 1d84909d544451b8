// Request rates of HTML data bindings, per app and client address, in this process (each replica and
// worker counts its own, so the figures are per process: docs/api/html-data.md). A token bucket:
// a burst is allowed, then a steady rate; beyond it 429 with Retry-After.
export interface Rate {
  /** Requests allowed at once. */
  burst: number;
  /** Requests a second after the burst. */
  perSecond: number;
}

export const dataRates: { read: Rate; write: Rate } = {
  read: { burst: 120, perSecond: 40 },
  write: { burst: 30, perSecond: 5 },
};

/** How many (app, client) buckets are kept before the oldest go: a client that invents addresses cannot grow it. */
const maxBuckets = 50_000;

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: Rate,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes one request's token: 0 when allowed, else the seconds to wait. */
  take(key: string): number {
    const t = this.now();
    let b = this.buckets.get(key);
    if (b) {
      b.tokens = Math.min(this.rate.burst, b.tokens + ((t - b.at) / 1000) * this.rate.perSecond);
      b.at = t;
      // Most recently used last, so the oldest go first when the map is full.
      this.buckets.delete(key);
      this.buckets.set(key, b);
    } else {
      if (this.buckets.size >= maxBuckets) this.buckets.delete(this.buckets.keys().next().value!);
      this.buckets.set(key, (b = { tokens: this.rate.burst, at: t }));
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - b.tokens) / this.rate.perSecond);
  }
}
