// Attack: hostname takeover (issue 11 item 8). App names are per account but hostnames are global:
// another account must not be able to take a live app's hostname, nor a deleted one's during the hold
// period (bookmarks, links and its users' trust still point there), through create, fork or preview,
// nor win a race for a new name. Real API, PostgreSQL and apiserver, two accounts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, type Account } from '../../lib/accounts.js';
import { HostnameStore } from '../../lib/hostnames.js';
import { apiVersion, group, version } from '../../lib/resources/index.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';

describe('security: app hostnames are held across accounts', () => {
  let api: TestApi;
  let mallory: Account;
  let malloryToken: string;
  const suffix = Date.now().toString(36);
  const n = (base: string) => `${base}-${suffix}`;

  before(async () => {
    api = await startTestApi();
    mallory = await createAccount(api.db, api.kube.core, { email: `mallory-${suffix}@example.test` });
    malloryToken = (await api.deps.tokens.issue(mallory.id, { name: 'mallory' })).token;
  });
  after(async () => {
    await api.kube.core.deleteNamespace({ name: mallory.namespace }).catch(() => undefined);
    await api?.close();
  });

  const create = (name: string, token = api.token) => api.request('POST', '/api/apps', { body: { name }, token });
  const errorOf = async (res: Response) => ((await res.json()) as { error: string }).error;
  const held = async (name: string) => {
    const row = (await api.db('hostnames').where({ name }).first()) as { released_at: Date | null } | undefined;
    return row?.released_at != null;
  };

  it("another account cannot create a live app's name (409 naming the hostname, not the owner)", async () => {
    assert.equal((await create(n('shop'))).status, 201);
    const res = await create(n('shop'), malloryToken);
    assert.equal(res.status, 409);
    const error = await errorOf(res);
    assert.match(error, new RegExp(`the hostname ${n('shop')}\\.apps\\.localhost belongs to another account`));
    assert.doesNotMatch(error, new RegExp(api.account.id));
  });

  // Before any test moves the API's clock: the controller expires apps on the real one.
  it('an app deleted by its expiry starts the hold too', async () => {
    assert.equal((await create(n('brief'))).status, 201);
    const ttl = await api.request('PUT', `/api/apps/${n('brief')}/expiry`, {
      body: { expires_at: new Date(Date.now() + 2000).toISOString() },
    });
    assert.ok(ttl.status < 300, await ttl.clone().text());
    await eventually('the controller to delete the expired app and the hold to start', () => held(n('brief')), { timeoutMs: 30_000 });
    assert.equal((await create(n('brief'), malloryToken)).status, 409);
  });

  it("a deleted app's hostname is held for its account only, until the hold ends", async () => {
    assert.equal((await create(n('gone'))).status, 201);
    assert.equal((await api.request('DELETE', `/api/apps/${n('gone')}`)).status, 204);
    await eventually('the hold to start', () => held(n('gone')));
    const taken = await create(n('gone'), malloryToken);
    assert.equal(taken.status, 409);
    assert.match(await errorOf(taken), /is held until \d{4}-\d\d-\d\dT.* for the account whose app used it/);
    // Its own account takes it back at once.
    assert.equal((await create(n('gone'))).status, 201);
    assert.equal((await api.request('DELETE', `/api/apps/${n('gone')}`)).status, 204);
    await eventually('the hold to start again', () => held(n('gone')));
    api.clock.advance(29 * 86_400_000);
    assert.equal((await create(n('gone'), malloryToken)).status, 409, 'still held on day 29');
    api.clock.advance(2 * 86_400_000);
    assert.equal((await create(n('gone'), malloryToken)).status, 201, 'free after the 30-day hold');
    assert.equal((await create(n('gone'))).status, 409, "and then it is the other account's");
  });

  it('fork and preview cannot reach a held name either', async () => {
    assert.equal((await create(n('mine'), malloryToken)).status, 201);
    assert.equal((await create(n('target'))).status, 201);
    const fork = await api.request('POST', `/api/apps/${n('mine')}/fork`, { token: malloryToken, body: { name: n('target') } });
    assert.equal(fork.status, 409, await fork.clone().text());
    assert.match(await errorOf(fork), /belongs to another account/);
    // A preview is an App named <app>--<ref>: the owner's preview holds its hostname too.
    const preview = await api.request('POST', `/api/apps/${n('target')}/previews`, { body: { ref: 'one' } });
    assert.ok(preview.status < 300, await preview.clone().text());
    const row = (await api
      .db('hostnames')
      .where({ name: `${n('target')}--one` })
      .first()) as { namespace: string } | undefined;
    assert.equal(row?.namespace, api.account.namespace);
  });

  it('two accounts racing for one new name: exactly one wins', async () => {
    for (let i = 0; i < 5; i++) {
      const name = n(`race${i}`);
      const [a, b] = await Promise.all([create(name), create(name, malloryToken)]);
      assert.deepEqual([a.status, b.status].sort(), [201, 409], `round ${i}`);
    }
  });

  it('apps made before the table existed (or by kubectl) are claimed by the hourly pass', async () => {
    const custom = api.kube.kc.makeApiClient((await import('@kubernetes/client-node')).CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace: api.account.namespace,
      plural: 'apps',
      body: { apiVersion, kind: 'App', metadata: { name: n('gitops') }, spec: { kind: 'container', image: 'busybox', machines: 0 } },
    });
    await eventually('the App in the cache', () => api.deps.apps.names().some(([, name]) => name === n('gitops')));
    const result = await new HostnameStore(api.db, 30 * 86_400_000, api.clock.read).reconcile(api.deps.apps.names());
    assert.ok(result.claimed >= 1);
    assert.equal((await create(n('gitops'), malloryToken)).status, 409);
    // Other platforms' apps on the same cluster (other tests' databases) are not claimed here.
    const foreign = await api
      .db('hostnames')
      .whereNotIn('namespace', [api.account.namespace, mallory.namespace])
      .count<Array<{ c: string }>>({ c: '*' });
    assert.equal(Number(foreign[0]!.c), 0);
  });
});
