// An account's storage as its limit counts it (SVC_STORAGE_MAX_BYTES_PER_ACCOUNT, issue 30 findings 3
// and 4): its databases' volumes, its apps' volume claims (those that exist, attached or not, and
// those its Apps declare that the controller has not made yet), and the stored artifacts it holds
// (deploy uploads, build sources and outputs, backups; each digest once, lib/artifacts/holds.ts).
//
// Every check runs under the account's lock (api/quotas.ts) and takes what it checked before the
// lock is let go: an artifact is put in the store and held in the same step, an App's new volumes are
// written to it and read back into the cache the next count reads. So parallel uploads or deploys at
// the limit cannot each pass a count that did not yet see the others.
import type { Knex } from 'knex';
import { servicesOf } from '../../lib/app-services.js';
import type { ArtifactHolds } from '../../lib/artifacts/holds.js';
import type { ArtifactStore, StagedUpload } from '../../lib/artifacts/store.js';
import { DomainError } from '../../lib/errors.js';
import { recordStorageSample } from '../../lib/usage.js';
import type { App, Database } from '../../lib/resources/index.js';
import { defaultVolumeSize, quantityBytes, volumeClaimName } from '../../lib/volumes.js';
import type { AccountLock } from '../quotas.js';

/** The advisory lock class of one digest: storing it and deleting its file never interleave. */
export const digestLockClass = 30_003;

export interface StorageUse {
  databaseBytes: number;
  volumeBytes: number;
  artifactBytes: number;
  usedBytes: number;
  limitBytes: number;
}

/** The stored_bytes subject of an account's artifacts (docs/api/usage.md): one sample of their sum at each change. */
export const artifactsSubject = 'artifacts';

/** What the account may delete to make room, said with every refusal. */
export const storageHint =
  'delete a database, a detached volume (DELETE /volumes/{ref}), or an app or preview you no longer need (the artifacts only its deploys hold are released at the next collection)';

/** The claims (name → bytes) an App's spec declares: one per machine of each service and volume of it. */
export function declaredClaims(name: string, spec: App['spec']): Map<string, number> {
  const claims = new Map<string, number>();
  for (const service of servicesOf(spec)) {
    for (const v of service.volumes) {
      for (let m = 0; m < service.machines; m++)
        claims.set(volumeClaimName(name, v.name, m), quantityBytes(v.size ?? defaultVolumeSize) ?? 0);
    }
  }
  return claims;
}

export interface StorageDeps {
  lock: Pick<AccountLock, 'hold'>;
  limitBytes: number;
  apps: { list(namespace: string): ReadonlyArray<{ name: string; spec: App['spec'] }> };
  databases: { list(namespace: string): readonly Database[] };
  databaseBytes: (db: Database) => number;
  /** The app volume claims that exist in the namespace, by name, with their sizes. */
  claims: (namespace: string) => Map<string, number>;
  holds: ArtifactHolds;
  store: Pick<ArtifactStore, 'put' | 'size'>;
  db: Knex;
  clock: () => Date;
}

export class AccountStorage {
  /** Releases what the account holds and no longer needs (the collector's account pass), tried once before a refusal. */
  reclaim: ((accountId: string) => Promise<unknown>) | undefined;

  constructor(private readonly d: StorageDeps) {}

  get limitBytes(): number {
    return this.d.limitBytes;
  }

  /** Volume claims the account has or its Apps declare, by name (a made claim by its own size). */
  private volumeClaims(namespace: string): Map<string, number> {
    const claims = new Map<string, number>();
    for (const app of this.d.apps.list(namespace)) for (const [name, bytes] of declaredClaims(app.name, app.spec)) claims.set(name, bytes);
    for (const [name, bytes] of this.d.claims(namespace)) claims.set(name, bytes);
    return claims;
  }

  /** What the account's storage holds now, as its limit counts it. */
  async use(accountId: string, namespace: string): Promise<StorageUse> {
    const databaseBytes = this.d.databases.list(namespace).reduce((sum, db) => sum + this.d.databaseBytes(db), 0);
    const volumeBytes = [...this.volumeClaims(namespace).values()].reduce((sum, b) => sum + b, 0);
    const artifactBytes = await this.d.holds.bytes(accountId);
    return {
      databaseBytes,
      volumeBytes,
      artifactBytes,
      usedBytes: databaseBytes + volumeBytes + artifactBytes,
      limitBytes: this.d.limitBytes,
    };
  }

