// Account domains and their orders in PostgreSQL (migration 0033, decision 0035): the one place they
// are read and written.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Contact, Money } from '../../lib/registrar/registrar.js';
import { recordCharge } from '../../lib/usage.js';

export type OrderState = 'pending' | 'succeeded' | 'failed';
/** Why an order failed, by what the buyer can do (docs/api/registrar.md). */
export type OrderReason = 'unavailable' | 'price_changed' | 'payment_refused' | 'registrar_error';

export interface DomainOrder {
  id: string;
  accountId: string;
  domain: string;
  kind: 'register' | 'renew';
  idempotencyKey: string;
  state: OrderState;
  reason: OrderReason | null;
  message: string | null;
  years: number;
  /** The whole order's price (a year's times years). */
  amount: Money;
  /** A renewal: the expiry it extends. */
  fromExpiry: Date | null;
  registrarOrder: string | null;
  contact: Contact | null;
  autoRenew: boolean | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface AccountDomain {
  name: string;
  accountId: string;
  registeredAt: Date;
  expiresAt: Date;
  autoRenew: boolean;
  locked: boolean;
  statuses: string[];
  renewal: Money | null;
  updatedAt: Date;
  /** The auto-renewal's failures in a row for the current expiry (0 once one succeeds). */
  renewFailures: number;
  /** No automatic attempt before this (the back-off after a failure). */
  renewAfter: Date | null;
  /** Why the last automatic attempt failed. */
  renewError: string | null;
  /** The expiry the last `domain.expiring` notice was about, and how many days before it that notice was. */
  noticedExpiry: Date | null;
  noticedDays: number | null;
}

/** A name near its expiry, with where its account is told. */
export type ExpiringDomain = AccountDomain & { email: string };

interface OrderRow {
  id: string;
  account_id: string;
  domain: string;
  kind: 'register' | 'renew';
  idempotency_key: string;
  state: OrderState;
  reason: OrderReason | null;
  message: string | null;
  years: number;
  amount_cents: string | number;
  currency: string;
  from_expiry: Date | null;
  registrar_order: string | null;
  contact: Contact | null;
  auto_renew: boolean | null;
  created_at: Date;
  finished_at: Date | null;
}

interface DomainRow {
  name: string;
  account_id: string;
  registered_at: Date;
  expires_at: Date;
  auto_renew: boolean;
  locked: boolean;
  statuses: string[];
  renewal_cents: string | number | null;
  currency: string;
  updated_at: Date;
  renew_failures: number;
  renew_after: Date | null;
  renew_error: string | null;
  noticed_expiry: Date | null;
  noticed_days: number | null;
}

const toOrder = (r: OrderRow): DomainOrder => ({
  id: r.id,
  accountId: r.account_id,
  domain: r.domain,
  kind: r.kind,
  idempotencyKey: r.idempotency_key,
  state: r.state,
  reason: r.reason,
  message: r.message,
  years: r.years,
  amount: { cents: Number(r.amount_cents), currency: r.currency },
  fromExpiry: r.from_expiry,
  registrarOrder: r.registrar_order,
  contact: r.contact,
  autoRenew: r.auto_renew,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
});

const toDomain = (r: DomainRow): AccountDomain => ({
  name: r.name,
  accountId: r.account_id,
  registeredAt: r.registered_at,
  expiresAt: r.expires_at,
  autoRenew: r.auto_renew,
  locked: r.locked,
  statuses: r.statuses,
  renewal: r.renewal_cents === null ? null : { cents: Number(r.renewal_cents), currency: r.currency },
  updatedAt: r.updated_at,
  renewFailures: r.renew_failures,
  renewAfter: r.renew_after,
  renewError: r.renew_error,
  noticedExpiry: r.noticed_expiry,
  noticedDays: r.noticed_days,
});

/** A unique violation: another request made the same order first. */
const isUnique = (err: unknown) => (err as { code?: string }).code === '23505';

export class RegistrarStore {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async orderByKey(accountId: string, key: string): Promise<DomainOrder | undefined> {
    const row = await this.db<OrderRow>('domain_orders').where({ account_id: accountId, idempotency_key: key }).first();
    return row && toOrder(row);
  }

  /** A new pending order; undefined when one of the same key (or the same renewal, or a registration of the name under way) exists. */
  async openOrder(
    o: Omit<DomainOrder, 'id' | 'state' | 'reason' | 'message' | 'registrarOrder' | 'createdAt' | 'finishedAt'>,
  ): Promise<DomainOrder | undefined> {
    try {
      const [row] = await this.db<OrderRow>('domain_orders')
        .insert({
          id: `ord_${randomBytes(10).toString('hex')}`,
          account_id: o.accountId,
          domain: o.domain,
          kind: o.kind,
          idempotency_key: o.idempotencyKey,
          state: 'pending',
          years: o.years,
          amount_cents: o.amount.cents,
          currency: o.amount.currency,
          from_expiry: o.fromExpiry,
          contact: o.contact === null ? null : (JSON.stringify(o.contact) as unknown as Contact),
          auto_renew: o.autoRenew,
          created_at: this.clock(),
        })
        .returning('*');
      return toOrder(row!);
    } catch (err) {
      if (isUnique(err)) return undefined;
      throw err;
    }
  }

  /** A pending order that failed (nothing was bought). */
  async fail(id: string, reason: OrderReason, message: string): Promise<DomainOrder> {
    const [row] = await this.db<OrderRow>('domain_orders')
      .where({ id, state: 'pending' })
      .update({ state: 'failed', reason, message, finished_at: this.clock() })
      .returning('*');
    return row ? toOrder(row) : (await this.order(id))!;
  }

