// Attack: an account's limits raced with parallel creates (issue 30, finding 4: six parallel
// database creates made eight against a limit of five; three parallel 9 GiB creates made 29 GiB
// against 20 GiB). Every per-account count is now checked and taken under the account's lock
// (api/quotas.ts), so N parallel creates at the limit leave exactly the limit: databases and their
// storage, apps, previews per app, tokens, webhooks and open sandboxes, each through the real API on
// the real apiserver and PostgreSQL. Without the lock each of these lets several creates through.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApi, type TestApi } from '../support/api.js';
import { images } from '../support/images.js';

const gib = 1024 ** 3;

describe("security: parallel creates at an account's limit leave exactly the limit", { timeout: 300_000 }, () => {
  let api: TestApi;
  const databases: string[] = [];
  const sandboxes: string[] = [];

  before(async () => {
    api = await startTestApi({
      env: {
        SVC_DATABASE_MAX_PER_ACCOUNT: '4',
        SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: String(20 * gib),
        SVC_ACCOUNT_MAX_APPS: '8',
        SVC_APP_MAX_PREVIEWS: '2',
        SVC_ACCOUNT_MAX_TOKENS: '5',
        SVC_ACCOUNT_MAX_WEBHOOKS: '3',
        SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        SVC_SANDBOX_MAX_OPEN: '3',
        SVC_SANDBOX_IMAGE: images.sandbox,
      },
    });
  });
  after(async () => {
    for (const id of sandboxes) await api.request('DELETE', `/api/sandboxes/${id}`).catch(() => undefined);
    for (const name of databases) await api.request('DELETE', `/api/databases/${name}`).catch(() => undefined);
    await api?.close();
  });

  /** Sends `n` requests at once; answers the statuses, counted, and the bodies of the 201s. */
  const race = async (n: number, send: (i: number) => Promise<Response>) => {
    const answers = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const res = await send(i);
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      }),
    );
    const count = (status: number) => answers.filter((a) => a.status === status).length;
    const refusals = answers.filter((a) => a.status >= 400).map((a) => String(a.body.error));
    return { made: answers.filter((a) => a.status === 201).map((a) => a.body), count, refusals };
  };
  const post = (path: string, body: unknown) => api.request('POST', path, { body });

  it('databases: three parallel 9 GiB creates under 20 GiB make two; twenty at a count of 4 leave 4', async () => {
    const big = await race(3, (i) => post('/api/databases', { name: `big${i}`, storage_bytes: 9 * gib }));
    databases.push(...big.made.map((d) => String(d.name)));
    assert.equal(big.count(201), 2, JSON.stringify(big.refusals));
    assert.equal(big.count(403), 1);
    assert.match(big.refusals[0]!, /over its limit of 21474836480 bytes/);
    const small = await race(20, (i) => post('/api/databases', { name: `small${i}`, storage_bytes: 128 * 1024 * 1024 }));
    databases.push(...small.made.map((d) => String(d.name)));
    assert.equal(small.count(201), 2, JSON.stringify(small.refusals));
    assert.equal(small.count(403), 18);
    assert.match(small.refusals[0]!, /has 4 databases \(branches included\), its limit is 4/);
    const listed = (await (await api.request('GET', '/api/databases')).json()) as { databases: unknown[] };
    assert.equal(listed.databases.length, 4);
  });

  it('previews: ten parallel previews of an app under a limit of 2 make two; then apps fill the account to exactly 8', async () => {
    assert.equal((await post('/api/apps', { name: 'parent' })).status, 201);
    const previews = await race(10, (i) => post('/api/apps/parent/previews', { ref: `pr-${i}` }));
    assert.equal(previews.count(201), 2, JSON.stringify(previews.refusals));
    assert.match(previews.refusals[0]!, /previews of app parent/);
    const apps = await race(20, (i) => post('/api/apps', { name: `app${i}` }));
    assert.equal(apps.count(201), 5, JSON.stringify(apps.refusals));
    assert.match(apps.refusals[0]!, /apps \(previews included\), its limit is 8/);
    const listed = (await (await api.request('GET', '/api/apps')).json()) as { apps: unknown[] };
    assert.equal(listed.apps.length, 6, 'the parent and five apps listed; its previews are listed under it');
  });

  it('tokens and webhooks: twenty parallel creates leave exactly their limits', async () => {
    const live = ((await (await api.request('GET', '/api/account/tokens')).json()) as { tokens: unknown[] }).tokens.length;
    const tokens = await race(20, (i) => post('/api/account/tokens', { name: `t${i}`, expires_in: '1h' }));
    assert.equal(tokens.count(201), 5 - live, JSON.stringify(tokens.refusals));
    assert.match(tokens.refusals[0]!, /live tokens, its limit is 5/);
    const hooks = await race(20, (i) => post('/api/account/webhooks', { url: `http://127.0.0.1:9/hook-${i}` }));
    assert.equal(hooks.count(201), 3, JSON.stringify(hooks.refusals));
    assert.match(hooks.refusals[0]!, /webhooks, its limit is 3/);
  });

  it('sandboxes: twenty parallel opens under a limit of 3 open three', async () => {
    const opened = await race(20, () => post('/api/sandboxes', { runtime: 'python', wait_seconds: 0 }));
    sandboxes.push(...opened.made.map((s) => String(s.id)));
    assert.equal(opened.count(201), 3, JSON.stringify(opened.refusals));
    assert.equal(opened.count(429), 17);
  });
});
