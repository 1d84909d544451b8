// Console sign-in by email: the decisions behind POST /api/console/sign-in and POST /api/console/auth.
// A request for a link is answered the same way, and before anything is looked up, whether or not
// an account has the address (no enumeration by words or timing); the link is made afterwards, for
// an account that has it, within a limit per address counted for every address alike.
import type { Knex } from 'knex';
import type { Account } from '../../lib/accounts.js';
import { RateLimiter as SharedRate } from '../../lib/auth/rate-limit.js';
import type { Logger } from '../../lib/logger.js';
import type { OutgoingMail } from '../../lib/mail/outbox.js';
import type { TokenStore } from '../../lib/tokens/store.js';
import { ConsoleCodes } from './codes.js';
import { consoleSignInMail, signInLink } from './mail.js';
import { sessionLifetimeMs } from './session.js';

export interface ConsoleSignInDeps {
  db: Knex;
  tokens: Pick<TokenStore, 'issue'>;
  mail: { enqueue(msg: OutgoingMail, trx?: Knex): Promise<unknown> };
  /** Links mailed to one address per hour (SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY, shared with app sign-in). */
  perAddressHourly: number;
  /** The API's public origin (config api.publicUrl): where mailed links point, never a request's Host. */
  publicUrl: string;
  log: Logger;
  clock: () => Date;
}

export class ConsoleSignIn {
  readonly codes: ConsoleCodes;
  private readonly rate: SharedRate;

  constructor(private readonly d: ConsoleSignInDeps) {
    this.codes = new ConsoleCodes(d.db, d.clock);
    this.rate = new SharedRate(d.db, d.clock);
  }

  /**
   * Mails a link to the account with this address, if there is one and the address is within its
   * hourly limit, to the API's configured public origin; the code is bound to the browser holding
   * `browserValue` (codes.ts).
   */
  async sendLink(email: string, browserValue: string): Promise<void> {
    // Counted for every address, an account's or not, so the limit itself tells nothing.
    if (!(await this.rate.take(`console:${email}`, this.d.perAddressHourly, 3600_000))) return;
    const account = await this.d.db('accounts').where({ email }).first<Pick<Account, 'id'> | undefined>('id');
    if (!account) return;
    await this.d.db.transaction(async (trx) => {
      const code = await this.codes.create(account.id, browserValue, trx);
      await this.d.mail.enqueue(consoleSignInMail({ email, link: signInLink(this.d.publicUrl, code) }), trx);
    });
    this.d.log.info({ account: account.id }, 'Mailed a console sign-in link');
  }

  /**
   * Presents a mailed code from the browser holding `browser.value`: a new console session token
   * when it redeems, the account's address when the person must confirm first (nothing spent),
   * undefined for a code that is unknown, used or expired.
   */
  async redeem(
    code: string,
    browser: { value: string | undefined; confirmed: boolean },
  ): Promise<{ token: string; maxAgeSeconds: number } | { confirm: string } | undefined> {
    const r = await this.codes.redeem(code, browser);
    if (r.outcome === 'unusable') return undefined;
    if (r.outcome === 'confirm') return { confirm: r.email };
    return this.session(r.accountId, browser.confirmed ? 'email (confirmed in another browser)' : 'email');
  }

  /** A new console session's token for the account, however its owner proved who they are (`how`, logged). */
  async session(accountId: string, how: string): Promise<{ token: string; maxAgeSeconds: number }> {
    const expiresAt = new Date(this.d.clock().getTime() + sessionLifetimeMs);
    const { token } = await this.d.tokens.issue(accountId, { name: 'console', expiresAt });
    this.d.log.info({ account: accountId, how }, 'Signed in to the console');
    return { token, maxAgeSeconds: sessionLifetimeMs / 1000 };
  }
}
