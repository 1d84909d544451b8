// The env operations show what an attached database gives the app's machines (issue 33 item 5,
// docs/decisions/0030-provided-env.md), on the real apiserver, node and database server: attached,
// GET /apps/{app}/env lists DATABASE_URL and PG* beside the app's own variables, with their source,
// masked (no credential in the answer), and marks the one the app also sets as overridden; a machine
// gets the database's DATABASE_URL, not the app's, as the answer says; a token for another app (403)
// and another account (404) see none of it; detached, they are listed no more.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount } from '../../lib/accounts.js';
import { credentialKeys, databaseObjects } from '../../lib/databases.js';
import { deployLive, expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromEveryMachine } from '../support/app-traffic.js';
import { dbAppScript } from '../support/db-app.js';
import { images } from '../support/images.js';
import { eventually } from '../support/wait.js';

interface Provided {
  name: string;
  source: { kind: string; name: string };
  masked: boolean;
  overrides: boolean;
}
interface EnvAnswer {
  env: Record<string, string>;
  provided: Provided[];
}

describe('Provided env', () => {
  let api: TestApi;
  let ns: string;
  const json = expectJson;
  const database = 'penv-db';
  const appName = 'penv';
  const mine = 'postgres://mine:secret@nowhere.invalid:5432/mine';

  before(async () => {
    api = await startTestApi();
    ns = api.account.namespace;
  });
  after(async () => {
    await api?.close();
  });

  it("lists an attached database's DATABASE_URL and PG* beside the app's own, masked and with their source; the machines get the database's", async () => {
    await json(await api.request('POST', '/api/databases', { body: { name: database } }), 201);
    const up = await eventually(
      `database ${database} Ready`,
      async () =>
        (
          await json<{ databases: Array<{ name: string; phase: string; host: string | null }> }>(
            await api.request('GET', '/api/databases'),
            200,
          )
        ).databases.find((d) => d.name === database && d.phase === 'Ready'),
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    await json(await api.request('POST', '/api/apps', { body: { name: appName } }), 201);
    // The app sets a DATABASE_URL of its own: the attachment is to win over it.
    const own = { DATABASE_URL: mine, COLOR: 'blue' };
    const set = await json<EnvAnswer>(await api.request('PUT', `/api/apps/${appName}/env`, { body: own }), 200);
    assert.deepEqual(set, { env: own, provided: [] }, 'nothing provided before an attachment');

    await json(await api.request('PUT', `/api/apps/${appName}/database`, { body: { name: database } }), 200);
    const res = await api.request('GET', `/api/apps/${appName}/env`);
    const text = await res.clone().text();
    const answer = await json<EnvAnswer>(res, 200);
    assert.deepEqual(answer.env, own, "the app's own, as before");
    assert.deepEqual(
      answer.provided.map((v) => [v.name, v.source.kind, v.source.name, v.masked, v.overrides]),
      [
        ['PGHOST', 'database', database, true, false],
        ['PGPORT', 'database', database, true, false],
        ['PGUSER', 'database', database, true, false],
        ['PGPASSWORD', 'database', database, true, false],
        ['PGDATABASE', 'database', database, true, false],
        ['DATABASE_URL', 'database', database, true, true],
      ],
    );
    for (const v of answer.provided)
      assert.deepEqual(Object.keys(v).sort(), ['masked', 'name', 'overrides', 'source'], `${v.name}: no value`);
    // Masked: none of the database's credentials, nor its address, is in the answer.
    const secret = await api.kube.core.readNamespacedSecret({ namespace: ns, name: databaseObjects(database).secret });
    const password = Buffer.from(secret.data?.[credentialKeys.password] ?? '', 'base64').toString('utf8');
    assert.ok(password.length > 0, 'the credentials Secret has a password');
    assert.ok(!text.includes(password), 'no password in the answer');
    assert.ok(up.host && !text.includes(up.host), 'no server address in the answer');

    // What the answer says is what a machine gets: the database's DATABASE_URL, not the app's own.
    await deployLive(api, appName, { image: images.runtime, command: ['node', '-e', dbAppScript] });
    const onMachines = JSON.parse(
      await eventually(
        "every machine to have the database's DATABASE_URL",
        async () => {
          const e = await getFromEveryMachine(ns, appName, '/env');
          return e?.includes(`@${up.host}:5432/`) ? e : undefined;
        },
        { timeoutMs: 90_000 },
      ),
    ) as { url: string; host: string };
    assert.equal(onMachines.url, `postgres://app:***@${up.host}:5432/${database}`);
    assert.equal(onMachines.host, up.host);

    // A token for another app of the account: 403, like the rest of the env routes.
    const { token: narrow } = await api.deps.tokens.issue(api.account.id, {
      name: 'narrow',
      restrictions: [{ kind: 'apps', apps: ['other'] }],
    });
    const refused = await json<{ error: string }>(await api.request('GET', `/api/apps/${appName}/env`, { token: narrow }), 403);
    assert.equal(refused.error, `token lacks app "${appName}"`);
    // Another account finds no such app, by name or by ID: 404, as for the rest of the app's routes.
    const other = await createAccount(api.db, api.kube.core, { email: `penv-other-${Date.now()}@example.test` });
    const { token } = await api.deps.tokens.issue(other.id, { name: 'other' });
    try {
      const id = (await json<{ id: string }>(await api.request('GET', `/api/apps/${appName}`), 200)).id;
      const byName = await json<{ error: string }>(await api.request('GET', `/api/apps/${appName}/env`, { token }), 404);
      assert.equal(byName.error, `app ${appName} not found`);
      const byId = await api.request('GET', `/api/apps/${id}/env`, { token });
      const byIdText = await byId.text();
      assert.equal(byId.status, 404, byIdText);
      assert.ok(!byIdText.includes('DATABASE_URL') && !byIdText.includes(database), 'nothing of it told');
    } finally {
      await api.kube.core.deleteNamespace({ name: other.namespace }).catch(() => undefined);
    }

    // Detached: listed no more; the app's own stay.
    await json(await api.request('DELETE', `/api/apps/${appName}/database`), 204);
    assert.deepEqual(await json<EnvAnswer>(await api.request('GET', `/api/apps/${appName}/env`), 200), { env: own, provided: [] });
    await json(await api.request('DELETE', `/api/apps/${appName}`), 204);
    await json(await api.request('DELETE', `/api/databases/${database}`), 204);
  });
});
