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
    const withUrl = await eventually(
      'the controller to report its URL',
      async () => {
        const a = await json<AppBody>(await api.request('GET', '/api/apps/shop'), 200);
        return a.url ? a : undefined;
      },
      { timeoutMs: 30_000 },
    );
    assert.equal(withUrl.url, 'http://shop.apps.localhost:8081');
    const { machines } = await eventually(
      'a machine in the list',
      async () => {
        const body = await json<{ machines: Array<{ ordinal: number; node: string | null; state: string; address: string | null }> }>(
          await api.request('GET', '/api/apps/shop/machines'),
          200,
        );
        return body.machines.length && body.machines[0]!.node && body.machines[0]!.address ? body : undefined;
      },
      { timeoutMs: 30_000 },
    );
    assert.equal(machines[0]!.ordinal, 0);
    assert.match(machines[0]!.node!, /^local-[ab]$/);
    assert.match(machines[0]!.address ?? '', /^10\.244\./);
  });

  it('creates an app without an image as not deployed yet', async () => {
    const created = await json<AppBody>(await api.request('POST', '/api/apps', { body: { name: 'blog' } }), 201);
    assert.equal(created.kind, null);
    const app = await eventually(
      'the NotDeployed status',
      async () => {
        const a = await json<AppBody>(await api.request('GET', '/api/apps/blog'), 200);
        return a.status === 'NotDeployed' ? a : undefined;
      },
      { timeoutMs: 30_000 },
    );
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
    assert.match(
      (await json<{ error: string }>(await api.request('GET', `/api/apps/${shop.id}`, { token: blogOnly }), 403)).error,
      /token lacks app "shop"/,
    );
    assert.match(
      (await json<{ error: string }>(await api.request('POST', '/api/apps', { token: blogOnly, body: { name: 'other' } }), 403)).error,
      /token lacks app "other"/,
    );
    const visible = await json<{ apps: AppBody[] }>(await api.request('GET', '/api/apps', { token: blogOnly }), 200);
    assert.deepEqual(
      visible.apps.map((a) => a.name),
      ['blog'],
    );
    // An app's operations resolve the app the same way: by name or ID, within the restriction.
    const blog = visible.apps[0]!;
    assert.deepEqual(await json(await api.request('GET', `/api/apps/${blog.id}/domains`, { token: blogOnly }), 200), { domains: [] });
    assert.deepEqual(await json(await api.request('GET', '/api/apps/blog/domains', { token: blogOnly }), 200), { domains: [] });
    assert.match(
      (await json<{ error: string }>(await api.request('GET', `/api/apps/${shop.id}/domains`, { token: blogOnly }), 403)).error,
      /token lacks app "shop"/,
    );
    assert.match(
      (await json<{ error: string }>(await api.request('GET', '/api/apps/shop/domains', { token: blogOnly }), 403)).error,
      /token lacks app "shop"/,
    );
    assert.match((await json<{ error: string }>(await api.request('GET', '/api/apps/nowhere/domains'), 404)).error, /app nowhere/);
  });

  it('keeps env with PUT (replace), PATCH (merge, null removes) and DELETE of one key, and rolls the machines', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'envy', image: 'busybox' } }), 201);
    const env = async () => (await json<{ env: Record<string, string> }>(await api.request('GET', '/api/apps/envy/env'), 200)).env;
    assert.deepEqual(await env(), {});
    assert.deepEqual((await json<{ env: object }>(await api.request('PUT', '/api/apps/envy/env', { body: { A: '1', B: '2' } }), 200)).env, {
      A: '1',
      B: '2',
    });
    assert.deepEqual(
      (await json<{ env: object }>(await api.request('PATCH', '/api/apps/envy/env', { body: { B: null, C: '3' } }), 200)).env,
      { A: '1', C: '3' },
    );
    assert.equal((await api.request('DELETE', '/api/apps/envy/env/A')).status, 204);
    assert.deepEqual(await env(), { C: '3' });
    await json(await api.request('DELETE', '/api/apps/envy/env/A'), 404);
    assert.match((await json<{ error: string }>(await api.request('PUT', '/api/apps/envy/env', { body: { '1X': 'v' } }), 400)).error, /1X/);
    assert.match((await json<{ error: string }>(await api.request('PATCH', '/api/apps/envy/env', { body: { A: 5 } }), 400)).error, /A: /);
    assert.deepEqual(await env(), { C: '3' }, 'refused changes change nothing');
    // The App names the current version; a machine of it is started (this busybox app never gets
    // ready, so its older machine stays beside it, as a serving one would until the new one is ready).
    const core = api.kube.core;
    const ns = api.account.namespace;
    const app = (await api.deps.apps.find(ns, 'envy'))!;
    const current = app.spec.envSecretName!;
    await eventually(
      'a machine on the current env',
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'svc.dev/app=envy' })).items.filter(
          (p) => !p.metadata?.deletionTimestamp,
        );
        return pods.some((p) => p.spec?.containers[0]?.envFrom?.[0]?.secretRef?.name === current);
      },
      { timeoutMs: 30_000 },
    );
    const secrets = await core.listNamespacedSecret({ namespace: ns, labelSelector: 'svc.dev/app=envy,svc.dev/env=true' });
    assert.deepEqual(
      secrets.items.map((x) => x.metadata?.name),
      [current],
    );
  });

  it('deletes an app with what it owns; the name can be reused', async () => {
    const res = await api.request('DELETE', '/api/apps/shop');
    assert.equal(res.status, 204);
    await eventually('the app to be gone', async () => (await api.request('GET', '/api/apps/shop')).status === 404);
    await eventually(
      'the name to be free again',
      async () => (await api.request('POST', '/api/apps', { body: { name: 'shop' } })).status === 201,
      { timeoutMs: 30_000 },
    );
    await json(await api.request('DELETE', '/api/apps/nope'), 404);
  });
});
