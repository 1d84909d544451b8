// The renewer of account domains (decision 0035): the replica leading the recorder's Lease looks at
// the names near their expiry every interval, renews those set to auto-renew a configured number of
// days before they expire (retrying with back-off), and tells the account of names that will not be
// renewed: an event, and a mail to the account's address, at the window's start, a week and a day
// before expiry. "Never twice for one period" is the orders' (one renewal per name and expiry),
// not the Lease's: a replica that still thinks it leads cannot renew a period again.
import { doublingDelayMs } from '../../lib/backoff.js';
import type { Logger } from '../../lib/logger.js';
import type { MailOutbox } from '../../lib/mail/outbox.js';
import { Passes } from '../../lib/passes.js';
import type { ApiDeps } from '../deps.js';
import type { RegistrarActions } from './actions.js';
import type { AccountDomain, DomainOrder, ExpiringDomain, RegistrarStore } from './store.js';

export interface RenewerSettings {
  /** Names set to auto-renew are renewed this many days before they expire. */
  renewDays: number;
  /** The wait after the first failed renewal; it doubles with each failure, to a day at most. */
  retryMs: number;
  intervalMs: number;
}

const dayMs = 86_400_000;
const maxRetryMs = dayMs;
/**
 * How long after expiry a name is still tried: registries' auto-renew grace is 30 to 45 days,
 * after which the name is in redemption (a restore, at a fee) or gone. Past it the renewer lets go.
 */
export const graceDays = 30;

/** How many days before expiry the account is told of a name that will not renew: the window's start, a week, a day. */
export function noticeDays(renewDays: number): number[] {
  return [...new Set([renewDays, 7, 1])].filter((d) => d <= renewDays).sort((a, b) => b - a);
}

/** The wait after the failures-th failed attempt in a row. */
export function retryDelayMs(failures: number, firstMs: number): number {
  return doublingDelayMs(failures, firstMs, maxRetryMs);
}

/** Names set to auto-renew whose window is open and whose back-off is over. */
export function dueRenewals<D extends AccountDomain>(domains: readonly D[], now: Date, renewDays: number): D[] {
  const windowEnd = now.getTime() + renewDays * dayMs;
  const graceEnd = now.getTime() - graceDays * dayMs;
  return domains.filter(
    (d) =>
      d.autoRenew &&
      d.expiresAt.getTime() <= windowEnd &&
      d.expiresAt.getTime() > graceEnd &&
      (d.renewAfter === null || d.renewAfter <= now),
  );
}

export interface Notice<D extends AccountDomain = AccountDomain> {
  domain: D;
  /** The threshold reached (days before expiry). */
  days: number;
  /** Why the name will not renew by itself. */
  why: 'auto_renew_off' | 'renewal_failing';
}

/**
 * The notices due: for each name that will not renew by itself (auto-renew off, or its renewal
 * failing) the nearest threshold it has reached, unless that one (or a nearer) was told for this
 * expiry already.
 */
export function dueNotices<D extends AccountDomain>(domains: readonly D[], now: Date, renewDays: number): Array<Notice<D>> {
  const thresholds = noticeDays(renewDays);
  return domains.flatMap((d): Array<Notice<D>> => {
    if (d.autoRenew && d.renewFailures === 0) return [];
    const left = (d.expiresAt.getTime() - now.getTime()) / dayMs;
    const reached = thresholds.filter((t) => left <= t);
    const days = reached[reached.length - 1];
    if (days === undefined) return [];
    const told = d.noticedExpiry?.getTime() === d.expiresAt.getTime() ? d.noticedDays : null;
    if (told !== null && told <= days) return [];
    return [{ domain: d, days, why: d.autoRenew ? 'renewal_failing' : 'auto_renew_off' }];
  });
}

/** What one pass did (tests wait on it). */
export interface RenewalPass {
  renewed: string[];
  failed: Array<{ domain: string; message: string }>;
  /** Left pending: the registrar's answer is unknown until it can be asked. */
  pending: string[];
  noticed: Array<{ domain: string; days: number }>;
}

export class DomainRenewer {
  private readonly passes: Passes<RenewalPass>;

  constructor(
    private readonly d: {
      actions: Pick<RegistrarActions, 'autoRenew'>;
      store: RegistrarStore;
      events: Pick<ApiDeps['events'], 'record'>;
      mail: Pick<MailOutbox, 'enqueue'>;
      settings: RenewerSettings;
      /** Whether this replica leads the recorder's Lease; only the leader renews and tells. */
      isLeader: () => boolean;
      log: Logger;
      clock: () => Date;
    },
  ) {
    this.passes = new Passes({
      run: () => this.run(),
      intervalMs: d.settings.intervalMs,
      onError: (err) => d.log.warn({ err }, 'A pass of the domain renewer failed; the next one tries again'),
    });
  }

  start(): void {
    this.passes.start();
  }

  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** One pass now (after the one running): what it renewed, failed to and told. */
  pass(): Promise<RenewalPass> {
    return this.passes.pass();
  }

