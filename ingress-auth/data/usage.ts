// What HTML data bindings cost their account (docs/api/usage.md) and what the owner is told of
// (docs/api/events.md), recorded by each ingress process:
//   data_requests  requests to an app's bindings, counted per minute in memory and added to the
//                  minute's row at each flush (every process adds its own count to the same row)
//   data_bytes     the app's records' size, sampled at the flush after a write changed it
//   data.limit_reached  a write refused by a limit (413): counts only, never contents, at most once
//                  an hour per app and process
// A flush every minute and at stop; a failed flush keeps its counts for the next one.
import { NamespaceAccounts } from '../../lib/accounts.js';
import type { Db } from '../../lib/db/connection.js';
import { recordEvent } from '../../lib/events.js';
import type { DataStore } from '../../lib/html-data/store.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { recordStorageSample } from '../../lib/usage.js';

const minuteMs = 60_000;
const flushEveryMs = 60_000;
const limitEventEveryMs = 3600_000;

interface AppRef {
  namespace: string;
  name: string;
  uid: string;
}

export class DataUsage {
  /** Requests by app uid and minute. */
  private readonly counts = new Map<string, { app: AppRef; minute: number; n: number }>();
  /** Apps written since the last flush: their size is sampled. */
  private readonly written = new Map<string, AppRef>();
  private readonly limitTold = new Map<string, number>();
  private readonly accounts: NamespaceAccounts;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly store: Pick<DataStore, 'size'>,
    private readonly log: Logger,
    private readonly clock: () => number = () => Date.now(),
  ) {
    this.accounts = new NamespaceAccounts(db);
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /** One request to one of the app's bindings. */
  request(app: App): void {
    const ref = refOf(app);
    const minute = Math.floor(this.clock() / minuteMs) * minuteMs;
    const key = `${ref.uid}|${minute}`;
    const c = this.counts.get(key);
    if (c) c.n++;
    else this.counts.set(key, { app: ref, minute, n: 1 });
  }

  /** The app's records changed: its size is sampled at the next flush. */
  wrote(app: App): void {
    const ref = refOf(app);
    this.written.set(ref.uid, ref);
  }

  /** A write was refused by a limit: the owner is told (once an hour per app here), never what was written. */
  limitReached(app: App, collection: string, message: string): void {
    const ref = refOf(app);
    const now = this.clock();
    if (now - (this.limitTold.get(ref.uid) ?? -Infinity) < limitEventEveryMs) return;
    this.limitTold.set(ref.uid, now);
    void this.store
      .size(ref.uid)
      .then(async (size) => {
        const account = await this.accounts.of(ref.namespace);
        if (!account) return;
        await recordEvent(this.db, account, 'data.limit_reached', ref.name, {
          app: ref.name,
          collection,
          message,
          records: size.records,
          bytes: size.bytes,
        });
      })
      .catch((err: unknown) => this.log.warn({ err, app: ref.name }, 'Recording data.limit_reached failed'));
  }

  /** Writes what was counted; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    const counts = [...this.counts.values()];
    this.counts.clear();
    const written = [...this.written.values()];
    this.written.clear();
    for (const c of counts) {
      try {
        const account = await this.accounts.of(c.app.namespace);
        if (!account) continue;
        await this.db('usage_records')
          .insert({
            account_id: account,
            meter: 'data_requests',
            subject: c.app.name,
            quantity: c.n,
            started_at: new Date(c.minute),
            ended_at: new Date(c.minute + minuteMs),
          })
          .onConflict(['account_id', 'meter', 'subject', 'started_at'])
          .merge({ quantity: this.db.raw('usage_records.quantity + excluded.quantity') });
      } catch (err) {
        // Kept for the next flush, added to what comes meanwhile.
        const key = `${c.app.uid}|${c.minute}`;
        const again = this.counts.get(key);
        if (again) again.n += c.n;
        else this.counts.set(key, c);
        this.log.warn({ err, app: c.app.name }, 'Recording data_requests failed; retrying at the next flush');
      }
    }
    for (const app of written) {
      try {
        const account = await this.accounts.of(app.namespace);
        if (!account) continue;
        const { bytes } = await this.store.size(app.uid);
        await recordStorageSample(this.db, account, app.name, bytes, new Date(this.clock()), 'data_bytes');
      } catch (err) {
        this.written.set(app.uid, app);
        this.log.warn({ err, app: app.name }, 'Sampling data_bytes failed; retrying at the next flush');
      }
    }
  }
}

function refOf(app: App): AppRef {
  return { namespace: app.metadata.namespace!, name: app.metadata.name!, uid: app.metadata.uid! };
}
