// A DNS server on loopback for tests (UDP, RFC 1035): answers A and AAAA queries from a table the
// test controls, where an entry may be a list of answers given in turn (a name that answers one thing
// first and another later, as a DNS-rebinding attacker's does). Anything else is NXDOMAIN.
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
