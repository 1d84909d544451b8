// The Ed25519 keys that sign identity assertions, kept in PostgreSQL and shared by every
// ingress-auth replica. A key's life, all of it derived from two timestamps of its row:
//
//   created_at   published in the JWKS from here on (before it signs anything: pre-publication)
//   active_from  signs from here on, until the next key's active_from (its "retirement")
//   retired + maxAssertionLifetime + skew   the last token it signed has expired: dropped from the JWKS
//                                           and deleted
//
// A new key is created publishLead before the current one has signed for rotationMs, so every
// replica (which re-reads the keys every refreshMs) and every app that cached the JWKS has seen the
// new public key before any token is signed with it. Creating keys happens in one transaction under
// a PostgreSQL advisory lock, so replicas that decide to rotate at the same moment create one key.
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JSONWebKeySet, type JWK } from 'jose';
import type { Db } from '../db/connection.js';

export interface AssertionKey {
  kid: string;
  privateKey: KeyObject;
  /** The public key as served: kty OKP, crv Ed25519, x, kid, alg EdDSA, use sig. */
  publicJwk: JWK;
  createdAt: Date;
  activeFrom: Date;
}

export interface AssertionKeyOptions {
  /** How long one key signs before the next one takes over. */
  rotationMs: number;
  /** The longest `exp - iat` of an assertion: how long a retired key stays published. */
  maxAssertionLifetimeMs: number;
  /** A new key is published this long before it signs. Default 15 min, at most half of rotationMs. */
  publishLeadMs?: number;
  /** How often a replica re-reads the keys. Default 60 s. */
  refreshMs?: number;
  /** Added to the time a retired key stays published, for verifiers whose clocks run late. Default 60 s. */
  skewMs?: number;
  clock?: () => Date;
}

interface KeyRow {
  kid: string;
  private_pkcs8: Buffer;
  public_jwk: JWK;
  created_at: Date;
  active_from: Date;
}

/** Keys of one PostgreSQL advisory lock: pg_advisory_xact_lock(classid, objid). */
const lockKey = [0x5376_6331, 0x6173_6b31] as const;

export class AssertionKeyStore {
  private keys: AssertionKey[] = [];
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private readonly rotationMs: number;
  private readonly lifetimeMs: number;
  private readonly leadMs: number;
  private readonly refreshMs: number;
  private readonly skewMs: number;
  private readonly clock: () => Date;

  constructor(
    private readonly db: Db,
    opts: AssertionKeyOptions,
  ) {
    if (!(opts.rotationMs > 0) || !(opts.maxAssertionLifetimeMs > 0))
      throw new Error('rotationMs and maxAssertionLifetimeMs must be positive');
    this.rotationMs = opts.rotationMs;
    this.lifetimeMs = opts.maxAssertionLifetimeMs;
    this.leadMs = Math.min(opts.publishLeadMs ?? 15 * 60_000, Math.floor(opts.rotationMs / 2));
    this.refreshMs = opts.refreshMs ?? 60_000;
    this.skewMs = opts.skewMs ?? 60_000;
    this.clock = opts.clock ?? (() => new Date());
  }

  /** The key that signs now; creates the first key, or the next one when rotation is due. */
  async signingKey(): Promise<AssertionKey> {
    await this.refresh();
    let now = this.clock().getTime();
    if (!this.currentAt(now) || this.rotationDue(now)) {
      await this.ensure(false, false);
      now = this.clock().getTime();
    }
    const key = this.currentAt(now);
    if (!key) throw new Error('no assertion signing key is active');
    return key;
  }

  /** The public keys to publish: the next key (if created), the current one, and retired ones whose tokens may still be alive. */
  async jwks(): Promise<JSONWebKeySet> {
    await this.refresh();
    if (this.keys.length === 0) await this.ensure(false, false);
    const now = this.clock().getTime();
    return { keys: this.published(now).map((k) => ({ ...k.publicJwk })) };
  }

  /**
   * Starts a new key now. Normally it is published first and signs after the publish lead (a
   * key created this way and not yet signing is returned as it is); `immediate` makes it sign at
   * once, for a suspected compromise: apps that cached the JWKS then refetch it on the unknown kid.
   */
  async rotate(opts: { immediate?: boolean } = {}): Promise<AssertionKey> {
    return this.ensure(true, opts.immediate ?? false);
  }

