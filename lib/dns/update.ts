// RFC 2136 dynamic updates of TXT records, signed with TSIG (tsig.ts), for ACME DNS-01: the issuer
// adds `_acme-challenge.<name> TXT <digest>` to a zone the platform may update and removes it once
// the CA has validated it.
//
// - Over TCP only (RFC 7766 framing): an update and its signed answer fit no matter their size, and
//   an off-path attacker cannot answer first as over UDP.
// - One RR per update, never an RRset: adding keeps the values already there, and removing deletes
//   that value only (class NONE), so the two challenges of `*.x` and `x`, which share
//   `_acme-challenge.x`, can be in flight at once. Both are idempotent on the server (RFC 2136
//   §3.4.2.2, §3.4.2.4): adding a value present or removing one absent answers NOERROR.
// - A value is one character-string of at most 255 bytes, never split: a DNS-01 value is 43 bytes
//   (base64url of a SHA-256), so a longer one is a bug of the caller, and refusing it keeps what
//   removeTxt deletes exactly what addTxt added.
// - The message is encoded here, not with dns-packet: its classes table has no NONE (254) and
//   encodes it as class 0 without a word, and it has no TSIG record; the message is one question
//   and one record, a few lines.
import { randomInt } from 'node:crypto';
import net from 'node:net';
import {
  encodeName,
  isTsigAlgorithm,
  MalformedMessageError,
  rcodeName,
  signMessage,
  tsigErrorName,
  verifyMessage,
  type RcodeName,
  type TsigErrorName,
  type TsigKey,
  type TsigProblem,
  type TsigVerdict,
} from './tsig.js';

export type { TsigAlgorithm, TsigKey } from './tsig.js';

export interface Rfc2136Settings {
  /** The zone's primary server (or any server that forwards updates to it). */
  server: { host: string; port: number };
  /** The zone the records are updated in (the update's zone section): every name must be inside it. */
  zone: string;
  key: TsigKey;
  /** Connection, request and answer together; 10 s by default. */
  timeoutMs?: number;
}

/**
 * One word for why an update failed: the server's TSIG error or RCODE (REFUSED, NOTAUTH, NOTZONE,
 * BADSIG, BADKEY, BADTIME, ...), or one of the client's own:
 * - INVALID: the arguments were refused before anything was sent;
 * - UNREACHABLE: no connection, or it closed before an answer;
 * - TIMEOUT: no answer in timeoutMs;
 * - MALFORMED: an answer that is not a DNS message, or not the answer to this update;
 * - UNSIGNED, BADSIG, BADKEY, BADTIME: an answer claiming success that did not verify.
 */
export type DnsUpdateReason =
  'INVALID' | 'UNREACHABLE' | 'TIMEOUT' | 'MALFORMED' | TsigProblem | RcodeName | TsigErrorName | `RCODE${number}`;

export class DnsUpdateError extends Error {
  override name = 'DnsUpdateError';
  readonly reason: DnsUpdateReason;
  /** The answer's RCODE, when there was an answer. */
  readonly rcode: RcodeName | `RCODE${number}` | undefined;
  /** The answer's TSIG Error field, when it was not 0. */
  readonly tsigError: TsigErrorName | RcodeName | `RCODE${number}` | undefined;
  /**
   * Whether the answer was verified with the key. An unverified answer may be forged; it is only
   * ever taken as a failure, and its words are reported as the server's because a server that
   * cannot verify the request answers unsigned (RFC 8945 §5.2).
   */
  readonly authenticated: boolean;

  constructor(
    message: string,
    details: {
      reason: DnsUpdateReason;
      rcode?: DnsUpdateError['rcode'];
      tsigError?: DnsUpdateError['tsigError'];
      authenticated?: boolean;
      cause?: unknown;
    },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.reason = details.reason;
    this.rcode = details.rcode;
    this.tsigError = details.tsigError;
    this.authenticated = details.authenticated ?? false;
  }
}

