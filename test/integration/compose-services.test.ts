// test-runs-alone: its machines' healthchecks start python for each probe, and its hit counter goes
// through three services: other files loading the node starved them past their deadlines.
// A compose file with several services on the real apiserver, nodes and ingress-auth: a web
// service, a worker and a cache-like service deploy as one app; web serves through ingress-auth
// (its policy the file's top-level one, rule 3), reaches the cache by name, and starts only once
// the cache is healthy (depends_on); the cache is reached by no other app; the worker's logs and
// machines are read by service; a change to the worker alone leaves web and cache untouched;
// ambiguous files and policies on private services are refused with nothing written.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { deployCommand } from '../../cli/deploy.js';
import { repoRoot } from '../../lib/paths.js';
import { group, labels, pluralOf, version } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { images } from '../support/images.js';
import { appsDomain, Browser, startTestIngress, type TestIngress } from '../support/ingress.js';
import { eventually } from '../support/wait.js';

const indent = (text: string, by: number) =>
  text
    .trim()
    .split('\n')
    .map((l) => `${' '.repeat(by)}${l}`)
    .join('\n');

/** An HTTP key-value store on 6379: GET /k answers the value, PUT /k sets it. */
const cacheServer = `
import http.server
data = {}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = data.get(self.path, b'')
        self.send_response(200); self.send_header('content-length', str(len(b))); self.end_headers(); self.wfile.write(b)
    def do_PUT(self):
        data[self.path] = self.rfile.read(int(self.headers['content-length']))
        self.send_response(204); self.end_headers()
http.server.ThreadingHTTPServer(('0.0.0.0', 6379), H).serve_forever()
`;

/**
 * The web service: /public/hit counts hits in the cache, reached by its compose name; /public/dns
 * reads the count through the cache's Service name; the rest is "private page".
 */
const webServer = `
import http.server, os, urllib.request
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith('/public/hit'):
            n = int(urllib.request.urlopen('http://cache:6379/hits', timeout=3).read() or 0) + 1
            urllib.request.urlopen(urllib.request.Request('http://cache:6379/hits', data=str(n).encode(), method='PUT'), timeout=3)
            body = 'hits %d' % n
        elif self.path.startswith('/public/dns'):
            # The cache by its Service's name, which only the cluster DNS knows (no host alias).
            body = 'read %s' % urllib.request.urlopen('http://stack-cache:6379/hits', timeout=3).read().decode()
        else:
            body = 'private page'
        b = body.encode()
        self.send_response(200); self.send_header('content-length', str(len(b))); self.end_headers(); self.wfile.write(b)
http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()
`;

const stack = (workerMark: string, webAuth = '') => `
x-svc:
  auth: {owner: true, except: ["/public/**"]}
services:
  web:
    image: ${images.python}
    command:
      - python3
      - -c
      - |
${indent(webServer, 8)}
    ports: ["8000"]
    depends_on:
      cache: {condition: service_healthy}
${webAuth}
  worker:
    image: ${images.busybox}
    command: ["sh", "-c", "while true; do echo worker tick $$MARK; sleep 1; done"]
    environment: {MARK: ${workerMark}}
    restart: unless-stopped
  cache:
    image: ${images.python}
    command:
      - python3
      - -c
      - |
${indent(cacheServer, 8)}
    expose: [6379]
    volumes: ["cachedata:/data"]
    healthcheck:
      test: ["CMD", "python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 6379), 1)"]
      interval: 1s
      timeout: 5s
      retries: 3
volumes:
  cachedata:
`;

interface Machine {
  ordinal: number;
  service: string | null;
  public: boolean;
  state: string;
}

