// Per-token request rate: a token bucket per root token (nonce), so narrowed copies of a token
// share its budget instead of multiplying it. In memory, per replica.
import { ApiError } from '../errors.js';

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => Date.now(),
    /** What the 429's message says is over its limit. */
    private readonly what = (perSecond: number) => `rate limit exceeded: ${perSecond} requests per second per token`,
  ) {}

  /** Takes one request from the key's bucket; throws a 429 ApiError with Retry-After when empty. */
  take(key: string): void {
    const now = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size > 100_000) this.sweep(now);
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
    }
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    if (b.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond));
      throw new ApiError('rate_limited', this.what(this.perSecond), {
        'Retry-After': String(retryAfter),
      });
    }
    b.tokens -= 1;
  }

  // Full buckets carry no state worth keeping.
  private sweep(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(key);
    }
  }
}