const OPCODE_UPDATE = 5;
const TYPE_SOA = 6;
const TYPE_TXT = 16;
const CLASS_IN = 1;
const CLASS_NONE = 254;
const MAX_TTL = 2 ** 31 - 1;

function invalid(message: string): DnsUpdateError {
  return new DnsUpdateError(message, { reason: 'INVALID' });
}

/**
 * A host name as the zone holds it: lowercase, no final dot, labels of letters, digits, `-` and `_`
 * (`_acme-challenge`), 1 to 63 bytes, 253 characters in all. Anything else (a `*`, a space, an
 * escaped dot) has no business in a challenge name and is refused rather than encoded.
 */
function normalizeName(name: string, what: string): string {
  const n = (name.endsWith('.') ? name.slice(0, -1) : name).toLowerCase();
  if (n === '' || n.length > 253) throw invalid(`${what} "${name}" is empty or longer than 253 characters`);
  for (const label of n.split('.'))
    if (!/^[a-z0-9_-]{1,63}$/.test(label)) throw invalid(`${what} "${name}" has a label that is not 1 to 63 of a-z, 0-9, "-", "_"`);
  return n;
}

function txtRdata(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length < 1 || bytes.length > 255) throw invalid(`a TXT value must be 1 to 255 bytes, not ${bytes.length}`);
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

export type TxtChange = { op: 'add'; fqdn: string; value: string; ttl: number } | { op: 'remove'; fqdn: string; value: string };

/**
 * The unsigned UPDATE message of one TXT change in `zone` (RFC 2136 §2): the zone section is the
 * zone's SOA, no prerequisites, one update record, no additional records yet (signMessage adds the
 * TSIG). Throws DnsUpdateError INVALID for a name outside the zone or a value that cannot be sent.
 */
export function encodeTxtUpdate(zone: string, change: TxtChange, id: number): Buffer {
  const z = normalizeName(zone, 'zone');
  const name = normalizeName(change.fqdn, 'name');
  if (name !== z && !name.endsWith(`.${z}`)) throw invalid(`${change.fqdn} is not inside the zone ${z}`);
  const rdata = txtRdata(change.value);
  let ttl = 0;
  if (change.op === 'add') {
    if (!Number.isInteger(change.ttl) || change.ttl < 0 || change.ttl > MAX_TTL) throw invalid(`TTL ${change.ttl} is not 0 to ${MAX_TTL}`);
    ttl = change.ttl;
  }
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(OPCODE_UPDATE << 11, 2);
  header.writeUInt16BE(1, 4); // ZOCOUNT
  header.writeUInt16BE(0, 6); // PRCOUNT
  header.writeUInt16BE(1, 8); // UPCOUNT
  header.writeUInt16BE(0, 10); // ADCOUNT
  const zoneSection = Buffer.alloc(4);
  zoneSection.writeUInt16BE(TYPE_SOA, 0);
  zoneSection.writeUInt16BE(CLASS_IN, 2);
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(TYPE_TXT, 0);
  // Class NONE with TTL 0 deletes this one RR from the RRset (RFC 2136 §2.5.4).
  fixed.writeUInt16BE(change.op === 'add' ? CLASS_IN : CLASS_NONE, 2);
  fixed.writeUInt32BE(ttl, 4);
  fixed.writeUInt16BE(rdata.length, 8);
  return Buffer.concat([header, encodeName(z), zoneSection, encodeName(name), fixed, rdata]);
}

