// Attack: a disabled app user signs back in (issue 11 item 11). The policy lists ada's address; an
// identity provider and a code host both vouch for it. Disabling her must end every session of the
// address and refuse her through every provider until she is enabled again. Real oidc-provider, the
// code host's double, API, ingress-auth and deployed machines. (Email links and passkeys of a
// disabled user: test/integration/ingress-auth-email.test.ts and ingress-auth-providers.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Browser } from '../support/ingress.js';
import { uniqueName } from '../support/kube.js';
import { startProviderPlatform, type ProviderPlatform } from '../support/providers.js';
import { eventually } from '../support/wait.js';

describe('security: disabled means out, through every provider', () => {
  let p: ProviderPlatform;
  const app = uniqueName('listed');

  before(async () => {
    p = await startProviderPlatform({
      apps: { [app]: 'emails: [ada@other.test]' },
      idpAccounts: [{ sub: 'ada', email: 'ada@other.test', emailVerified: true, name: 'Ada' }],
      codehostUsers: [{ login: 'ada-gh', emails: [{ email: 'ada@other.test', verified: true, primary: true }] }],
    });
  });
  after(async () => p?.close());

  const users = async () =>
    ((await (await p.api.request('GET', `/api/apps/${app}/auth/users`)).json()) as { users: Array<{ id: string; email: string }> }).users;
  const setUser = async (id: string, action: 'disable' | 'enable') =>
    assert.equal((await p.api.request('POST', `/api/apps/${app}/auth/users/${id}/${action}`)).status, 200);

  it('ends the sessions of every provider and refuses each provider until enabled again', async () => {
    const byIdp = new Browser(p.ia.url);
    assert.equal((await p.providerSignIn(byIdp, app, 'idp', 'ada')).status, 200);
    const byCodehost = new Browser(p.ia.url);
    assert.equal((await p.providerSignIn(byCodehost, app, 'codehost', 'ada-gh')).status, 200);
    for (const b of [byIdp, byCodehost]) assert.equal((await p.fetchJson(b, app, '/api/echo')).status, 200);
    const ada = (await users()).find((u) => u.email === 'ada@other.test')!;
    await setUser(ada.id, 'disable');
    // Every ingress-auth replica drops its cached copies when PostgreSQL notifies the revocation (ms).
    await eventually(
      'every session of the address to end',
      async () => {
        for (const b of [byIdp, byCodehost]) if ((await p.fetchJson(b, app, '/api/echo')).status !== 401) return false;
        return true;
      },
      { timeoutMs: 2_000, intervalMs: 50 },
    );
    for (const [provider, who] of [
      ['idp', 'ada'],
      ['codehost', 'ada-gh'],
    ] as const) {
      const again = new Browser(p.ia.url);
      const r = await p.providerSignIn(again, app, provider, who);
      assert.equal(r.status, 403, `${provider}: ${r.body}`);
      assert.match(r.body, /disabled/);
      assert.equal((await p.fetchJson(again, app, '/api/echo')).status, 401, `${provider} made no session`);
    }
    await setUser(ada.id, 'enable');
    const back = new Browser(p.ia.url);
    assert.equal((await p.providerSignIn(back, app, 'codehost', 'ada-gh')).status, 200, 'enabled again, she is in again');
    assert.equal((await p.fetchJson(back, app, '/api/echo')).status, 200);
  });
});
