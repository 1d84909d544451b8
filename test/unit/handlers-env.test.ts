// The env operations (api/operations/apps.ts) against in-memory fakes (test/support/fake-api.ts): set,
// list and unset, an attached database's variables listed beside the app's own (masked, with their
// source), the 4XX of bad input and of tokens that lack the action or the app, with nothing written on
// a refusal. The same handlers, router and error mapping as the API; no cluster.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { appOperations } from '../../api/operations/apps.js';
import { account, startFakeApi, type FakeApi } from '../support/fake-api.js';

describe('env handlers', () => {
  let api: FakeApi;
  before(async () => {
    api = await startFakeApi((f) => appOperations(f));
  });
  after(async () => {
    await api?.close();
  });
  beforeEach(() => {
    api.f.apps.objects.clear();
    api.f.env.byApp.clear();
    api.f.env.writes = 0;
    api.f.events.log.length = 0;
    api.f.apps.put(account.namespace, 'envy');
  });

  const env = async () => {
    const res = await api.request('GET', '/api/apps/envy/env');
    assert.equal(res.status, 200, res.text);
    return (res.body as { env: Record<string, string> }).env;
  };
  const error = (res: { status: number; body: unknown; text: string }, status: number, message?: RegExp) => {
    assert.equal(res.status, status, res.text);
    const e = (res.body as { error: string }).error;
    assert.equal(typeof e, 'string', res.text);
    if (message) assert.match(e, message);
    return e;
  };

  it('keeps env with PUT (replace), PATCH (merge, null removes) and DELETE of one key, by name and by ID', async () => {
    assert.deepEqual(await env(), {});
    const put = await api.request('PUT', '/api/apps/envy/env', { A: '1', B: '2' });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body, { env: { A: '1', B: '2' }, provided: [] });
    const patch = await api.request('PATCH', '/api/apps/envy/env', { B: null, C: '3' });
    assert.deepEqual(patch.body, { env: { A: '1', C: '3' }, provided: [] });
    assert.equal((await api.request('DELETE', '/api/apps/envy/env/A')).status, 204);
    assert.deepEqual(await env(), { C: '3' });
    const id = (await api.f.apps.find(account.namespace, 'envy'))!.id;
    assert.deepEqual((await api.request('GET', `/api/apps/${id}/env`)).body, { env: { C: '3' }, provided: [] });
    // env.changed names keys, never values.
    assert.deepEqual(
      api.f.events.log.map((e) => [e.type, e.subject, e.data]),
      [
        ['env.changed', 'envy', { set: ['A', 'B'], removed: [] }],
        ['env.changed', 'envy', { set: ['C'], removed: ['B'] }],
        ['env.changed', 'envy', { set: [], removed: ['A'] }],
      ],
    );
  });

  it("lists an attached database's variables beside the app's own, masked, with their source and what they override", async () => {
    api.f.apps.put(account.namespace, 'envy', { database: 'orders' });
    type Provided = { name: string; source: { kind: string; name: string }; masked: boolean; overrides: boolean };
    const put = await api.request('PUT', '/api/apps/envy/env', { DATABASE_URL: 'postgres://mine', A: '1' });
    assert.equal(put.status, 200, put.text);
    const got = await api.request('GET', '/api/apps/envy/env');
    const body = got.body as { env: Record<string, string>; provided: Provided[] };
    // The app's own, unchanged: the one it set stays listed (and settable), though its machines get the database's.
    assert.deepEqual(body.env, { DATABASE_URL: 'postgres://mine', A: '1' });
    assert.deepEqual(
      body.provided.map((v) => [v.name, v.source.kind, v.source.name, v.masked, v.overrides, Object.keys(v).length]),
      [
        ['PGHOST', 'database', 'orders', true, false, 4],
        ['PGPORT', 'database', 'orders', true, false, 4],
        ['PGUSER', 'database', 'orders', true, false, 4],
        ['PGPASSWORD', 'database', 'orders', true, false, 4],
        ['PGDATABASE', 'database', 'orders', true, false, 4],
        ['DATABASE_URL', 'database', 'orders', true, true, 4],
      ],
    );
    assert.deepEqual(put.body, got.body, 'a write answers the same');
    const patch = await api.request('PATCH', '/api/apps/envy/env', { DATABASE_URL: null });
    assert.equal((patch.body as { provided: Provided[] }).provided.find((v) => v.name === 'DATABASE_URL')?.overrides, false);
    // No value of a provided variable, not even a placeholder: name, source, masked and overrides only (the 4 above).
    assert.ok(!got.text.includes('postgres://$('));
    // Provided variables are not the app's own: not deletable one by one.
    error(await api.request('DELETE', '/api/apps/envy/env/PGHOST'), 404, /^variable PGHOST of app envy not found$/);
    // Another app's token sees none of them.
    const otherApp = api.f.tokens.tokenWith([{ kind: 'apps', apps: ['blog'] }]);
    error(await api.request('GET', '/api/apps/envy/env', undefined, { token: otherApp }), 403, /^token lacks app "envy"$/);
  });

  it('records no event when nothing changed', async () => {
    await api.request('PUT', '/api/apps/envy/env', { A: '1' });
    await api.request('PUT', '/api/apps/envy/env', { A: '1' });
    await api.request('PATCH', '/api/apps/envy/env', {});
    assert.equal(api.f.events.log.length, 1);
  });

  it('refuses bad input with a 400 naming the field, and writes nothing', async () => {
    await api.request('PUT', '/api/apps/envy/env', { C: '3' });
    const writes = api.f.env.writes;
    // zod reports a bad record key as such, not with the key schema's message.
    error(await api.request('PUT', '/api/apps/envy/env', { '1X': 'v' }), 400, /^invalid body: 1X: Invalid key in record$/);
    error(await api.request('PATCH', '/api/apps/envy/env', { 'A-B': 'v' }), 400, /^invalid body: A-B: /);
    error(await api.request('PATCH', '/api/apps/envy/env', { A: 5 }), 400, /^invalid body: A: /);
    error(await api.request('PUT', '/api/apps/envy/env', { A: 'x'.repeat(32 * 1024 + 1) }), 400, /^invalid body: A: /);
    error(await api.request('PUT', '/api/apps/envy/env', ['A']), 400, /^invalid body/);
    const many = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`V${i}`, 'v']));
    error(await api.request('PUT', '/api/apps/envy/env', many), 400, /at most 256 variables/);
    const more = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`V${i}`, 'v']));
    error(await api.request('PATCH', '/api/apps/envy/env', more), 400, /^invalid body: at most 256 variables$/);
    error(await api.request('PUT', '/api/apps/envy/env', '{"A": '), 400, /malformed JSON/);
    error(await api.request('PUT', '/api/apps/envy/env', 'A=1', { headers: { 'content-type': 'text/plain' } }), 415, /application\/json/);
    assert.equal(api.f.env.writes, writes, 'refused changes write nothing');
    assert.deepEqual(await env(), { C: '3' });
    assert.equal(api.f.events.log.length, 1, 'and record nothing');
  });

  it('answers 404 for an unknown app or variable', async () => {
    error(await api.request('GET', '/api/apps/nowhere/env'), 404, /^app nowhere not found$/);
    error(await api.request('PUT', '/api/apps/nowhere/env', { A: '1' }), 404, /app nowhere/);
    error(await api.request('GET', '/api/apps/00000000-0000-4000-8000-000000000000/env'), 404);
    error(await api.request('DELETE', '/api/apps/envy/env/A'), 404, /^variable A of app envy not found$/);
    assert.equal(api.f.env.writes, 0);
  });

  it('refuses a token without the action or the app (403) and a request without a token (401)', async () => {
    const readOnly = api.f.tokens.tokenWith([{ kind: 'actions', actions: ['read'] }]);
    // Values are secrets: even reading them takes write.
    error(await api.request('GET', '/api/apps/envy/env', undefined, { token: readOnly }), 403, /^token lacks action "write"$/);
    error(await api.request('PUT', '/api/apps/envy/env', { A: '1' }, { token: readOnly }), 403, /^token lacks action "write"$/);
    const otherApp = api.f.tokens.tokenWith([{ kind: 'apps', apps: ['blog'] }]);
    error(await api.request('PATCH', '/api/apps/envy/env', { A: '1' }, { token: otherApp }), 403, /^token lacks app "envy"$/);
    const id = (await api.f.apps.find(account.namespace, 'envy'))!.id;
    error(await api.request('GET', `/api/apps/${id}/env`, undefined, { token: otherApp }), 403, /^token lacks app "envy"$/);
    const envyOnly = api.f.tokens.tokenWith([{ kind: 'apps', apps: ['envy'] }]);
    assert.equal((await api.request('PUT', '/api/apps/envy/env', { A: '1' }, { token: envyOnly })).status, 200);
    const missing = await api.request('GET', '/api/apps/envy/env', undefined, { token: null });
    error(missing, 401, /authentication required/);
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer/);
    error(await api.request('GET', '/api/apps/envy/env', undefined, { token: 'svc_unknown' }), 401, /unknown token/);
    assert.equal(api.f.env.writes, 1, 'only the allowed PUT wrote');
  });
});
