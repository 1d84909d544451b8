// The one-time codes of console sign-in links (table console_sign_in_codes): 32 random bytes,
// base64url, in the mailed link only; the table keeps their SHA-256. A code is good for ten minutes
// and one use: the single UPDATE that redeems it sets used_at only on a row not used and not
// expired, so two clicks (or two replicas) racing on one link sign in once.
//
// A code is also bound to the browser that asked for it: that browser holds a random value in an
// HttpOnly cookie (session.ts signInCookieName) whose SHA-256 is stored with the code. Presented
// with it, the code signs in at once. Presented without it (the link opened on another device, by
// a mail scanner, or sent to a victim by someone who asked for a link to their own account), it is
// not spent: the answer names the account, and only a second, confirmed request signs in.
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

/** The stored form of the browser's sign-in value; undefined for none or anything not of its shape. */
export function browserHash(browserValue: string | undefined): string | undefined {
  return isSecretShape(browserValue) ? hashSecret(browserValue) : undefined;
}

/** A new code and the row that stands for it. */
export function newCode(
  accountId: string,
  now: Date,
  browserValue?: string,
): {
  code: string;
  row: { id: string; account_id: string; created_at: Date; expires_at: Date; browser_hash: string | null };
} {
  const code = newSecret();
  return {
    code,
    row: {
      id: hashSecret(code),
      account_id: accountId,
      created_at: now,
      expires_at: new Date(now.getTime() + codeLifetimeMs),
      browser_hash: browserHash(browserValue) ?? null,
    },
  };
}

/** What presenting a code did: signed in, asks for confirmation (spending nothing), or nothing at all. */
export type Redemption = { outcome: 'redeemed'; accountId: string } | { outcome: 'confirm'; email: string } | { outcome: 'unusable' };

export class ConsoleCodes {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Stores a new code for the account, bound to the browser holding `browserValue` (in `trx` when given); returns the code for the link. */
  async create(accountId: string, browserValue: string | undefined, trx: Knex = this.db): Promise<string> {
    const { code, row } = newCode(accountId, this.clock(), browserValue);
    await trx('console_sign_in_codes').insert(row);
    return code;
  }

  /**
   * Presents a code from the browser holding `browserValue`: redeemed once when that is the
   * browser that asked for it or the person `confirmed`; otherwise left unspent, with the
   * account's address to confirm; unusable when unknown, used or expired.
   */
  async redeem(code: string, browser: { value: string | undefined; confirmed: boolean }): Promise<Redemption> {
    if (!isCodeShape(code)) return { outcome: 'unusable' };
    const now = this.clock();
    // Qualified: the confirmation's query joins accounts, which has an id too.
    const usable = () =>
      this.db('console_sign_in_codes')
        .where('console_sign_in_codes.id', hashSecret(code))
        .whereNull('console_sign_in_codes.used_at')
        .where('console_sign_in_codes.expires_at', '>', now);
    const hash = browserHash(browser.value);
    const spend = browser.confirmed
      ? usable()
      : hash === undefined
        ? undefined
        : usable().where('console_sign_in_codes.browser_hash', hash);
    if (spend) {
      const [row] = await spend.update({ used_at: now }).returning<Array<{ account_id: string }>>('account_id');
      this.sweep(now);
      if (row) return { outcome: 'redeemed', accountId: row.account_id };
    }
    if (browser.confirmed) return { outcome: 'unusable' };
    const pending = await usable()
      .join('accounts', 'accounts.id', 'console_sign_in_codes.account_id')
      .first<{ email: string } | undefined>('accounts.email');
    return pending ? { outcome: 'confirm', email: pending.email } : { outcome: 'unusable' };
  }

  /** Expired rows are worth nothing: swept now and then, off the request's answer. */
  private sweep(now: Date): void {
    if (Math.random() >= 0.05) return;
    this.db('console_sign_in_codes')
      .where('expires_at', '<', new Date(now.getTime() - codeLifetimeMs))
      .delete()
      .catch(() => undefined);
  }
}
