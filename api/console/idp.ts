// Console sign-in at the platform's identity provider (lib/auth/oidc.ts, the `idp` of app policies):
// authorization code with PKCE, its redirect URI the console's page <public origin>/console/idp/callback.
// Opening that page spends nothing: the page presents the callback's query here (POST
// /api/console/idp/finish) with the console's CSRF defences, as a mailed link's page does.
//
// - The flow is bound to the browser that started it: its state, nonce and verifier stay in
//   console_idp_flows with the hash of a cookie only that browser holds; finishing from another
//   browser (a login CSRF: an attacker's own callback URL handed to a victim) is refused.
// - A flow is used once: deleted before the provider is asked anything.
// - The provider proves an address; the account with that address is the one signed in, and only
//   for an address the provider says it verified. The first sign-in binds the provider's subject to
//   the account (account_identities): a later sign-in with another subject for the same address (the
//   mailbox reassigned at the provider) is refused.
import type { Knex } from 'knex';
import { hashSecret } from '../../lib/auth/secrets.js';
import { OidcClient, OidcError, type OidcSaved, type OidcSettings } from '../../lib/auth/oidc.js';
import type { Logger } from '../../lib/logger.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { codeLifetimeMs } from './codes.js';

export const idpRedirectPath = '/console/idp/callback';

export interface ConsoleIdpDeps {
  db: Knex;
  settings: OidcSettings;
  publicUrl: string;
  log: Logger;
  clock: () => Date;
}

const refusals: Record<OidcError['reason'], ErrorCode> = { unavailable: 'unavailable', denied: 'forbidden', invalid: 'invalid_request' };

export class ConsoleIdp {
  private readonly client: OidcClient;
  readonly redirectUri: string;

  constructor(private readonly d: ConsoleIdpDeps) {
    this.client = new OidcClient(d.settings, { log: d.log });
    this.redirectUri = `${new URL(d.publicUrl).origin}${idpRedirectPath}`;
  }

  /** The provider's authorization URL for the browser holding `browserValue`. */
  async start(browserValue: string): Promise<string> {
    const started = await this.client.start({ redirectUri: this.redirectUri }).catch((err: unknown) => {
      throw this.refusal(err);
    });
    const now = this.d.clock();
    await this.d.db('console_idp_flows').where('expires_at', '<=', now).del();
    await this.d.db('console_idp_flows').insert({
      state: started.state.state,
      browser_hash: hashSecret(browserValue),
      secrets: JSON.stringify(started.state),
      expires_at: new Date(now.getTime() + codeLifetimeMs),
    });
    return started.url.href;
  }

  /** Finishes the flow the callback's query names, in the browser holding `browserValue`; the account it signs in. */
  async finish(search: string, browserValue: string | undefined): Promise<string> {
    const query = new URLSearchParams(search);
    const state = query.get('state') ?? '';
    const [flow] = await this.d
      .db('console_idp_flows')
      .where({ state })
      .where('expires_at', '>', this.d.clock())
      .del()
      .returning<Array<{ browser_hash: string; secrets: OidcSaved }>>(['browser_hash', 'secrets']);
    if (!flow)
      throw new ApiError('gone', 'this sign-in at the identity provider is over (used, older than ten minutes, or not ours); start again');
    if (browserValue === undefined || hashSecret(browserValue) !== flow.browser_hash)
      throw new ApiError('forbidden', 'this sign-in was started in another browser; start it again here');
    const callback = new URL(this.redirectUri);
    callback.search = query.toString();
    const who = await this.client.finish(callback, flow.secrets, this.redirectUri).catch((err: unknown) => {
      throw this.refusal(err);
    });
    if (!who.email || !who.emailVerified)
      throw new ApiError(
        'forbidden',
        'the identity provider did not say it verified your email address, so no account can be matched to it',
      );
    const email = who.email.toLowerCase();
    const account = await this.d.db('accounts').whereRaw('lower(email) = ?', [email]).first<{ id: string } | undefined>('id');
    if (!account) throw new ApiError('forbidden', `no svc account has the address ${email}; sign in with the address of your account`);
    await this.bind(account.id, who.subject);
    this.d.log.info({ account: account.id }, 'Signed in to the console at the identity provider');
    return account.id;
  }

  /** The provider's subject belongs to the account: bound at the first sign-in, required at every later one. */
  private async bind(accountId: string, subject: string): Promise<void> {
    const now = this.d.clock();
    await this.d.db.transaction(async (trx) => {
      const bound = await trx('account_identities')
        .where({ provider: 'idp', account_id: accountId })
        .forUpdate()
        .first<{ subject: string } | undefined>('subject');
      if (bound && bound.subject !== subject)
        throw new ApiError(
          'forbidden',
          'this account signs in with another identity at the identity provider (its address may have changed hands there); sign in by email',
        );
      if (bound) await trx('account_identities').where({ provider: 'idp', subject }).update({ last_used_at: now });
      else {
        const taken = await trx('account_identities')
          .where({ provider: 'idp', subject })
          .first<{ account_id: string } | undefined>('account_id');
        if (taken) throw new ApiError('forbidden', 'this identity at the provider signs in to another svc account');
        await trx('account_identities').insert({ provider: 'idp', subject, account_id: accountId, created_at: now, last_used_at: now });
      }
    });
  }

  private refusal(err: unknown): unknown {
    if (!(err instanceof OidcError)) return err;
    this.d.log.warn({ reason: err.reason, err: err.message }, 'Console sign-in at the identity provider failed');
    return new ApiError(refusals[err.reason], `the identity provider: ${err.message}`);
  }
}