  private async run(): Promise<RenewalPass> {
    const result: RenewalPass = { renewed: [], failed: [], pending: [], noticed: [] };
    if (!this.d.isLeader()) return result;
    const { renewDays } = this.d.settings;
    // The names in the window, and those expired within the grace (told of once, renewed if they may be).
    const near = () => {
      const now = this.d.clock().getTime();
      return this.d.store.expiringBetween(new Date(now - graceDays * dayMs), new Date(now + renewDays * dayMs));
    };
    for (const domain of dueRenewals(await near(), this.d.clock(), renewDays)) {
      if (this.passes.isStopped || !this.d.isLeader()) break;
      // One name's trouble (the database away a moment) is not the others': each on its own.
      await this.renew(domain, result).catch((err: unknown) =>
        this.d.log.warn({ err, domain: domain.name }, 'Renewing a domain failed to be recorded; the next pass tries again'),
      );
    }
    // Read again: a renewal that just failed is told now, not a pass later.
    for (const notice of dueNotices(await near(), this.d.clock(), renewDays)) {
      if (!this.d.isLeader()) break;
      await this.tell(notice, result).catch((err: unknown) =>
        this.d.log.warn({ err, domain: notice.domain.name }, 'Telling of an expiring domain failed; the next pass tries again'),
      );
    }
    return result;
  }

  private async renew(domain: ExpiringDomain, result: RenewalPass): Promise<void> {
    let order: DomainOrder | undefined;
    let message: string;
    try {
      order = await this.d.actions.autoRenew(domain);
      message = order.message ?? order.reason ?? '';
    } catch (err) {
      // The registrar busy or not answering before any order: a failure like any other.
      message = (err as Error).message;
    }
    if (order?.state === 'succeeded') {
      result.renewed.push(domain.name);
      return;
    }
    if (order?.state === 'pending') {
      // Its outcome unknown (the registrar not answering): backed off and told like a failure, so
      // a name is not left to expire on a renewal nobody confirms; the next try settles it first.
      result.pending.push(domain.name);
      message = 'the registrar has not confirmed the renewal yet';
    }
    const failures = domain.renewFailures + 1;
    const retryAt = new Date(this.d.clock().getTime() + retryDelayMs(failures, this.d.settings.retryMs));
    await this.d.store.renewalFailed(domain.name, domain.expiresAt, message, retryAt);
    if (order?.state !== 'pending') result.failed.push({ domain: domain.name, message });
    this.d.log.warn({ domain: domain.name, account: domain.accountId, failures, retryAt, why: message }, 'Automatic domain renewal failed');
    await this.d.events.record(domain.accountId, 'domain.renewal_failed', domain.name, {
      domain: domain.name,
      reason: order?.state === 'pending' ? 'unconfirmed' : (order?.reason ?? 'registrar_error'),
      message,
      failures,
      next_attempt_at: retryAt.toISOString(),
      expires_at: domain.expiresAt.toISOString(),
    });
  }

  private async tell(notice: Notice<ExpiringDomain>, result: RenewalPass): Promise<void> {
    const { domain, days, why } = notice;
    const expires = domain.expiresAt.toISOString();
    const told = await this.d.store.notice(domain.name, domain.expiresAt, days, (trx) =>
      this.d.mail.enqueue(expiringMail(domain, why, this.d.clock()), trx),
    );
    if (!told) return;
    result.noticed.push({ domain: domain.name, days });
    await this.d.events.record(domain.accountId, 'domain.expiring', domain.name, {
      domain: domain.name,
      expires_at: expires,
      days,
      auto_renew: domain.autoRenew,
      renewal_error: why === 'renewal_failing' ? domain.renewError : null,
    });
  }
}

/** The mail of a name that will not renew by itself: when it expires, why, and what to do. */
export function expiringMail(domain: ExpiringDomain, why: Notice['why'], now: Date) {
  const expires = domain.expiresAt.toISOString().slice(0, 10);
  const left = Math.max(0, Math.ceil((domain.expiresAt.getTime() - now.getTime()) / dayMs));
  const inDays = `in ${left} day${left === 1 ? '' : 's'}`;
  const when = domain.expiresAt <= now ? `expired on ${expires}` : `expires on ${expires} (${inDays})`;
  const lines =
    why === 'renewal_failing'
      ? [
          `${domain.name} ${when}, and renewing it failed: ${domain.renewError ?? 'the registrar refused'}.`,
          '',
          `The platform tries again${domain.renewAfter ? ` from ${domain.renewAfter.toISOString()}` : ''}, with longer waits between tries.`,
          `To renew it now: svc domains renew ${domain.name}`,
        ]
      : [
          `${domain.name} ${when}. Auto-renew is off, so it will not be renewed.`,
          '',
          `To renew it: svc domains renew ${domain.name}`,
          `To renew it every year: svc domains autorenew ${domain.name} on`,
        ];
  return {
    to: domain.email,
    subject: `${domain.name} ${domain.expiresAt <= now ? 'has expired' : `expires ${inDays}`}${why === 'renewal_failing' ? ': renewal failed' : ''}`,
    text: [
      ...lines,
      '',
      'After it expires the name stops resolving, and after the registry’s grace period anyone can register it.',
      '',
    ].join('\n'),
    purpose: 'domain-expiring',
  };
}
