// What the platform needs of a domain registrar (decision 0035): availability with prices, a
// registration, a renewal, and what the registry says of a name the account holds. One real
// registrar implements it (namecom.ts, name.com's Core API v1) and a local double of the same HTTP
// API runs under `make dev` and `make test` (hack/namecom-double.ts); which one is configuration.

/** An amount in a currency's minor units (cents): registrars quote decimals, money is never a float here. */
export interface Money {
  cents: number;
  currency: string;
}

export interface Availability {
  /** The name as asked, lowercase ASCII (punycode for an IDN). */
  name: string;
  available: boolean;
  /** A premium name: its price is the registry's, not the TLD's list price. */
  premium: boolean;
  /** A year's registration and a year's renewal, when it can be bought. */
  registration?: Money;
  renewal?: Money;
  /** Why it cannot be bought, as the registrar says it. */
  reason?: string;
}

/** Who holds a name (ICANN's registrant): every field the registries ask for. */
export interface Contact {
  firstName: string;
  lastName: string;
  organization?: string | undefined;
  address1: string;
  address2?: string | undefined;
  city: string;
  state?: string | undefined;
  postalCode: string;
  /** ISO 3166-1 alpha-2. */
  country: string;
  /** E.164: +<country code><number>. */
  phone: string;
  email: string;
}

/** A name the registrar holds for the platform, as the registry has it now. */
export interface HeldDomain {
  name: string;
  createdAt: Date;
  expiresAt: Date;
  /** Transfer lock on (clientTransferProhibited). */
  locked: boolean;
  /** EPP statuses the registrar reports (`clientTransferProhibited`, `clientHold`, ...), `ok` when none. */
  statuses: string[];
  /** A year's renewal, as the registrar quotes it now. */
  renewal?: Money | undefined;
}

/** What a registration or a renewal cost, and the registrar's order for it. */
export interface Purchase {
  domain: HeldDomain;
  order: string;
  paid: Money;
}

/** A record of the DNS the registrar serves for a name it holds; `host` is relative to the name ('' for the name itself). */
export interface ZoneRecord {
  host: string;
  type: 'A' | 'AAAA' | 'CNAME' | 'TXT';
  answer: string;
  ttl: number;
}

export interface Registrar {
  /** At most `checkLimit` names a call. */
  check(names: readonly string[]): Promise<Availability[]>;
  /** Buys `name` for `years` at `price` a year at most (the registrar refuses a different price: price_changed). */
  register(r: { name: string; years: number; contact: Contact; price: Money }): Promise<Purchase>;
  /** Renews `name` for `years` at `price` a year. */
  renew(r: { name: string; years: number; price: Money }): Promise<Purchase>;
  /** The name as the registrar holds it for us; undefined when it does not (never bought, or expired away). */
  get(name: string): Promise<HeldDomain | undefined>;
  /** The records of the DNS it serves for a name it holds, with their ids. */
  records(name: string): Promise<Array<ZoneRecord & { id: number }>>;
  createRecord(name: string, r: ZoneRecord): Promise<void>;
  updateRecord(name: string, id: number, r: ZoneRecord): Promise<void>;
  deleteRecord(name: string, id: number): Promise<void>;
}

/**
 * What to write so a zone has the wanted records. A wanted record already there is left alone.
 * At a host where the app is routed (its A, AAAA or CNAME wanted), every other routing record is
 * changed to a wanted one of its type or removed: what the name pointed at before (a parking
 * page's address, an old edge) must stop being answered, and DNS allows nothing beside a CNAME.
 * TXT records sit beside each other: a missing one is added, none is removed. Removals come first
 * when applied, so a CNAME can take the place of addresses.
 */
export function recordChanges(
  current: ReadonlyArray<ZoneRecord & { id: number }>,
  wanted: readonly ZoneRecord[],
): { remove: number[]; update: Array<{ id: number; record: ZoneRecord }>; create: ZoneRecord[] } {
  const routing = (r: ZoneRecord) => r.type !== 'TXT';
  const norm = (answer: string) => answer.toLowerCase().replace(/\.$/, '');
  const equal = (a: ZoneRecord, b: ZoneRecord) => a.host === b.host && a.type === b.type && norm(a.answer) === norm(b.answer);
  const missing = wanted.filter((w) => !current.some((c) => equal(c, w)));
  const routedHosts = new Set(wanted.filter(routing).map((w) => w.host));
  // Routing records at a routed host that no wanted record is: to change or to remove.
  const stale = current.filter((c) => routing(c) && routedHosts.has(c.host) && !wanted.some((w) => equal(w, c)));
  const update: Array<{ id: number; record: ZoneRecord }> = [];
  const create: ZoneRecord[] = [];
  for (const w of missing) {
    const i = routing(w) ? stale.findIndex((c) => c.host === w.host && c.type === w.type) : -1;
    if (i >= 0) update.push({ id: stale.splice(i, 1)[0]!.id, record: w });
    else create.push(w);
  }
  return { remove: stale.map((c) => c.id), update, create };
}

export const checkLimit = 50;

/**
 * Why a registrar call failed, by what the caller should do about it:
 *   unavailable      the name cannot be bought (taken, reserved, not offered)
 *   price_changed    the price is not the one sent: ask the buyer again
 *   payment_refused  the platform's registrar account could not pay
 *   rate_limited     too many calls: after `retryAfterSeconds`
 *   unknown_outcome  no answer (a timeout, a connection cut, a 5xx): the purchase may have been made;
 *                    look the name up (get) before trying again
 *   refused          anything else the registrar refused (its message says what)
 */
export type RegistrarErrorKind = 'unavailable' | 'price_changed' | 'payment_refused' | 'rate_limited' | 'unknown_outcome' | 'refused';

export class RegistrarError extends Error {
  override name = 'RegistrarError';
  constructor(
    readonly kind: RegistrarErrorKind,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}
