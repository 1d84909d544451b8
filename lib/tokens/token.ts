// Attenuable bearer tokens in the macaroon style, with no dependency beyond node:crypto so the CLI
// and any holder can decode, inspect and narrow a token offline.
//
// A token names a root nonce and carries an ordered list of plain-text restrictions. Its signature
// is an HMAC chain: s0 = HMAC(key, "svc-token-v1\0" + keyId + "\0" + nonce), s(i) = HMAC(s(i-1),
// restriction i),
// and the token carries only the last link. Anyone holding a token can append a restriction (they
// know the last link); nobody can remove one (that would need an earlier link). Every restriction
// must hold, so appending a wider one never widens what a token may do.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { dnsLabel } from '../contract.js';

export const tokenPrefix = 'svc_';
export const maxTokenLength = 8192;
export const maxRestrictions = 64;

export const actions = ['read', 'write', 'deploy', 'exec', 'admin'] as const;
export type Action = (typeof actions)[number];

export type Restriction = { kind: 'apps'; apps: string[] } | { kind: 'actions'; actions: Action[] } | { kind: 'expires'; at: Date };

export interface DecodedToken {
  /** Which server key signs the chain (for key rotation). */
  keyId: string;
  nonce: string;
  /** The restrictions exactly as written in the token, in order. */
  caveats: string[];
  restrictions: Restriction[];
  signature: Buffer;
}

export class TokenFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenFormatError';
  }
}

const appName = dnsLabel;
const nonceFormat = /^[A-Za-z0-9_-]{16,64}$/;
const keyIdFormat = /^[A-Za-z0-9_-]{1,32}$/;

/** Parses one restriction; throws TokenFormatError on anything it does not know (fail closed). */
export function parseRestriction(text: string): Restriction {
  const eq = text.indexOf('=');
  const kind = eq < 0 ? text : text.slice(0, eq);
  const value = eq < 0 ? '' : text.slice(eq + 1);
  switch (kind) {
    case 'apps': {
      const apps = value.split(',');
      if (!value || apps.some((a) => !appName.test(a))) throw new TokenFormatError(`bad apps restriction ${JSON.stringify(text)}`);
      return { kind, apps };
    }
    case 'actions': {
      const list = value.split(',');
      if (!value || list.some((a) => !(actions as readonly string[]).includes(a))) {
        throw new TokenFormatError(`bad actions restriction ${JSON.stringify(text)}: actions are ${actions.join(', ')}`);
      }
      return { kind, actions: list as Action[] };
    }
    case 'expires': {
      const at = new Date(value);
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(value) || Number.isNaN(at.getTime())) {
        throw new TokenFormatError(`bad expires restriction ${JSON.stringify(text)}: use an ISO time like 2030-01-01T00:00:00Z`);
      }
      return { kind, at };
    }
    default:
      throw new TokenFormatError(`unknown restriction ${JSON.stringify(kind)}`);
  }
}

export function formatRestriction(r: Restriction): string {
  switch (r.kind) {
    case 'apps':
      return `apps=${r.apps.join(',')}`;
    case 'actions':
      return `actions=${r.actions.join(',')}`;
    case 'expires':
      return `expires=${r.at.toISOString().replace(/\.\d{3}Z$/, 'Z')}`;
  }
}

