// name.com's Core API v1 (https://docs.name.com, decision 0035): the registrar the platform buys
// names through. HTTP Basic with the account's username and API token; JSON both ways; prices in
// US dollars as decimals (kept in cents here). The sandbox is https://api.dev.name.com (username
// with "-test"), production https://api.name.com; `make dev` and the tests point it at the local
// double of the same API (hack/namecom-double.ts).
import {
  checkLimit,
  RegistrarError,
  type Availability,
  type Contact,
  type HeldDomain,
  type Money,
  type Purchase,
  type Registrar,
  type ZoneRecord,
} from './registrar.js';

export interface NameComOptions {
  /** https://api.name.com, https://api.dev.name.com, or the double's address. */
  url: string;
  username: string;
  token: string;
  /** Per call; past it a purchase's outcome is unknown (RegistrarError unknown_outcome). */
  timeoutMs?: number;
}

/** The parts of name.com's answers read here. */
interface NcAvailability {
  domainName: string;
  purchasable?: boolean;
  premium?: boolean;
  purchasePrice?: number;
  renewalPrice?: number;
  reason?: string;
}
interface NcDomain {
  domainName: string;
  createDate?: string;
  expireDate?: string;
  locked?: boolean;
  locks?: string[];
  renewalPrice?: number;
}
interface NcRecord {
  id: number;
  host?: string;
  type: string;
  answer: string;
  ttl?: number;
}
interface NcPurchase {
  domain: NcDomain;
  order: number;
  totalPaid: number;
}

const currency = 'USD';
const cents = (dollars: number | undefined): Money | undefined =>
  dollars === undefined ? undefined : { cents: Math.round(dollars * 100), currency };

export class NameCom implements Registrar {
  private readonly auth: string;

  constructor(private readonly opts: NameComOptions) {
    this.auth = `Basic ${Buffer.from(`${opts.username}:${opts.token}`).toString('base64')}`;
  }

  async check(names: readonly string[]): Promise<Availability[]> {
    if (names.length > checkLimit) throw new RegistrarError('refused', `at most ${checkLimit} names a check`);
    const { results } = await this.call<{ results?: NcAvailability[] }>('POST', '/core/v1/domains:checkAvailability', {
      domainNames: names,
      purchaseType: 'registration',
    });
    const byName = new Map((results ?? []).map((r) => [r.domainName.toLowerCase(), r]));
    return names.map((name) => {
      const r = byName.get(name);
      if (!r) return { name, available: false, premium: false, reason: 'the registrar did not answer for this name' };
      const registration = cents(r.purchasePrice);
      const renewal = cents(r.renewalPrice);
      return {
        name,
        available: r.purchasable === true,
        premium: r.premium === true,
        ...(registration ? { registration } : {}),
        ...(renewal ? { renewal } : {}),
        ...(r.reason ? { reason: r.reason } : {}),
      };
    });
  }

  async register(r: { name: string; years: number; contact: Contact; price: Money }): Promise<Purchase> {
    const contact = toNameCom(r.contact);
    const answer = await this.call<NcPurchase>('POST', '/core/v1/domains', {
      domain: {
        domainName: r.name,
        contacts: { registrant: contact, admin: contact, tech: contact, billing: contact },
        // The platform renews (decision 0035): the registrar must not charge on its own.
        autorenewEnabled: false,
        locked: true,
        privacyEnabled: true,
      },
      purchaseType: 'registration',
      years: r.years,
      purchasePrice: (r.price.cents * r.years) / 100,
    });
    return purchase(answer);
  }

  async renew(r: { name: string; years: number; price: Money }): Promise<Purchase> {
    const answer = await this.call<NcPurchase>('POST', `/core/v1/domains/${encodeURIComponent(r.name)}:renew`, {
      years: r.years,
      purchasePrice: (r.price.cents * r.years) / 100,
    });
    return purchase(answer);
  }

  async get(name: string): Promise<HeldDomain | undefined> {
    try {
      return held(await this.call<NcDomain>('GET', `/core/v1/domains/${encodeURIComponent(name)}`));
    } catch (err) {
      if (err instanceof NotFound) return undefined;
      throw err;
    }
  }

