// Which account holds each custom domain, and when the verifier checks it next (table app_domains,
// lib/db/migrations/0022_app_domains.ts), and each account's ownership token (domain_tokens).
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';

export interface DomainClaim {
  name: string;
  accountId: string;
  namespace: string;
  app: string;
  createdAt: Date;
  nextCheckAt: Date;
  backoffMs: number;
  verifiedAt: Date | undefined;
}

interface Row {
  name: string;
  account_id: string;
  namespace: string;
  app: string;
  created_at: Date;
  next_check_at: Date;
  backoff_ms: number;
  verified_at: Date | null;
}

const claimOf = (r: Row): DomainClaim => ({
  name: r.name,
  accountId: r.account_id,
  namespace: r.namespace,
  app: r.app,
  createdAt: new Date(r.created_at),
  nextCheckAt: new Date(r.next_check_at),
  backoffMs: r.backoff_ms,
  verifiedAt: r.verified_at ? new Date(r.verified_at) : undefined,
});

/** While a replica checks a claimed domain, others leave it alone this long (a lease, not a lock). */
const checkLeaseMs = 30_000;

export class DomainClaims {
  constructor(private readonly db: Knex) {}

  /** The account's ownership token, made on first use (random: nothing about the account can be read from it). */
  async tokenOf(accountId: string): Promise<string> {
    await this.db('domain_tokens')
      .insert({ account_id: accountId, token: randomBytes(20).toString('hex') })
      .onConflict('account_id')
      .ignore();
    const row = (await this.db('domain_tokens').where({ account_id: accountId }).first()) as { token: string };
    return row.token;
  }

  async get(name: string): Promise<DomainClaim | undefined> {
    const row = (await this.db('app_domains').where({ name }).first()) as Row | undefined;
    return row && claimOf(row);
  }

  /** How many names the account holds, and how many of them app `app` has. */
  async counts(accountId: string, app: string): Promise<{ account: number; app: number }> {
    const { rows } = await this.db.raw<{ rows: Array<{ account: number; app: number }> }>(
      'select count(*)::int as account, (count(*) filter (where app = ?))::int as app from app_domains where account_id = ?',
      [app, accountId],
    );
    return rows[0] ?? { account: 0, app: 0 };
  }

  /**
   * Claims `name` for the account's app, first check `firstCheckAt`. Answers the claim now on the
   * name: this one, or whoever held it already (the primary key decides a race).
   */
  async claim(c: { name: string; accountId: string; namespace: string; app: string; now: Date; firstCheckAt: Date }): Promise<DomainClaim> {
    await this.db('app_domains')
      .insert({
        name: c.name,
        account_id: c.accountId,
        namespace: c.namespace,
        app: c.app,
        created_at: c.now,
        next_check_at: c.firstCheckAt,
        backoff_ms: 0,
      })
      .onConflict('name')
      .ignore();
    return (await this.get(c.name))!;
  }

  /** Drops the claim (only the account's own). */
  async release(name: string, accountId: string): Promise<void> {
    await this.db('app_domains').where({ name, account_id: accountId }).delete();
  }

  /** The claims due a check, taken by this caller: their next check moved by a lease first, so replicas share the work. */
  async takeDue(now: Date, limit = 20): Promise<DomainClaim[]> {
    const rows = (await this.db('app_domains')
      .whereIn(
        'name',
        this.db('app_domains')
          .select('name')
          .where('next_check_at', '<=', now)
          .orderBy('next_check_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .update({ next_check_at: new Date(now.getTime() + checkLeaseMs) })
      .returning('*')) as Row[];
    return rows.map(claimOf);
  }

  /** After a check: when the next one is, the back-off, and since when the name is verified. */
  async schedule(name: string, s: { nextCheckAt: Date; backoffMs: number; verifiedAt: Date | undefined }): Promise<void> {
    await this.db('app_domains')
      .where({ name })
      .update({ next_check_at: s.nextCheckAt, backoff_ms: s.backoffMs, verified_at: s.verifiedAt ?? null });
  }
}