  /**
   * Bytes of volume claims app `name` would declare with `spec` beyond what the account has or
   * declares: a claim not made nor declared counts whole, one declared but not made yet counts what
   * it grows by (the controller makes it from the newest spec), one already made counts nothing (a
   * made claim keeps its size).
   */
  newVolumeBytes(namespace: string, name: string, spec: App['spec']): number {
    const made = this.d.claims(namespace);
    const declared = new Map<string, number>();
    for (const app of this.d.apps.list(namespace))
      for (const [claim, bytes] of declaredClaims(app.name, app.spec)) declared.set(claim, bytes);
    let more = 0;
    for (const [claim, bytes] of declaredClaims(name, spec)) if (!made.has(claim)) more += Math.max(0, bytes - (declared.get(claim) ?? 0));
    return more;
  }

  /**
   * Refuses (403 quota_exceeded) `more` bytes that would bring the account's storage over its limit;
   * `need` says what asks for them. Call under the account's lock, and take the bytes before it ends.
   */
  async assertFits(accountId: string, namespace: string, more: number, need: string): Promise<void> {
    if (more <= 0) return;
    let use = await this.use(accountId, namespace);
    if (use.usedBytes + more > use.limitBytes && this.reclaim) {
      await this.reclaim(accountId);
      use = await this.use(accountId, namespace);
    }
    if (use.usedBytes + more > use.limitBytes) {
      throw new DomainError(
        'quota_exceeded',
        `${need}, which would bring the account's storage to ${use.usedBytes + more}, over its limit of ${use.limitBytes} bytes (${use.usedBytes} in use); ` +
          `of it ${use.databaseBytes} in databases, ${use.volumeBytes} in volumes, ${use.artifactBytes} in stored artifacts; ${storageHint}`,
      );
    }
  }

  /**
   * Stores a staged upload as the account's: refused (403 quota_exceeded, the staged file discarded,
   * nothing written) when its bytes would pass the limit; bytes the account holds already count once.
   */
  async admit(accountId: string, namespace: string, staged: StagedUpload, what: string): Promise<void> {
    try {
      await this.d.lock.hold(accountId, async () => {
        if (!(await this.d.holds.has(accountId, staged.digest)))
          await this.assertFits(accountId, namespace, staged.size, `${what} needs ${staged.size} bytes`);
        await this.withDigest(staged.digest, async (trx) => {
          await this.d.store.put(staged);
          await this.d.holds.take(accountId, staged.digest, staged.size, this.d.clock(), trx);
        });
        await this.sample(accountId);
      });
    } catch (err) {
      await staged.discard();
      throw err;
    }
  }

  /**
   * Holds an artifact already in the store for the account (a rollback to an older deploy, a build's
   * output deployed), counted and checked like an upload; false when the store no longer has it.
   */
  async holdStored(accountId: string, namespace: string, digest: string, what: string): Promise<boolean> {
    return this.d.lock.hold(accountId, async () => {
      const bytes = await this.d.store.size(digest);
      if (bytes === undefined) return false;
      if (!(await this.d.holds.has(accountId, digest))) await this.assertFits(accountId, namespace, bytes, `${what} needs ${bytes} bytes`);
      const held = await this.withDigest(digest, async (trx) => {
        // Under the digest's lock the collector cannot delete it between the look and the hold.
        if ((await this.d.store.size(digest)) === undefined) return false;
        await this.d.holds.take(accountId, digest, bytes, this.d.clock(), trx);
        return true;
      });
      if (held) await this.sample(accountId);
      return held;
    });
  }

  /** A stored_bytes sample of the account's artifacts, now. */
  private async sample(accountId: string): Promise<void> {
    await recordStorageSample(this.d.db, accountId, artifactsSubject, await this.d.holds.bytes(accountId), this.d.clock());
  }

  private withDigest<T>(digest: string, step: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.d.db.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [digestLockClass, digest]);
      return step(trx);
    });
  }
}
