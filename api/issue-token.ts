// Minting an API token for an account within its quota of live tokens: under the account's lock, so
// two requests racing cannot both take the last one. POST /account/tokens and an approved
// `svc login` (api/operations/cli-login.ts) both mint this way.
import type { TokenStore } from '../lib/tokens/store.js';
import type { ApiDeps } from './deps.js';
import { within } from './quotas.js';

type Deps = {
  tokens: Pick<ApiDeps['tokens'], 'list' | 'issue'>;
  accountLock: Pick<ApiDeps['accountLock'], 'hold'>;
  clock: () => Date;
  config: { quotas: Pick<ApiDeps['config']['quotas'], 'tokensPerAccount'> };
};

/**
 * Throws the quota's error when the account cannot take one more live token. Alone (without the
 * lock) it is a forecast: approving a `svc login` checks it so the person hears it in the console,
 * not the terminal after the approval.
 */
export async function assertTokenRoom(s: Omit<Deps, 'accountLock'>, accountId: string): Promise<void> {
  const now = s.clock().getTime();
  const live = (await s.tokens.list(accountId)).filter((t) => !t.revoked && (!t.expiresAt || t.expiresAt.getTime() > now)).length;
  within(live, 1, s.config.quotas.tokensPerAccount, 'live tokens', 'revoke one first (DELETE /account/tokens/{nonce})');
}

export async function issueWithinQuota(
  s: Deps,
  accountId: string,
  opts: Parameters<TokenStore['issue']>[1],
): ReturnType<TokenStore['issue']> {
  return s.accountLock.hold(accountId, async () => {
    await assertTokenRoom(s, accountId);
    return s.tokens.issue(accountId, opts);
  });
}