/** One request and its answer over TCP, each with its 2-byte length (RFC 1035 §4.2.2). */
function exchange(server: Rfc2136Settings['server'], request: Buffer, timeoutMs: number): Promise<Buffer> {
  const where = `${server.host}:${server.port}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: server.host, port: server.port });
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (err: DnsUpdateError | undefined, answer?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(answer!);
    };
    const timer = setTimeout(
      () => finish(new DnsUpdateError(`DNS server ${where} did not answer in ${timeoutMs} ms`, { reason: 'TIMEOUT' })),
      timeoutMs,
    );
    socket.on('connect', () => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(request.length);
      // Not end(): a server may take the half-close as the client leaving before it answers.
      socket.write(Buffer.concat([length, request]));
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 2) return;
      const length = received.readUInt16BE(0);
      if (received.length >= 2 + length) finish(undefined, received.subarray(2, 2 + length));
    });
    socket.on('error', (err) =>
      finish(new DnsUpdateError(`DNS server ${where} could not be reached: ${err.message}`, { reason: 'UNREACHABLE', cause: err })),
    );
    socket.on('close', () =>
      finish(new DnsUpdateError(`DNS server ${where} closed the connection before answering`, { reason: 'UNREACHABLE' })),
    );
  });
}

export class Rfc2136Client {
  readonly #settings: Rfc2136Settings;

  constructor(settings: Rfc2136Settings) {
    normalizeName(settings.zone, 'zone');
    normalizeName(settings.key.name, 'TSIG key name');
    if (!isTsigAlgorithm(settings.key.algorithm)) throw invalid(`TSIG algorithm ${String(settings.key.algorithm)} is not supported`);
    if (settings.key.secret.length === 0) throw invalid('the TSIG secret is empty');
    const { port } = settings.server;
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid(`port ${port} is not 1 to 65535`);
    this.#settings = settings;
  }

  /** Adds `value` to the TXT records of `fqdn`, keeping the others. */
  async addTxt(fqdn: string, value: string, ttl = 60): Promise<void> {
    await this.#update({ op: 'add', fqdn, value, ttl });
  }

  /** Removes `value` from the TXT records of `fqdn`, keeping the others; a value not there is success. */
  async removeTxt(fqdn: string, value: string): Promise<void> {
    await this.#update({ op: 'remove', fqdn, value });
  }

  async #update(change: TxtChange): Promise<void> {
    const { server, zone, key, timeoutMs = 10_000 } = this.#settings;
    const id = randomInt(0x10000);
    const signed = signMessage(encodeTxtUpdate(zone, change, id), key, Math.floor(Date.now() / 1000));
    const answer = await exchange(server, signed.message, timeoutMs);
    const what = `DNS update (${change.op} TXT ${change.fqdn}) at ${server.host}:${server.port}`;
    const malformed = (detail: string, cause?: unknown) => new DnsUpdateError(`${what}: ${detail}`, { reason: 'MALFORMED', cause });
    if (answer.length < 12) throw malformed(`a ${answer.length}-byte answer is not a DNS message`);
    const flags = answer.readUInt16BE(2);
    if (answer.readUInt16BE(0) !== id || !(flags & 0x8000) || ((flags >> 11) & 0xf) !== OPCODE_UPDATE)
      throw malformed('the answer is not the answer to this update (ID, QR or opcode differ)');
    const rcode = rcodeName(flags & 0xf);
    let verdict: TsigVerdict;
    try {
      verdict = verifyMessage(answer, key, { requestMac: signed.mac, now: Math.floor(Date.now() / 1000) });
    } catch (err) {
      if (err instanceof MalformedMessageError) throw malformed(err.message, err);
      throw err;
    }
    if (verdict.ok) {
      if (verdict.error !== 0) {
        const tsigError = tsigErrorName(verdict.error);
        throw new DnsUpdateError(`${what} failed: ${rcode}, TSIG error ${tsigError}`, {
          reason: tsigError,
          rcode,
          tsigError,
          authenticated: true,
        });
      }
      if (rcode !== 'NOERROR') throw new DnsUpdateError(`${what} failed: ${rcode}`, { reason: rcode, rcode, authenticated: true });
      return;
    }
    // Unverified: never a success, and the server's own words first, since that is how a server
    // that could not verify the request answers.
    const tsigError = verdict.error === undefined ? undefined : tsigErrorName(verdict.error);
    const reason = tsigError ?? (rcode !== 'NOERROR' ? rcode : verdict.problem);
    throw new DnsUpdateError(
      `${what} failed: ${rcode}${tsigError ? `, TSIG error ${tsigError}` : ''}; the answer is not authenticated (${verdict.problem}: ${verdict.detail})`,
      { reason, rcode, tsigError },
    );
  }
}
