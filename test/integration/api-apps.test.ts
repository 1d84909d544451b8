// The apps operations the App controller already serves: create, list, get (by name or ID), delete.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { attenuate } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';

interface AppBody {
  id: string;
  name: string;
  kind: string | null;
  image: string | null;
  url: string | null;
  ready: string;
  status: string;
}

describe('API apps', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api?.close();
  });
  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };

  it('creates a container app from an image, gets it by name and by ID, and lists it', async () => {
    const created = await json<AppBody>(await api.request('POST', '/api/apps', { body: { name: 'shop', image: 'busybox:1.36' } }), 201);
    assert.equal(created.name, 'shop');
    assert.equal(created.kind, 'container');
    assert.equal(created.image, 'busybox:1.36');
    assert.match(created.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(await json<AppBody>(await api.request('GET', '/api/apps/shop'), 200).then((a) => a.id), created.id);
    assert.equal((await json<AppBody>(await api.request('GET', `/api/apps/${created.id}`), 200)).name, 'shop');
    const listed = await eventually('the list to show it', async () => {
      const body = await json<{ apps: AppBody[] }>(await api.request('GET', '/api/apps'), 200);
      return body.apps.find((a) => a.name === 'shop');
    });
    assert.equal(listed.id, created.id);
    const withUrl = await eventually('the controller to report its URL', async () => {
      const a = await json<AppBody>(await api.request('GET', '/api/apps/shop'), 200);
      return a.url ? a : undefined;
    }, { timeoutMs: 30_000 });
    assert.equal(withUrl.url, 'http://shop.apps.localhost:8081');
  });

  it('creates an app without an image as not deployed yet', async () => {
    const created = await json<AppBody>(await api.request('POST', '/api/apps', { body: { name: 'blog' } }), 201);
    assert.equal(created.kind, null);
    const app = await eventually('the NotDeployed status', async () => {
      const a = await json<AppBody>(await api.request('GET', '/api/apps/blog'), 200);
      return a.status === 'NotDeployed' ? a : undefined;
    }, { timeoutMs: 30_000 });
    assert.equal(app.ready, '0/0');
  });

  it('refuses bad input with a 4XX naming the problem, and creates nothing', async () => {
    const cases: Array<[unknown, number, RegExp]> = [
      [{ name: 'Shop' }, 400, /name: must be a DNS label/],
      [{ name: 'a'.repeat(64) }, 400, /name: must be a DNS label/],
      [{ name: 'imports' }, 400, /name: is reserved/],
      [{ name: 'ok', image: 'bad image' }, 400, /image: must be a container image reference/],
      [{ name: 'ok', port: 70000 }, 400, /port: /],
      [{}, 400, /name: /],
      [{ name: 'shop', image: 'busybox' }, 409, /an app named "shop" already exists/],
    ];
    for (const [body, status, message] of cases) {
      const err = await json<{ error: string }>(await api.request('POST', '/api/apps', { body }), status);
      assert.match(err.error, message, JSON.stringify(body));
    }
    const names = (await json<{ apps: AppBody[] }>(await api.request('GET', '/api/apps'), 200)).apps.map((a) => a.name);
    assert.ok(!names.includes('ok'));
    await json(await api.request('GET', '/api/apps/unknown-app'), 404);
  });

  it('keeps a token restricted to apps to those apps, by name and by ID', async () => {
    const blogOnly = attenuate(api.token, [{ kind: 'apps', apps: ['blog'] }]);
    const shop = await json<AppBody>(await api.request('GET', '/api/apps/shop'), 200);
    assert.match((await json<{ error: string }>(await api.request('GET', `/api/apps/${shop.id}`, { token: blogOnly }), 403)).error, /token lacks app "shop"/);
    assert.match((await json<{ error: string }>(await api.request('POST', '/api/apps', { token: blogOnly, body: { name: 'other' } }), 403)).error, /token lacks app "other"/);
    const visible = await json<{ apps: AppBody[] }>(await api.request('GET', '/api/apps', { token: blogOnly }), 200);
    assert.deepEqual(visible.apps.map((a) => a.name), ['blog']);
  });

  it('deletes an app with what it owns; the name can be reused', async () => {
    const res = await api.request('DELETE', '/api/apps/shop');
    assert.equal(res.status, 204);
    await eventually('the app to be gone', async () => (await api.request('GET', '/api/apps/shop')).status === 404);
    await eventually('the name to be free again', async () => (await api.request('POST', '/api/apps', { body: { name: 'shop' } })).status === 201, { timeoutMs: 30_000 });
    await json(await api.request('DELETE', '/api/apps/nope'), 404);
  });
});
