// Delivers the outbox. Every API replica runs a MailSender, but only the one leading the Lease
// kube-system/svc-mailer sends, so the fleet has one place that talks to the mail server and paces
// retries. The leader delivers when it becomes leader, when an enqueue notifies (PostgreSQL LISTEN,
// delivered at the enqueuing transaction's commit), and every pollMs in case a notification was
// missed (the listening connection down, a row written by hand). Claims are row locks, not the
// Lease: two replicas that both believe they lead for a moment still send each message once.
import type * as k8s from '@kubernetes/client-node';
import { CoordinationV1Api } from '@kubernetes/client-node';
import type { Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config.js';
import { LeaderElection, type LeaseTiming } from '../kube/leader.js';
import type { Logger } from '../logger.js';
import { MailOutbox, wakeChannel, type DeliveryOutcome, type RetryPolicy } from './outbox.js';
import { smtpTransport, type SmtpTransport } from './transport.js';

export interface MailSenderOptions {
  db: Knex;
  /** For the one connection that LISTENs: a pooled connection goes back to the pool and stops listening. */
  databaseUrl: string;
  kc: k8s.KubeConfig;
  mail: Config['mail'];
  log: Logger;
  /** Default: kube-system/svc-mailer with the controllers' timing (15 s, renewed every 5 s). */
  lease?: { namespace?: string; name?: string } & Partial<LeaseTiming>;
  /** How often the leader looks for due mail without being woken. Default 5 s. */
  pollMs?: number;
  clock?: () => Date;
  retry?: Partial<RetryPolicy>;
  batchSize?: number;
}

// Sent and given-up rows stay a month for operators (bodies are already erased), then go.
const keepFinishedMs = 30 * 24 * 3600_000;
const purgeEveryMs = 3600_000;

export class MailSender {
  private readonly outbox: MailOutbox;
  private readonly election: LeaderElection;
  private readonly log: Logger;
  private readonly pollMs: number;
  private readonly clock: () => Date;
  private transport: SmtpTransport | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private campaign: Promise<void> | undefined;
  /** Ends the current term as leader (lost, or stopping). */
  private endTerm: (() => void) | undefined;
  private listener: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private delivering: Promise<void> | undefined;
  private wakeAgain = false;
  private started = false;
  private stopped = false;
  private lastPurge = 0;

  constructor(private readonly opts: MailSenderOptions) {
    const { namespace = 'kube-system', name = 'svc-mailer', ...timing } = opts.lease ?? {};
    this.log = opts.log;
    this.pollMs = opts.pollMs ?? 5000;
    this.clock = opts.clock ?? (() => new Date());
    this.outbox = new MailOutbox(opts.db, { clock: this.clock, retry: opts.retry, batchSize: opts.batchSize });
    this.election = new LeaderElection(opts.kc.makeApiClient(CoordinationV1Api), namespace, name, opts.log, timing);
  }

  /** This replica's holder identity in the Lease. */
  get identity(): string {
    return this.election.identity;
  }

  /** Whether this replica sends mail now. */
  get isLeader(): boolean {
    return !this.stopped && this.election.isLeader;
  }

  /** Campaigns for the Lease in the background and sends while leading; returns at once. */
  start(): void {
    if (this.started) return;
    this.started = true;
    const { smtpUrl, from } = this.opts.mail;
    if (!smtpUrl) {
      this.log.warn('SVC_SMTP_URL is not set: outgoing mail stays queued in mail_outbox and none is sent');
      return;
    }
    this.transport = smtpTransport(smtpUrl, from);
    this.campaign = this.campaignLoop();
    this.pollTimer = setInterval(() => this.wake(), this.pollMs);
  }

  /** Stops sending, gives the Lease up so another replica takes over at once, and waits for the batch in flight. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (!this.campaign) return;
    clearInterval(this.pollTimer);
    await this.election.release();
    this.endTerm?.();
    await this.delivering;
    await this.connecting;
    await this.campaign;
    this.transport?.close();
  }

  private async campaignLoop(): Promise<void> {
    while (!this.stopped) {
      const termEnded = new Promise<void>((resolve) => (this.endTerm = resolve));
      if (!(await this.election.run(() => this.endTerm?.()))) return;
      this.log.info({ identity: this.identity }, 'Sending mail as the leader');
      this.wake();
      await termEnded;
      await this.unlisten();
      if (!this.stopped) this.log.info({ identity: this.identity }, 'No longer sending mail');
    }
  }

  /** Delivers what is due now, or once more after the delivery in flight when there is one. */
  private wake(): void {
    if (!this.isLeader) return;
    if (!this.listener && !this.connecting) this.connecting = this.listen().finally(() => (this.connecting = undefined));
    if (this.delivering) {
      this.wakeAgain = true;
      return;
    }
    this.delivering = this.deliver().finally(() => {
      this.delivering = undefined;
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    });
  }

  private async deliver(): Promise<void> {
    try {
      for (;;) {
        if (!this.isLeader) return;
        const report = await this.outbox.deliverDue(this.transport!, this.clock());
        report.outcomes.forEach((o) => this.logOutcome(o));
        if (report.claimed < this.outbox.batchSize) break;
      }
      const now = this.clock().getTime();
      if (now - this.lastPurge >= purgeEveryMs) {
        this.lastPurge = now;
        const purged = await this.outbox.purge(new Date(now - keepFinishedMs));
        if (purged) this.log.info({ purged }, 'Deleted finished mail older than 30 days');
      }
    } catch (err) {
      this.log.warn({ err }, 'Delivering mail failed; trying again at the next poll');
    }
  }

  private logOutcome(o: DeliveryOutcome): void {
    // The id and purpose only: recipient and body stay in mail_outbox (docs/mail.md).
    const fields = { mail: o.id, purpose: o.purpose, attempts: o.attempts };
    if (o.result === 'sent') this.log.info(fields, 'Sent mail');
    else if (o.result === 'retry')
      this.log.warn({ ...fields, error: o.error, nextAttemptAt: o.nextAttemptAt }, 'Mail server did not take a message; retrying later');
    else this.log.error({ ...fields, error: o.error }, 'Gave up sending a message');
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.databaseUrl });
    const drop = () => {
      if (this.listener === client) this.listener = undefined;
    };
    client.on('notification', () => this.wake());
    client.on('error', (err) => {
      drop();
      if (this.isLeader) this.log.warn({ err }, 'Lost the mail wake-up connection; polling until it is back');
      client.end().catch(() => undefined);
    });
    client.on('end', drop);
    try {
      await client.connect();
      await client.query(`LISTEN ${wakeChannel}`);
    } catch (err) {
      this.log.warn({ err }, 'Cannot listen for new mail; polling instead');
      await client.end().catch(() => undefined);
      return;
    }
    if (!this.isLeader) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
    // Mail enqueued before LISTEN took effect notified nobody.
    this.wake();
  }

  private async unlisten(): Promise<void> {
    await this.connecting;
    const client = this.listener;
    this.listener = undefined;
    await client?.end().catch(() => undefined);
  }
}