  /** Forgets what was read, so the next call reads the keys again. */
  invalidate(): void {
    this.loadedAt = Number.NEGATIVE_INFINITY;
  }

  private currentAt(now: number): AssertionKey | undefined {
    let current: AssertionKey | undefined;
    for (const k of this.keys) if (k.activeFrom.getTime() <= now) current = k;
    return current;
  }

  private rotationDue(now: number): boolean {
    const latest = this.keys.at(-1);
    if (!latest) return true;
    const from = latest.activeFrom.getTime();
    return from <= now && from + this.rotationMs - this.leadMs <= now;
  }

  /** Keys whose successor began signing so long ago that nothing they signed is still valid. */
  private expired(now: number): Set<string> {
    const gone = new Set<string>();
    for (let i = 0; i + 1 < this.keys.length; i++) {
      const successorFrom = this.keys[i + 1]!.activeFrom.getTime();
      if (successorFrom <= now && successorFrom + this.lifetimeMs + this.skewMs <= now) gone.add(this.keys[i]!.kid);
    }
    return gone;
  }

  private published(now: number): AssertionKey[] {
    const gone = this.expired(now);
    return this.keys.filter((k) => !gone.has(k.kid));
  }

  private async refresh(): Promise<void> {
    if (this.clock().getTime() - this.loadedAt < this.refreshMs) return;
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    await this.loading;
  }

  private async load(db: Db | Parameters<Parameters<Db['transaction']>[0]>[0] = this.db): Promise<void> {
    const rows = (await db('assertion_keys').orderBy('active_from', 'asc')) as KeyRow[];
    this.keys = rows.map(toKey);
    this.loadedAt = this.clock().getTime();
  }

  /** Under the advisory lock: deletes expired keys, creates the first or the next key if needed. */
  private async ensure(force: boolean, immediate: boolean): Promise<AssertionKey> {
    let result: AssertionKey | undefined;
    await this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?, ?)', [lockKey[0], lockKey[1]]);
      await this.load(trx);
      const now = this.clock().getTime();
      const gone = [...this.expired(now)];
      if (gone.length) await trx('assertion_keys').whereIn('kid', gone).delete();
      let latest = this.keys.at(-1);
      const pending = latest && latest.activeFrom.getTime() > now ? latest : undefined;
      if (pending && immediate) {
        // Keys that never signed anything are simply replaced by the one that signs now.
        await trx('assertion_keys').where('active_from', '>', new Date(now)).delete();
        latest = this.currentAt(now);
      }
      if (pending && !immediate) {
        result = pending;
      } else if (!latest || force || this.rotationDue(now)) {
        // The first key signs at once: nobody can hold an older JWKS that lacks it.
        const activeFrom = !latest || immediate ? now : now + this.leadMs;
        const floor = latest ? latest.activeFrom.getTime() + 1 : activeFrom;
        result = await insertKey(trx, new Date(now), new Date(Math.max(activeFrom, floor)));
      }
      await this.load(trx);
    });
    return result ?? this.currentAt(this.clock().getTime())!;
  }
}

async function insertKey(trx: Parameters<Parameters<Db['transaction']>[0]>[0], createdAt: Date, activeFrom: Date): Promise<AssertionKey> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: jwk.x! });
  const publicJwk: JWK = { kty: 'OKP', crv: 'Ed25519', x: jwk.x!, kid, alg: 'EdDSA', use: 'sig' };
  const row: KeyRow = {
    kid,
    private_pkcs8: privateKey.export({ format: 'der', type: 'pkcs8' }),
    public_jwk: publicJwk,
    created_at: createdAt,
    active_from: activeFrom,
  };
  await trx('assertion_keys').insert({ ...row, public_jwk: JSON.stringify(publicJwk) });
  return toKey(row);
}

function toKey(row: KeyRow): AssertionKey {
  return {
    kid: row.kid,
    privateKey: createPrivateKey({ key: row.private_pkcs8, format: 'der', type: 'pkcs8' }),
    publicJwk: row.public_jwk,
    createdAt: row.created_at,
    activeFrom: row.active_from,
  };
}
