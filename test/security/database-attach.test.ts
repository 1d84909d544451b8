// Attack suite, issue 30 finding 8: attaching a database hands its credentials to the app's code
// (DATABASE_URL), so a token restricted to one app must not attach the account's other databases
// to it. Attaching needs authority over the database: a token with account-wide access and the
// `write` action. A token restricted to apps may only state the attachment its app already has
// (nothing changes), and detach its own app's. On the real apiserver (no server needs to run: the
// API decides on the Database and the App as written).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';

describe('attaching a database needs authority over it (issue 30 finding 8)', () => {
  let api: TestApi;
  let appToken: string;
  const json = expectJson;
  const attach = (app: string, database: string, token?: string) =>
    api.request('PUT', `/api/apps/${app}/database`, { body: { name: database }, ...(token ? { token } : {}) });
  const spec = async (app: string) => (await api.deps.apps.find(api.account.namespace, app))?.spec.database ?? null;

  before(async () => {
    api = await startTestApi();
    for (const name of ['shop', 'blog']) await json(await api.request('POST', '/api/apps', { body: { name } }), 201);
    // Databases of the account that no app holds: what the attacker is after.
    for (const name of ['orders', 'payroll'])
      await json(await api.request('POST', '/api/databases', { body: { name, storage_bytes: 128 << 20 } }), 201);
    ({ token: appToken } = await api.deps.tokens.issue(api.account.id, {
      name: 'ci-shop',
      restrictions: [{ kind: 'apps', apps: ['shop'] }],
    }));
  });
  after(async () => {
    if (api) for (const name of ['orders', 'payroll']) await api.request('DELETE', `/api/databases/${name}`).catch(() => undefined);
    await api?.close();
  });

  it("refuses a token restricted to apps the account's free databases, naming what it lacks, and changes nothing", async () => {
    const refused = await json<{ error: string }>(await attach('shop', 'payroll', appToken), 403);
    assert.match(
      refused.error,
      /^token lacks account-wide access: attaching database payroll to app shop hands the app its credentials, and databases are the account's \(this token is restricted to apps shop\)$/,
    );
    assert.equal(await spec('shop'), null, 'nothing attached');
    // Whether a database exists is no business of a token that may not attach it.
    assert.match((await json<{ error: string }>(await attach('shop', 'no-such', appToken), 403)).error, /^token lacks account-wide access/);
    // Nor around the restriction by the app's ID, or to another app.
    const { id } = (await api.deps.apps.find(api.account.namespace, 'shop'))!;
    assert.match((await json<{ error: string }>(await attach(id, 'orders', appToken), 403)).error, /^token lacks account-wide access/);
    assert.match((await json<{ error: string }>(await attach('blog', 'orders', appToken), 403)).error, /^token lacks app "blog"/);
    // A read-only token of the whole account lacks the action.
    const { token: reader } = await api.deps.tokens.issue(api.account.id, {
      name: 'reader',
      restrictions: [{ kind: 'actions', actions: ['read'] }],
    });
    assert.match((await json<{ error: string }>(await attach('shop', 'orders', reader), 403)).error, /^token lacks action "write"/);
    assert.equal(await spec('shop'), null);
  });

  it("lets a token with account-wide write attach; the app's token may then state that attachment and detach it, not make it again", async () => {
    const made = await json<{ app: string; database: { name: string } }>(await attach('shop', 'orders'), 200);
    assert.deepEqual([made.app, made.database.name], ['shop', 'orders']);
    assert.equal(await spec('shop'), 'orders');
    // Idempotent for the app's own token: nothing new is handed over.
    assert.equal((await json<{ app: string }>(await attach('shop', 'orders', appToken), 200)).app, 'shop');
    // Swapping it for another database is attaching that one.
    assert.match(
      (await json<{ error: string }>(await attach('shop', 'payroll', appToken), 403)).error,
      /^token lacks account-wide access: attaching database payroll/,
    );
    await json(await api.request('DELETE', '/api/apps/shop/database', { token: appToken }), 204);
    assert.equal(await spec('shop'), null);
    assert.match(
      (await json<{ error: string }>(await attach('shop', 'orders', appToken), 403)).error,
      /^token lacks account-wide access: attaching database orders/,
    );
    await json(await attach('shop', 'payroll'), 200);
    await json(await api.request('DELETE', '/api/apps/shop/database'), 204);
    const kinds = (
      await json<{ events: Array<{ type: string; subject: string }> }>(
        await api.request('GET', '/api/events?kinds=database.attached,database.detached'),
        200,
      )
    ).events.map((e) => `${e.type} ${e.subject}`);
    assert.deepEqual(
      kinds,
      ['database.attached orders', 'database.detached orders', 'database.attached payroll', 'database.detached payroll'],
      'no refused attach left a trace',
    );
  });
});
