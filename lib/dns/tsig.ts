// TSIG (RFC 8945): signs a DNS message with a shared key and verifies a signed one. The dynamic
// update client (update.ts) signs each request and refuses any answer this file cannot verify, so a
// forged NOERROR never counts as an update done. Only untruncated MACs are made and accepted: BIND
// and every common server send the full MAC, and accepting truncation would only weaken the check.
import { createHmac, timingSafeEqual } from 'node:crypto';

export type TsigAlgorithm = 'hmac-sha256' | 'hmac-sha512' | 'hmac-sha1';

export interface TsigKey {
  /** The key's name, as the server knows it (`acme-update` or `acme-update.`). */
  name: string;
  algorithm: TsigAlgorithm;
  secret: Buffer;
}

const HASHES: Record<TsigAlgorithm, { hash: string; size: number }> = {
  'hmac-sha256': { hash: 'sha256', size: 32 },
  'hmac-sha512': { hash: 'sha512', size: 64 },
  'hmac-sha1': { hash: 'sha1', size: 20 },
};

export function isTsigAlgorithm(value: string): value is TsigAlgorithm {
  return Object.hasOwn(HASHES, value);
}

export const TYPE_TSIG = 250;
export const CLASS_ANY = 255;
/** Seconds of clock difference allowed either way (RFC 8945 §10 recommends 300). */
export const DEFAULT_FUDGE = 300;

const RCODES = [
  'NOERROR',
  'FORMERR',
  'SERVFAIL',
  'NXDOMAIN',
  'NOTIMP',
  'REFUSED',
  'YXDOMAIN',
  'YXRRSET',
  'NXRRSET',
  'NOTAUTH',
  'NOTZONE',
] as const;
const TSIG_ERRORS = { 16: 'BADSIG', 17: 'BADKEY', 18: 'BADTIME', 19: 'BADMODE', 20: 'BADNAME', 21: 'BADALG', 22: 'BADTRUNC' } as const;

export type RcodeName = (typeof RCODES)[number];
export type TsigErrorName = (typeof TSIG_ERRORS)[keyof typeof TSIG_ERRORS];

/** The mnemonic of a header RCODE (RFC 6895 §2.3); codes nobody assigned stay numbers so they are not mistaken for known ones. */
export function rcodeName(code: number): RcodeName | `RCODE${number}` {
  return RCODES[code] ?? `RCODE${code}`;
}

/** The mnemonic of a TSIG Error field: the TSIG codes, else an RCODE (the field shares their space). */
export function tsigErrorName(code: number): TsigErrorName | RcodeName | `RCODE${number}` {
  return (TSIG_ERRORS as Record<number, TsigErrorName | undefined>)[code] ?? rcodeName(code);
}

/** Bytes that are not a well-formed DNS message (or not where a TSIG record must be). */
export class MalformedMessageError extends Error {
  override name = 'MalformedMessageError';
}

/**
 * A domain name in wire format, uncompressed and lowercased: the canonical form the MAC covers
 * (RFC 8945 §4.3.3), and the form the client sends, so what it signs and sends never differ.
 * Labels are taken as they are; update.ts checks them before a name gets here.
 */
export function encodeName(name: string): Buffer {
  const trimmed = name.endsWith('.') ? name.slice(0, -1) : name;
  const labels = trimmed === '' ? [] : trimmed.toLowerCase().split('.');
  const parts: Buffer[] = [];
  for (const label of labels) {
    const bytes = Buffer.from(label, 'utf8');
    if (bytes.length < 1 || bytes.length > 63) throw new MalformedMessageError(`label "${label}" of ${name} is not 1 to 63 bytes`);
    parts.push(Buffer.from([bytes.length]), bytes);
  }
  parts.push(Buffer.from([0]));
  const out = Buffer.concat(parts);
  if (out.length > 255) throw new MalformedMessageError(`${name} is longer than 255 bytes in wire format`);
  return out;
}

/** Reads a (possibly compressed) name at `offset`; `end` is where the bytes after it start. */
function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  let end: number | undefined;
  // A pointer must point backwards (RFC 1035 §4.1.4), which also ends any loop; the cap is belt and braces.
  for (let hops = 0; hops < 128; hops++) {
    if (at >= msg.length) throw new MalformedMessageError(`name at ${offset} runs past the message`);
    const len = msg[at]!;
    if (len === 0) return { name: labels.join('.'), end: end ?? at + 1 };
    if ((len & 0xc0) === 0xc0) {
      if (at + 1 >= msg.length) throw new MalformedMessageError(`pointer at ${at} runs past the message`);
      const target = msg.readUInt16BE(at) & 0x3fff;
      if (target >= at) throw new MalformedMessageError(`pointer at ${at} does not point backwards`);
      end ??= at + 2;
      at = target;
      continue;
    }
    if (len > 63) throw new MalformedMessageError(`label length ${len} at ${at}`);
    if (at + 1 + len > msg.length) throw new MalformedMessageError(`label at ${at} runs past the message`);
    // Escaped so that a label holding a dot can never read as two labels of another name.
    labels.push(
      msg
        .toString('latin1', at + 1, at + 1 + len)
        .toLowerCase()
        .replace(/[.\\]/g, (c) => `\\${c}`),
    );
    at += 1 + len;
  }
  throw new MalformedMessageError(`name at ${offset} has too many compression pointers`);
}

