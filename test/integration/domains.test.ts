// Custom domains end to end (issue 32 items 1, 2 and 5), on the real API, PostgreSQL, apiserver,
// ingress-auth and Pebble's DNS test server (pebble-challtestsrv, started by make dev and make
// test): a domain is added with the records to publish, verified by the background check within
// seconds of its records appearing, served by ingress-auth on its own name with the app's policy,
// marked misconfigured (and no longer served) when a record goes, and removed at once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { pluralOf } from '../../lib/contract.js';
import { mergePatch } from '../../lib/kube/client.js';
import { group, version } from '../../lib/resources/index.js';
import { kubeConfig } from '../support/kube.js';
import { deployLive, expectJson, startTestApi, type TestApi } from '../support/api.js';
import { dnsServers, publish, unpublish } from '../support/dns.js';
import { Browser, startTestIngress, type TestIngress } from '../support/ingress.js';
import { eventually } from '../support/wait.js';

interface DomainBody {
  name: string;
  declared: boolean;
  unicode_name: string;
  app: string;
  wildcard: boolean;
  apex: boolean;
  status: string;
  reason: string | null;
  records: Array<{ purpose: string; type: string; name: string; value: string; observed: string[] | null; ok: boolean | null }>;
  verified_at: string | null;
}

describe('custom domains', () => {
  let api: TestApi;
  let ingress: TestIngress;
  const suffix = Date.now().toString(36);
  const zone = `shop-${suffix}.example`;
  const app = `dom-${suffix}`;
  const json = expectJson;
  const domains = (path = '') => `/api/apps/${app}/domains${path}`;
  /** GET / through ingress-auth with this Host (fetch would send the URL's own). */
  const through = (host: string) => new Browser(ingress.url).request(host, '/');

  before(async () => {
    api = await startTestApi({
      env: { SVC_DOMAINS_DNS_SERVERS: dnsServers().join(','), SVC_DOMAINS_EDGE_ADDRESSES: '127.0.0.1', SVC_DOMAINS_PER_APP: '3' },
    });
    ingress = await startTestIngress(api);
    await json(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    await deployLive(api, app, { files: { 'index.html': `<p>${app}</p>` } });
  });
  after(async () => {
    await ingress?.close();
    await api?.close();
  });

  it('adds a subdomain with the records to publish, verifies it within seconds of them appearing, and serves it', async () => {
    const name = `www.${zone}`;
    const added = await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name: name.toUpperCase() } }), 201);
    assert.equal(added.domain.name, name);
    assert.equal(added.domain.status, 'pending');
    assert.equal(added.domain.apex, false);
    const [txt, cname] = added.domain.records;
    assert.deepEqual([txt?.purpose, txt?.type, txt?.name], ['ownership', 'TXT', `_svc-challenge.${name}`]);
    assert.match(txt!.value, /^svc-verify=[0-9a-f]{40}$/);
    assert.deepEqual([cname?.purpose, cname?.type, cname?.name, cname?.value], ['routing', 'CNAME', name, `${app}.apps.localhost`]);
    // Added again: the same domain, 200, nothing new.
    assert.equal((await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name } }), 200)).domain.name, name);
    assert.equal((await through(name)).status, 404, 'not served before it is verified');

    await publish({ type: 'TXT', name: txt!.name, value: txt!.value });
    await publish({ type: 'CNAME', name, value: cname!.value });
    const published = Date.now();
    const verified = await eventually(
      'the domain verified by the background check',
      async () => {
        const d = (await json<{ domain: DomainBody }>(await api.request('GET', domains(`/${name}`)), 200)).domain;
        return d.status === 'verified' ? d : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    console.log(`# a subdomain verified ${Date.now() - published} ms after its records appeared`);
    assert.equal(verified.reason, null);
    assert.ok(verified.records.every((r) => r.ok === true));
    assert.deepEqual(verified.records[0]!.observed, [txt!.value]);
    const served = await eventually('the app on its domain', async () => {
      const r = await through(name);
      return r.status === 200 ? r : undefined;
    });
    assert.match(served.body, new RegExp(`<p>${app}</p>`));
    assert.equal((await through(`${name}.:8081`)).status, 200, 'the fully qualified spelling, with a port, is the same name');
  });

  it('marks a verified domain misconfigured when its ownership record goes, and stops serving it; verified again when it is back', async () => {
    const name = `www.${zone}`;
    const before = (await json<{ domain: DomainBody }>(await api.request('GET', domains(`/${name}`)), 200)).domain;
    await unpublish({ type: 'TXT', name: `_svc-challenge.${name}` });
    const checked = (await json<{ domain: DomainBody }>(await api.request('POST', domains(`/${name}/verify`)), 200)).domain;
    assert.equal(checked.status, 'misconfigured');
    assert.match(checked.reason!, new RegExp(`_svc-challenge\\.${name.replace(/\./g, '\\.')}`));
    await eventually('no longer served', async () => (await through(name)).status === 404, { timeoutMs: 5000, intervalMs: 50 });
    await publish({ type: 'TXT', name: `_svc-challenge.${name}`, value: before.records[0]!.value });
    assert.equal(
      (await json<{ domain: DomainBody }>(await api.request('POST', domains(`/${name}/verify`)), 200)).domain.status,
      'verified',
    );
    const kinds = (
      await json<{ events: Array<{ type: string; data: { domain?: string } }> }>(
        await api.request('GET', '/api/events?kinds=domain.*'),
        200,
      )
    ).events
      .filter((e) => e.data.domain === name)
      .map((e) => e.type);
    assert.deepEqual(kinds.sort(), ['domain.added', 'domain.misconfigured', 'domain.verified', 'domain.verified'].sort());
  });

  it('verifies an apex by its A record to the edge, and a wildcard for one label below it', async () => {
    const apex = await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name: zone } }), 201);
    assert.equal(apex.domain.apex, true);
    assert.deepEqual(
      apex.domain.records.map((r) => [r.type, r.name, r.value]),
      [
        ['TXT', `_svc-challenge.${zone}`, apex.domain.records[0]!.value],
        ['A', zone, '127.0.0.1'],
      ],
    );
    const wild = await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name: `*.${zone}` } }), 201);
    assert.equal(wild.domain.wildcard, true);
    assert.deepEqual(
      wild.domain.records.map((r) => [r.type, r.name]),
      [
        ['TXT', `_svc-challenge.${zone}`],
        ['CNAME', `*.${zone}`],
      ],
    );
    // One TXT serves the apex and the wildcard (the same name, the same account).
    await publish({ type: 'TXT', name: `_svc-challenge.${zone}`, value: apex.domain.records[0]!.value });
    await publish({ type: 'A', name: zone, value: '127.0.0.1' });
    const verify = async (n: string) =>
      (await json<{ domain: DomainBody }>(await api.request('POST', domains(`/${encodeURIComponent(n)}/verify`)), 200)).domain;
    assert.equal((await verify(zone)).status, 'verified');
    await eventually('the apex served', async () => (await through(zone)).status === 200);
    const w = await verify(`*.${zone}`);
    assert.equal(w.status, 'pending', 'no CNAME on the wildcard yet');
    assert.deepEqual(
      w.records.map((r) => r.ok),
      [true, false],
    );
    await publish({ type: 'CNAME', name: `*.${zone}`, value: `${app}.apps.localhost` });
    assert.equal((await verify(`*.${zone}`)).status, 'verified');
    await eventually('a name one label under the wildcard served', async () => (await through(`api.${zone}`)).status === 200);
    assert.equal((await through(`a.b.${zone}`)).status, 404, 'a wildcard covers one label');
  });

  it('refuses names that are not domains and names over the limit with a 4XX {error}, writing nothing', async () => {
    for (const [name, message] of [
      ['127.0.0.1', /address/],
      [`x.apps.localhost`, /apps domain/],
      ['co.uk', /public suffix/],
      [`${'a'.repeat(64)}.example`, /63/],
    ] as const) {
      const res = await api.request('POST', domains(), { body: { name } });
      assert.equal(res.status, 400, name);
      assert.match(((await res.json()) as { error: string }).error, message);
    }
    const res = await api.request('POST', domains(), { body: { name: `more.${zone}` } });
    assert.equal(res.status, 403, 'the app has 3 domains already, its limit');
    assert.match(((await res.json()) as { error: string }).error, /its limit is 3/);
    assert.equal(
      (await json<{ domains: DomainBody[] }>(await api.request('GET', domains()), 200)).domains.length,
      3,
      'nothing written by the refusals',
    );
  });

  it('removes a domain: no longer served at once, its name free, told as an event', async () => {
    await json(await api.request('DELETE', domains(`/${zone}`)), 204);
    assert.equal((await through(zone)).status, 404);
    assert.equal((await api.request('GET', domains(`/${zone}`))).status, 404);
    assert.equal((await api.db('app_domains').where({ name: zone })).length, 0);
  });

  it('adds the domains an App declares in spec.domains (kubectl, GitOps), tells a refusal as an Event, removes them with the spec', async () => {
    const kc = kubeConfig();
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const namespace = api.account.namespace;
    const declare = (names: string[]) =>
      custom.patchNamespacedCustomObject(
        { group, version, namespace, plural: pluralOf('App'), name: app, body: { spec: { domains: names } } },
        mergePatch,
      );
    const list = async () => (await json<{ domains: DomainBody[] }>(await api.request('GET', domains()), 200)).domains;
    const gitops = `gitops.${zone}`;
    const over = `over.${zone}`;
    // Two domains are there (www and the wildcard); the limit is 3: the second declared name is refused.
    await declare([gitops, over]);
    const added = await eventually('the declared domain added', async () => (await list()).find((d) => d.name === gitops), {
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    assert.equal(added.declared, true);
    assert.equal(added.status, 'pending');
    const events = kc.makeApiClient(k8s.CoreV1Api);
    const refusal = await eventually(
      'a DomainRefused Event on the App',
      async () =>
        (await events.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${app},reason=DomainRefused` })).items[0],
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    assert.equal(refusal.type, 'Warning');
    assert.match(refusal.message ?? '', new RegExp(`spec.domains ${over.replace(/\./g, '\\.')}: .*limit is 3`));
    assert.equal(
      (await list()).find((d) => d.name === over),
      undefined,
      'nothing written for the refused name',
    );
    // Dropped from the spec: removed; the domains added through the API stay.
    await declare([]);
    await eventually('the declared domain removed', async () => !(await list()).some((d) => d.name === gitops), {
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    assert.deepEqual((await list()).map((d) => d.name).sort(), [`*.${zone}`, `www.${zone}`].sort());
  });
});
