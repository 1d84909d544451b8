// Fixed-window counters in PostgreSQL (table auth_rate), shared by every ingress-auth replica: a
// limit per address and per source keeps the sign-in form from being used to flood a mailbox.
import type { Knex } from 'knex';

export class RateLimiter {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Counts one use of `key` in the current window; false when that goes over `limit`. */
  async take(key: string, limit: number, windowMs: number): Promise<boolean> {
    const now = this.clock().getTime();
    const windowStart = new Date(now - (now % windowMs));
    const [row] = await this.db('auth_rate')
      .insert({ key, window_start: windowStart, count: 1 })
      .onConflict(['key', 'window_start'])
      .merge({ count: this.db.raw('auth_rate.count + 1') })
      .returning<Array<{ count: number }>>('count');
    if (Math.random() < 0.01)
      await this.db('auth_rate')
        .where('window_start', '<', new Date(now - 2 * windowMs))
        .delete();
    return (row?.count ?? 0) <= limit;
  }
}