/** The TSIG record of a message, with where it starts (the MAC covers the bytes before it). */
export interface TsigRecord {
  start: number;
  keyName: string;
  algorithm: string;
  klass: number;
  ttl: number;
  timeSigned: number;
  fudge: number;
  mac: Buffer;
  originalId: number;
  error: number;
  otherData: Buffer;
}

function need(msg: Buffer, at: number, bytes: number, what: string): void {
  if (at + bytes > msg.length) throw new MalformedMessageError(`${what} at ${at} runs past the message`);
}

/**
 * The TSIG record of a message, which must be the last additional record (RFC 8945 §5.1); undefined
 * when the message has none there. Throws MalformedMessageError on bytes that do not parse, or that
 * follow the last record (they would be outside the MAC).
 */
export function findTsig(msg: Buffer): TsigRecord | undefined {
  need(msg, 0, 12, 'header');
  const [qd, an, ns, ar] = [4, 6, 8, 10].map((o) => msg.readUInt16BE(o)) as [number, number, number, number];
  if (ar === 0) return undefined;
  let at = 12;
  for (let i = 0; i < qd; i++) {
    at = readName(msg, at).end;
    need(msg, at, 4, 'question');
    at += 4;
  }
  for (let i = 0; i < an + ns + ar - 1; i++) {
    at = readName(msg, at).end;
    need(msg, at, 10, 'record');
    at += 10 + msg.readUInt16BE(at + 8);
    need(msg, at, 0, 'record data');
  }
  const start = at;
  const owner = readName(msg, at);
  at = owner.end;
  need(msg, at, 10, 'record');
  const type = msg.readUInt16BE(at);
  const klass = msg.readUInt16BE(at + 2);
  const ttl = msg.readUInt32BE(at + 4);
  const rdlength = msg.readUInt16BE(at + 8);
  at += 10;
  if (type !== TYPE_TSIG) return undefined;
  const rdEnd = at + rdlength;
  if (rdEnd !== msg.length) throw new MalformedMessageError(`the TSIG record's data ends at ${rdEnd}, the message at ${msg.length}`);
  const algorithm = readName(msg, at);
  at = algorithm.end;
  need(msg, at, 10, 'TSIG fields');
  const timeSigned = msg.readUIntBE(at, 6);
  const fudge = msg.readUInt16BE(at + 6);
  const macSize = msg.readUInt16BE(at + 8);
  at += 10;
  need(msg, at, macSize + 6, 'TSIG MAC');
  const mac = Buffer.from(msg.subarray(at, at + macSize));
  at += macSize;
  const originalId = msg.readUInt16BE(at);
  const error = msg.readUInt16BE(at + 2);
  const otherLen = msg.readUInt16BE(at + 4);
  at += 6;
  if (at + otherLen !== rdEnd) throw new MalformedMessageError(`the TSIG record's fields do not fill its ${rdlength} bytes`);
  const otherData = Buffer.from(msg.subarray(at, rdEnd));
  return { start, keyName: owner.name, algorithm: algorithm.name, klass, ttl, timeSigned, fudge, mac, originalId, error, otherData };
}

