// Authentication and authorization of one operation: the bearer token must verify, and its
// restrictions must allow the operation's action and app. Refusals name what is lacking. Without an
// Authorization header, the console's session cookie is taken instead, but only with its CSRF
// defences (api/console/session.ts); a bearer header always wins.
import { type Account } from '../../lib/accounts.js';
import { TokenRejected, type Principal } from '../../lib/tokens/store.js';
import { ApiError } from '../errors.js';
import { csrfRefusal, readCookie, sessionCookieName, type BrowserRequest } from '../console/session.js';
import type { AuthenticatedOperation, Caller } from '../operation.js';
import type { ApiDeps } from '../deps.js';

const accountCacheMs = 30_000;

/** Tokens verified, and the accounts they name. */
export interface AuthenticatorDeps {
  tokens: Pick<ApiDeps['tokens'], 'authenticate'>;
  accounts: ApiDeps['accounts'];
}

export class Authenticator {
  private readonly accounts = new Map<string, { account: Account; at: number }>();

  constructor(private readonly s: AuthenticatorDeps) {}

  /**
   * The principal of a request: its bearer token, or, with no Authorization header at all, the
   * console's session cookie of `browser` when the request passes the CSRF checks (403 naming the
   * defence otherwise).
   */
  async authenticate(authorization: string | undefined, browser?: BrowserRequest): Promise<Principal> {
    const presented = this.presented(authorization, browser);
    if (presented?.viaCookie) {
      const refusal = csrfRefusal(browser!);
      if (refusal) throw new ApiError('forbidden', refusal);
    }
    if (!presented) {
      throw new ApiError('authentication_required', 'authentication required: send Authorization: Bearer <token>', {
        'WWW-Authenticate': 'Bearer realm="svc"',
      });
    }
    return this.verify(presented.token);
  }

  /**
   * The token a request presents: its bearer, or, with no Authorization header at all, the
   * console's session cookie (not yet checked against the CSRF defences: authenticate does that).
   * A stream re-checks this same token while it lasts (Caller.credential).
   */
  presented(authorization: string | undefined, browser?: BrowserRequest): { token: string; viaCookie: boolean } | undefined {
    if (authorization === undefined && browser) {
      const session = readCookie(browser.cookie, sessionCookieName(browser.secure));
      if (session !== undefined) return { token: session, viaCookie: true };
    }
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
    return match ? { token: match[1]!, viaCookie: false } : undefined;
  }

  private async verify(token: string): Promise<Principal> {
    try {
      return await this.s.tokens.authenticate(token);
    } catch (err) {
      if (err instanceof TokenRejected) {
        throw new ApiError('invalid_token', err.message, { 'WWW-Authenticate': 'Bearer realm="svc", error="invalid_token"' });
      }
      throw err;
    }
  }

  authorize(op: AuthenticatedOperation, principal: Principal): void {
    const { actions, apps } = principal.authority;
    if (actions && !actions.has(op.action)) throw new ApiError('forbidden', `token lacks action "${op.action}"`);
    // An apps restriction on an app's operations is checked where the app is resolved, by name or
    // ID (api/app-access.ts resolveApp), for every operation alike.
    if (apps && op.accountWide) {
      throw new ApiError('forbidden', `token lacks account-wide access (it is restricted to apps ${[...apps].join(', ') || '(none)'})`);
    }
  }

  async caller(principal: Principal, credential: string): Promise<Caller> {
    const now = Date.now();
    const cached = this.accounts.get(principal.accountId);
    if (cached && now - cached.at < accountCacheMs) return { principal, account: cached.account, credential };
    const account = await this.s.accounts.get(principal.accountId);
    if (!account) throw new ApiError('invalid_token', 'invalid token: its account no longer exists');
    this.accounts.set(principal.accountId, { account, at: now });
    return { principal, account, credential };
  }
}
