// The one-time codes of console sign-in links (table console_sign_in_codes): 32 random bytes,
// base64url, in the mailed link only; the table keeps their SHA-256. A code is good for ten minutes
// and one use: the single UPDATE that redeems it sets used_at only on a row not used and not
// expired, so two clicks (or two replicas) racing on one link sign in once.
import type { Knex } from 'knex';
import { hashSecret, isSecretShape, newSecret } from '../../lib/auth/secrets.js';

export const codeLifetimeMs = 10 * 60_000;

/** A code as it may arrive in a link: the shape of newSecret(), nothing else. */
export const isCodeShape = isSecretShape;

export interface CodeRow {
  expiresAt: Date;
  usedAt: Date | null;
}

/** Whether a stored code may still be redeemed at `now`, and if not, why (for logs and tests). */
export function codeState(row: CodeRow | undefined, now: Date): 'usable' | 'unknown' | 'used' | 'expired' {
  if (!row) return 'unknown';
  if (row.usedAt) return 'used';
  return row.expiresAt.getTime() > now.getTime() ? 'usable' : 'expired';
}

/** A new code and the row that stands for it. */
export function newCode(
  accountId: string,
  now: Date,
): { code: string; row: { id: string; account_id: string; created_at: Date; expires_at: Date } } {
  const code = newSecret();
  return {
    code,
    row: { id: hashSecret(code), account_id: accountId, created_at: now, expires_at: new Date(now.getTime() + codeLifetimeMs) },
  };
}

export class ConsoleCodes {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Stores a new code for the account (in `trx` when given); returns the code for the link. */
  async create(accountId: string, trx: Knex = this.db): Promise<string> {
    const { code, row } = newCode(accountId, this.clock());
    await trx('console_sign_in_codes').insert(row);
    return code;
  }

  /** Redeems a code once: the account it was made for, or undefined when it is unknown, used or expired. */
  async redeem(code: string): Promise<string | undefined> {
    if (!isCodeShape(code)) return undefined;
    const now = this.clock();
    const [row] = await this.db('console_sign_in_codes')
      .where({ id: hashSecret(code) })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .update({ used_at: now })
      .returning<Array<{ account_id: string }>>('account_id');
    // Expired rows are worth nothing: swept now and then, off this request's answer.
    if (Math.random() < 0.05) {
      this.db('console_sign_in_codes')
        .where('expires_at', '<', new Date(now.getTime() - codeLifetimeMs))
        .delete()
        .catch(() => undefined);
    }
    return row?.account_id;
  }
}
