// Sends the webhook outbox (outbox.ts). Every API process runs one: it claims due deliveries by a
// lease (locked_until, taken FOR UPDATE SKIP LOCKED so two processes never claim the same one),
// attempts them concurrently through the guarded dispatcher (resolved addresses checked at connect
// time, no redirect followed), and writes each outcome with its attempt row in one transaction. A
// process killed mid-attempt leaves its claims to run out; another process then tries them again
// (at least once, as the spec expects receivers to dedupe by webhook-id).
//
// Two clocks: the injected one decides what is due (tests move it instead of waiting), the wall
// clock stamps webhook-timestamp, which receivers compare with their own.
import type { Knex } from 'knex';
import { request, type Dispatcher } from 'undici';
import { errorLine } from '../errors.js';
import { lockEventLog, recordEvent } from '../events.js';
import type { Logger } from '../logger.js';
import { disableAfterFailingMs, parseRetryAfter, retryDelayMs } from './outbox.js';
import { signedHeaders } from './signature.js';

/** Spec: an attempt that has not answered in 15 s has failed. */
export const attemptTimeoutMs = 15_000;
/** How long a claim holds: past the attempt's timeout, so only a dead process's claims run out. */
const leaseMs = attemptTimeoutMs + 15_000;
const excerptBytes = 1024;

export interface DelivererOptions {
  db: Knex;
  dispatcher: Dispatcher;
  log: Logger;
  clock?: () => Date;
  /** Deliveries in flight at once. Default 32. */
  concurrency?: number;
  /** How often due deliveries are looked for without a wake(). Default 1 s. */
  pollMs?: number;
  timeoutMs?: number;
  random?: () => number;
}

interface ClaimedRow {
  id: string;
  webhook_id: string;
  account_id: string;
  payload: string;
  attempts: number;
  /** This claim's lease: an outcome is written only while the delivery is still under it. */
  locked_until: Date;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | null;
}

export interface AttemptResult {
  status: number | undefined;
  error: string | undefined;
  excerpt: string | undefined;
  durationMs: number;
  retryAfterMs: number | undefined;
}

export class WebhookDeliverer {
  private readonly db: Knex;
  private readonly clock: () => Date;
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private inFlight = 0;
  private pumping: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly attempts = new Set<Promise<void>>();