describe('Compose files with several services', () => {
  let api: TestApi;
  let ingress: TestIngress;
  let ns: string;
  const json = expectJson;
  const deploy = async (app: string, compose: string, extra: Record<string, unknown> = {}) => {
    const d = await json<{ id: string }>(await api.request('POST', `/api/apps/${app}/deploy`, { body: { compose, ...extra } }), 202);
    return eventually(
      `deploy ${d.id} ended`,
      async () => {
        const got = await json<{ status: string; reason: string | null }>(await api.request('GET', `/api/deploys/${d.id}`), 200);
        return got.status === 'live' || got.status === 'failed' ? { id: d.id, ...got } : undefined;
      },
      { timeoutMs: 150_000 },
    );
  };
  const pods = async (app: string) =>
    (await api.kube.core.listNamespacedPod({ namespace: ns, labelSelector: `${labels.app}=${app}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const podNames = async (app: string, service: string) =>
    (await pods(app))
      .filter((p) => p.metadata?.labels?.[labels.service] === service)
      .map((p) => p.metadata!.name!)
      .sort();
  const custom = () => api.kube.kc.makeApiClient(k8s.CustomObjectsApi);
  const through = async (path: string, accept = 'text/html') =>
    new Browser(ingress.url).request(`stack.${appsDomain}`, path, { headers: [['Accept', accept]] });

  before(async () => {
    api = await startTestApi();
    ns = api.account.namespace;
    ingress = await startTestIngress(api);
    await json(await api.request('POST', '/api/apps', { body: { name: 'stack' } }), 201);
  });
  after(async () => {
    await ingress?.close();
    await api?.close();
  });

  it('deploys web, worker and cache as one app: web serves through ingress-auth, reaches the cache by name, and started after the cache was healthy', async () => {
    const d = await deploy('stack', stack('one'));
    assert.equal(d.status, 'live', d.reason ?? '');
    const app = await json<{ ready: string; services: Array<{ name: string; public: boolean; ready: string }> }>(
      await api.request('GET', '/api/apps/stack'),
      200,
    );
    assert.deepEqual(app.services, [
      { name: 'web', public: true, image: images.python, machines: 1, ready: '1/1', deploy: d.id },
      { name: 'worker', public: false, image: images.busybox, machines: 1, ready: '1/1', deploy: d.id },
      { name: 'cache', public: false, image: images.python, machines: 1, ready: '1/1', deploy: d.id },
    ]);
    assert.equal(app.ready, '3/3');

    // Through ingress-auth: the excepted path is public and counts in the cache; the rest is gated
    // by the file's top-level policy (owner), which is the web service's.
    let last = '';
    const first = await eventually(
      'web serves through ingress-auth',
      async () => {
        const a = await through('/public/hit');
        last = `${a.status} ${a.body.slice(0, 300)}`;
        return a.status === 200 ? a.body : undefined;
      },
      { timeoutMs: 30_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the last answer: ${last}`);
    });
    assert.match(first, /^hits \d+$/);
    const n = Number(first.split(' ')[1]);
    assert.equal((await through('/public/hit')).body, `hits ${n + 1}`, 'the cache keeps the count: web reached it by name');
    assert.equal(
      (await through('/public/dns')).body,
      `read ${n + 1}`,
      "web reached the cache by its Service's name, through the cluster DNS",
    );
    const gated = await through('/', 'text/html');
    assert.equal(gated.status, 303, 'the top-level auth gates the web service');
    assert.match(String(gated.headers.location ?? ''), /\/_svc\/auth\/login/);

    // depends_on cache: service_healthy: web's machine was made after the cache's machine was ready.
    const all = await pods('stack');
    const cache = all.find((p) => p.metadata?.labels?.[labels.service] === 'cache')!;
    const web = all.find((p) => p.metadata?.labels?.[labels.public] === 'true')!;
    const cacheReady = cache.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
    assert.ok(cacheReady && web.metadata?.creationTimestamp, 'both have times');
    assert.ok(
      new Date(web.metadata.creationTimestamp).getTime() >= new Date(cacheReady).getTime() - 1000,
      `web made at ${web.metadata.creationTimestamp.toISOString()}, cache ready at ${cacheReady.toISOString()}`,
    );

    // kubectl sees the same: the App's status per service, and a Service per service with ports.
    const cr = (await custom().getNamespacedCustomObject({ group, version, namespace: ns, plural: pluralOf('App'), name: 'stack' })) as App;
    assert.deepEqual(
      cr.status?.services?.map((s) => [s.name, s.public, s.ready]),
      [
        ['web', true, '1/1'],
        ['worker', false, '1/1'],
        ['cache', false, '1/1'],
      ],
    );
    const services = (await api.kube.core.listNamespacedService({ namespace: ns, labelSelector: `${labels.app}=stack` })).items
      .map((s) => s.metadata!.name!)
      .sort();
    assert.deepEqual(services, ['stack', 'stack-cache', 'stack-web']);

    // The cache's volume is its machine's, listed with its service, and kept while declared.
    const volume = (await json<{ volumes: Array<Record<string, unknown>> }>(await api.request('GET', '/api/volumes'), 200)).volumes.find(
      (v) => v.ref === 'stack-cachedata-m0',
    );
    assert.deepEqual([volume?.app, volume?.service, volume?.machine, volume?.path, volume?.attached], ['stack', 'cache', 0, '/data', true]);
    assert.match((await json<{ error: string }>(await api.request('DELETE', '/api/volumes/stack-cachedata-m0'), 409)).error, /attached/);
  });

  it("the cache is reached by the app's machines only, never by another app", async () => {
    const address = (await api.kube.core.readNamespacedService({ namespace: ns, name: 'stack-cache' })).spec!.clusterIP!;
    await json(await api.request('POST', '/api/apps', { body: { name: 'outsider' } }), 201);
    const probe = `while true; do if nc -z -w 2 ${address} 6379; then echo reach-open; else echo reach-closed; fi; sleep 1; done`;
    await json(
      await api.request('POST', '/api/apps/outsider/deploy', {
        body: {
          compose: `services:\n  probe:\n    image: ${images.busybox}\n    command: ["sh", "-c", "${probe}"]\n    ports: ["8080"]\n`,
        },
      }),
      202,
    );
    const lines = await eventually(
      'the outsider tried twice',
      async () => {
        const text = await (await api.request('GET', '/api/apps/outsider/logs?tail=20')).text();
        return (text.match(/reach-/g) ?? []).length >= 2 ? text : undefined;
      },
      { timeoutMs: 90_000 },
    );
    assert.doesNotMatch(lines, /reach-open/);
    assert.match(lines, /reach-closed/);
    await api.request('DELETE', '/api/apps/outsider');
  });

  it("reads the worker's logs and machines by service, and refuses a service the app does not have", async () => {
    const text = await eventually(
      'worker lines',
      async () => {
        const t = await (await api.request('GET', '/api/apps/stack/logs?service=worker&tail=5')).text();
        return /worker tick one/.test(t) ? t : undefined;
      },
      { timeoutMs: 30_000 },
    );
    for (const line of text.trim().split('\n'))
      assert.match(line, / worker\/m0 worker tick one$/, "only the worker's lines, named by service");
    const ndjson = await (
      await api.request('GET', '/api/apps/stack/logs?service=worker&tail=1', { headers: { accept: 'application/x-ndjson' } })
    ).text();
    assert.equal((JSON.parse(ndjson.trim().split('\n')[0]!) as { service: string }).service, 'worker');
    const machines = await json<{ machines: Machine[] }>(await api.request('GET', '/api/apps/stack/machines?service=worker'), 200);
    assert.deepEqual(
      machines.machines.map((m) => [m.service, m.public, m.ordinal, m.state]),
      [['worker', false, 0, 'running']],
    );
    const everything = await json<{ machines: Machine[] }>(await api.request('GET', '/api/apps/stack/machines'), 200);
    assert.deepEqual(
      everything.machines.map((m) => m.service),
      ['web', 'worker', 'cache'],
    );
    const metrics = await json<{ machines: Array<{ service: string | null }> }>(
      await api.request('GET', '/api/apps/stack/metrics/machines'),
      200,
    );
    assert.deepEqual(metrics.machines.map((m) => m.service).sort(), ['cache', 'web', 'worker']);
    const refused = await json<{ error: string }>(await api.request('GET', '/api/apps/stack/logs?service=db'), 400);
    assert.match(refused.error, /app stack has no service db \(it has web, worker, cache\)/);
  });

  it("a change to the worker alone replaces only the worker's machine", async () => {
    const webBefore = await podNames('stack', 'web');
    const cacheBefore = await podNames('stack', 'cache');
    const workerBefore = await podNames('stack', 'worker');
    const count = Number((await through('/public/hit')).body.split(' ')[1]);
    const d = await deploy('stack', stack('two'));
    assert.equal(d.status, 'live', d.reason ?? '');
    await eventually(
      'the old worker gone',
      async () => ((await podNames('stack', 'worker')).some((n) => workerBefore.includes(n)) ? undefined : true),
      { timeoutMs: 30_000 },
    );
    assert.deepEqual(await podNames('stack', 'web'), webBefore, 'web kept its machine');
    const services = (await json<{ services: Array<{ name: string; deploy: string }> }>(await api.request('GET', '/api/apps/stack'), 200))
      .services;
    assert.equal(services.find((v) => v.name === 'worker')?.deploy, d.id, "the worker's machine is the new deploy's");
    assert.notEqual(services.find((v) => v.name === 'web')?.deploy, d.id, "web's is still the earlier deploy's");
    assert.deepEqual(await podNames('stack', 'cache'), cacheBefore, 'cache kept its machine');
    assert.equal((await through('/public/hit')).body, `hits ${count + 1}`, 'and its data');
    await eventually(
      "the new worker's lines",
      async () =>
        /worker tick two/.test(await (await api.request('GET', '/api/apps/stack/logs?service=worker&tail=3')).text()) || undefined,
      { timeoutMs: 30_000 },
    );
  });

  it('a service-level policy replaces the top-level one for the public service (rule 3)', async () => {
    const webAuth = '    x-svc:\n      auth: {emails: [ada@example.com], except: ["/public/**"]}';
    const d = await deploy('stack', stack('two', webAuth));
    assert.equal(d.status, 'live', d.reason ?? '');
    const cr = (await custom().getNamespacedCustomObject({ group, version, namespace: ns, plural: pluralOf('App'), name: 'stack' })) as App;
    assert.deepEqual(
      cr.spec.auth?.rules.map((r) => [r.mode, r.admit, r.except]),
      [['auth', { emails: ['ada@example.com'] }, ['/public/**']]],
      "web's own policy, not the top-level owner rule as well",
    );
    // The same machines still serve: the policy is ingress-auth's, not the machines'.
    assert.equal((await through('/public/hit')).status, 200);
    assert.equal((await through('/', 'application/json')).status, 401);
  });

  it('refuses ambiguous files and policies on private services with a 400 naming them, and writes nothing', async () => {
    const before = await json<{ deploys: unknown[] }>(await api.request('GET', '/api/apps/stack/deploys'), 200);
    const twoPublic = `services:\n  web:\n    image: ${images.python}\n    ports: ["8000"]\n  admin:\n    image: ${images.python}\n    ports: ["9000"]\n`;
    const a = await json<{ error: string }>(await api.request('POST', '/api/apps/stack/deploy', { body: { compose: twoPublic } }), 400);
    assert.match(
      a.error,
      /services web, admin all publish a port; one service receives the app's hostname: mark it with x-svc\.public: true/,
    );
    const privatePolicy = `services:\n  web:\n    image: ${images.python}\n    ports: ["8000"]\n  worker:\n    image: ${images.busybox}\n    x-svc: {auth: owner}\n`;
    const b = await json<{ error: string }>(await api.request('POST', '/api/apps/stack/deploy', { body: { compose: privatePolicy } }), 400);
    assert.match(b.error, /services\.worker\.x-svc\.auth: worker does not receive the app's hostname \(web does\)/);
    const after = await json<{ deploys: unknown[] }>(await api.request('GET', '/api/apps/stack/deploys'), 200);
    assert.equal(after.deploys.length, before.deploys.length, 'no deploy recorded');
  });

  it('the example repository (docs/examples/compose-stack) deploys as written with svc deploy', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'example' } }), 201);
    const lines: string[] = [];
    const d = await deployCommand({
      app: 'example',
      dir: path.join(repoRoot, 'docs/examples/compose-stack'),
      apiUrl: `${api.url}/api`,
      token: api.token,
      wait: true,
      timeoutMs: 150_000,
      out: (l) => lines.push(l),
    });
    assert.equal(d.status, 'live');
    assert.match(lines[0]!, /^Deploying compose\.yaml to example: services web, worker, cache$/);
    const app = await json<{ services: Array<{ name: string; ready: string }> }>(await api.request('GET', '/api/apps/example'), 200);
    assert.deepEqual(
      app.services.map((v) => [v.name, v.ready]),
      [
        ['web', '2/2'],
        ['worker', '1/1'],
        ['cache', '1/1'],
      ],
    );
    const hits = await new Browser(ingress.url).request(`example.${appsDomain}`, '/hits');
    assert.equal(hits.status, 200, hits.body);
    assert.match(hits.body, /^Hello from the stack: \d+ hits$/, 'web.env came with it, and web reached the cache');
    assert.equal(
      (await new Browser(ingress.url).request(`example.${appsDomain}`, '/', { headers: [['Accept', 'application/json']] })).status,
      401,
      "the rest is the owner's",
    );
    await eventually(
      'the worker reads the cache',
      async () =>
        /worker: \d+ hits so far/.test(await (await api.request('GET', '/api/apps/example/logs?service=worker&tail=5')).text()) ||
        undefined,
      { timeoutMs: 30_000 },
    );
    await api.request('DELETE', '/api/apps/example');
  });

  it('a service dropped from the file loses its machines and its Service', async () => {
    const withoutCache = `services:\n  web:\n    image: ${images.busybox}\n    command: ["httpd", "-f", "-p", "8000"]\n    ports: ["8000"]\n  worker:\n    image: ${images.busybox}\n    command: ["sleep", "3600"]\n`;
    const d = await deploy('stack', withoutCache);
    assert.equal(d.status, 'live', d.reason ?? '');
    await eventually('the cache gone', async () => ((await podNames('stack', 'cache')).length === 0 ? true : undefined), {
      timeoutMs: 30_000,
    });
    await eventually(
      'its Service gone',
      async () => {
        const names = (await api.kube.core.listNamespacedService({ namespace: ns, labelSelector: `${labels.app}=stack` })).items.map(
          (s) => s.metadata!.name!,
        );
        return names.includes('stack-cache') ? undefined : true;
      },
      { timeoutMs: 30_000 },
    );
    const volume = await eventually('its volume detached', async () =>
      (await json<{ volumes: Array<Record<string, unknown>> }>(await api.request('GET', '/api/volumes'), 200)).volumes.find(
        (v) => v.ref === 'stack-cachedata-m0' && v.attached === false,
      ),
    );
    assert.equal(volume.service, 'cache', 'kept, detached, until deleted');
    assert.equal((await api.request('DELETE', '/api/volumes/stack-cachedata-m0')).status, 204);
  });
});
