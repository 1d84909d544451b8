// Attack: taking a custom domain that is not yours (issue 32). Names are global while accounts are
// many: another account must not add a name an account holds (pending or verified), nor win a race
// for a new one, nor take over a removed one through the records it left behind (a dangling CNAME):
// verifying needs the TXT record of the claiming account's own token. Real API, PostgreSQL,
// apiserver and Pebble's DNS test server, two accounts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, type Account } from '../../lib/accounts.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { dnsServers, publish } from '../support/dns.js';

interface DomainBody {
  name: string;
  status: string;
  reason: string | null;
  records: Array<{ type: string; name: string; value: string; ok: boolean | null }>;
}

describe('security: custom domains are held across accounts', () => {
  let api: TestApi;
  let mallory: Account;
  let malloryToken: string;
  const suffix = Date.now().toString(36);
  const zone = `claims-${suffix}.example`;
  const json = expectJson;

  before(async () => {
    api = await startTestApi({ env: { SVC_DOMAINS_DNS_SERVERS: dnsServers().join(','), SVC_DOMAINS_EDGE_ADDRESSES: '127.0.0.1' } });
    mallory = await createAccount(api.db, api.kube.core, { email: `mallory-${suffix}@example.test` });
    malloryToken = (await api.deps.tokens.issue(mallory.id, { name: 'mallory' })).token;
    await json(await api.request('POST', '/api/apps', { body: { name: `own-${suffix}` } }), 201);
    await json(await api.request('POST', '/api/apps', { body: { name: `mal-${suffix}` }, token: malloryToken }), 201);
  });
  after(async () => {
    await api.kube.core.deleteNamespace({ name: mallory.namespace }).catch(() => undefined);
    await api?.close();
  });

  const add = (name: string, token = api.token, app = token === api.token ? `own-${suffix}` : `mal-${suffix}`) =>
    api.request('POST', `/api/apps/${app}/domains`, { body: { name }, token });
  const errorOf = async (res: Response) => ((await res.json()) as { error: string }).error;

  it('another account cannot add a name the account holds, pending or verified (409, the holder not named)', async () => {
    const name = `pending.${zone}`;
    await json(await add(name), 201);
    const res = await add(name, malloryToken);
    assert.equal(res.status, 409);
    const error = await errorOf(res);
    assert.match(error, /held by another account/);
    assert.doesNotMatch(error, new RegExp(api.account.id));
    assert.doesNotMatch(error, new RegExp(`own-${suffix}`), "not even the holder's app");
  });

  it('two accounts racing for a new name: exactly one holds it', async () => {
    const name = `race.${zone}`;
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => add(name, i % 2 ? malloryToken : api.token)));
    const statuses = answers.map((r) => r.status);
    assert.ok(
      statuses.every((s) => [200, 201, 409].includes(s)),
      statuses.join(','),
    );
    assert.equal(statuses.filter((s) => s === 201).length, 1, `one creation: ${statuses.join(',')}`);
    // Whoever won, every answer of the other account is a 409 (and every one of the winner's a success).
    const winner = statuses.indexOf(201) % 2;
    statuses.forEach((s, i) => assert.equal(s === 409, i % 2 !== winner, `answer ${i}: ${statuses.join(',')}`));
    const rows = await api.db('app_domains').where({ name });
    assert.equal(rows.length, 1);
  });

  it('a removed domain whose records are left behind cannot be verified by another account: the TXT is not theirs', async () => {
    const name = `dangling.${zone}`;
    const added = (await json<{ domain: DomainBody }>(await add(name), 201)).domain;
    await publish({ type: 'TXT', name: added.records[0]!.name, value: added.records[0]!.value });
    await publish({ type: 'CNAME', name, value: added.records[1]!.value });
    const verify = (token: string, app: string) => api.request('POST', `/api/apps/${app}/domains/${name}/verify`, { token });
    assert.equal((await json<{ domain: DomainBody }>(await verify(api.token, `own-${suffix}`), 200)).domain.status, 'verified');
    await json(await api.request('DELETE', `/api/apps/own-${suffix}/domains/${name}`), 204);

    // The name is free: Mallory may claim it, but the records the owner left do not verify it for her.
    const hers = (await json<{ domain: DomainBody }>(await add(name, malloryToken), 201)).domain;
    assert.notEqual(hers.records[0]!.value, added.records[0]!.value, 'each account has its own token');
    const checked = (await json<{ domain: DomainBody }>(await verify(malloryToken, `mal-${suffix}`), 200)).domain;
    assert.equal(checked.status, 'pending');
    assert.equal(checked.records[0]!.ok, false);
    assert.match(checked.reason!, /svc-verify=/);
  });

  it("an account cannot read, verify or remove another account's domain through its own app", async () => {
    const name = `pending.${zone}`;
    for (const [method, path] of [
      ['GET', `/api/apps/mal-${suffix}/domains/${name}`],
      ['POST', `/api/apps/mal-${suffix}/domains/${name}/verify`],
      ['DELETE', `/api/apps/mal-${suffix}/domains/${name}`],
    ] as const) {
      assert.equal((await api.request(method, path, { token: malloryToken })).status, 404, `${method} ${path}`);
    }
    assert.equal((await api.db('app_domains').where({ name })).length, 1, 'the claim is still the owner’s');
  });
});
