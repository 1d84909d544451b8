// The outbox of outgoing mail (table mail_outbox, migration 0010). Code that decides to send mail
// enqueues it, inside its own transaction when it has one, so a message exists exactly when the
// change that asked for it was committed. The sender that leads the svc-mailer Lease delivers what
// is due (sender.ts). Bodies carry sign-in tokens: they never reach a log line, and they are erased
// once a message is sent or given up.
import type { Knex } from 'knex';
import { z } from 'zod';
import { doublingDelayMs } from '../backoff.js';
import { errorLine } from '../errors.js';

/** The PostgreSQL channel an enqueue notifies (on commit), so the sender need not wait for its poll. */
export const wakeChannel = 'svc_mail_outbox';

// One plain address: a display name, comma or line break could add recipients or headers.
const address = z
  .string()
  .max(254)
  .regex(/^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+$/, 'must be one plain address');

const outgoingMail = z.object({
  to: address,
  subject: z
    .string()
    .min(1)
    .max(998)
    .regex(/^[^\r\n]*$/, 'must be one line'),
  text: z.string(),
  html: z.string().optional(),
  /** What the message is for, for logs and operators (`sign-in-link`, `invitation`). */
  purpose: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be a short lower-case word'),
});

export type OutgoingMail = z.input<typeof outgoingMail>;

/** Hands one message to a mail server; rejects when the server does not take it. */
export interface MailTransport {
  send(msg: { to: string; subject: string; text: string; html: string | undefined }): Promise<void>;
}

/** A refusal that a later attempt cannot change (the server refused the recipient for good). */
export class PermanentMailError extends Error {
  override name = 'PermanentMailError';
}

export interface RetryPolicy {
  /** Wait after the first failed attempt; each further failure doubles it. */
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
  /** After this many failed attempts the message is given up (failed_at). */
  readonly maxAttempts: number;
}

// Twelve attempts over about three and a half hours: a mail server down for a while loses nothing,
// and a sign-in link, short-lived anyway, is not delivered a day late.
export const defaultRetryPolicy: RetryPolicy = { firstDelayMs: 10_000, maxDelayMs: 3600_000, maxAttempts: 12 };

/** How long to wait after the attempts-th failed attempt. */
export function retryDelayMs(attempts: number, policy: RetryPolicy = defaultRetryPolicy): number {
  return doublingDelayMs(attempts, policy.firstDelayMs, policy.maxDelayMs);
}

export interface DeliveryOutcome {
  id: string;
  purpose: string;
  /** Attempts made so far, this one included. */
  attempts: number;
  result: 'sent' | 'retry' | 'failed';
  /** The server's or the connection's error (never the message). */
  error?: string;
  nextAttemptAt?: Date;
}

export interface DeliveryReport {
  /** Messages this call claimed: a full batch means more may be due. */
  claimed: number;
  outcomes: DeliveryOutcome[];
}

interface DueRow {
  id: string;
  to: string;
  subject: string;
  text: string | null;
  html: string | null;
  purpose: string;
  attempts: number;
}

export interface MailOutboxOptions {
  clock?: () => Date;
  retry?: Partial<RetryPolicy>;
  /** Messages claimed (and locked) per deliverDue call. */
  batchSize?: number;
}

export class MailOutbox {
  readonly batchSize: number;
  private readonly clock: () => Date;
  private readonly retry: RetryPolicy;

  constructor(
    private readonly db: Knex,
    opts: MailOutboxOptions = {},
  ) {
    this.clock = opts.clock ?? (() => new Date());
    this.retry = { ...defaultRetryPolicy, ...opts.retry };
    this.batchSize = opts.batchSize ?? 5;
  }

  /**
   * Stores a message for delivery. Given a transaction, the message is stored (and the sender woken)
   * only if that transaction commits. Throws a ZodError on a malformed message.
   */
  async enqueue(msg: OutgoingMail, trx?: Knex): Promise<{ id: string }> {
    const m = outgoingMail.parse(msg);
    const q = trx ?? this.db;
    const now = this.clock();
    const [row] = await q('mail_outbox')
      .insert({
        to: m.to,
        subject: m.subject,
        text: m.text,
        html: m.html ?? null,
        purpose: m.purpose,
        created_at: now,
        next_attempt_at: now,
      })
      .returning<Array<{ id: string | number }>>('id');
    // NOTIFY inside a transaction is delivered at its commit, and not at all on rollback.
    await q.raw('SELECT pg_notify(?, ?)', [wakeChannel, '']);
    return { id: String(row!.id) };
  }

  /**
   * Claims up to batchSize messages due at `now` and tries each once: sent, or scheduled again with
   * exponential backoff, or given up. Rows are claimed FOR UPDATE SKIP LOCKED and stay locked until
   * their outcome is written, so concurrent callers never claim the same message.
   */
  async deliverDue(transport: MailTransport, now: Date = this.clock()): Promise<DeliveryReport> {
    return this.db.transaction(async (trx) => {
      const rows = await trx('mail_outbox')
        .whereNull('sent_at')
        .whereNull('failed_at')
        .where('next_attempt_at', '<=', now)
        .orderBy([{ column: 'next_attempt_at' }, { column: 'id' }])
        .limit(this.batchSize)
        .forUpdate()
        .skipLocked()
        .select<DueRow[]>('id', 'to', 'subject', 'text', 'html', 'purpose', 'attempts');
      const outcomes: DeliveryOutcome[] = [];
      for (const row of rows) outcomes.push(await this.attempt(trx, transport, row, now));
      return { claimed: rows.length, outcomes };
    });
  }

  /** Deletes finished mail (sent or given up before `before`); returns how many rows went. */
  async purge(before: Date): Promise<number> {
    return this.db('mail_outbox')
      .where((q) => {
        q.where('sent_at', '<', before).orWhere('failed_at', '<', before);
      })
      .delete();
  }

  private async attempt(trx: Knex.Transaction, transport: MailTransport, row: DueRow, now: Date): Promise<DeliveryOutcome> {
    const attempts = row.attempts + 1;
    const base = { id: String(row.id), purpose: row.purpose, attempts };
    const update = (fields: Record<string, unknown>) =>
      trx('mail_outbox')
        .where({ id: row.id })
        .update({ attempts, ...fields });
    try {
      await transport.send({ to: row.to, subject: row.subject, text: row.text ?? '', html: row.html ?? undefined });
    } catch (err) {
      const error = errorLine(err);
      if (err instanceof PermanentMailError || attempts >= this.retry.maxAttempts) {
        await update({ failed_at: now, last_error: error, text: null, html: null });
        return { ...base, result: 'failed', error };
      }
      const nextAttemptAt = new Date(now.getTime() + retryDelayMs(attempts, this.retry));
      await update({ next_attempt_at: nextAttemptAt, last_error: error });
      return { ...base, result: 'retry', error, nextAttemptAt };
    }
    await update({ sent_at: now, text: null, html: null });
    return { ...base, result: 'sent' };
  }
}
