// An account's limits (apps, previews per app, databases and their branches, storage, open
// sandboxes, tokens, webhooks), each checked and taken in one step: the check, the create and the
// wait until the created thing is counted (a cache holding it, a committed row) run under the
// account's lock, so twenty parallel creates at the limit leave exactly the limit (issue 30: six
// parallel database creates made eight against a limit of five, each having counted before any
// other had made its own).
//
// The lock is one per account: in this process a queue (so an account's waiters hold no database
// connection), across API replicas a PostgreSQL advisory lock held by a transaction for as long as
// the step runs. At most `slots` steps of different accounts hold a connection at once, so the
// pool keeps connections for the steps themselves.
import type { Db } from '../lib/db/connection.js';
import { DomainError } from '../lib/errors.js';

/** The advisory lock's first key: this module's class of locks (the second is the account's hash). */
const lockClass = 30_001;

export class AccountLock {
  private readonly queues = new Map<string, Promise<void>>();
  private held = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly db: Db,
    private readonly slots = 4,
  ) {}

  /** Runs `step` holding the account's lock, here and in every other API replica. */
  async hold<T>(accountId: string, step: () => Promise<T>): Promise<T> {
    const before = this.queues.get(accountId) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => (done = r));
    const tail = before.then(() => mine);
    this.queues.set(accountId, tail);
    try {
      await before;
      await this.slot();
      try {
        return await this.db.transaction(async (trx) => {
          await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [lockClass, accountId]);
          return step();
        });
      } finally {
        this.release();
      }
    } finally {
      done();
      if (this.queues.get(accountId) === tail) this.queues.delete(accountId);
    }
  }

  private async slot(): Promise<void> {
    if (this.held < this.slots) {
      this.held += 1;
      return;
    }
    await new Promise<void>((r) => this.waiting.push(r));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next)
      next(); // the slot passes on
    else this.held -= 1;
  }
}

/** Refuses (403 quota_exceeded) when `used + more` passes `limit`, naming the limit and what counts. */
export function within(used: number, more: number, limit: number, what: string, hint: string): void {
  if (used + more > limit)
    throw new DomainError(
      'quota_exceeded',
      `the account has ${used} ${what}, its limit is ${limit}${more > 1 ? ` (this needs ${more} more)` : ''}; ${hint}`,
    );
}
