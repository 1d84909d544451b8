// A local double of name.com's Core API v1 (the calls lib/registrar/namecom.ts makes), for `make dev`
// (the `registrar` component, hack/registrar-double.ts) and the tests, which start their own. It keeps
// names, orders and charges in memory, and has name.com's failure modes on demand, set through
// `POST /_double/faults {"name", "fault"}` (or the `faults` method in a test):
//   unavailable           the name is taken (also: any name whose first label starts with "taken")
//   payment_refused       402 Insufficient funds
//   price_change          the name's price goes up by half from now on: a purchase at the old price is refused
//   timeout_after_charge  the purchase is made and charged, then the answer never comes (the socket hangs)
//   rate_limit            the next call for the name is 429 with Retry-After: 1
//   unreachable           503 for the next call for the name
// `GET /_double/charges` lists what was charged (the tests count them). Prices are US dollars.
// A name bought has the DNS name.com serves for it: records listed, created and changed through
// `/core/v1/domains/{name}/records` (a new name answers a parking page's address, as name.com's do);
// `GET /_double/records?name=` shows them.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault = 'unavailable' | 'payment_refused' | 'price_change' | 'timeout_after_charge' | 'rate_limit' | 'unreachable';
const faultNames: readonly Fault[] = [
  'unavailable',
  'payment_refused',
  'price_change',
  'timeout_after_charge',
  'rate_limit',
  'unreachable',
];

/** A year's registration and renewal by TLD, as a registrar's price list. */
const prices: Record<string, [number, number]> = {
  com: [12.99, 14.99],
  net: [13.99, 15.99],
  org: [11.99, 13.99],
  dev: [15, 15],
  app: [16, 16],
  io: [39.99, 44.99],
  test: [1, 1],
};

export interface Charge {
  order: number;
  domainName: string;
  kind: 'registration' | 'renewal';
  years: number;
  amount: number;
  at: string;
}

interface Held {
  domainName: string;
  createDate: Date;
  expireDate: Date;
  locked: boolean;
  autorenewEnabled: boolean;
  records: DoubleRecord[];
}

export interface DoubleRecord {
  id: number;
  host: string;
  type: string;
  answer: string;
  ttl: number;
}

/** Where a new name points until its owner changes it (TEST-NET-1, RFC 5737). */
export const parkingAddress = '192.0.2.10';

export interface NameComDouble {
  url: string;
  /** Sets a fault for a name (`undefined` clears it). */
  fault(name: string, fault: Fault | undefined): void;
  charges(): Charge[];
  /** The DNS records of a name held (empty when not). */
  records(name: string): DoubleRecord[];
  /** Marks a name expired a day ago (a test of what expiry does). */
  expire(name: string, at: Date): void;
  close(): Promise<void>;
}

