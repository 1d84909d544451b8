// ingress-auth in front of deployed apps: the API and ingress-auth in-process against the test
// cluster (node-agent and controllers running). Content by Host, spoofed platform headers that never
// reach the app, unknown hosts, apps without a ready machine, request metrics, and a redeploy under
// a polling client without a failed request.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startIngress, type Ingress } from '../../ingress-auth/server.js';
import { loadConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { RequestRecorder } from '../../lib/metrics/requests.js';
import { startTestApi, type TestApi } from '../support/api.js';
import type { Answer } from '../support/ingress.js';
import { kubeConfig, uniqueName } from '../support/kube.js';
import { eventually } from '../support/wait.js';
import { labels } from '../../lib/contract.js';

describe('ingress-auth routing', () => {
  let api: TestApi;
  let ingress: Ingress;
  let recorder: RequestRecorder;
  // Hostnames are global and the oldest App of a name holds one: unique names keep this file's apps
  // from losing theirs to another test's leftovers.
  const site = uniqueName('site');
  const echo = uniqueName('echo');
  const domain = 'apps.localhost';

  /** A request through ingress-auth with the given Host (raw headers: any name spelling goes). */
  const via = (host: string, path = '/', opts: { method?: string; headers?: Array<[string, string]>; body?: string } = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const u = new URL(ingress.url);
      const headers: string[] = ['Host', host];
      for (const [k, v] of opts.headers ?? []) headers.push(k, v);
      const req = httpRequest({ host: u.hostname, port: u.port, path, method: opts.method ?? 'GET', headers, timeout: 10_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end(opts.body);
    });
  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  const deploy = async (app: string, files: Record<string, string>) =>
    (await json<{ id: string }>(await api.request('POST', `/api/apps/${app}/deploy`, { body: { files } }), 202)).id;
  const serves = async (app: string, want: string, path = '/') => {
    let last = '';
    try {
      return await eventually(
        `${app} to serve ${JSON.stringify(want)} through ingress-auth`,
        async () => {
          const r = await via(`${app}.${domain}`, path);
          last = `${r.status} ${r.body.slice(0, 200)}`;
          return r.status === 200 && r.body.includes(want) ? r : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; last answer: ${last}`, { cause: err });
    }
  };

  before(async () => {
    api = await startTestApi({ env: { SVC_ROLLOUT_DEADLINE_SECONDS: '30' } });
    recorder = new RequestRecorder(api.db, { flushIntervalMs: 60_000 });
    const config = loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_APPS_DOMAIN: domain }, { exists: () => false });
    ingress = await startIngress({
      config,
      kc: kubeConfig(),
      log: createLogger('ingress-auth', 'silent'),
      recorder,
      host: '127.0.0.1',
      port: 0,
    });
    await json(await api.request('POST', '/api/apps', { body: { name: site } }), 201);
    await json(await api.request('POST', '/api/apps', { body: { name: echo } }), 201);
  });
  after(async () => {
    await ingress?.close();
    await recorder?.stop();
    await api?.close();
  });

  it('serves a deployed app on <app>.<apps domain>, any port in Host, with a request id', async () => {
    await deploy(site, { 'index.html': '<h1>v1</h1>', 'about.html': 'about us' });
    const r = await serves(site, '<h1>v1</h1>');
    assert.match(String(r.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.equal((await via(`${site}.${domain}:8081`, '/about')).body, 'about us');
    assert.equal((await via(`${site.toUpperCase()}.${domain}`, '/about')).body, 'about us');
    const head = await via(`${site}.${domain}`, '/', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
  });

  it("answers an app's first request as soon as its deploy is reported live (its endpoints may still be on their way)", async () => {
    const fresh = uniqueName('fresh');
    await json(await api.request('POST', '/api/apps', { body: { name: fresh } }), 201);
    const id = await deploy(fresh, { 'index.html': '<h1>fresh</h1>' });
    await eventually(
      `deploy ${id} live`,
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${id}`), 200)).status === 'live',
      { timeoutMs: 90_000, intervalMs: 20 },
    );
    const first = await via(`${fresh}.${domain}`, '/');
    assert.equal(first.status, 200, first.body);
    assert.match(first.body, /fresh/);
  });

  it('never lets client-supplied X-Svc-* or forwarding headers reach the app', async () => {
    await deploy(echo, { 'api/echo.js': 'export default (req) => Object.fromEntries(req.headers)\n' });
    await serves(echo, '"host"', '/api/echo');
    const r = await via(`${echo}.${domain}`, '/api/echo', {
      headers: [
        ['X-Svc-Auth-Subject', 'admin'],
        ['x-svc-auth-subject', 'admin-again'],
        ['x_svc_auth_email', 'boss@example.com'],
        ['X_Svc-Auth-Provider', 'idp'],
        ['X-SVC-AUTH-ASSERTION', 'forged'],
        ['X-Forwarded-For', '6.6.6.6'],
        ['X-Forwarded-Host', 'evil.example'],
        ['X-Forwarded-Proto', 'https'],
        ['X-Request-Id', 'chosen-by-client'],
        ['X-Custom', 'kept'],
      ],
    });
    assert.equal(r.status, 200, r.body);
    const seen = JSON.parse(r.body) as Record<string, string>;
    const leaked = Object.keys(seen).filter((k) => /^x[-_]svc/i.test(k));
    assert.deepEqual(leaked, [], `spoofed headers reached the app: ${leaked.join(', ')}`);
    assert.ok(!JSON.stringify(seen).includes('boss@example.com'));
    assert.equal(seen['x-custom'], 'kept');
    assert.equal(seen['x-forwarded-for'], '127.0.0.1', 'replaced, not appended');
    assert.equal(seen['x-forwarded-host'], `${echo}.${domain}`);
    assert.equal(seen['x-forwarded-proto'], 'http');
    assert.equal(seen['x-request-id'], r.headers['x-request-id'], 'the same id upstream and in the response');
    assert.notEqual(seen['x-request-id'], 'chosen-by-client');
  });

  it('answers 404 for a host no app holds, JSON or HTML by Accept; /_svc/health on any host', async () => {
    const html = await via(`nothing-${site}.${domain}`);
    assert.equal(html.status, 404);
    assert.match(String(html.headers['content-type']), /^text\/html/);
    const j = await via('example.com', '/x', { headers: [['Accept', 'application/json']] });
    assert.equal(j.status, 404);
    assert.match((JSON.parse(j.body) as { error: string }).error, /no app is served at example.com/);
    assert.equal((await via('127.0.0.1:8081', '/_svc/health')).status, 200);
    const h = await via(`${site}.${domain}`, '/_svc/health');
    assert.equal(h.status, 200, 'the platform answers, not the app');
    assert.equal((await via(`${site}.${domain}`, '/_svc/other')).status, 404);
  });

  it('answers 503 while an app has no ready machine (not deployed, or not starting)', async () => {
    const empty = uniqueName('empty');
    await json(await api.request('POST', '/api/apps', { body: { name: empty } }), 201);
    const r = await eventually('the new app in the cache', async () => {
      const a = await via(`${empty}.${domain}`, '/', { headers: [['Accept', 'application/json']] });
      return a.status === 404 ? undefined : a;
    });
    assert.equal(r.status, 503);
    assert.deepEqual(JSON.parse(r.body), { error: 'the app is not deployed yet' });
    const broken = uniqueName('broken');
    await api.deps.apps.create(api.account.namespace, broken, {
      kind: 'container',
      image: 'registry.example/not-runnable:1',
      machines: 1,
    });
    const b = await eventually('the broken app in the cache', async () => {
      const a = await via(`${broken}.${domain}`, '/');
      return a.status === 404 ? undefined : a;
    });
    assert.equal(b.status, 503);
    assert.match(String(b.headers['content-type']), /^text\/html/);
    assert.match(b.body, /no machine is ready/);
    assert.equal(b.headers['cache-control'], 'no-store');
  });

  it("never proxies a path the app's policy gates while sign-in is not there (fails closed)", async () => {
    const guarded = uniqueName('guarded');
    await api.deps.apps.create(api.account.namespace, guarded, {
      kind: 'container',
      image: 'registry.example/not-runnable:1',
      machines: 1,
    });
    await eventually('the app in the cache', async () => (await via(`${guarded}.${domain}`)).status !== 404);
    await api.deps.apps.patchSpec(api.account.namespace, guarded, {
      auth: { rules: [{ mode: 'auth', paths: ['/private/**'], admit: { owner: true } }] },
    });
    const r = await eventually('the policy in the cache', async () => {
      const a = await via(`${guarded}.${domain}`, '/PRIVATE/%2e/x', { headers: [['Accept', 'application/json']] });
      return /sign-in/.test(a.body) ? a : undefined;
    });
    assert.equal(r.status, 503);
    assert.doesNotMatch((await via(`${guarded}.${domain}`, '/public')).body, /sign-in/, 'ungated paths route as usual');
  });

  it('records proxied requests per app (its uid) in the request metrics', async () => {
    await recorder.flush();
    const uid = (await api.deps.apps.find(api.account.namespace, site))!.id;
    const before = await totals(uid);
    for (let i = 0; i < 5; i++) assert.equal((await via(`${site}.${domain}`, '/')).status, 200);
    assert.equal((await via(`${site}.${domain}`, '/missing-page')).status, 404);
    await recorder.flush();
    const now = await totals(uid);
    assert.equal(now.requests - before.requests, 6);
    assert.equal(now.s2 - before.s2, 5);
    assert.equal(now.s4 - before.s4, 1);

    async function totals(appUid: string) {
      const rows = await api
        .db('app_request_metrics')
        .where({ app_uid: appUid })
        .select<Array<{ requests: number; status_2xx: number; status_4xx: number; namespace: string; app_name: string }>>(
          'requests',
          'status_2xx',
          'status_4xx',
          'namespace',
          'app_name',
        );
      for (const r of rows) assert.deepEqual([r.namespace, r.app_name], [api.account.namespace, site]);
      return rows.reduce(
        (t, r) => ({ requests: t.requests + Number(r.requests), s2: t.s2 + Number(r.status_2xx), s4: t.s4 + Number(r.status_4xx) }),
        { requests: 0, s2: 0, s4: 0 },
      );
    }
  });

  it('redeploys under a client polling through ingress-auth without a failed request', async () => {
    const samples: Array<{ ok: boolean; body: string; error?: string }> = [];
    let polling = true;
    const poller = (async () => {
      const until = Date.now() + 120_000;
      while (polling && Date.now() < until) {
        try {
          const r = await via(`${site}.${domain}`, '/');
          samples.push({
            ok: r.status === 200,
            body: r.body,
            ...(r.status === 200 ? {} : { error: `${r.status} ${r.body.slice(0, 200)}` }),
          });
        } catch (err) {
          samples.push({ ok: false, body: '', error: String(err) });
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await deploy(site, { 'index.html': '<h1>v2</h1>' });
    await serves(site, '<h1>v2</h1>');
    await deploy(site, { 'index.html': '<h1>v3</h1>' });
    await serves(site, '<h1>v3</h1>');
    // A content deploy swaps the running machine's content (decision 0036); were a machine replaced,
    // the old one would drain after the switch: keep polling until one machine is left, then more.
    await eventually(
      'the old machines gone',
      async () => {
        const pods = await api.kube.core.listNamespacedPod({ namespace: api.account.namespace, labelSelector: `${labels.app}=${site}` });
        return pods.items.length === 1;
      },
      { timeoutMs: 60_000 },
    );
    const after = samples.length;
    await eventually('more requests after it', () => samples.length >= Math.max(after + 20, 40), { timeoutMs: 30_000, intervalMs: 20 });
    polling = false;
    await poller;
    assert.deepEqual(
      samples.filter((s) => !s.ok),
      [],
      'no failed request',
    );
    const seen = [...new Set(samples.map((s) => /v\d/.exec(s.body)?.[0]))];
    assert.deepEqual(
      seen,
      ['v1', 'v2', 'v3'].filter((v) => seen.includes(v)),
    );
    assert.ok(seen.includes('v2') && seen.at(-1) === 'v3', `saw ${seen.join(',')}`);
    assert.ok(samples.length > 30, `polled continuously (${samples.length} requests)`);
  });
});
