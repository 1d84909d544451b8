// `svc login`'s device-code flow (RFC 8628's shape, as `gh auth login` uses it): the CLI starts a
// login and gets a device code (which only it holds, 32 random bytes, stored as its SHA-256) and a
// short user code; the person opens the console, which shows the login by its user code with the
// device's name and address, and approves or denies it with their console session; the CLI, polling
// with its device code, collects the token once. Everything within ten minutes.
import { randomInt } from 'node:crypto';
import type { Knex } from 'knex';
import { hashSecret, isSecretShape, newSecret } from '../../lib/auth/secrets.js';
import type { OutgoingMail } from '../../lib/mail/outbox.js';
import type { Action } from '../../lib/tokens/token.js';
import { cliLoginApprovedMail } from './mail.js';

export const loginLifetimeMs = 10 * 60_000;
/** Seconds the CLI waits between polls; a faster poll is answered 429 (RFC 8628's slow_down). */
export const pollIntervalSeconds = 2;

// No vowels (no words), no look-alikes (0/O, 1/I): 20 letters, 8 of them, 2.56e10 codes.
const alphabet = 'BCDFGHJKLMNPQRSTVWXZ';

/** A new user code, XXXX-XXXX. */
export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += alphabet[randomInt(alphabet.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** A user code as a person may type it (lower case, no dash, spaces) in its one form; undefined when it cannot be one. */
export function normalUserCode(input: string): string | undefined {
  const letters = input.toUpperCase().replace(/[\s-]/g, '');
  if (letters.length !== 8 || [...letters].some((c) => !alphabet.includes(c))) return undefined;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}

export type LoginState = 'pending' | 'approved' | 'denied' | 'collected' | 'expired';

export interface LoginView {
  userCode: string;
  name: string;
  requestedFrom: string;
  createdAt: Date;
  expiresAt: Date;
  state: LoginState;
}

interface Row {
  id: string;
  user_code: string;
  name: string;
  requested_from: string;
  created_at: Date;
  expires_at: Date;
  state: 'pending' | 'approved' | 'denied' | 'collected';
  polled_at: Date | null;
  account_id: string | null;
  actions: Action[] | null;
  token_days: number | null;
}

/** A row's state at `now`: an unfinished login past its time has expired. */
export function stateAt(row: Pick<Row, 'state' | 'expires_at'>, now: Date): LoginState {
  if ((row.state === 'pending' || row.state === 'approved') && row.expires_at.getTime() <= now.getTime()) return 'expired';
  return row.state;
}

/** What a poll answers: still waiting, the grant to mint a token for (once), too fast, or over. */
export type Poll =
  | { outcome: 'pending' }
  | { outcome: 'slow_down' }
  | { outcome: 'approved'; accountId: string; name: string; actions: Action[] | null; tokenDays: number }
  | { outcome: 'over'; state: LoginState | 'unknown' };

export class CliLogins {
  constructor(
    private readonly db: Knex,
    /** The owner's notice of each approval goes out through the outbox, in the approval's transaction. */
    private readonly mail: { enqueue(msg: OutgoingMail, trx?: Knex): Promise<unknown> },
    /** The API's public origin, for the console's tokens page the notice links to. */
    private readonly publicUrl: string,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Starts a login for a CLI at `from`: its device code (for the CLI only) and user code (for the person). */
  async start(name: string, from: string): Promise<{ deviceCode: string; userCode: string; expiresAt: Date }> {
    const now = this.clock();
    const deviceCode = newSecret();
    const expiresAt = new Date(now.getTime() + loginLifetimeMs);
    // A user code already in use (1 in 2.56e10 per live login) is drawn again.
    for (let attempt = 0; ; attempt++) {
      const userCode = newUserCode();
      const inserted = await this.db('cli_logins')
        .insert({
          id: hashSecret(deviceCode),
          user_code: userCode,
          name,
          requested_from: from,
          created_at: now,
          expires_at: expiresAt,
          state: 'pending',
        })
        .onConflict('user_code')
        .ignore()
        .returning('id');
      if (inserted.length === 1) {
        this.sweep(now);
        return { deviceCode, userCode, expiresAt };
      }
      if (attempt > 5) throw new Error('no free user code after several draws');
    }
  }

  /** The login a user code names, as the console shows it; undefined for none. */
  async view(userCode: string): Promise<LoginView | undefined> {
    const row = await this.db('cli_logins').where({ user_code: userCode }).first<Row | undefined>();
    if (!row) return undefined;
    return {
      userCode: row.user_code,
      name: row.name,
      requestedFrom: row.requested_from,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      state: stateAt(row, this.clock()),
    };
  }

  /**
   * Decides a pending login for the account: approved with the token's actions (null: all the
   * approver has) and lifetime, by a console session (its token's nonce, its address, the
   * account's address the notice goes to), or denied. False when it is no longer pending (decided,
   * expired).
   */
  async decide(
    userCode: string,
    decision:
      | {
          approve: true;
          accountId: string;
          actions: Action[] | null;
          tokenDays: number;
          approver: { nonce: string; from: string; email: string };
        }
      | { approve: false },
  ): Promise<boolean> {
    const now = this.clock();
    if (!decision.approve) {
      const n = await this.db('cli_logins')
        .where({ user_code: userCode, state: 'pending' })
        .where('expires_at', '>', now)
        .update({ state: 'denied' });
      return n === 1;
    }
    return this.db.transaction(async (trx) => {
      const [row] = await trx('cli_logins')
        .where({ user_code: userCode, state: 'pending' })
        .where('expires_at', '>', now)
        .update({
          state: 'approved',
          account_id: decision.accountId,
          actions: decision.actions ? JSON.stringify(decision.actions) : null,
          token_days: decision.tokenDays,
          approved_by: decision.approver.nonce,
          approved_from: decision.approver.from,
        })
        .returning<Row[]>('*');
      if (!row) return false;
      await this.mail.enqueue(
        cliLoginApprovedMail({
          email: decision.approver.email,
          name: row.name,
          requestedFrom: row.requested_from,
          approvedFrom: decision.approver.from,
          approvedAt: now,
          actions: decision.actions,
          tokenDays: decision.tokenDays,
          tokensUrl: `${this.publicUrl}/console/tokens`,
        }),
        trx,
      );
      return true;
    });
  }

  /**
   * A CLI's poll with its device code. An approved login is collected by the one UPDATE that moves
   * it to collected, so two polls racing get one token.
   */
  async poll(deviceCode: string): Promise<Poll> {
    if (!isSecretShape(deviceCode)) return { outcome: 'over', state: 'unknown' };
    const now = this.clock();
    const id = hashSecret(deviceCode);
    const [collected] = await this.db('cli_logins')
      .where({ id, state: 'approved' })
      .where('expires_at', '>', now)
      .update({ state: 'collected', polled_at: now })
      .returning<Row[]>('*');
    if (collected) {
      return {
        outcome: 'approved',
        accountId: collected.account_id!,
        name: collected.name,
        actions: collected.actions,
        tokenDays: collected.token_days!,
      };
    }
    const row = await this.db('cli_logins').where({ id }).first<Row | undefined>();
    if (!row) return { outcome: 'over', state: 'unknown' };
    const state = stateAt(row, now);
    if (state !== 'pending') return { outcome: 'over', state };
    // Polled faster than the interval (a little slack for timers): told to slow down.
    const early = row.polled_at && now.getTime() - row.polled_at.getTime() < pollIntervalSeconds * 1000 - 250;
    await this.db('cli_logins').where({ id }).update({ polled_at: now });
    return early ? { outcome: 'slow_down' } : { outcome: 'pending' };
  }

  /** Finished and expired rows are worth nothing: swept now and then, off the request's answer. */
  private sweep(now: Date): void {
    if (Math.random() >= 0.05) return;
    this.db('cli_logins')
      .where('expires_at', '<', new Date(now.getTime() - loginLifetimeMs))
      .delete()
      .catch(() => undefined);
  }
}
