// App create, list, get and delete (api/operations/apps.ts) against in-memory fakes
// (test/support/fake-api.ts): the validation of names, images and ports, the quota, conflicts and
// token restrictions, each refusal a 4XX {error} with nothing written. No cluster.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { appOperations } from '../../api/operations/apps.js';
import { registrarOperations } from '../../api/operations/registrar.js';
import { createLogger } from '../../lib/logger.js';
import { account, startFakeApi, type FakeApi } from '../support/fake-api.js';
import { errorOf, ok } from '../support/answers.js';

interface AppBody {
  id: string;
  name: string;
  kind: string | null;
  image: string | null;
}

describe('app handlers', () => {
  let api: FakeApi;
  before(async () => {
    api = await startFakeApi((f) => [
      ...appOperations(f),
      ...registrarOperations({
        apps: f.apps,
        registrar: undefined,
        domainActions: { check: () => Promise.resolve(), add: () => Promise.reject(new Error('no domains here')) },
        log: createLogger('test', 'silent'),
        clock: () => new Date(),
      }),
    ]);
  });
  after(async () => {
    await api?.close();
  });
  beforeEach(() => {
    api.f.apps.objects.clear();
    api.f.events.log.length = 0;
    api.f.actions.appLimit = 10;
  });

  const error = errorOf;

  it('creates an app from an image and without one, records app.created, and gets it by name and ID', async () => {
    const shop = ok<AppBody>(await api.request('POST', '/api/apps', { name: 'shop', image: 'busybox:1.36', port: 8080 }), 201);
    assert.equal(shop.name, 'shop');
    assert.equal(shop.kind, 'container');
    assert.equal(shop.image, 'busybox:1.36');
    assert.deepEqual(api.f.apps.objects.get(`${account.namespace}/shop`)!.spec, { kind: 'container', image: 'busybox:1.36', port: 8080 });
    const blog = ok<AppBody>(await api.request('POST', '/api/apps', { name: 'blog' }), 201);
    assert.equal(blog.kind, null);
    assert.equal(ok<AppBody>(await api.request('GET', '/api/apps/shop'), 200).id, shop.id);
    assert.equal(ok<AppBody>(await api.request('GET', `/api/apps/${shop.id}`), 200).name, 'shop');
    assert.deepEqual(
      api.f.events.log.map((e) => [e.type, e.subject, e.data]),
      [
        ['app.created', 'shop', { app: 'shop' }],
        ['app.created', 'blog', { app: 'blog' }],
      ],
    );
  });

  it('refuses bad input with a 4XX naming the problem, and creates nothing', async () => {
    api.f.apps.put(account.namespace, 'shop');
    const cases: Array<[unknown, number, RegExp]> = [
      [{ name: 'Shop' }, 400, /^invalid body: name: must be a DNS label/],
      [{ name: 'a'.repeat(64) }, 400, /name: must be a DNS label/],
      [{ name: '-shop' }, 400, /name: must be a DNS label/],
      [{ name: 'imports' }, 400, /^invalid body: name: is reserved$/],
      [{ name: 'login' }, 400, /name: is reserved/],
      [{ name: 'shop--pr-1' }, 400, /name: must not contain "--" \(it marks previews\)/],
      [{ name: 'ok', image: 'bad image' }, 400, /image: must be a container image reference/],
      [{ name: 'ok', image: '' }, 400, /image: /],
      [{ name: 'ok', port: 70000 }, 400, /port: /],
      [{ name: 'ok', port: 80.5 }, 400, /port: /],
      [{ name: 'ok', machines: 21 }, 400, /machines: /],
      [{ name: 'ok', bogus: 1 }, 400, /Unrecognized key: "bogus"/],
      [{}, 400, /name: /],
      ['[1]', 400, /^invalid body/],
      ['{"name": ', 400, /malformed JSON/],
      [{ name: 'shop', image: 'busybox' }, 409, /^an app named "shop" already exists$/],
    ];
    for (const [body, status, message] of cases) error(await api.request('POST', '/api/apps', body), status, message);
    error(await api.request('POST', '/api/apps'), 400, /^invalid body: name: /);
    assert.deepEqual([...api.f.apps.objects.keys()], [`${account.namespace}/shop`], 'nothing created');
    assert.equal(api.f.events.log.length, 0, 'nothing recorded');
  });

  it("refuses an app past the account's quota (403), creating nothing", async () => {
    api.f.actions.appLimit = 1;
    ok(await api.request('POST', '/api/apps', { name: 'one' }), 201);
    error(await api.request('POST', '/api/apps', { name: 'two' }), 403, /the account has 1 apps \(previews included\), its limit is 1/);
    assert.equal(api.f.apps.objects.size, 1);
  });

  it('answers 404 for an unknown app, and deletes one with app.deleted', async () => {
    api.f.apps.put(account.namespace, 'shop');
    error(await api.request('GET', '/api/apps/unknown-app'), 404, /^app unknown-app not found$/);
    error(await api.request('DELETE', '/api/apps/nope'), 404, /app nope/);
    assert.equal((await api.request('DELETE', '/api/apps/shop')).status, 204);
    assert.equal(api.f.apps.objects.size, 0);
    assert.deepEqual(
      api.f.events.log.map((e) => e.type),
      ['app.deleted'],
    );
    error(await api.request('GET', '/api/apps/shop'), 404);
  });

  it('lists apps a page at a time, previews left out', async () => {
    for (const name of ['c', 'a', 'b']) api.f.apps.put(account.namespace, name);
    api.f.apps.put(account.namespace, 'a--pr-1', { preview: { parent: 'a', ref: 'pr-1' } });
    api.f.apps.put('other-account', 'z');
    const first = ok<{ apps: AppBody[]; next_after: string | null }>(await api.request('GET', '/api/apps?limit=2'), 200);
    assert.deepEqual(
      first.apps.map((a) => a.name),
      ['a', 'b'],
    );
    assert.equal(first.next_after, 'b');
    const rest = ok<{ apps: AppBody[]; next_after: string | null }>(await api.request('GET', '/api/apps?limit=2&after=b'), 200);
    assert.deepEqual(
      rest.apps.map((a) => a.name),
      ['c'],
    );
    assert.equal(rest.next_after, null);
    error(await api.request('GET', '/api/apps?limit=0'), 400, /^invalid query: limit: /);
    error(await api.request('GET', '/api/apps?sort=name'), 400, /^invalid query: .*Unrecognized key: "sort"/);
  });

  it('filters by a part of the name, any case, before paging', async () => {
    for (const name of ['shop-eu', 'shop-us', 'blog', 'workshop']) api.f.apps.put(account.namespace, name);
    const names = async (query: string) =>
      ok<{ apps: AppBody[]; next_after: string | null }>(await api.request('GET', `/api/apps?${query}`), 200);
    const first = await names('q=SHOP&limit=2');
    assert.deepEqual(
      first.apps.map((a) => a.name),
      ['shop-eu', 'shop-us'],
    );
    assert.equal(first.next_after, 'shop-us');
    assert.deepEqual(
      (await names('q=shop&limit=2&after=shop-us')).apps.map((a) => a.name),
      ['workshop'],
    );
    assert.deepEqual((await names('q=nothing-like-it')).apps, []);
    error(await api.request('GET', `/api/apps?q=${'x'.repeat(64)}`), 400, /^invalid query: q: /);
  });

  it('keeps a token restricted to apps to those apps, by name and by ID, and one without write from creating', async () => {
    const shop = api.f.apps.put(account.namespace, 'shop');
    api.f.apps.put(account.namespace, 'blog');
    const blogOnly = api.f.tokens.tokenWith([{ kind: 'apps', apps: ['blog'] }]);
    error(await api.request('GET', `/api/apps/${shop.id}`, undefined, { token: blogOnly }), 403, /^token lacks app "shop"$/);
    error(await api.request('GET', '/api/apps/shop', undefined, { token: blogOnly }), 403, /^token lacks app "shop"$/);
    error(await api.request('POST', '/api/apps', { name: 'other' }, { token: blogOnly }), 403, /^token lacks app "other"$/);
    error(await api.request('DELETE', '/api/apps/shop', undefined, { token: blogOnly }), 403, /token lacks app "shop"/);
    const visible = ok<{ apps: AppBody[] }>(await api.request('GET', '/api/apps', undefined, { token: blogOnly }), 200);
    assert.deepEqual(
      visible.apps.map((a) => a.name),
      ['blog'],
    );
    const readOnly = api.f.tokens.tokenWith([{ kind: 'actions', actions: ['read'] }]);
    error(await api.request('POST', '/api/apps', { name: 'other' }, { token: readOnly }), 403, /^token lacks action "write"$/);
    assert.equal(ok<{ apps: AppBody[] }>(await api.request('GET', '/api/apps', undefined, { token: readOnly }), 200).apps.length, 2);
    assert.equal(api.f.apps.objects.size, 2, 'nothing created or deleted');
  });

  it('answers the registrar’s operations 503 when no registrar is configured, once the caller is authenticated', async () => {
    error(await api.request('GET', '/api/domains'), 503, /domain registration is not set up on this platform/);
    error(await api.request('POST', '/api/domains/shop.example/renew', { years: 1 }), 503, /not set up/);
    error(await api.request('GET', '/api/domains', undefined, { token: null }), 401);
  });

  it('answers unknown routes 404 and known ones with another method 405 with Allow', async () => {
    error(await api.request('GET', '/api/nope'), 404, /^no route GET \/api\/nope$/);
    const res = await api.request('PUT', '/api/apps');
    error(res, 405, /method PUT not allowed/);
    assert.match(res.headers.get('allow') ?? '', /GET/);
  });
});
