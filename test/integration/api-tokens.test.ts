// API tokens end to end: create with restrictions, list, revoke (parent kills children, child
// leaves parent), revocation across replicas within a second, expiry edges on an injected clock,
// and no escalation when a restricted token mints another.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount } from '../../lib/accounts.js';
import { attenuate, decode, tokenId } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';

interface Created {
  token: string;
  nonce: string;
  name: string | null;
  restrictions: string[];
  created_at: string;
  expires_at: string;
}

describe('API tokens', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api?.close();
  });

  async function create(body: unknown, token?: string): Promise<Created> {
    const res = await api.request('POST', '/api/account/tokens', { body, ...(token ? { token } : {}) });
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()) as Created;
  }
  const status = async (token: string, path = '/api/account') => {
    const res = await api.request('GET', path, { token });
    await res.body?.cancel();
    return res.status;
  };

  it('creates a token with name, restrictions and a 90-day default expiry, shown in the list', async () => {
    const t = await create({ name: 'ci', apps: ['shop'], actions: ['read', 'deploy'] });
    assert.match(t.token, /^svc_/);
    assert.deepEqual(t.restrictions.slice(-3, -1), ['apps=shop', 'actions=read,deploy']);
    const days = (Date.parse(t.expires_at) - api.clock.now.getTime()) / 86400e3;
    assert.ok(days > 89.99 && days <= 90, `expires in ${days} days`);
    assert.equal(decode(t.token).nonce, t.nonce);
    const list = (await (await api.request('GET', '/api/account/tokens')).json()) as {
      tokens: Array<{ nonce: string; name: string; revoked: boolean; restrictions: string[] }>;
    };
    const listed = list.tokens.find((x) => x.nonce === t.nonce);
    assert.equal(listed?.name, 'ci');
    assert.equal(listed?.revoked, false);
    assert.deepEqual(listed?.restrictions, t.restrictions);
    assert.ok(!JSON.stringify(list).includes(t.token), 'the list never shows a token');
  });

  it('accepts expires_in and expires_at, refuses past and too distant expiries', async () => {
    const inHour = await create({ expires_in: '1h' });
    assert.equal(Date.parse(inHour.expires_at), Math.floor((api.clock.now.getTime() + 3600e3) / 1000) * 1000);
    const at = new Date(api.clock.now.getTime() + 7 * 86400e3).toISOString().replace(/\.\d+Z$/, 'Z');
    assert.equal((await create({ expires_at: at })).expires_at, at.replace('Z', '.000Z'));
    for (const body of [
      { expires_in: '5 minutes' },
      { expires_at: '2001-01-01T00:00:00Z' },
      { expires_in: '400d' },
      { expires_in: '1h', expires_at: at },
    ]) {
      const res = await api.request('POST', '/api/account/tokens', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      await res.body?.cancel();
    }
  });

  it('enforces expiry at the exact instant, on the injected clock', async () => {
    const t = await create({ expires_in: '10m' });
    assert.equal(await status(t.token), 200);
    const saved = api.clock.now;
    api.clock.now = new Date(Date.parse(t.expires_at) - 1);
    assert.equal(await status(t.token), 200);
    api.clock.now = new Date(Date.parse(t.expires_at));
    const res = await api.request('GET', '/api/account', { token: t.token });
    assert.equal(res.status, 401);
    assert.match(((await res.json()) as { error: string }).error, /^token expired at /);
    // An attenuated expiry earlier than the token's own wins.
    api.clock.now = saved;
    const soon = attenuate(t.token, [{ kind: 'expires', at: new Date(saved.getTime() + 60_000) }]);
    api.clock.advance(61_000);
    assert.equal(await status(soon), 401);
    assert.equal(await status(t.token), 200);
    api.clock.now = saved;
  });

  it('revoking a token revokes every token narrowed from it', async () => {
    const parent = await create({ name: 'parent' });
    const child = attenuate(parent.token, [{ kind: 'actions', actions: ['read'] }]);
    const grandchild = attenuate(child, [{ kind: 'apps', apps: ['shop'] }]);
    assert.equal(await status(child), 200);
    const del = await api.request('DELETE', `/api/account/tokens/${parent.nonce}`);
    assert.equal(del.status, 204);
    for (const t of [parent.token, child, grandchild]) {
      const res = await api.request('GET', '/api/account', { token: t });
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as { error: string }).error, 'token revoked');
    }
    const list = (await (await api.request('GET', '/api/account/tokens')).json()) as { tokens: Array<{ nonce: string; revoked: boolean }> };
    assert.equal(list.tokens.find((x) => x.nonce === parent.nonce)?.revoked, true);
  });

  it('revoking a narrowed token (by its id) leaves its parent working', async () => {
    const parent = await create({ name: 'keeps working' });
    const child = attenuate(parent.token, [{ kind: 'actions', actions: ['read', 'admin'] }]);
    const sibling = attenuate(parent.token, [{ kind: 'apps', apps: ['blog'] }]);
    const del = await api.request('DELETE', `/api/account/tokens/${tokenId(child)}`);
    assert.equal(del.status, 204);
    assert.equal(await status(child), 401);
    assert.equal(await status(parent.token), 200);
    assert.equal(await status(sibling, '/api/apps/blog'), 404, 'accepted (no app blog here), not refused');
  });

  it('a revocation takes effect within a second on another API replica', async () => {
    const replica = await api.replica();
    const t = await create({ name: 'replicated' });
    const viaReplica = async () => (await fetch(`${replica.url}/api/account`, { headers: { authorization: `Bearer ${t.token}` } })).status;
    assert.equal(await viaReplica(), 200);
    const started = Date.now();
    assert.equal((await api.request('DELETE', `/api/account/tokens/${t.nonce}`)).status, 204);
    await eventually('the replica to refuse the revoked token', async () => (await viaReplica()) === 401, {
      timeoutMs: 1000,
      intervalMs: 20,
    });
    assert.ok(Date.now() - started < 1000);
  });

  it('a restricted token mints only tokens at least as narrow as itself', async () => {
    const narrow = attenuate(api.token, [{ kind: 'actions', actions: ['read', 'admin'] }]);
    const minted = await create({ name: 'from narrow', actions: ['read', 'deploy', 'admin'] }, narrow);
    assert.ok(minted.restrictions.includes('actions=read,admin'), minted.restrictions.join(' '));
    const res = await api.request('POST', '/api/account/tokens', { token: minted.token, body: {} });
    assert.equal(res.status, 201);
    await res.body?.cancel();
    const deployRes = await api.request('POST', '/api/apps/shop/deploy', { token: minted.token, body: {} });
    assert.equal(deployRes.status, 403);
    assert.equal(((await deployRes.json()) as { error: string }).error, 'token lacks action "deploy"');
  });

  it('another account cannot revoke this account’s tokens', async () => {
    const t = await create({ name: 'mine' });
    const account = await createAccount(api.db, api.kube.core, { email: `other-${Date.now()}@example.test` });
    try {
      const other = await api.deps.tokens.issue(account.id, {});
      const res = await api.request('DELETE', `/api/account/tokens/${t.nonce}`, { token: other.token });
      assert.equal(res.status, 404);
      await res.body?.cancel();
      assert.equal(await status(t.token), 200);
    } finally {
      await api.kube.core.deleteNamespace({ name: account.namespace }).catch(() => undefined);
    }
  });
});
