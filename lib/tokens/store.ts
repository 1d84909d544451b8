// The server side of tokens: the signing key, the record of minted tokens, revocation, and the
// authentication of a presented token. Everything a request needs is answered from memory: the
// key and token records are cached (they never change), and revocations are mirrored from
// PostgreSQL by polling, so a revocation on any replica takes effect on every replica within the
// poll interval.
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/connection.js';
import { recordEvent } from '../events.js';
import {
  decode,
  effectiveAuthority,
  mint,
  TokenFormatError,
  verifySignature,
  type Authority,
  type DecodedToken,
  type Restriction,
} from './token.js';

export const defaultTokenLifetimeMs = 90 * 24 * 3600 * 1000;

export type RejectionReason = 'malformed' | 'bad_signature' | 'unknown' | 'expired' | 'revoked';

export class TokenRejected extends Error {
  constructor(
    readonly reason: RejectionReason,
    message: string,
  ) {
    super(message);
    this.name = 'TokenRejected';
  }
}

export interface Principal {
  accountId: string;
  nonce: string;
  authority: Authority;
  /** The caveats of the presented token, which tokens it mints inherit. */
  restrictions: Restriction[];
  /**
   * The ids whose revocation ends the presented token: its root nonce, its chain's links and the
   * ancestors of its root. A token it mints carries them all.
   */
  lineage: string[];
  /** The presented token's own id (its last chain link, `tok_…`): revoking it revokes exactly this token and its descendants. */
  id: string;
  /** Minted from another token (POST /account/tokens by a token, or a console-approved login's: no). */
  derived: boolean;
  /**
   * The token as the API minted it under this nonce, no restriction added offline since: only
   * then is revoking `nonce` revoking the presented token itself, and not one it was narrowed from.
   */
  asMinted: boolean;
}

export interface TokenRecord {
  nonce: string;
  name: string | null;
  restrictions: string[];
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
  revoked: boolean;
}

interface TokenRow {
  nonce: string;
  account_id: string;
  name: string | null;
  restrictions: string[];
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
  ancestors: string[];
}

/** What never changes of a minted token: its account, the ancestry it was minted under, its caveats' count. */
interface MintedToken {
  accountId: string;
  ancestors: string[];
  caveats: number;
}

interface Verified {
  decoded: DecodedToken;
  links: string[];
  authority: Authority;
}

const maxCachedTokens = 50_000;
const maxVerifiedTokens = 10_000;
const lastUsedWriteIntervalMs = 60_000;

export class TokenStore {
  private key: { id: string; secret: Buffer } | undefined;
  /** Per minted token (root nonce): its account and the ancestry it was minted under (immutable). */
  private readonly tokens = new Map<string, MintedToken>();
  // A verified token stays verified (the chain is a pure function of the token and the key), so
  // the decode and HMAC work is done once per token; expiry and revocation are checked every time.
  private readonly verified = new Map<string, Verified>();
  private readonly revoked = new Map<string, Set<string>>();
  private revocationSeq = 0;
  private revocationsLoaded: Promise<void> | undefined;
  private revocationsSynced = false;
  private readonly lastUsedWritten = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The signing key, created once for the whole fleet (the first writer wins). */
  private async signingKey(): Promise<{ id: string; secret: Buffer }> {
    if (this.key) return this.key;
    await this.db('token_keys')
      .insert({ id: 'k1', secret: randomBytes(32) })
      .onConflict('id')
      .ignore();
    const row = (await this.db('token_keys').orderBy('created_at', 'asc').first()) as { id: string; secret: Buffer };
    this.key = { id: row.id, secret: row.secret };
    return this.key;
  }

  /**
   * Mints a token for the account. `inherited` are the caller's own restrictions, kept first;
   * `lineage` is the minting token's (Principal.lineage): revoking any of it revokes this one.
   */
  async issue(
    accountId: string,
    opts: {
      name?: string | undefined;
      restrictions?: Restriction[];
      inherited?: Restriction[];
      lineage?: string[];
      expiresAt?: Date | undefined;
    },
  ): Promise<{ token: string; record: TokenRecord }> {
    const { id, secret } = await this.signingKey();
    const now = this.clock();
    const expiresAt = opts.expiresAt ?? new Date(now.getTime() + defaultTokenLifetimeMs);
    expiresAt.setUTCMilliseconds(0);
    const restrictions: Restriction[] = [...(opts.inherited ?? []), ...(opts.restrictions ?? []), { kind: 'expires', at: expiresAt }];
    const nonce = randomBytes(18).toString('base64url');
    const token = mint(secret, id, nonce, restrictions);
    const caveats = decode(token).caveats;
    const effective = effectiveAuthority(restrictions).expiresAt ?? expiresAt;
    const ancestors = [...new Set(opts.lineage ?? [])];
    await this.db.transaction(async (trx) => {
      await trx('api_tokens').insert({
        nonce,
        account_id: accountId,
        name: opts.name ?? null,
        restrictions: JSON.stringify(caveats),
        created_at: now,
        expires_at: effective,
        ancestors: JSON.stringify(ancestors),
      });
      await recordEvent(trx, accountId, 'token.created', nonce, { name: opts.name ?? null, restrictions: caveats });
    });
    this.remember(nonce, { accountId, ancestors, caveats: caveats.length });
    return {
      token,
      record: {
        nonce,
        name: opts.name ?? null,
        restrictions: caveats,
        createdAt: now,
        expiresAt: effective,
        lastUsedAt: null,
        revoked: false,
      },
    };
  }