  constructor(private readonly opts: DelivererOptions) {
    this.db = opts.db;
    this.clock = opts.clock ?? (() => new Date());
    this.concurrency = opts.concurrency ?? 32;
    this.timeoutMs = opts.timeoutMs ?? attemptTimeoutMs;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.opts.pollMs ?? 1000);
    this.timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now (an event was recorded, or a test moved the clock). */
  wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err: unknown) => this.opts.log.warn({ err }, 'Claiming webhook deliveries failed; retrying at the next poll'))
      .finally(() => {
        this.pumping = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Stops claiming and waits for the attempts in flight to be written. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.pumping;
    await Promise.allSettled([...this.attempts]);
  }

  private async pump(): Promise<void> {
    while (!this.stopped && this.inFlight < this.concurrency) {
      const rows = await this.claim(this.concurrency - this.inFlight);
      if (!rows.length) return;
      for (const row of rows) {
        this.inFlight++;
        const attempt = this.attempt(row)
          .catch((err: unknown) =>
            this.opts.log.warn({ err, delivery: row.id }, 'Recording a webhook attempt failed; the claim runs out and it is tried again'),
          )
          .finally(() => {
            this.inFlight--;
            this.attempts.delete(attempt);
            this.wake();
          });
        this.attempts.add(attempt);
      }
    }
  }

  private async claim(n: number): Promise<ClaimedRow[]> {
    const now = this.clock();
    const result = await this.db.raw<{ rows: ClaimedRow[] }>(
      `UPDATE webhook_deliveries d SET locked_until = :until
         FROM webhooks w
        WHERE w.id = d.webhook_id
          AND d.id IN (SELECT d2.id FROM webhook_deliveries d2 JOIN webhooks w2 ON w2.id = d2.webhook_id
                        WHERE d2.status = 'pending' AND w2.disabled_at IS NULL
                          AND (d2.attempts = 0 OR d2.next_attempt_at <= :now)
                          AND (d2.locked_until IS NULL OR d2.locked_until <= :now)
                        ORDER BY d2.next_attempt_at LIMIT :n
                        FOR UPDATE OF d2 SKIP LOCKED)
        RETURNING d.id, d.webhook_id, d.account_id, d.payload, d.attempts, d.locked_until, w.url, w.secret, w.previous_secret, w.previous_secret_until`,
      { until: new Date(now.getTime() + leaseMs), now, n },
    );
    return result.rows;
  }

  /** One POST of the delivery's stored body, signed with the endpoint's secrets. */
  private async send(row: ClaimedRow, now: Date): Promise<AttemptResult> {
    const secrets = [
      row.secret,
      ...(row.previous_secret && row.previous_secret_until && row.previous_secret_until > now ? [row.previous_secret] : []),
    ];
    const timestamp = Math.floor(Date.now() / 1000);
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const res = await request(row.url, {
        method: 'POST',
        body: row.payload,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'svc-webhooks/1',
          ...signedHeaders(secrets, row.id, timestamp, row.payload),
        },
        dispatcher: this.opts.dispatcher,
        signal: AbortSignal.timeout(this.timeoutMs),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      const excerpt = await readExcerpt(res.body);
      const retryAfter = res.headers['retry-after'];
      return {
        status: res.statusCode,
        error: undefined,
        excerpt,
        durationMs: elapsed(),
        retryAfterMs: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, now),
      };
    } catch (err) {
      return { status: undefined, error: describe(err), excerpt: undefined, durationMs: elapsed(), retryAfterMs: undefined };
    }
  }

  private async attempt(row: ClaimedRow): Promise<void> {
    const now = this.clock();
    const r = await this.send(row, now);
    const attempt = row.attempts + 1;
    const ok = r.status !== undefined && r.status >= 200 && r.status < 300;
    const log = { delivery: row.id, webhook: row.webhook_id, attempt, status: r.status, durationMs: r.durationMs };
    await this.db.transaction(async (tx) => {
      await tx('webhook_attempts').insert({
        delivery_id: row.id,
        attempt,
        attempted_at: now,
        duration_ms: r.durationMs,
        status: r.status ?? null,
        error: r.error ?? null,
        response_excerpt: r.excerpt ?? null,
      });
      const wait = ok || r.status === 410 ? undefined : retryDelayMs(attempt, r.retryAfterMs, this.opts.random);
      const written = await tx('webhook_deliveries')
        .where({ id: row.id, status: 'pending', locked_until: row.locked_until })
        .update({
          attempts: attempt,
          last_attempt_at: now,
          last_status: r.status ?? null,
          last_error: r.error ?? null,
          locked_until: null,
          ...(ok
            ? { status: 'succeeded' }
            : wait === undefined
              ? { status: 'failed' }
              : { next_attempt_at: new Date(now.getTime() + wait) }),
        });
      // Redelivered meanwhile, or claimed by another process after this claim ran out: the attempt
      // stays recorded, and the outcome is the newer series'.
      if (!written) return this.opts.log.info(log, 'Webhook attempt outlived its claim; its outcome is not applied');
      if (ok) {
        await tx('webhooks').where({ id: row.webhook_id }).whereNotNull('failing_since').update({ failing_since: null });
        this.opts.log.info(log, 'Webhook delivered');
        return;
      }
      if (r.status === 410) return this.disable(tx, row, now, 'the endpoint answered 410 Gone');
      this.opts.log.warn(
        { ...log, error: r.error, retryInMs: wait },
        wait === undefined ? 'Webhook delivery failed for good' : 'Webhook delivery failed; retrying',
      );
      const [endpoint] = await tx('webhooks')
        .where({ id: row.webhook_id })
        .update({ failing_since: tx.raw('coalesce(failing_since, ?)', [now]) })
        .returning<Array<{ failing_since: Date }>>('failing_since');
      if (endpoint && now.getTime() - endpoint.failing_since.getTime() >= disableAfterFailingMs) {
        await this.disable(tx, row, now, `every attempt has failed since ${endpoint.failing_since.toISOString()}`);
      }
    });
  }

  /** Disables the endpoint, cancels what it still had pending, and says so in the event log. */
  private async disable(tx: Knex.Transaction, row: ClaimedRow, now: Date, reason: string): Promise<void> {
    // First the account's event lock: a delivery being enqueued now is committed before the
    // cancel below sees the pending ones, or sees this endpoint disabled (outbox.ts).
    await lockEventLog(tx, row.account_id);
    const n = await tx('webhooks')
      .where({ id: row.webhook_id })
      .whereNull('disabled_at')
      .update({ disabled_at: now, disabled_reason: reason });
    if (!n) return;
    await tx('webhook_deliveries')
      .where({ webhook_id: row.webhook_id, status: 'pending' })
      .update({ status: 'canceled', locked_until: null });
    await recordEvent(tx, row.account_id, 'webhook.disabled', row.webhook_id, { url: row.url, reason });
    this.opts.log.warn({ webhook: row.webhook_id, reason }, 'Webhook endpoint disabled');
  }
}

/** The first KB of an answer as text; the rest is not read. */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= excerptBytes) break;
    }
  } catch {
    // A body cut short still leaves its start.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).subarray(0, excerptBytes).toString('utf8');
}

/** The attempt's error as one line; a timeout said plainly whichever of undici's timers fired. */
function describe(err: unknown): string {
  const e = err as { name?: string; code?: string };
  if (e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT')
    return 'no answer within the timeout';
  return errorLine(err, { withCause: true });
}