function hmac(key: Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/** Every link of the chain, first (from the nonce) to last (the token's signature). */
export function chainLinks(key: Buffer, keyId: string, nonce: string, caveats: readonly string[]): Buffer[] {
  const links = [hmac(key, `svc-token-v1\0${keyId}\0${nonce}`)];
  for (const caveat of caveats) links.push(hmac(links[links.length - 1]!, caveat));
  return links;
}

/**
 * The public id of a chain link: what revocation is stored under. A holder can compute the id of
 * its own token's last link offline; the link itself cannot be derived from its id.
 */
export function linkId(link: Buffer): string {
  return 'tok_' + createHash('sha256').update('svc-link\0').update(link).digest('base64url').slice(0, 24);
}

function encode(keyId: string, nonce: string, caveats: readonly string[], signature: Buffer): string {
  const payload = JSON.stringify({ v: 1, k: keyId, n: nonce, r: caveats, s: signature.toString('base64url') });
  return tokenPrefix + Buffer.from(payload, 'utf8').toString('base64url');
}

/** Mints a token: the server side, holding the key. */
export function mint(key: Buffer, keyId: string, nonce: string, restrictions: readonly Restriction[]): string {
  if (!nonceFormat.test(nonce)) throw new TokenFormatError('bad nonce');
  const caveats = restrictions.map(formatRestriction);
  const links = chainLinks(key, keyId, nonce, caveats);
  return encode(keyId, nonce, caveats, links[links.length - 1]!);
}

/** Decodes without verifying: what `svc token inspect` shows. Throws TokenFormatError. */
export function decode(token: string): DecodedToken {
  if (token.length > maxTokenLength) throw new TokenFormatError(`token longer than ${maxTokenLength} characters`);
  if (!token.startsWith(tokenPrefix)) throw new TokenFormatError(`token does not start with ${tokenPrefix}`);
  const body = token.slice(tokenPrefix.length);
  if (!/^[A-Za-z0-9_-]+$/.test(body)) throw new TokenFormatError('token is not base64url');
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw new TokenFormatError('token payload is not JSON');
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) throw new TokenFormatError('token payload is not an object');
  const { v, k, n, r, s, ...rest } = payload as Record<string, unknown>;
  if (Object.keys(rest).length) throw new TokenFormatError(`unknown token fields ${Object.keys(rest).join(', ')}`);
  if (v !== 1) throw new TokenFormatError('unsupported token version');
  if (typeof k !== 'string' || !keyIdFormat.test(k)) throw new TokenFormatError('bad key id');
  if (typeof n !== 'string' || !nonceFormat.test(n)) throw new TokenFormatError('bad nonce');
  if (!Array.isArray(r) || r.length > maxRestrictions || r.some((c) => typeof c !== 'string')) {
    throw new TokenFormatError(`restrictions must be a list of at most ${maxRestrictions} strings`);
  }
  if (typeof s !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(s)) throw new TokenFormatError('bad signature');
  const caveats = r as string[];
  return { keyId: k, nonce: n, caveats, restrictions: caveats.map(parseRestriction), signature: Buffer.from(s, 'base64url') };
}

/** Appends restrictions offline, with nothing but the token. */
export function attenuate(token: string, restrictions: readonly Restriction[]): string {
  const decoded = decode(token);
  const added = restrictions.map(formatRestriction);
  if (decoded.caveats.length + added.length > maxRestrictions) throw new TokenFormatError(`at most ${maxRestrictions} restrictions`);
  let link = decoded.signature;
  for (const caveat of added) link = hmac(link, caveat);
  return encode(decoded.keyId, decoded.nonce, [...decoded.caveats, ...added], link);
}

/**
 * Checks the chain against the server key in constant time. Returns the ids of every link, first
 * to last, for the revocation check; undefined when the signature does not match.
 */
export function verifySignature(key: Buffer, decoded: DecodedToken): string[] | undefined {
  const links = chainLinks(key, decoded.keyId, decoded.nonce, decoded.caveats);
  const last = links[links.length - 1]!;
  if (last.length !== decoded.signature.length || !timingSafeEqual(last, decoded.signature)) return undefined;
  return links.map(linkId);
}

/** What a token may do once all its restrictions are combined. */
export interface Authority {
  /** undefined: every app. */
  apps: ReadonlySet<string> | undefined;
  /** undefined: every action. */
  actions: ReadonlySet<Action> | undefined;
  /** The earliest expiry; undefined only for a token carrying none (the API never mints one). */
  expiresAt: Date | undefined;
}

export function effectiveAuthority(restrictions: readonly Restriction[]): Authority {
  let apps: Set<string> | undefined;
  let acts: Set<Action> | undefined;
  let expiresAt: Date | undefined;
  for (const r of restrictions) {
    if (r.kind === 'apps') apps = apps ? new Set(r.apps.filter((a) => apps!.has(a))) : new Set(r.apps);
    else if (r.kind === 'actions') acts = acts ? new Set(r.actions.filter((a) => acts!.has(a))) : new Set(r.actions);
    else if (!expiresAt || r.at < expiresAt) expiresAt = r.at;
  }
  return { apps, actions: acts, expiresAt };
}

/** The id of the token's own last link, computable offline. */
export function tokenId(token: string): string {
  return linkId(decode(token).signature);
}