export async function startNameComDouble(opts: {
  port?: number;
  username: string;
  token: string;
  /** How long a timeout_after_charge answer hangs before the socket is cut. */
  hangMs?: number;
  clock?: () => Date;
}): Promise<NameComDouble> {
  const clock = opts.clock ?? (() => new Date());
  const held = new Map<string, Held>();
  const faults = new Map<string, Fault>();
  /** Names whose price went up (price_change), by how much. */
  const raised = new Map<string, number>();
  const charges: Charge[] = [];
  let nextOrder = 1000;
  let nextRecord = 1;
  const auth = `Basic ${Buffer.from(`${opts.username}:${opts.token}`).toString('base64')}`;

  const priceOf = (name: string): { registration: number; renewal: number; premium: boolean } | undefined => {
    const labels = name.split('.');
    const list = prices[labels[labels.length - 1]!];
    if (!list || labels.length !== 2) return undefined;
    const premium = labels[0]!.startsWith('premium');
    const factor = raised.get(name) ?? 1;
    const [registration, renewal] = premium ? [2500, 2500] : list;
    return { registration: round(registration * factor), renewal: round(renewal * factor), premium };
  };
  const taken = (name: string) => name.split('.')[0]!.startsWith('taken') || faults.get(name) === 'unavailable' || held.has(name);
  const present = (h: Held) => ({
    domainName: h.domainName,
    createDate: h.createDate.toISOString(),
    expireDate: h.expireDate.toISOString(),
    locked: h.locked,
    locks: h.locked ? ['clientTransferProhibited'] : [],
    autorenewEnabled: h.autorenewEnabled,
    privacyEnabled: true,
    renewalPrice: priceOf(h.domainName)?.renewal,
  });
  const charge = (domainName: string, kind: Charge['kind'], years: number, amount: number): number => {
    const order = nextOrder++;
    charges.push({ order, domainName, kind, years, amount, at: clock().toISOString() });
    return order;
  };

  /** name.com's record calls: list, create, update, delete; the name must be held. */
  const records = (
    name: string,
    id: number | undefined,
    method: string | undefined,
    body: unknown,
    send: (status: number, json: unknown) => void,
  ): void => {
    const h = held.get(name);
    if (!h) return send(404, { message: 'Not Found', details: `${name} is not in this account` });
    if (method === 'GET' && id === undefined) return send(200, { records: h.records.map((r) => ({ domainName: name, ...r })) });
    if (method === 'DELETE' && id !== undefined) {
      const at = h.records.findIndex((x) => x.id === id);
      if (at < 0) return send(404, { message: 'Not Found' });
      h.records.splice(at, 1);
      return send(200, {});
    }
    const r = body as Partial<DoubleRecord>;
    if (typeof r.type !== 'string' || typeof r.answer !== 'string' || !['A', 'AAAA', 'CNAME', 'TXT'].includes(r.type))
      return send(400, { message: 'Invalid Argument', details: 'type (A, AAAA, CNAME, TXT) and answer are required' });
    const record = { host: String(r.host ?? ''), type: r.type, answer: r.answer, ttl: Number(r.ttl ?? 300) };
    // DNS allows nothing beside a CNAME: name.com refuses one at a host with other records.
    const clash = h.records.find((x) => x.id !== id && x.host === record.host && (x.type === 'CNAME' || record.type === 'CNAME'));
    if (clash) return send(400, { message: 'Invalid Argument', details: `a CNAME cannot sit beside other records at "${record.host}"` });
    if (method === 'POST' && id === undefined) {
      const made = { id: nextRecord++, ...record };
      h.records.push(made);
      return send(200, { domainName: name, ...made });
    }
    const i = h.records.findIndex((x) => x.id === id);
    if (method === 'PUT' && i >= 0) {
      h.records[i] = { id: id!, ...record };
      return send(200, { domainName: name, ...h.records[i] });
    }
    return send(i < 0 ? 404 : 405, { message: i < 0 ? 'Not Found' : 'Method Not Allowed' });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://double.invalid');
    const body = await readJson(req);
    const send = (status: number, json: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(json));
    };
    // The double's own controls.
    if (url.pathname === '/_double/faults' && req.method === 'POST') {
      const { name, fault } = body as { name?: string; fault?: string };
      if (!name || (fault !== undefined && fault !== null && !faultNames.includes(fault as Fault)))
        return send(400, { message: `fault is one of ${faultNames.join(', ')}` });
      setFault(name.toLowerCase(), (fault ?? undefined) as Fault | undefined);
      return send(200, { name, fault: fault ?? null });
    }
    if (url.pathname === '/_double/charges') return send(200, { charges });
    if (url.pathname === '/_double/records') return send(200, { records: held.get(url.searchParams.get('name') ?? '')?.records ?? [] });
    if (req.headers.authorization !== auth) return send(401, { message: 'Unauthenticated', details: 'bad username or token' });

    const rec = /^\/core\/v1\/domains\/([^/:]+)\/records(?:\/(\d+))?$/.exec(url.pathname);
    if (rec)
      return records(decodeURIComponent(rec[1]!).toLowerCase(), rec[2] === undefined ? undefined : Number(rec[2]), req.method, body, send);
    const m = /^\/core\/v1\/domains(?::checkAvailability|\/([^/:]+)(?::(renew))?)?$/.exec(url.pathname);
    if (!m) return send(404, { message: 'Not Found' });
    const named = body as { domain?: { domainName?: string }; domainNames?: unknown };
    const name = m[1] ? decodeURIComponent(m[1]).toLowerCase() : String(named.domain?.domainName ?? '').toLowerCase();
    // A fault that applies once, to the call that names the name (a check: any of its names).
    const asked = Array.isArray(named.domainNames) ? named.domainNames.map((n) => String(n).toLowerCase()) : [name];
    const faulted = asked.find((n) => faults.get(n) === 'rate_limit' || faults.get(n) === 'unreachable');
    const once = faults.get(faulted ?? name);
    if (once === 'rate_limit' || once === 'unreachable') {
      faults.delete(faulted ?? name);
      return once === 'rate_limit'
        ? send(429, { message: 'Too Many Requests', details: 'rate limit exceeded' }, { 'retry-after': '1' })
        : send(503, { message: 'Service Unavailable' });
    }

    if (url.pathname === '/core/v1/domains:checkAvailability' && req.method === 'POST') {
      const names = ((body as { domainNames?: unknown }).domainNames ?? []) as string[];
      if (!Array.isArray(names) || names.length > 50)
        return send(400, { message: 'Invalid Argument', details: 'domainNames: 1 to 50 names' });
      return send(200, {
        results: names.map((raw) => {
          const n = String(raw).toLowerCase();
          const p = priceOf(n);
          if (!p) return { domainName: n, purchasable: false, reason: 'TLD not supported' };
          if (taken(n)) return { domainName: n, purchasable: false, reason: 'Domain is not available' };
          return {
            domainName: n,
            sld: n.split('.')[0],
            tld: n.split('.')[1],
            purchasable: true,
            premium: p.premium,
            purchasePrice: p.registration,
            purchaseType: 'registration',
            renewalPrice: p.renewal,
          };
        }),
      });
    }
    if (!m[1] && req.method === 'POST') {
      const { years = 1, purchasePrice } = body as { years?: number; purchasePrice?: number };
      const p = priceOf(name);
      if (!p || taken(name)) return send(400, { message: 'Invalid Argument', details: `${name} is not available` });
      if (once === 'payment_refused')
        return send(402, { message: 'Insufficient funds', details: 'the account balance cannot pay for this order' });
      if (purchasePrice !== round(p.registration * years))
        return send(400, {
          message: 'Invalid Argument',
          details: `purchase price ${purchasePrice} does not match ${round(p.registration * years)}`,
        });
      const now = clock();
      const h: Held = {
        domainName: name,
        createDate: now,
        expireDate: addYears(now, years),
        locked: true,
        autorenewEnabled: false,
        records: [{ id: nextRecord++, host: '', type: 'A', answer: parkingAddress, ttl: 300 }],
      };
      held.set(name, h);
      const order = charge(name, 'registration', years, round(p.registration * years));
      if (once === 'timeout_after_charge') return hang(res, faults, name, opts.hangMs);
      return send(200, { domain: present(h), order, totalPaid: round(p.registration * years) });
    }
    const h = held.get(name);
    if (m[2] === 'renew' && req.method === 'POST') {
      if (!h) return send(404, { message: 'Not Found', details: `${name} is not in this account` });
      const { years = 1, purchasePrice } = body as { years?: number; purchasePrice?: number };
      const p = priceOf(name)!;
      if (once === 'payment_refused')
        return send(402, { message: 'Insufficient funds', details: 'the account balance cannot pay for this order' });
      if (purchasePrice !== round(p.renewal * years))
        return send(400, {
          message: 'Invalid Argument',
          details: `purchase price ${purchasePrice} does not match ${round(p.renewal * years)}`,
        });
      h.expireDate = addYears(h.expireDate, years);
      const order = charge(name, 'renewal', years, round(p.renewal * years));
      if (once === 'timeout_after_charge') return hang(res, faults, name, opts.hangMs);
      return send(200, { domain: present(h), order, totalPaid: round(p.renewal * years) });
    }
    if (m[1] && !m[2] && req.method === 'GET') return h ? send(200, present(h)) : send(404, { message: 'Not Found' });
    return send(405, { message: 'Method Not Allowed' });
  };

  const setFault = (name: string, fault: Fault | undefined) => {
    if (fault === undefined) faults.delete(name);
    else faults.set(name, fault);
    if (fault === 'price_change') raised.set(name, (raised.get(name) ?? 1) * 1.5);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: String(err) }));
    });
  });
  server.listen(opts.port ?? 0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    fault: setFault,
    records: (name) => held.get(name)?.records ?? [],
    charges: () => [...charges],
    expire: (name, at) => {
      const h = held.get(name);
      if (h) h.expireDate = at;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The purchase was made; its answer is lost (the fault applies once). */
function hang(res: ServerResponse, faults: Map<string, Fault>, name: string, ms = 60_000): void {
  faults.delete(name);
  setTimeout(() => res.socket?.destroy(), ms).unref();
}

function addYears(d: Date, years: number): Date {
  const out = new Date(d);
  out.setUTCFullYear(out.getUTCFullYear() + years);
  return out;
}

const round = (x: number) => Math.round(x * 100) / 100;

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (!chunks.length) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return {};
  }
}
