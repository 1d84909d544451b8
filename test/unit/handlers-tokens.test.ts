// POST/GET/DELETE /account/tokens (api/operations/account.ts) against in-memory fakes
// (test/support/fake-api.ts): the validation of names, actions, apps and expiries, the 4XX of
// tokens that may not mint, the live-token quota, and no escalation through a restricted token.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { accountOperations } from '../../api/operations/account.js';
import { fakes, startFakeApi, type FakeApi } from '../support/fake-api.js';
import { errorOf } from '../support/answers.js';

interface Created {
  token: string;
  nonce: string;
  name: string | null;
  restrictions: string[];
  expires_at: string;
}

describe('token handlers', () => {
  let api: FakeApi;
  before(async () => {
    api = await startFakeApi((f) => accountOperations(f), fakes({ SVC_ACCOUNT_MAX_TOKENS: '3', SVC_API_BODY_LIMIT_BYTES: '2048' }));
  });
  after(async () => {
    await api?.close();
  });
  beforeEach(() => {
    api.f.tokens.records.length = 0;
    api.f.time.now = new Date('2026-11-27T12:00:00.000Z');
  });

  const create = async (body: unknown, token?: string): Promise<Created> => {
    const res = await api.request('POST', '/api/account/tokens', body, { token });
    assert.equal(res.status, 201, res.text);
    return res.body as Created;
  };
  const error = errorOf;

  it('creates a token that works, lists it without its secret, and revokes it', async () => {
    const t = await create({ name: 'ci', actions: ['read'], apps: ['shop'] });
    assert.equal(t.name, 'ci');
    assert.deepEqual((await api.request('GET', '/api/account', undefined, { token: t.token })).status, 200);
    const listed = await api.request('GET', '/api/account/tokens');
    assert.equal(listed.status, 200, listed.text);
    assert.ok(!listed.text.includes(t.token), 'the list never shows a token');
    assert.deepEqual(
      (listed.body as { tokens: Array<{ nonce: string; revoked: boolean; current: boolean }> }).tokens.map((x) => [
        x.nonce,
        x.revoked,
        x.current,
      ]),
      [[t.nonce, false, false]],
    );
    // Listed with that token itself, it is the current one.
    const own = await api.request('GET', '/api/account/tokens', undefined, { token: t.token });
    assert.equal(own.status, 403, 'read only: listing tokens wants admin');
    const admin = await create({ name: 'admin' });
    const mine = await api.request('GET', '/api/account/tokens', undefined, { token: admin.token });
    assert.deepEqual(
      (mine.body as { tokens: Array<{ nonce: string; current: boolean }> }).tokens.filter((x) => x.current).map((x) => x.nonce),
      [admin.nonce],
    );
    assert.equal((await api.request('DELETE', `/api/account/tokens/${t.nonce}`)).status, 204);
    error(await api.request('GET', '/api/account', undefined, { token: t.token }), 401, /revoked/);
    error(await api.request('DELETE', '/api/account/tokens/AAAAAAAAAAAAAAAAAAAAAAAA'), 404, /^token AAAAAAAAAAAAAAAAAAAAAAAA not found$/);
  });

  it('refuses an invalid body with a 400 naming the field, minting nothing', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ name: 'x'.repeat(101) }, /^invalid body: name: /],
      [{ name: '   ' }, /^invalid body: name: /],
      [{ actions: ['fly'] }, /^invalid body: actions\.0: /],
      [{ actions: [] }, /^invalid body: actions: /],
      [{ apps: ['Shop'] }, /^invalid body: apps\.0: must be an app name/],
      [{ bogus: 1 }, /Unrecognized key: "bogus"/],
      ['[1,2]', /^invalid body/],
      ['{"name": ', /malformed JSON/],
      [{ expires_in: '5 minutes' }, /^invalid body: expires_in: must be a duration like 30m, 12h or 90d$/],
      [{ expires_at: 'tomorrow' }, /^invalid body: expires_at: /],
      [{ expires_at: '2001-01-01T00:00:00Z' }, /^expires_at: must be in the future$/],
      [{ expires_in: '400d' }, /^expires_at: at most 366 days ahead$/],
      [{ expires_in: '1h', expires_at: '2026-12-01T00:00:00Z' }, /expires_at: give expires_in or expires_at, not both/],
    ];
    for (const [body, message] of cases) error(await api.request('POST', '/api/account/tokens', body), 400, message);
    assert.equal(api.f.tokens.records.length, 0);
  });

  it('takes expires_in from the API clock, and expires_at as given', async () => {
    assert.equal((await create({ expires_in: '1h' })).expires_at, '2026-11-27T13:00:00.000Z');
    assert.equal((await create({ expires_at: '2026-12-04T12:00:00Z' })).expires_at, '2026-12-04T12:00:00.000Z');
  });

  it('refuses tokens that lack admin or are restricted to apps, and keeps a minted token within its parent', async () => {
    const readOnly = api.f.tokens.tokenWith([{ kind: 'actions', actions: ['read'] }]);
    error(await api.request('POST', '/api/account/tokens', {}, { token: readOnly }), 403, /^token lacks action "admin"$/);
    const shopOnly = api.f.tokens.tokenWith([{ kind: 'apps', apps: ['shop'] }]);
    error(await api.request('GET', '/api/account/tokens', undefined, { token: shopOnly }), 403, /^token lacks account-wide access/);
    error(await api.request('DELETE', '/api/account/tokens/x', undefined, { token: shopOnly }), 403, /account-wide/);
    // Minted with a token of only read and admin, a token asking for deploy still lacks it.
    const limited = api.f.tokens.tokenWith([{ kind: 'actions', actions: ['read', 'admin'] }]);
    const child = await create({ actions: ['deploy', 'read'] }, limited);
    assert.ok(child.restrictions.includes('actions=read,admin'), child.restrictions.join(' '));
    assert.ok(child.restrictions.includes('actions=deploy,read'), child.restrictions.join(' '));
    error(await api.request('POST', '/api/account/tokens', {}, { token: child.token }), 403, /^token lacks action "admin"$/);
    assert.equal(api.f.tokens.records.length, 1);
  });

  it('answers 405 with Allow, 413 before reading a body over the limit, 415 for a body not JSON, 400 for bad queries', async () => {
    const put = await api.request('PUT', '/api/account/tokens');
    error(put, 405, /^method PUT not allowed on \/api\/account\/tokens$/);
    assert.equal(put.headers.get('allow'), 'GET, POST');
    error(await api.request('POST', '/api/account/tokens', { name: 'x'.repeat(4096) }), 413, /larger than 2048 bytes/);
    error(
      await api.request('POST', '/api/account/tokens', '{}', { headers: { 'content-type': 'text/plain' } }),
      415,
      /Content-Type: application\/json/,
    );
    error(await api.request('GET', '/api/account/events?limit=0'), 400, /^invalid query: limit: /);
    error(await api.request('GET', '/api/account/usage/history?months=99'), 400, /^invalid query: months: /);
    error(await api.request('GET', '/api/account/usage/history?bucket=day&months=3'), 400, /months goes with bucket=month/);
    error(await api.request('GET', '/elsewhere', undefined, { token: null }), 404);
    assert.equal(api.f.tokens.records.length, 0);
  });

  it('refuses a token past the live-token quota (403)', async () => {
    const limit = api.f.config.quotas.tokensPerAccount;
    assert.equal(limit, 3);
    for (let i = 0; i < limit; i++) await create({ name: `t${i}` });
    error(await api.request('POST', '/api/account/tokens', { name: 'one more' }), 403, new RegExp(`live tokens, its limit is ${limit}`));
    assert.equal(api.f.tokens.records.length, limit);
    // A revoked one no longer counts.
    assert.equal((await api.request('DELETE', `/api/account/tokens/${api.f.tokens.records[0]!.nonce}`)).status, 204);
    await create({ name: 'now it fits' });
  });
});