  async records(name: string): Promise<Array<ZoneRecord & { id: number }>> {
    const out: Array<ZoneRecord & { id: number }> = [];
    // Paged (perPage at most 1000); a name's own zone is small, but follow nextPage all the same.
    for (let page: number | undefined = 1; page;) {
      const answer: { records?: NcRecord[]; nextPage?: number } = await this.call(
        'GET',
        `/core/v1/domains/${encodeURIComponent(name)}/records?perPage=1000&page=${page}`,
      );
      for (const r of answer.records ?? [])
        if (r.type === 'A' || r.type === 'AAAA' || r.type === 'CNAME' || r.type === 'TXT')
          out.push({ id: r.id, host: r.host ?? '', type: r.type, answer: r.answer, ttl: r.ttl ?? 300 });
      // Only forward: a page that names itself or an earlier one again ends the listing.
      page = answer.nextPage !== undefined && answer.nextPage > page ? answer.nextPage : undefined;
    }
    return out;
  }

  async createRecord(name: string, r: ZoneRecord): Promise<void> {
    await this.call('POST', `/core/v1/domains/${encodeURIComponent(name)}/records`, r);
  }

  async updateRecord(name: string, id: number, r: ZoneRecord): Promise<void> {
    await this.call('PUT', `/core/v1/domains/${encodeURIComponent(name)}/records/${id}`, r);
  }

  async deleteRecord(name: string, id: number): Promise<void> {
    await this.call('DELETE', `/core/v1/domains/${encodeURIComponent(name)}/records/${id}`);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.opts.url), {
        method,
        headers: { authorization: this.auth, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new RegistrarError('unknown_outcome', `the registrar did not answer: ${(err as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    if (res.ok) {
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new RegistrarError('unknown_outcome', `the registrar answered ${res.status} with what is not JSON`);
      }
    }
    let said = text.slice(0, 300);
    try {
      const e = JSON.parse(text) as { message?: string; details?: string };
      said = [e.message, e.details].filter(Boolean).join(': ') || said;
    } catch {
      // Not JSON: its text as it came.
    }
    throw errorFor(res.status, said, res.headers.get('retry-after'));
  }
}

class NotFound extends RegistrarError {}

/**
 * name.com's errors are a status and a message (`{"message", "details"}`); the kind is read from
 * both. The words matched are those of its documented errors, and what the double sends.
 */
function errorFor(status: number, said: string, retryAfter: string | null): RegistrarError {
  if (status === 429) {
    const seconds = Number(retryAfter);
    return new RegistrarError(
      'rate_limited',
      `the registrar is limiting calls: ${said}`,
      Number.isFinite(seconds) && seconds > 0 ? seconds : 60,
    );
  }
  if (status >= 500) return new RegistrarError('unknown_outcome', `the registrar failed (${status}): ${said}`);
  if (status === 404) return new NotFound('refused', said);
  if (status === 402 || /insufficient funds|payment|credit card|balance/i.test(said))
    return new RegistrarError('payment_refused', `the registrar refused payment: ${said}`);
  if (/purchase ?price|price (does not|doesn't) match|price has changed/i.test(said)) return new RegistrarError('price_changed', said);
  if (/not available|unavailable|already registered|is taken|not purchasable/i.test(said)) return new RegistrarError('unavailable', said);
  return new RegistrarError('refused', `the registrar refused (${status}): ${said}`);
}

function toNameCom(c: Contact): Record<string, string> {
  return {
    firstName: c.firstName,
    lastName: c.lastName,
    ...(c.organization ? { companyName: c.organization } : {}),
    address1: c.address1,
    ...(c.address2 ? { address2: c.address2 } : {}),
    city: c.city,
    ...(c.state ? { state: c.state } : {}),
    zip: c.postalCode,
    country: c.country,
    phone: c.phone,
    email: c.email,
  };
}

function held(d: NcDomain): HeldDomain {
  const statuses = d.locks?.length
    ? d.locks.map((l) => l.charAt(0).toLowerCase() + l.slice(1))
    : d.locked
      ? ['clientTransferProhibited']
      : ['ok'];
  return {
    name: d.domainName.toLowerCase(),
    createdAt: new Date(d.createDate ?? 0),
    expiresAt: new Date(d.expireDate ?? 0),
    locked: d.locked === true,
    statuses,
    renewal: cents(d.renewalPrice),
  };
}

function purchase(p: NcPurchase): Purchase {
  return { domain: held(p.domain), order: String(p.order), paid: cents(p.totalPaid)! };
}
