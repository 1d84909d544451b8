// Followers of account event logs in this API process: one PostgreSQL connection LISTENs on the
// events channel (lib/events.ts notifies it at each insert's commit, with the account's id), and
// each notification makes one query for that account's new events, fanned out to its followers by
// their filters. Inserts are ordered per account (lib/events.ts), so "after the last id delivered"
// never skips an event. A lost connection is reopened with back-off, and then every followed
// account is read again: nothing published meanwhile is missed. Whatever else must wake on a new
// event (the webhook deliverer) subscribes with onEvent, so a process keeps one LISTEN connection.
import pg from 'pg';
import type { Db } from '../../lib/db/connection.js';
import { matchesFilters } from '../../lib/event-kinds.js';
import { eventsChannel, listEvents, type EventRecord } from '../../lib/events.js';
import type { Logger } from '../../lib/logger.js';

export interface Follower {
  /** Delivers events in id order; called with each batch after the follower's cursor. */
  deliver(events: EventRecord[]): void;
  kinds: readonly string[] | undefined;
  app: string | undefined;
  /** The last id this follower has been given. */
  after: number;
}

interface Account {
  followers: Set<Follower>;
  /** The highest id read for this account (followers start at or beyond it once caught up). */
  reading: Promise<void> | undefined;
  again: boolean;
}

const page = 500;

export class EventHub {
  private readonly accounts = new Map<string, Account>();
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private stopped = false;
  private retryMs = 500;
  private readonly subscribers: Array<(accountId: string) => void> = [];

  constructor(
    private readonly db: Db,
    private readonly databaseUrl: string,
    private readonly log: Logger,
  ) {}

  /**
   * Calls fn with the account of every event announced from now on (and with '' after the
   * connection came back, when announcements may have been missed). Opens the connection.
   */
  onEvent(fn: (accountId: string) => void): void {
    this.subscribers.push(fn);
    this.ensureListening().catch((err: unknown) => {
      this.log.warn({ err }, 'Opening the events connection failed; retrying');
      this.reconnect();
    });
  }

  /** Follows the account's log from `follower.after`: what is there already first, then what comes. */
  async follow(accountId: string, follower: Follower): Promise<() => void> {
    await this.ensureListening();
    let a = this.accounts.get(accountId);
    if (!a) this.accounts.set(accountId, (a = { followers: new Set(), reading: undefined, again: false }));
    a.followers.add(follower);
    this.read(accountId);
    return () => {
      const acc = this.accounts.get(accountId);
      acc?.followers.delete(follower);
      if (acc && acc.followers.size === 0 && !acc.reading) this.accounts.delete(accountId);
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.connecting?.catch(() => undefined);
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }

  /** Followers of all accounts (for tests and logs). */
  followers(): number {
    let n = 0;
    for (const a of this.accounts.values()) n += a.followers.size;
    return n;
  }

  /** Reads the account's new events for its followers; one read at a time, one more if asked meanwhile. */
  private read(accountId: string): void {
    const a = this.accounts.get(accountId);
    if (!a) return;
    if (a.reading) {
      a.again = true;
      return;
    }
    a.reading = this.readOnce(accountId, a)
      .catch((err: unknown) => {
        this.log.warn({ err, account: accountId }, 'Reading events for followers failed; retrying');
        setTimeout(() => this.read(accountId), 1000).unref();
      })
      .finally(() => {
        a.reading = undefined;
        if (a.again) {
          a.again = false;
          this.read(accountId);
        } else if (a.followers.size === 0) this.accounts.delete(accountId);
      });
  }

  private async readOnce(accountId: string, a: Account): Promise<void> {
    for (;;) {
      if (a.followers.size === 0) return;
      const from = Math.min(...[...a.followers].map((f) => f.after));
      const events = await listEvents(this.db, accountId, { after: from, limit: page });
      if (!events.length) return;
      for (const f of a.followers) {
        const mine = events.filter(
          (e) => e.id > f.after && matchesFilters(e.type, f.kinds) && (f.app === undefined || e.subject === f.app),
        );
        // The cursor moves over what the filters skip too: a resume starts after it.
        f.after = Math.max(f.after, events[events.length - 1]!.id);
        if (mine.length) f.deliver(mine);
      }
      if (events.length < page) return;
    }
  }

  private ensureListening(): Promise<void> {
    if (this.client || this.stopped) return Promise.resolve();
    this.connecting ??= this.listen().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** Reopens the connection with back-off until it is back, then reads every followed account again. */
  private reconnect(): void {
    setTimeout(() => {
      if (this.stopped) return;
      this.ensureListening().then(
        () => {
          // What was published while it was down notified nobody.
          for (const id of this.accounts.keys()) this.read(id);
          for (const fn of this.subscribers) fn('');
        },
        (err: unknown) => {
          this.retryMs = Math.min(this.retryMs * 2, 10_000);
          this.log.warn({ err, retryInMs: this.retryMs }, 'Reopening the events connection failed');
          this.reconnect();
        },
      );
    }, this.retryMs).unref();
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl, keepAlive: true });
    const lost = (err?: unknown) => {
      if (this.client !== client) return;
      this.client = undefined;
      client.end().catch(() => undefined);
      if (!this.stopped) {
        this.log.warn({ err }, 'Lost the events connection; reopening it');
        this.reconnect();
      }
    };
    client.on('notification', (n) => {
      if (n.payload && this.accounts.has(n.payload)) this.read(n.payload);
      for (const fn of this.subscribers) fn(n.payload ?? '');
    });
    client.on('error', (err) => lost(err));
    client.on('end', () => lost());
    await client.connect();
    await client.query(`LISTEN ${eventsChannel}`);
    this.client = client;
    this.retryMs = 500;
  }
}
