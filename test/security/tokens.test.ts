// Attacks on token authority (issue 11 items 5 and 6): a read-only token must not become the owner
// (owner links) or read secrets (env values); a token minted by a token must never hold more than its
// maker, and revoking any ancestor of a three-generation chain (through the API, and through offline
// attenuations) must end everything below it and nothing above. Real API and PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { allOperations } from '../../api/server.js';
import { attenuate, decode, tokenId } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';

describe('security: token authority', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
    assert.equal((await api.request('POST', '/api/apps', { body: { name: 'shop' } })).status, 201);
    assert.equal((await api.request('PATCH', '/api/apps/shop/env', { body: { DATABASE_URL: 'postgres://secret' } })).status < 300, true);
  });
  after(async () => api?.close());

  const mint = async (body: Record<string, unknown>, token: string = api.token): Promise<string> => {
    const res = await api.request('POST', '/api/account/tokens', { body, token });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { token: string }).token;
  };
  const statusOf = async (token: string, method = 'GET', path = '/api/account', body?: unknown) => {
    const res = await api.request(method, path, { token, ...(body === undefined ? {} : { body }) });
    await res.body?.cancel();
    return res.status;
  };
  const alive = async (token: string) => (await statusOf(token)) === 200;
  const revoke = async (id: string) => assert.equal((await api.request('DELETE', `/api/account/tokens/${id}`)).status, 204);

  describe('item 5: every operation asks for the action of what it can cause', () => {
    it('a read-only token cannot mint an owner session, nor read env values', async () => {
      for (const read of [await mint({ actions: ['read'] }), attenuate(api.token, [{ kind: 'actions', actions: ['read'] }])]) {
        const link = await api.request('POST', '/api/apps/shop/auth/owner-link', { token: read, body: {} });
        assert.equal(link.status, 403);
        assert.match(((await link.json()) as { error: string }).error, /token lacks action "write"/);
        const env = await api.request('GET', '/api/apps/shop/env', { token: read });
        assert.equal(env.status, 403);
        assert.doesNotMatch(await env.text(), /secret/);
        assert.equal(await statusOf(read, 'GET', '/api/apps/shop'), 200, 'it still reads the app');
      }
      const writer = await mint({ actions: ['write'] });
      assert.notEqual(await statusOf(writer, 'POST', '/api/apps/shop/auth/owner-link', {}), 403);
      assert.equal(await statusOf(writer, 'GET', '/api/apps/shop/env'), 200);
    });

    it('the operation table: nothing that mints sessions or tokens, reveals secrets or changes anything is read', () => {
      const ops = allOperations(api.deps);
      const need: Record<string, string> = {
        'POST /apps/{appID}/auth/owner-link': 'write',
        'GET /apps/{appID}/env': 'write',
        'GET /account/tokens': 'admin',
        'POST /account/tokens': 'admin',
        'DELETE /account/tokens/{nonce}': 'admin',
        'POST /account/webhooks': 'admin',
        'DELETE /account/webhooks/{webhookID}': 'admin',
        'POST /apps/{appID}/deploy': 'deploy',
        'POST /apps/{appID}/rollback': 'deploy',
        // Revokes the caller's own console token and nothing else: taking authority away from oneself
        // raises nobody's, and a session must always be able to end (decision 0031).
        'POST /console/sign-out': 'read',
      };
      const endsOnlyItself = new Set(['POST /console/sign-out']);
      for (const op of ops) {
        const key = `${op.method} ${op.path}`;
        if (need[key]) assert.equal(op.action, need[key], key);
        // Anything but a read of non-secret state needs more than read.
        if (op.method !== 'GET' && op.action !== null && !endsOnlyItself.has(key))
          assert.notEqual(op.action, 'read', `${key} changes something but asks only for read`);
      }
      for (const key of Object.keys(need))
        assert.ok(
          ops.some((o) => `${o.method} ${o.path}` === key),
          `${key} is in the table`,
        );
    });
  });

  describe('item 6: a minted token never outlives or outgrows its maker', () => {
    /** A → B → C, each minted through the API by the one before, plus an offline narrowing of each. */
    async function chain() {
      const a = await mint({ name: 'A', actions: ['read', 'admin'] });
      const b = await mint({ name: 'B' }, a);
      const c = await mint({ name: 'C' }, b);
      const narrow = (t: string) => attenuate(t, [{ kind: 'expires', at: new Date(api.clock.now.getTime() + 7200e3) }]);
      const all = { a, b, c, a1: narrow(a), b1: narrow(b), c1: narrow(c) };
      for (const [name, t] of Object.entries(all)) assert.ok(await alive(t), `${name} works before any revocation`);
      return all;
    }
    const nonceOf = (token: string) => decode(token).nonce;
    const expectAlive = async (tokens: Record<string, string>, want: Record<string, boolean>) => {
      for (const [name, t] of Object.entries(tokens))
        assert.equal(await alive(t), want[name], `${name} ${want[name] ? 'survives' : 'is revoked'}`);
    };

    it('revoking A ends B and C (and every narrowing of them)', async () => {
      const t = await chain();
      await revoke(nonceOf(t.a));
      await expectAlive(t, { a: false, b: false, c: false, a1: false, b1: false, c1: false });
    });

    it('revoking B ends C, not A', async () => {
      const t = await chain();
      await revoke(nonceOf(t.b));
      await expectAlive(t, { a: true, a1: true, b: false, b1: false, c: false, c1: false });
    });

    it('revoking C ends only C', async () => {
      const t = await chain();
      await revoke(nonceOf(t.c));
      await expectAlive(t, { a: true, a1: true, b: true, b1: true, c: false, c1: false });
    });

    it("a token minted by an offline narrowing dies with that narrowing, and the narrowing's parent lives", async () => {
      const a = await mint({ name: 'A', actions: ['read', 'admin'] });
      // Narrowed offline (anyone holding A can), then used to mint through the API.
      const a1 = attenuate(a, [{ kind: 'expires', at: new Date(api.clock.now.getTime() + 7200e3) }]);
      const d = await mint({ name: 'D' }, a1);
      const e = await mint({ name: 'E' }, d);
      await revoke(tokenId(a1));
      await expectAlive({ a, a1, d, e }, { a: true, a1: false, d: false, e: false });
      const listed = (
        (await (await api.request('GET', '/api/account/tokens')).json()) as { tokens: Array<{ name: string; revoked: boolean }> }
      ).tokens;
      assert.deepEqual(
        listed.filter((x) => ['D', 'E'].includes(x.name)).map((x) => x.revoked),
        [true, true],
        'the list shows descendants as revoked',
      );
    });

    it('a revoked token can mint nothing, and what it minted before goes with it', async () => {
      const a = await mint({ name: 'A', actions: ['read', 'admin'] });
      const b = await mint({ name: 'B' }, a);
      await revoke(nonceOf(a));
      const res = await api.request('POST', '/api/account/tokens', { body: { name: 'late' }, token: a });
      assert.equal(res.status, 401);
      assert.equal(await alive(b), false);
    });

    it('a minted token holds no more than its maker: actions and expiry (an app-restricted token mints nothing)', async () => {
      const maker = await mint({ actions: ['read', 'admin'], expires_in: '1h' });
      const res = await api.request('POST', '/api/account/tokens', {
        token: maker,
        body: { actions: ['write', 'deploy'], expires_in: '300d' },
      });
      assert.equal(res.status, 201);
      const child = (await res.json()) as { token: string; expires_at: string };
      assert.ok(Date.parse(child.expires_at) <= api.clock.now.getTime() + 3600e3, "not beyond the maker's expiry");
      assert.equal(await statusOf(child.token, 'DELETE', '/api/apps/shop'), 403, 'no write on shop');
      assert.equal(await statusOf(child.token, 'POST', '/api/apps/shop/deploy', { files: { 'a.html': 'x' } }), 403, 'no deploy');
      assert.equal(await statusOf(child.token, 'POST', '/api/apps', { name: 'blog' }), 403, 'cannot create apps');
      const narrow = attenuate(api.token, [{ kind: 'apps', apps: ['shop'] }]);
      assert.equal(
        await statusOf(narrow, 'POST', '/api/account/tokens', { name: 'wider' }),
        403,
        'an app-restricted token cannot mint an account-wide one',
      );
    });
  });

  describe('a token revoking itself (svc logout with a read-only token)', () => {
    it('any token revokes itself by its nonce or its own id, and nothing else', async () => {
      const reader = await mint({ name: 'reader', actions: ['read'] });
      const other = await mint({ name: 'other', actions: ['read'] });
      const { nonce } = decode(reader);
      assert.equal(await statusOf(reader, 'DELETE', `/api/account/tokens/${decode(other).nonce}`), 403, 'not another token');
      assert.equal(await statusOf(reader, 'DELETE', `/api/account/tokens/${tokenId(other)}`), 403, "not another token's id");
      assert.equal(await statusOf(reader, 'DELETE', `/api/account/tokens/${nonce}`), 204, 'itself, by its nonce');
      assert.equal(await alive(reader), false);
      assert.equal(await alive(other), true, 'the other lives');

      const byId = await mint({ name: 'by id', actions: ['read'] });
      assert.equal(await statusOf(byId, 'DELETE', `/api/account/tokens/${tokenId(byId)}`), 204, 'itself, by its id');
      assert.equal(await alive(byId), false);
      const listed = (await (await api.request('GET', '/api/account/tokens')).json()) as {
        tokens: Array<{ nonce: string; revoked: boolean }>;
      };
      assert.equal(listed.tokens.find((t) => t.nonce === decode(byId).nonce)?.revoked, true, 'listed as revoked');
    });

    it('a token narrowed offline cannot revoke the token it was narrowed from (they share a nonce), only itself', async () => {
      const parent = await mint({ name: 'parent' });
      const narrowed = attenuate(parent, [{ kind: 'actions', actions: ['read'] }]);
      assert.equal(decode(narrowed).nonce, decode(parent).nonce);
      const refused = await api.request('DELETE', `/api/account/tokens/${decode(parent).nonce}`, { token: narrowed });
      assert.equal(refused.status, 403);
      assert.match(((await refused.json()) as { error: string }).error, /token lacks action "admin"/);
      assert.equal(await alive(parent), true, 'the parent lives');
      // Nor by widening the request: the parent's own id, or an app-restricted narrowing's account-wide call.
      assert.equal(await statusOf(narrowed, 'DELETE', `/api/account/tokens/${tokenId(parent)}`), 403);
      const appOnly = attenuate(parent, [{ kind: 'apps', apps: ['shop'] }]);
      assert.equal(await statusOf(appOnly, 'DELETE', `/api/account/tokens/${decode(parent).nonce}`), 403);

      assert.equal(await statusOf(narrowed, 'DELETE', `/api/account/tokens/${tokenId(narrowed)}`), 204, 'itself, by its id');
      assert.equal(await alive(narrowed), false);
      assert.equal(await alive(parent), true, 'the parent still lives');
    });
  });
});
