// A real SMTP server (smtp-server) on loopback for tests: no auth, no TLS. It keeps every message
// it accepts and can be told to refuse recipients, temporarily (4xx) or for good (5xx).
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { eventually } from './wait.js';

export interface ReceivedMail {
  /** Envelope sender and recipients (MAIL FROM, RCPT TO). */
  from: string;
  to: string[];
  /** The RFC 822 message as received. */
  raw: string;
  /** Header fields by lower-case name, unfolded (the first of repeated fields). */
  headers: Record<string, string>;
  /** Everything after the header block, as received (still transfer-encoded). */
  body: string;
}

export interface TestSmtp {
  url: string;
  received: ReceivedMail[];
  /** Recipients refused so far. */
  refusals: number;
  /** Refuses every recipient with this SMTP reply code (451: try later; 550: never) until accept(). */
  refuse(code: number, message?: string): void;
  accept(): void;
  /** The first received message that matches, waiting up to timeoutMs for it. */
  waitFor(predicate: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export async function startTestSmtp(): Promise<TestSmtp> {
  let refusal: { code: number; message: string } | undefined;
  const state = { received: [] as ReceivedMail[], refusals: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(_address, _session, done) {
      if (!refusal) return done();
      state.refusals++;
      done(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
    },
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        state.received.push({ from, to: session.envelope.rcptTo.map((r) => r.address), raw, ...parse(raw) });
        done();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    get received() {
      return state.received;
    },
    get refusals() {
      return state.refusals;
    },
    refuse(code, message = code >= 500 ? 'No such mailbox here' : 'Try again later') {
      refusal = { code, message };
    },
    accept() {
      refusal = undefined;
    },
    waitFor: (predicate, timeoutMs = 10_000) =>
      eventually('a matching message at the test SMTP server', () => state.received.find(predicate), { timeoutMs, intervalMs: 50 }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function parse(raw: string): { headers: Record<string, string>; body: string } {
  const end = raw.search(/\r?\n\r?\n/);
  const head = end < 0 ? raw : raw.slice(0, end);
  const body = end < 0 ? '' : raw.slice(end).replace(/^\r?\n\r?\n/, '');
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] ??= line.slice(colon + 1).trim();
  }
  return { headers, body };
}
