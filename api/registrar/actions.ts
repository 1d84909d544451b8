// What the API decides about account domains (decision 0035): which names can be searched and
// bought, a registration and a renewal as orders that are never made twice, an answer the registrar
// never gave settled by looking the name up, and the platform's auto-renew flag. The registrar is
// lib/registrar (name.com, or its local double).
import { randomBytes } from 'node:crypto';
import { getDomain, parse as parseSuffix } from 'tldts';
import type { ExpectedRecord } from '../../lib/domains/records.js';
import { parseDomainName } from '../../lib/domains/names.js';
import type { Logger } from '../../lib/logger.js';
import {
  checkLimit,
  RegistrarError,
  type Availability,
  type Contact,
  type HeldDomain,
  type Money,
  type Registrar,
  recordChanges,
  type ZoneRecord,
} from '../../lib/registrar/registrar.js';
import type { Actor } from '../deploys/actions.js';
import type { ApiDeps } from '../deps.js';
import { ApiError, conflict, invalid, notFound } from '../errors.js';
import type { AccountDomain, DomainOrder, OrderReason, RegistrarStore } from './store.js';

export interface RegistrarConfig {
  /** The TLDs offered, without dots (`com`, `dev`). */
  tlds: readonly string[];
  /** How long a search's answer for a name is reused. */
  searchCacheMs: number;
  /** The platform's apps domain: never for sale here. */
  appsDomain: string;
  /**
   * How long after an order was made its call could still complete at the registrar (the call's
   * limit and a margin): an order not seen bought is called failed only after this.
   */
  settleAfterMs: number;
}

/** Names one search answers at most. */
export const searchLimit = 20;
/** ICANN's limit: a name is registered at most ten years ahead. */
const maxYearsAhead = 10;

export interface RegisterInput {
  name: string;
  years: number;
  contact: Contact;
  /** A year's price the buyer agreed to (what search showed). */
  price: Money;
  autoRenew: boolean;
}

export type Outcome = { status: 200 | 201 | 202; order: DomainOrder; domain: AccountDomain | undefined };

export class RegistrarActions {
  private readonly cache = new Map<string, { at: number; found: Availability }>();

  constructor(
    private readonly d: {
      registrar: Registrar;
      store: RegistrarStore;
      /** domain.registered and domain.renewed, with the order and what it cost. */
      events: Pick<ApiDeps['events'], 'record'>;
      config: RegistrarConfig;
      log: Logger;
      clock: () => Date;
    },
  ) {}

  /** The name as the platform stores it, when it can be bought here; else 400 saying why. */
  registrable(input: string): string {
    const parsed = parseDomainName(input.trim(), { appsDomain: this.d.config.appsDomain });
    if (!parsed.ok) throw invalid(`${input}: ${parsed.message}`);
    const { name } = parsed;
    if (name.wildcard) throw invalid(`${input}: a wildcard is not a name one can register`);
    const suffix = parseSuffix(name.base, { allowPrivateDomains: false, extractHostname: false }).publicSuffix ?? '';
    if (!this.d.config.tlds.includes(suffix))
      throw invalid(`${input}: .${suffix} names are not offered here (offered: ${this.d.config.tlds.map((t) => `.${t}`).join(', ')})`);
    if (!name.apex)
      throw invalid(
        `${input}: only a name directly under .${suffix} is registered (${name.base.split('.').slice(-2).join('.')}, not its subdomains)`,
      );
    return name.base;
  }