  async list(accountId: string): Promise<TokenRecord[]> {
    await this.syncRevocations();
    const rows = (await this.db('api_tokens').where({ account_id: accountId }).orderBy('created_at', 'desc')) as TokenRow[];
    const revoked = this.revoked.get(accountId);
    return rows.map((r) => ({
      nonce: r.nonce,
      name: r.name,
      restrictions: r.restrictions,
      createdAt: r.created_at,
      expiresAt: r.expires_at,
      lastUsedAt: r.last_used_at,
      revoked: revoked !== undefined && (revoked.has(r.nonce) || r.ancestors.some((a) => revoked.has(a))),
    }));
  }

  /**
   * Revokes a minted token by its nonce, or any token by its link id (`tok_...`, from `svc token
   * inspect`), and with it every token narrowed from it and every token minted from those (their
   * lineage names it). Returns false when the account minted no token with that nonce.
   */
  async revoke(accountId: string, id: string): Promise<boolean> {
    if (!id.startsWith('tok_')) {
      const row = await this.db('api_tokens').where({ nonce: id, account_id: accountId }).first<object | undefined>();
      if (!row) return false;
    } else if (!/^tok_[A-Za-z0-9_-]{24}$/.test(id)) {
      return false;
    }
    await this.db.transaction(async (trx) => {
      await trx('token_revocations').insert({ account_id: accountId, link_id: id }).onConflict(['account_id', 'link_id']).ignore();
      await recordEvent(trx, accountId, 'token.revoked', id);
    });
    this.markRevoked(accountId, id);
    return true;
  }

  /** Authenticates a presented token; throws TokenRejected with a distinct reason. */
  async authenticate(token: string): Promise<Principal> {
    const { decoded, links, authority } = this.verified.get(token) ?? (await this.verify(token));
    const owner = this.tokens.get(decoded.nonce) ?? (await this.owner(decoded.nonce));
    if (!owner) throw new TokenRejected('unknown', 'invalid token: no such token (its account may be gone)');
    const now = this.clock();
    if (!authority.expiresAt || authority.expiresAt.getTime() <= now.getTime()) {
      throw new TokenRejected('expired', `token expired at ${authority.expiresAt?.toISOString() ?? 'creation (no expiry)'}`);
    }
    if (!this.revocationsSynced) await this.revocationsReady();
    const revoked = this.revoked.get(owner.accountId);
    if (revoked && (revoked.has(decoded.nonce) || links.some((l) => revoked.has(l)) || owner.ancestors.some((a) => revoked.has(a)))) {
      throw new TokenRejected('revoked', 'token revoked');
    }
    this.touch(decoded.nonce, now);
    return {
      accountId: owner.accountId,
      nonce: decoded.nonce,
      authority,
      restrictions: decoded.restrictions,
      lineage: [decoded.nonce, ...links, ...owner.ancestors],
      id: links[links.length - 1]!,
      derived: owner.ancestors.length > 0,
      asMinted: decoded.caveats.length === owner.caveats,
    };
  }

  private async verify(token: string): Promise<Verified> {
    let decoded;
    try {
      decoded = decode(token);
    } catch (err) {
      if (err instanceof TokenFormatError) throw new TokenRejected('malformed', `malformed token: ${err.message}`);
      throw err;
    }
    const key = await this.signingKey();
    const links = decoded.keyId === key.id ? verifySignature(key.secret, decoded) : undefined;
    if (!links) throw new TokenRejected('bad_signature', 'invalid token: signature does not match (tampered or not issued here)');
    if (this.verified.size >= maxVerifiedTokens) this.verified.delete(this.verified.keys().next().value!);
    const result = { decoded, links, authority: effectiveAuthority(decoded.restrictions) };
    this.verified.set(token, result);
    return result;
  }

  /** Starts mirroring revocations made by other replicas. */
  start(pollMs = 250): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.syncRevocations().catch(() => undefined);
    }, pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private revocationsReady(): Promise<void> {
    this.revocationsLoaded ??= this.syncRevocations();
    return this.revocationsLoaded;
  }

  private async syncRevocations(): Promise<void> {
    const rows = await this.db('token_revocations')
      .where('seq', '>', this.revocationSeq)
      .orderBy('seq', 'asc')
      .select<Array<{ seq: string; account_id: string; link_id: string }>>('seq', 'account_id', 'link_id');
    for (const r of rows) {
      this.markRevoked(r.account_id, r.link_id);
      this.revocationSeq = Math.max(this.revocationSeq, Number(r.seq));
    }
    this.revocationsSynced = true;
  }

  private markRevoked(accountId: string, id: string): void {
    let set = this.revoked.get(accountId);
    if (!set) this.revoked.set(accountId, (set = new Set()));
    set.add(id);
  }

  private async owner(nonce: string): Promise<MintedToken | undefined> {
    const cached = this.tokens.get(nonce);
    if (cached) return cached;
    const row = await this.db('api_tokens')
      .where({ nonce })
      .first<{ account_id: string; ancestors: string[]; restrictions: unknown[] } | undefined>('account_id', 'ancestors', 'restrictions');
    if (!row) return undefined;
    return this.remember(nonce, { accountId: row.account_id, ancestors: row.ancestors, caveats: row.restrictions.length });
  }

  private remember(nonce: string, token: MintedToken): MintedToken {
    if (this.tokens.size >= maxCachedTokens) this.tokens.delete(this.tokens.keys().next().value!);
    this.tokens.set(nonce, token);
    return token;
  }

  // last_used_at is informational: written at most once a minute per token, off the request path.
  private touch(nonce: string, now: Date): void {
    const last = this.lastUsedWritten.get(nonce) ?? 0;
    if (now.getTime() - last < lastUsedWriteIntervalMs) return;
    this.lastUsedWritten.set(nonce, now.getTime());
    this.db('api_tokens')
      .where({ nonce })
      .update({ last_used_at: now })
      .catch(() => undefined);
  }
}
