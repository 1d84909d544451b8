// The certificate issuer's orders in PostgreSQL (table certificate_orders, migration 0023): the
// budget's rows (lib/certificates/budget.ts decides from them) and each order's lease. Deciding and
// taking an order is one transaction under one advisory lock for all names: the limits are
// platform-wide (orders per 3 hours), and replicas must never both order one name.
import type { Knex } from 'knex';
import { getDomain } from 'tldts';
import {
  consecutiveFailures,
  decideOrder,
  ordersWindowMs,
  weekMs,
  type BudgetDecision,
  type OrderLimits,
  type OrderOutcome,
  type OrderRecord,
} from './budget.js';

/** The advisory lock's first key (api/quotas.ts 30_001, collector 30_002, digests 30_003). */
const ordersLockClass = 30_004;

interface Row {
  id: string;
  domain: string;
  registered_domain: string;
  account_id: string;
  started_at: Date;
  finished_at: Date | null;
  outcome: OrderOutcome;
  reason: string | null;
  message: string | null;
  retry_after: Date | null;
}

const recordOf = (r: Row): OrderRecord => ({
  domain: r.domain,
  registeredDomain: r.registered_domain,
  startedAt: new Date(r.started_at),
  finishedAt: r.finished_at ? new Date(r.finished_at) : undefined,
  outcome: r.outcome,
  reason: r.reason ?? undefined,
  retryAfter: r.retry_after ? new Date(r.retry_after) : undefined,
});

/** The name the per-week limit counts by: its registrable domain (a wildcard's base's), else the name. */
export function registeredDomainOf(domain: string): string {
  const base = domain.startsWith('*.') ? domain.slice(2) : domain;
  return getDomain(base, { allowPrivateDomains: true }) ?? base;
}

export type BeginAnswer = (BudgetDecision & { allowed: false }) | { allowed: true; id: string; failuresBefore: number };

/** What the issuer needs of the orders (a fake in unit tests). */
export interface OrderBook {
  begin(o: { domain: string; accountId: string; limits: OrderLimits; now: Date; observedAt?: Date }): Promise<BeginAnswer>;
  finish(
    id: string,
    o: { outcome: Exclude<OrderOutcome, 'pending'>; now: Date; reason?: string; message?: string; retryAfter?: Date },
  ): Promise<void>;
}

export class CertificateOrders implements OrderBook {
  constructor(private readonly db: Knex) {}

  /**
   * Decides whether `domain` may be ordered now and, if so, records the order as pending (its
   * lease) and answers its id and how many failures in a row came before it.
   */
  async begin(o: { domain: string; accountId: string; limits: OrderLimits; now: Date; observedAt?: Date }): Promise<BeginAnswer> {
    const registeredDomain = registeredDomainOf(o.domain);
    return this.db.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(?, 0)', [ordersLockClass]);
      const weekAgo = new Date(o.now.getTime() - weekMs);
      const recent = (await trx('certificate_orders').where((q) => {
        void q.where('started_at', '>', new Date(o.now.getTime() - ordersWindowMs)).orWhere((w) => {
          void w.where('registered_domain', registeredDomain).andWhere('started_at', '>', weekAgo);
        });
      })) as Row[];
      const ofName = (await trx('certificate_orders').where('domain', o.domain).orderBy('started_at', 'desc').limit(50)) as Row[];
      const rows = [...new Map([...recent, ...ofName].map((r) => [String(r.id), r])).values()];
      const records = rows.map(recordOf);
      const decision = decideOrder({
        domain: o.domain,
        registeredDomain,
        rows: records,
        limits: o.limits,
        now: o.now,
        ...(o.observedAt ? { observedAt: o.observedAt } : {}),
      });
      if (!decision.allowed) return decision;
      const [row] = await trx('certificate_orders')
        .insert({ domain: o.domain, registered_domain: registeredDomain, account_id: o.accountId, started_at: o.now, outcome: 'pending' })
        .returning<Array<{ id: string | number }>>('id');
      return { allowed: true, id: String(row!.id), failuresBefore: consecutiveFailures(records, o.domain) };
    });
  }

  /** Records how an order ended, and when the name may be ordered again after a failure. */
  async finish(
    id: string,
    o: { outcome: Exclude<OrderOutcome, 'pending'>; now: Date; reason?: string; message?: string; retryAfter?: Date },
  ): Promise<void> {
    await this.db('certificate_orders')
      .where({ id })
      .update({
        outcome: o.outcome,
        finished_at: o.now,
        reason: o.reason ?? null,
        message: o.message?.slice(0, 4000) ?? null,
        retry_after: o.retryAfter ?? null,
      });
  }
}
