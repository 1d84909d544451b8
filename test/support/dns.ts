// DNS for tests, two ways:
// - startTestDns: a DNS server on loopback the test runs itself (UDP, RFC 1035): answers A and AAAA
//   queries from a table the test controls, where an entry may be a list of answers given in turn (a
//   name that answers one thing first and another later, as a DNS-rebinding attacker's does).
//   Anything else is NXDOMAIN.
// - publish/unpublish: records on the local platform's DNS server (Pebble's pebble-challtestsrv, the
//   `dns` part hack/nodes.sh starts), through its management API; custom domains are verified
//   against it (docs/decisions/0027-app-domains.md). dnsServers() is where to resolve them.
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { isIP } from 'node:net';

export type Answers = string[] | string[][];

export interface TestDns {
  /** `127.0.0.1:<port>`, for Resolver.setServers / SVC_WEBHOOK_DNS_SERVERS. */
  server: string;
  set(name: string, answers: Answers): void;
  /** How many A queries of `name` were answered. */
  asked(name: string): number;
  close(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (msg[i]! !== 0) {
    const len = msg[i]!;
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('latin1'));
    i += 1 + len;
  }
  return { name: labels.join('.').toLowerCase(), end: i + 1 };
}

function rdata(address: string): Buffer {
  if (isIP(address) === 4) return Buffer.from(address.split('.').map(Number));
  // Expand :: and write 8 groups.
  const [head = '', tail = ''] = address.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, k) => out.writeUInt16BE(parseInt(g, 16), k * 2));
  return out;
}

export async function startTestDns(): Promise<TestDns> {
  const table = new Map<string, Answers>();
  const counts = new Map<string, number>();
  const socket: Socket = createSocket('udp4');
  socket.on('message', (msg, from) => {
    if (msg.length < 12) return;
    const { name, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    // Turns are counted per name and type: the A and AAAA queries of one lookup are one turn.
    const key = `${name}/${qtype}`;
    const n = counts.get(key) ?? 0;
    counts.set(key, n + 1);
    const entry = table.get(name);
    const turn: string[] =
      entry === undefined
        ? []
        : Array.isArray(entry[0])
          ? ((entry as string[][])[Math.min(n, entry.length - 1)] ?? [])
          : (entry as string[]);
    const wanted = turn.filter((a) => isIP(a) === (qtype === 28 ? 6 : qtype === 1 ? 4 : -1));
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    // Response, recursion desired and available; NXDOMAIN when the name is unknown.
    header.writeUInt16BE(0x8180 | (entry === undefined ? 3 : 0), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(wanted.length, 6);
    const question = msg.subarray(12, end + 4);
    const answers = wanted.map((a) => {
      const data = rdata(a);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0);
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(0, 6);
      rr.writeUInt16BE(data.length, 10);
      return Buffer.concat([rr, data]);
    });
    socket.send(Buffer.concat([header, question, ...answers]), from.port, from.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return {
    server: `127.0.0.1:${socket.address().port}`,
    set: (name, answers) => {
      table.set(name.toLowerCase(), answers);
      for (const t of [1, 28]) counts.delete(`${name.toLowerCase()}/${t}`);
    },
    asked: (name) => counts.get(`${name.toLowerCase()}/1`) ?? 0,
    close: () => new Promise((r) => socket.close(() => r())),
  };
}

// ---- the local platform's DNS server (pebble-challtestsrv) ---------------------------------------

/**
 * A record on the local DNS server: a TXT record's value, a CNAME's target, an A or AAAA record's
 * address (or addresses). Publishing adds to what the name already has (a second TXT value, more
 * addresses); a CNAME replaces the name's alias, and every query of the name then follows it. Names
 * are matched exactly: the server has no wildcards (`*.shop.example` answers a query of that very
 * name only, not `api.shop.example`).
 */
export type DnsRecord =
  | { type: 'TXT'; name: string; value: string }
  | { type: 'CNAME'; name: string; value: string }
  | { type: 'A' | 'AAAA'; name: string; value: string | readonly string[] };

/** The management API of the local DNS server (hack/test.sh sets SVC_TEST_DNS_MANAGEMENT_URL). */
export function dnsManagementUrl(): string {
  return (process.env.SVC_TEST_DNS_MANAGEMENT_URL || 'http://127.0.0.1:8055').replace(/\/+$/, '');
}

/** The local DNS server, for Resolver.setServers and the API's SVC_DOMAINS_DNS_SERVERS. */
export function dnsServers(): string[] {
  const servers = process.env.SVC_DOMAINS_DNS_SERVERS;
  return servers ? servers.split(',') : ['127.0.0.1:8053'];
}

/** `shop.example` -> `shop.example.`, lowercase: the server matches names exactly as it stored them. */
export function fqdn(name: string): string {
  const lower = name.toLowerCase();
  return lower.endsWith('.') ? lower : `${lower}.`;
}

async function manage(path: string, body: Record<string, unknown>): Promise<void> {
  const url = `${dnsManagementUrl()}${path}`;
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`DNS management API: POST ${url} ${JSON.stringify(body)} answered ${res.status}: ${await res.text()}`);
}

/** Publishes the record on the local DNS server. */
export async function publish(record: DnsRecord): Promise<void> {
  const host = fqdn(record.name);
  switch (record.type) {
    case 'TXT':
      return manage('/set-txt', { host, value: record.value });
    case 'CNAME':
      return manage('/set-cname', { host, target: fqdn(record.value) });
    case 'A':
    case 'AAAA':
      return manage(record.type === 'A' ? '/add-a' : '/add-aaaa', {
        host,
        addresses: typeof record.value === 'string' ? [record.value] : record.value,
      });
  }
}

/** Removes every record of the type at the name (all its TXT values, all its addresses). */
export async function unpublish(record: Pick<DnsRecord, 'type' | 'name'>): Promise<void> {
  const clear = { TXT: '/clear-txt', CNAME: '/clear-cname', A: '/clear-a', AAAA: '/clear-aaaa' } as const;
  return manage(clear[record.type], { host: fqdn(record.name) });
}