  /** Availability and prices of names, or of a word under every offered TLD; answers are reused briefly. */
  async search(q: { names: string[]; word: string | undefined }): Promise<Availability[]> {
    let names: string[];
    if (q.word !== undefined) {
      if (q.names.length) throw invalid('search either names or a word, not both');
      if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(q.word))
        throw invalid(`word: "${q.word}" is not a domain label (lowercase letters, digits and inner dashes, at most 63)`);
      names = this.d.config.tlds.slice(0, searchLimit).map((t) => `${q.word}.${t}`);
    } else {
      if (!q.names.length) throw invalid('give a name (?name=shop.dev, several times for several) or a word (?word=shop)');
      if (q.names.length > searchLimit) throw invalid(`at most ${searchLimit} names a search; this one has ${q.names.length}`);
      names = [...new Set(q.names.map((n) => this.registrable(n)))];
    }
    const now = this.d.clock().getTime();
    const missing = names.filter((n) => {
      const hit = this.cache.get(n);
      return !hit || now - hit.at > this.d.config.searchCacheMs;
    });
    for (let i = 0; i < missing.length; i += checkLimit) {
      const found = await this.call(() => this.d.registrar.check(missing.slice(i, i + checkLimit)));
      for (const f of found) this.cache.set(f.name, { at: now, found: f });
    }
    if (this.cache.size > 10_000) for (const [k, v] of this.cache) if (now - v.at > this.d.config.searchCacheMs) this.cache.delete(k);
    return names.map((n) => this.cache.get(n)!.found);
  }

  /** Whether the account made an order with this Idempotency-Key. */
  async ordered(actor: Actor, key: string): Promise<boolean> {
    return (await this.d.store.orderByKey(actor.accountId, key)) !== undefined;
  }

  /** The account's names and its registrations under way. */
  async list(actor: Actor): Promise<{ domains: AccountDomain[]; pending: DomainOrder[] }> {
    const [domains, pending] = await Promise.all([
      this.d.store.domains(actor.accountId),
      this.d.store.pendingRegistrations(actor.accountId),
    ]);
    return { domains, pending };
  }

  /**
   * Registers a name as an order: a request with an Idempotency-Key it used before answers with
   * that order (settling it first when its outcome was unknown) and never buys again.
   */
  async register(actor: Actor, input: RegisterInput, key: string | undefined): Promise<Outcome> {
    const name = this.registrable(input.name);
    if (key !== undefined) {
      const before = await this.d.store.orderByKey(actor.accountId, key);
      if (before) {
        if (before.kind !== 'register' || before.domain !== name) throw conflict('this Idempotency-Key was used for another order');
        return this.answer(before.state === 'pending' ? await this.settle(before) : before);
      }
    }
    const held = await this.d.store.domain(name);
    if (held)
      throw conflict(
        held.accountId === actor.accountId
          ? `${name} is yours already (it expires ${held.expiresAt.toISOString()})`
          : `${name} is not available`,
      );
    const order = await this.d.store.openOrder({
      accountId: actor.accountId,
      domain: name,
      kind: 'register',
      idempotencyKey: key ?? randomKey(),
      years: input.years,
      amount: { cents: input.price.cents * input.years, currency: input.price.currency },
      fromExpiry: null,
      contact: input.contact,
      autoRenew: input.autoRenew,
    });
    if (!order) {
      const again = key === undefined ? undefined : await this.d.store.orderByKey(actor.accountId, key);
      if (again) return this.answer(again);
      throw conflict(`a registration of ${name} is under way; list your domains to follow it`);
    }
    try {
      const bought = await this.d.registrar.register({ name, years: input.years, contact: input.contact, price: input.price });
      return this.answer(await this.bought(order, bought.order, bought.domain));
    } catch (err) {
      return this.answer(await this.failed(order, err));
    }
  }

  /**
   * Renews a name for whole years. `expiresAt`, when sent, is the expiry the caller saw (EPP's
   * curExpDate): if the name was renewed from it already, that renewal is the answer; one renewal
   * per name and expiry, whoever asks.
   */
  async renew(
    actor: Actor,
    input: { name: string; years: number; expiresAt: Date | undefined },
    key: string | undefined,
  ): Promise<Outcome> {
    const domain = await this.owned(actor, input.name);
    const from = input.expiresAt ?? domain.expiresAt;
    if (from.getTime() !== domain.expiresAt.getTime()) {
      const done = await this.d.store.renewalFrom(domain.name, from);
      if (done) return this.answer(done.state === 'pending' ? await this.settle(done) : done);
      throw conflict(`${domain.name} expires ${domain.expiresAt.toISOString()}, not ${from.toISOString()}: look again before renewing`);
    }
    return this.answer(await this.renewal(domain, input.years, key ?? randomKey()));
  }

  /**
   * The renewer's renewal of a name for a year from its current expiry, at the registrar's renewal
   * price (the account chose auto-renew): the order as it ended, or as it stays (pending when the
   * outcome is still unknown). Never a second renewal of this expiry: the one made is the answer.
   */
  autoRenew(domain: AccountDomain): Promise<DomainOrder> {
    // A key of its own each try: the one live renewal per name and expiry is the index's to keep.
    return this.renewal(domain, 1, `auto-renew:${domain.expiresAt.toISOString()}:${randomBytes(6).toString('hex')}`);
  }

  /** A renewal of the name's current expiry as an order: the one made already, or a new one bought now. */
  private async renewal(domain: AccountDomain, years: number, key: string): Promise<DomainOrder> {
    const from = domain.expiresAt;
    const existing = await this.d.store.renewalFrom(domain.name, from);
    if (existing) return existing.state === 'pending' ? this.settle(existing) : existing;
    const limit = new Date(this.d.clock());
    limit.setUTCFullYear(limit.getUTCFullYear() + maxYearsAhead);
    if (addYears(from, years) > limit)
      throw invalid(`years: ${years} more years would reach past ${maxYearsAhead} years from now (the registry's limit)`);
    const now = await this.call(() => this.d.registrar.get(domain.name));
    const price = now?.renewal ?? domain.renewal;
    if (!now || !price)
      throw new ApiError('unavailable', `the registrar does not hold ${domain.name} for the platform any more; contact support`);
    const order = await this.d.store.openOrder({
      accountId: domain.accountId,
      domain: domain.name,
      kind: 'renew',
      idempotencyKey: key,
      years,
      amount: { cents: price.cents * years, currency: price.currency },
      fromExpiry: from,
      contact: null,
      autoRenew: null,
    });
    if (!order) {
      const again = await this.d.store.renewalFrom(domain.name, from);
      if (again) return again;
      throw conflict('this Idempotency-Key was used for another order');
    }
    try {
      const renewed = await this.d.registrar.renew({ name: domain.name, years, price });
      return await this.bought(order, renewed.order, renewed.domain);
    } catch (err) {
      return this.failed(order, err);
    }
  }

  /**
   * Writes an app domain's records in the DNS the registrar serves, when the account bought the
   * name here: adding the domain to an app is then the one call, with nothing to publish by hand.
   * Undefined when the account holds no such name (the records are the user's to publish); the
   * records written otherwise (none when all were there).
   */
  async publishRecords(actor: Actor, name: string, expected: readonly ExpectedRecord[]): Promise<ZoneRecord[] | undefined> {
    const zone = getDomain(name.replace(/^\*\./, ''), { allowPrivateDomains: false });
    const held = zone ? await this.d.store.domain(zone) : undefined;
    if (!zone || !held || held.accountId !== actor.accountId || held.expiresAt <= this.d.clock()) return undefined;
    const wanted = expected.map((r): ZoneRecord => ({
      host: r.name === zone ? '' : r.name.slice(0, -(zone.length + 1)),
      type: r.type,
      answer: r.value,
      ttl: 300,
    }));
    const { remove, create, update } = recordChanges(await this.call(() => this.d.registrar.records(zone)), wanted);
    await this.call(async () => {
      for (const id of remove) await this.d.registrar.deleteRecord(zone, id);
      for (const u of update) await this.d.registrar.updateRecord(zone, u.id, u.record);
      for (const r of create) await this.d.registrar.createRecord(zone, r);
    });
    if (create.length || update.length || remove.length)
      this.d.log.info(
        { domain: name, zone, account: actor.accountId, created: create.length, changed: update.length, removed: remove.length },
        'Domain records published at the registrar',
      );
    return [...update.map((u) => u.record), ...create];
  }

  async setAutoRenew(actor: Actor, name: string, on: boolean): Promise<AccountDomain> {
    const domain = await this.owned(actor, name);
    return (await this.d.store.setAutoRenew(domain.name, on))!;
  }

  private async owned(actor: Actor, input: string): Promise<AccountDomain> {
    const name = this.registrable(input);
    const domain = await this.d.store.domain(name);
    if (!domain || domain.accountId !== actor.accountId) throw notFound(`domain ${name}`);
    return domain;
  }

  /** An order bought: the name as the registrar holds it now, kept with the order. */
  private async bought(order: DomainOrder, registrarOrder: string | null, held: HeldDomain): Promise<DomainOrder> {
    const moved = await this.d.store.succeed(order.id, registrarOrder, {
      name: order.domain,
      accountId: order.accountId,
      createdAt: held.createdAt,
      expiresAt: held.expiresAt,
      locked: held.locked,
      statuses: held.statuses,
      renewal: held.renewal,
      // Used only when the row is new (a registration): a renewal's merge keeps the account's setting.
      autoRenew: order.autoRenew ?? true,
    });
    // Another caller settled it first: it told the account.
    if (!moved) return (await this.d.store.order(order.id))!;
    this.d.log.info({ domain: order.domain, kind: order.kind, order: order.id, account: order.accountId }, 'Domain order succeeded');
    await this.d.events.record(order.accountId, order.kind === 'register' ? 'domain.registered' : 'domain.renewed', order.domain, {
      domain: order.domain,
      order: order.id,
      years: order.years,
      amount: order.amount.cents,
      currency: order.amount.currency,
      expires_at: held.expiresAt.toISOString(),
    });
    return (await this.d.store.order(order.id))!;
  }

  /** A registrar failure, by kind: the order failed (nothing bought), dropped (never sent), or left to settle. */
  private async failed(order: DomainOrder, err: unknown): Promise<DomainOrder> {
    if (!(err instanceof RegistrarError)) throw err;
    this.d.log.warn(
      { domain: order.domain, kind: order.kind, order: order.id, err: err.message, why: err.kind },
      'Domain order not bought',
    );
    switch (err.kind) {
      case 'rate_limited':
        await this.d.store.drop(order.id);
        throw new ApiError('unavailable', `the registrar is busy; retry in ${err.retryAfterSeconds ?? 60} s (nothing was bought)`, {
          'retry-after': String(err.retryAfterSeconds ?? 60),
        });
      case 'unknown_outcome':
        return this.settle(order);
      default:
        return this.d.store.fail(order.id, reasonOf(err.kind), err.message);
    }
  }

  /**
   * An order whose outcome is unknown, settled by what the registrar holds now: a registration is
   * bought when the name is held with a creation since the order; a renewal when the expiry moved
   * past the one it extends. Not held (or not moved) once the call that made it can no longer be
   * acted on (`settleAfterMs`): failed, nothing bought; before that it stays pending, or a retry
   * could buy while the first call still completes. The registrar not answering leaves it pending.
   */
  private async settle(order: DomainOrder): Promise<DomainOrder> {
    let held: HeldDomain | undefined;
    try {
      held = await this.d.registrar.get(order.domain);
    } catch (err) {
      this.d.log.warn(
        { domain: order.domain, order: order.id, err: (err as Error).message },
        'Settling a domain order failed; it stays pending',
      );
      return order;
    }
    const bought =
      held !== undefined &&
      (order.kind === 'register'
        ? held.createdAt.getTime() >= order.createdAt.getTime() - 60_000
        : held.expiresAt.getTime() > order.fromExpiry!.getTime());
    if (bought) return this.bought(order, null, held!);
    if (this.d.clock().getTime() - order.createdAt.getTime() < this.d.config.settleAfterMs) return order;
    return this.d.store.fail(order.id, 'registrar_error', 'the registrar did not complete it; nothing was bought');
  }

  /** An order as the API answers it: the domain when bought, an error when it failed. */
  private async answer(order: DomainOrder): Promise<Outcome> {
    if (order.state === 'pending') return { status: 202, order, domain: undefined };
    // A registration made the domain (201); a renewal changed it (200).
    if (order.state === 'succeeded')
      return { status: order.kind === 'register' ? 201 : 200, order, domain: await this.d.store.domain(order.domain) };
    switch (order.reason) {
      case 'unavailable':
        throw conflict(`${order.domain} is not available (${order.message ?? 'taken'}); nothing was bought`);
      case 'price_changed': {
        // The price searched before is the old one: ask the registrar again.
        this.cache.delete(order.domain);
        const [now] = await this.search({ names: [order.domain], word: undefined }).catch(() => [undefined]);
        const price = order.kind === 'register' ? now?.registration : now?.renewal;
        throw conflict(
          `the price of ${order.domain} changed${price ? `: it is now ${price.cents} ${price.currency} (minor units) a year` : ''}; nothing was bought. Search again and send the new price to buy it`,
        );
      }
      case 'payment_refused':
        throw new ApiError(
          'payment_required',
          `the registrar refused the payment for ${order.domain}; nothing was bought (${order.message ?? ''})`,
        );
      default:
        throw new ApiError(
          'unavailable',
          `the registrar refused ${order.kind === 'register' ? 'the registration' : 'the renewal'} of ${order.domain}: ${order.message ?? 'no reason given'}`,
        );
    }
  }

  /** A registrar read: its failures as 503s saying why. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof RegistrarError)) throw err;
      throw new ApiError(
        'unavailable',
        err.kind === 'rate_limited'
          ? `the registrar is busy; retry in ${err.retryAfterSeconds ?? 60} s`
          : `the registrar did not answer: ${err.message}`,
        err.kind === 'rate_limited' ? { 'retry-after': String(err.retryAfterSeconds ?? 60) } : {},
      );
    }
  }
}

function reasonOf(kind: RegistrarError['kind']): OrderReason {
  return kind === 'unavailable' || kind === 'price_changed' || kind === 'payment_refused' ? kind : 'registrar_error';
}

const randomKey = () => `auto:${randomBytes(12).toString('hex')}`;

function addYears(d: Date, years: number): Date {
  const out = new Date(d);
  out.setUTCFullYear(out.getUTCFullYear() + years);
  return out;
}