  /** Forgets a pending order the registrar never acted on (a rate limit): the same key may try again. */
  async drop(id: string): Promise<void> {
    await this.db('domain_orders').where({ id, state: 'pending' }).delete();
  }

  /**
   * An order that was bought (pending, or failed by a look that came too early): it succeeded, the account holds the name as the
   * registrar has it now (a new expiry starts the renewer's schedule afresh), and its charge is in
   * usage, in one transaction.
   */
  async succeed(
    id: string,
    registrarOrder: string | null,
    held: {
      name: string;
      accountId: string;
      createdAt: Date;
      expiresAt: Date;
      locked: boolean;
      statuses: string[];
      renewal: Money | undefined;
      autoRenew: boolean;
    },
  ): Promise<{ order: DomainOrder; domain: AccountDomain } | undefined> {
    return this.db.transaction(async (tx) => {
      const now = this.clock();
      // Once: a second caller settling the same order (a retry, the renewer and a person) finds it
      // succeeded and writes nothing. A failed one may still turn out bought (the call that was
      // thought lost answered after all): the truth is what the registrar charged.
      const [row] = await tx<OrderRow>('domain_orders')
        .where({ id })
        .whereNot({ state: 'succeeded' })
        .update({ state: 'succeeded', registrar_order: registrarOrder, finished_at: now, reason: null, message: null })
        .returning('*');
      if (!row) return undefined;
      const values = {
        account_id: held.accountId,
        expires_at: held.expiresAt,
        locked: held.locked,
        statuses: JSON.stringify(held.statuses) as unknown as string[],
        renewal_cents: held.renewal?.cents ?? null,
        currency: held.renewal?.currency ?? 'USD',
        updated_at: now,
        renew_failures: 0,
        renew_after: null,
        renew_error: null,
      };
      const [domain] = await tx<DomainRow>('account_domains')
        .insert({ name: held.name, registered_at: held.createdAt, auto_renew: held.autoRenew, ...values })
        .onConflict('name')
        .merge(values)
        .returning('*');
      const order = toOrder(row);
      // A charge at the instant it was bought, once: only the caller that moved the order writes it.
      await recordCharge(tx, order.accountId, 'domain_registrations', `${order.domain}/${order.id}`, order.amount, now);
      return { order, domain: toDomain(domain!) };
    });
  }

  /** The renewal (pending or succeeded) that extends this expiry of the name, if any. */
  async renewalFrom(domain: string, from: Date): Promise<DomainOrder | undefined> {
    const row = await this.db<OrderRow>('domain_orders')
      .where({ domain, kind: 'renew', from_expiry: from })
      .whereNot({ state: 'failed' })
      .first();
    return row && toOrder(row);
  }

  async order(id: string): Promise<DomainOrder | undefined> {
    const row = await this.db<OrderRow>('domain_orders').where({ id }).first();
    return row && toOrder(row);
  }

  async domain(name: string): Promise<AccountDomain | undefined> {
    const row = await this.db<DomainRow>('account_domains').where({ name }).first();
    return row && toDomain(row);
  }

  async domains(accountId: string): Promise<AccountDomain[]> {
    return (await this.db<DomainRow>('account_domains').where({ account_id: accountId }).orderBy('name')).map(toDomain);
  }

  /** The account's registrations still pending (their names are not held yet). */
  async pendingRegistrations(accountId: string): Promise<DomainOrder[]> {
    return (
      await this.db<OrderRow>('domain_orders').where({ account_id: accountId, kind: 'register', state: 'pending' }).orderBy('created_at')
    ).map(toOrder);
  }

  /**
   * Turning auto-renew on (or off) starts its schedule afresh: a name switched on is tried at once,
   * and what the account is told next is about the new setting (a failure, or that it will not renew).
   */
  async setAutoRenew(name: string, on: boolean): Promise<AccountDomain | undefined> {
    const [row] = await this.db<DomainRow>('account_domains')
      .where({ name })
      .update({
        auto_renew: on,
        updated_at: this.clock(),
        renew_failures: 0,
        renew_after: null,
        renew_error: null,
        noticed_expiry: null,
        noticed_days: null,
      })
      .returning('*');
    return row && toDomain(row);
  }

  /** Every name expiring in (after, before], soonest first, with its account's address. */
  async expiringBetween(after: Date, before: Date): Promise<ExpiringDomain[]> {
    const rows = await this.db<DomainRow>('account_domains as d')
      .join('accounts as a', 'a.id', 'd.account_id')
      .where('d.expires_at', '>', after)
      .where('d.expires_at', '<=', before)
      .orderBy('d.expires_at')
      .select<Array<DomainRow & { email: string }>>('d.*', 'a.email');
    return rows.map((r) => ({ ...toDomain(r), email: r.email }));
  }

  /** An automatic renewal of this expiry failed: one more failure, no attempt before `retryAt`. */
  async renewalFailed(name: string, expiry: Date, message: string, retryAt: Date): Promise<AccountDomain | undefined> {
    const [row] = await this.db<DomainRow>('account_domains')
      .where({ name, expires_at: expiry })
      .update({ renew_failures: this.db.raw('renew_failures + 1'), renew_after: retryAt, renew_error: message })
      .returning('*');
    return row && toDomain(row);
  }

  /**
   * Marks the notice `days` before this expiry as told, with what `tell` writes in the same
   * transaction (the mail). False when it was told already (by this or another replica).
   */
  async notice(name: string, expiry: Date, days: number, tell: (trx: Knex.Transaction) => Promise<unknown>): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const marked = await trx('account_domains')
        .where({ name, expires_at: expiry })
        .whereRaw('(noticed_expiry IS DISTINCT FROM ? OR noticed_days > ?)', [expiry, days])
        .update({ noticed_expiry: expiry, noticed_days: days });
      if (marked) await tell(trx);
      return marked > 0;
    });
  }
}
