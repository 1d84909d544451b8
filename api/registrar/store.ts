// Account domains and their orders in PostgreSQL (migration 0033, decision 0035): the one place they
// are read and written.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Contact, Money } from '../../lib/registrar/registrar.js';

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
}

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
   * A pending order that was bought: the order succeeded and the account holds the name as the
   * registrar has it now, in one transaction.
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
  ): Promise<{ order: DomainOrder; domain: AccountDomain }> {
    return this.db.transaction(async (tx) => {
      const now = this.clock();
      const [row] = await tx<OrderRow>('domain_orders')
        .where({ id })
        .update({ state: 'succeeded', registrar_order: registrarOrder, finished_at: now, reason: null, message: null })
        .returning('*');
      const values = {
        account_id: held.accountId,
        expires_at: held.expiresAt,
        locked: held.locked,
        statuses: JSON.stringify(held.statuses) as unknown as string[],
        renewal_cents: held.renewal?.cents ?? null,
        currency: held.renewal?.currency ?? 'USD',
        updated_at: now,
      };
      const [domain] = await tx<DomainRow>('account_domains')
        .insert({ name: held.name, registered_at: held.createdAt, auto_renew: held.autoRenew, ...values })
        .onConflict('name')
        .merge(values)
        .returning('*');
      return { order: toOrder(row!), domain: toDomain(domain!) };
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

  async setAutoRenew(name: string, on: boolean): Promise<AccountDomain | undefined> {
    const [row] = await this.db<DomainRow>('account_domains')
      .where({ name })
      .update({ auto_renew: on, updated_at: this.clock() })
      .returning('*');
    return row && toDomain(row);
  }
}