export interface TsigFields {
  timeSigned: number;
  fudge: number;
  error: number;
  otherData: Buffer;
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

/**
 * The MAC of a message (RFC 8945 §4.3.3): over the request's MAC (length-prefixed) when signing or
 * verifying a response, the message as it was without its TSIG record, and the TSIG variables.
 * `message` must carry the original ID and an ARCOUNT that does not count the TSIG record.
 */
export function computeMac(key: TsigKey, message: Buffer, fields: TsigFields, requestMac?: Buffer): Buffer {
  const hmac = createHmac(HASHES[key.algorithm].hash, key.secret);
  if (requestMac) hmac.update(u16(requestMac.length)).update(requestMac);
  const time = Buffer.alloc(6);
  time.writeUIntBE(fields.timeSigned, 0, 6);
  hmac
    .update(message)
    .update(encodeName(key.name))
    .update(u16(CLASS_ANY))
    .update(Buffer.alloc(4)) // TTL 0
    .update(encodeName(key.algorithm))
    .update(time)
    .update(u16(fields.fudge))
    .update(u16(fields.error))
    .update(u16(fields.otherData.length))
    .update(fields.otherData);
  return hmac.digest();
}

export interface SignedMessage {
  message: Buffer;
  /** The MAC sent: the answer's MAC covers it (RFC 8945 §5.3). */
  mac: Buffer;
}

/** Appends a TSIG record to `message` (which must have none), signed at `timeSigned` (seconds since the epoch). */
export function signMessage(message: Buffer, key: TsigKey, timeSigned: number, fudge = DEFAULT_FUDGE): SignedMessage {
  if (message.length < 12) throw new MalformedMessageError('a DNS message is at least its 12-byte header');
  const originalId = message.readUInt16BE(0);
  const mac = computeMac(key, message, { timeSigned, fudge, error: 0, otherData: Buffer.alloc(0) });
  const fixed = Buffer.alloc(10);
  fixed.writeUIntBE(timeSigned, 0, 6);
  fixed.writeUInt16BE(fudge, 6);
  fixed.writeUInt16BE(mac.length, 8);
  const rdata = Buffer.concat([encodeName(key.algorithm), fixed, mac, u16(originalId), u16(0), u16(0)]);
  const header = Buffer.alloc(10);
  header.writeUInt16BE(TYPE_TSIG, 0);
  header.writeUInt16BE(CLASS_ANY, 2);
  header.writeUInt32BE(0, 4);
  header.writeUInt16BE(rdata.length, 8);
  const out = Buffer.concat([message, encodeName(key.name), header, rdata]);
  out.writeUInt16BE(message.readUInt16BE(10) + 1, 10);
  return { message: out, mac };
}

/** Why a signed message could not be trusted, in RFC 8945's words where it has them. */
export type TsigProblem = 'UNSIGNED' | 'BADKEY' | 'BADSIG' | 'BADTIME';

export type TsigVerdict =
  /** The MAC is right: `error` is the TSIG Error field the signer set (a server's signed BADTIME). */
  | { ok: true; error: number; record: TsigRecord }
  /** Not verified; `error` is the Error field of an unverifiable TSIG record (a server's unsigned BADSIG or BADKEY). */
  | { ok: false; problem: TsigProblem; detail: string; error?: number };

function sameName(a: string, b: string): boolean {
  const strip = (s: string) => (s.endsWith('.') ? s.slice(0, -1) : s).toLowerCase();
  return strip(a) === strip(b);
}

/**
 * Verifies the TSIG record of `message` with `key` (RFC 8945 §5.2-5.4): `requestMac` is the MAC of
 * the request when `message` is its answer, `now` the clock in seconds. The MAC is checked before
 * the time, as the RFC orders it. Throws MalformedMessageError on bytes that do not parse.
 */
export function verifyMessage(message: Buffer, key: TsigKey, options: { requestMac?: Buffer; now: number }): TsigVerdict {
  const record = findTsig(message);
  if (!record) return { ok: false, problem: 'UNSIGNED', detail: 'the message has no TSIG record' };
  if (record.klass !== CLASS_ANY || record.ttl !== 0)
    throw new MalformedMessageError(`TSIG record of class ${record.klass} and TTL ${record.ttl} (must be ANY and 0)`);
  const error = record.error === 0 ? {} : { error: record.error };
  if (!sameName(record.keyName, key.name) || !sameName(record.algorithm, key.algorithm))
    return { ok: false, problem: 'BADKEY', detail: `signed with key ${record.keyName} (${record.algorithm})`, ...error };
  // A server that could not verify the request answers with an empty MAC (RFC 8945 §5.2.2, §5.2.3).
  if (record.mac.length === 0) return { ok: false, problem: 'BADSIG', detail: 'the TSIG record carries no MAC', ...error };
  if (record.mac.length !== HASHES[key.algorithm].size)
    return { ok: false, problem: 'BADSIG', detail: `a ${record.mac.length}-byte MAC (truncated MACs are not accepted)`, ...error };
  const unsigned = Buffer.from(message.subarray(0, record.start));
  unsigned.writeUInt16BE(record.originalId, 0);
  unsigned.writeUInt16BE(unsigned.readUInt16BE(10) - 1, 10);
  const expected = computeMac(key, unsigned, record, options.requestMac);
  if (!timingSafeEqual(expected, record.mac)) return { ok: false, problem: 'BADSIG', detail: 'the MAC does not match', ...error };
  // An error the signer reports is the answer already (its time is the request's, RFC 8945 §5.2.3).
  if (record.error !== 0) return { ok: true, error: record.error, record };
  if (Math.abs(options.now - record.timeSigned) > record.fudge)
    return {
      ok: false,
      problem: 'BADTIME',
      detail: `signed at ${record.timeSigned}, ${options.now - record.timeSigned} s from now (fudge ${record.fudge})`,
    };
  return { ok: true, error: 0, record };
}
