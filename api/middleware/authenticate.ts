// Authentication and authorization of one operation: the bearer token must verify, and its
// restrictions must allow the operation's action and app. Refusals name what is lacking.
import { type Account } from '../../lib/accounts.js';
import { TokenRejected, type Principal } from '../../lib/tokens/store.js';
import { ApiError } from '../errors.js';
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

  async authenticate(authorization: string | undefined): Promise<Principal> {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match) {
      throw new ApiError('authentication_required', 'authentication required: send Authorization: Bearer <token>', {
        'WWW-Authenticate': 'Bearer realm="svc"',
      });
    }
    try {
      return await this.s.tokens.authenticate(match[1]!);
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

  async caller(principal: Principal): Promise<Caller> {
    const now = Date.now();
    const cached = this.accounts.get(principal.accountId);
    if (cached && now - cached.at < accountCacheMs) return { principal, account: cached.account };
    const account = await this.s.accounts.get(principal.accountId);
    if (!account) throw new ApiError('invalid_token', 'invalid token: its account no longer exists');
    this.accounts.set(principal.accountId, { account, at: now });
    return { principal, account };
  }
}
