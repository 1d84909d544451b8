// Apps end to end through the API: deploy files and archives, the page served from the app's
// Service endpoints, redeploys and rollbacks without a failed request, a failed deploy that leaves
// the serving one alone, forks, previews, expiry, and bad input that leaves nothing behind.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getFromApp, Poller } from '../support/app-traffic.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';
import { images } from '../support/images.js';

interface DeployBody {
  id: string;
  app: string;
  status: string;
  reason: string | null;
  current: boolean;
  kind: string;
  digest: string | null;
  origin: string;
  origin_deploy: string | null;
}

const uploadLimit = 256 * 1024;

describe('API deploys', () => {
  let api: TestApi;
  let ns: string;
  before(async () => {
    api = await startTestApi({ env: { SVC_DEPLOY_UPLOAD_LIMIT_BYTES: String(uploadLimit), SVC_ROLLOUT_DEADLINE_SECONDS: '30' } });
    ns = api.account.namespace;
  });
  after(async () => {
    await api?.close();
  });
  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  const deployFiles = (app: string, files: Record<string, string>) => api.request('POST', `/api/apps/${app}/deploy`, { body: { files } });
  /** Live or failed; a deploy that is neither in time is reported with its app's status and machines. */
  const settled = async (id: string, timeoutMs = 60_000) => {
    let last: DeployBody | undefined;
    return eventually(
      `deploy ${id} to settle`,
      async () => {
        last = await json<DeployBody>(await api.request('GET', `/api/deploys/${id}`), 200);
        return last.status === 'live' || last.status === 'failed' ? last : undefined;
      },
      {
        timeoutMs,
        intervalMs: 100,
        detail: async () =>
          last
            ? `last seen ${last.status}; app ${await (await api.request('GET', `/api/apps/${last.app}`)).text()}; machines ${await (await api.request('GET', `/api/apps/${last.app}/machines`)).text()}`
            : 'no deploy read yet',
      },
    );
  };
  /** Settled, and live: a failure names its reason. */
  const live = async (id: string) => {
    const d = await settled(id);
    assert.equal(d.status, 'live', `deploy ${id} failed: ${d.reason}`);
    return d;
  };
  const served = async (app: string, want: string, pathName = '/') => {
    let last = 'no ready endpoint';
    return eventually(
      `${app} to serve ${JSON.stringify(want)}`,
      async () => {
        const r = await getFromApp(ns, app, pathName);
        if (r) last = `${r.status} ${r.body.slice(0, 200)}`;
        return r && r.status === 200 && r.body.includes(want) ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, detail: () => `last answer: ${last}` },
    );
  };

  it('deploys inline files: a static site served from the Service endpoints, the deploy recorded live', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'site' } }), 201);
    const d = await json<DeployBody>(await deployFiles('site', { 'index.html': '<h1>v1</h1>', 'about.html': 'about us' }), 202);
    assert.equal(d.status, 'deploying');
    assert.equal(d.kind, 'static');
    assert.equal(d.origin, 'files');
    assert.match(d.digest ?? '', /^sha256:[a-f0-9]{64}$/);
    const live = await settled(d.id);
    assert.equal(live.status, 'live', live.reason ?? '');
    assert.equal(live.current, true);
    assert.equal((await served('site', '<h1>v1</h1>')).status, 200);
    assert.equal((await getFromApp(ns, 'site', '/about'))?.body, 'about us', 'clean URLs');
    const app = await json<{ kind: string; current_deploy: string }>(await api.request('GET', '/api/apps/site'), 200);
    assert.equal(app.kind, 'static');
    assert.equal(app.current_deploy, d.id);
    // The artifact is served by digest, to a machine's credential, and is the bytes that hash to it.
    const { mintArtifactCredential } = await import('../../lib/artifacts/credential.js');
    const key = api.deps.config.deploys.artifactKey!;
    const credential = (digest: string) => ({
      authorization: `Bearer ${mintArtifactCredential(key, digest, new Date(api.clock.now.getTime() + 60_000))}`,
    });
    const artifact = await fetch(`${api.url}/artifacts/${d.digest}`, { headers: credential(d.digest!) });
    assert.equal(artifact.status, 200);
    const { createHash } = await import('node:crypto');
    assert.equal(
      `sha256:${createHash('sha256')
        .update(Buffer.from(await artifact.arrayBuffer()))
        .digest('hex')}`,
      d.digest,
    );
    const missing = `sha256:${'0'.repeat(64)}`;
    assert.equal((await fetch(`${api.url}/artifacts/${missing}`, { headers: credential(missing) })).status, 404);
  });

  it('redeploys with no failed request while a client polls, then rolls back to the previous deploy', async () => {
    const poller = new Poller(ns, 'site');
    const v2 = await json<DeployBody>(await deployFiles('site', { 'index.html': '<h1>v2</h1>' }), 202);
    await live(v2.id);
    await served('site', '<h1>v2</h1>');
    const back = await json<DeployBody>(await api.request('POST', '/api/apps/site/rollback', { body: {} }), 202);
    assert.equal(back.origin, 'rollback');
    const v1 = (await json<{ deploys: DeployBody[] }>(await api.request('GET', '/api/apps/site/deploys'), 200)).deploys.at(-1)!;
    assert.equal(back.origin_deploy, v1.id, 'rolls back to the deploy before the current one');
    await live(back.id);
    await served('site', '<h1>v1</h1>');
    await poller.more(20);
    const samples = await poller.stop();
    assert.deepEqual(poller.failures(), [], 'no failed request');
    const bodies = samples.map((s) => (s.body?.includes('v2') ? 'v2' : 'v1'));
    assert.ok(bodies.includes('v2') && bodies.at(-1) === 'v1', `saw v2 then v1 again: ${[...new Set(bodies)].join(',')}`);
    assert.ok(samples.length > 20, `polled continuously (${samples.length} requests)`);
    const list = await json<{ deploys: DeployBody[] }>(await api.request('GET', '/api/apps/site/deploys'), 200);
    assert.deepEqual(list.deploys.map((d) => d.id).slice(0, 2), [back.id, v2.id], 'newest first');
    assert.deepEqual(
      list.deploys.filter((d) => d.current).map((d) => d.id),
      [back.id],
    );
    // Rolling back to a named deploy.
    const named = await json<DeployBody>(await api.request('POST', '/api/apps/site/rollback', { body: { deploy_id: v2.id } }), 202);
    await live(named.id);
    await served('site', '<h1>v2</h1>');
    // Each rollback is in the event log, naming the deploy it returned to.
    const rolled = await json<{ events: Array<{ data: { deploy: string; to: string } }> }>(
      await api.request('GET', '/api/events?kinds=deploy.rolled_back&app=site'),
      200,
    );
    assert.deepEqual(
      rolled.events.map((e) => [e.data.deploy, e.data.to]),
      [
        [back.id, v1.id],
        [named.id, v2.id],
      ],
    );
  });

  it('deploy A, see A, deploy B, see B, roll back at once: A serves again, never the deploy before it', async () => {
    // No pause between the steps, and no wait on the API's records: what is served is what counts.
    await json(await api.request('POST', '/api/apps', { body: { name: 'abc' } }), 201);
    const z = await json<DeployBody>(await deployFiles('abc', { 'index.html': '<h1>Z</h1>' }), 202);
    await live(z.id);
    const a = await json<DeployBody>(await deployFiles('abc', { 'index.html': '<h1>A</h1>' }), 202);
    await served('abc', '<h1>A</h1>');
    const b = await json<DeployBody>(await deployFiles('abc', { 'index.html': '<h1>B</h1>' }), 202);
    await served('abc', '<h1>B</h1>');
    const back = await json<DeployBody>(await api.request('POST', '/api/apps/abc/rollback', { body: {} }), 202);
    assert.equal(back.origin_deploy, a.id, 'the rollback returns to A');
    await served('abc', '<h1>A</h1>');
    await live(back.id);
    const list = await json<{ deploys: DeployBody[] }>(await api.request('GET', '/api/apps/abc/deploys'), 200);
    assert.deepEqual(
      list.deploys.slice(0, 3).map((d) => [d.id, d.status]),
      [
        [back.id, 'live'],
        [b.id, 'live'],
        [a.id, 'live'],
      ],
    );
    // The race made certain: the controller says `back` went live, its row says it is still
    // deploying (the recorder behind). The rollback counts the controller's word.
    const c = await json<DeployBody>(await deployFiles('abc', { 'index.html': '<h1>C</h1>' }), 202);
    await live(c.id);
    await served('abc', '<h1>C</h1>');
    await api.db('deploys').where({ id: back.id }).update({ status: 'deploying' });
    const again = await json<DeployBody>(await api.request('POST', '/api/apps/abc/rollback', { body: {} }), 202);
    assert.equal(again.origin_deploy, back.id, 'the deploy the controller said went live, not the one before it');
    await served('abc', '<h1>A</h1>');
  });

  it('fails a deploy whose machines cannot start: the serving deploy keeps serving, the spec stays as deployed', async () => {
    const poller = new Poller(ns, 'site');
    try {
      const before = await json<{ current_deploy: string }>(await api.request('GET', '/api/apps/site'), 200);
      const bad = await json<DeployBody>(
        await api.request('POST', '/api/apps/site/deploy', { body: { image: 'registry.example/not-runnable:1' } }),
        202,
      );
      const failed = await settled(bad.id);
      assert.equal(failed.status, 'failed');
      assert.match(failed.reason ?? '', /ErrImagePull|ImagePullBackOff/);
      // The controller decided it, and the recorder wrote it down: the row, not only the status.
      const row = await eventually('the failure recorded', async () => {
        const d = await api.deps.deploys.get(api.account.id, bad.id);
        return d?.status === 'failed' ? d : undefined;
      });
      assert.match(row.reason ?? '', /ErrImagePull|ImagePullBackOff/);
      const app = await eventually('the failed machine gone, the old one serving', async () => {
        const a = await api.deps.apps.find(ns, 'site');
        return a?.status?.machines?.every((m) => m.deploy === before.current_deploy && m.state === 'running') ? a : undefined;
      });
      assert.equal(app.status?.currentDeploy, before.current_deploy);
      assert.equal(app.status?.rollout?.state, 'Failed');
      assert.equal(app.spec.deployId, bad.id, 'the spec names the deploy as it was written: nothing rewrites it');
      assert.equal(app.spec.image, 'registry.example/not-runnable:1');
      const shown = await json<{ current_deploy: string }>(await api.request('GET', '/api/apps/site'), 200);
      assert.equal(shown.current_deploy, before.current_deploy);
      await poller.more(20);
    } finally {
      // Stopped whatever happened: a poller left running keeps the test file from ever ending.
      await poller.stop();
    }
    assert.deepEqual(poller.failures(), [], 'the serving deploy kept serving');
    assert.ok(poller.samples.every((s) => s.body?.includes('<h1>v2</h1>')));
  });

  it('deploys a .tar.gz upload of Markdown pages, rendered to HTML', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'docs' } }), 201);
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-docs-'));
    try {
      mkdirSync(path.join(dir, 'tree/guide'), { recursive: true });
      writeFileSync(path.join(dir, 'tree/index.md'), '---\ntitle: Docs home\n---\n# Welcome\n\nSee the [guide](/guide/start).\n');
      writeFileSync(path.join(dir, 'tree/guide/start.md'), '# Start\n\nStep *one*.\n');
      execFileSync('tar', ['-czf', path.join(dir, 'site.tgz'), '-C', path.join(dir, 'tree'), '.']);
      const body = readFileSync(path.join(dir, 'site.tgz'));
      const res = await fetch(`${api.url}/api/apps/docs/deploy`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/gzip' },
        body,
      });
      const d = await json<DeployBody>(res, 202);
      assert.equal(d.kind, 'markdown');
      assert.equal(d.origin, 'tarball');
      await live(d.id);
      const home = await served('docs', '<h1');
      assert.match(home.body, /Welcome/);
      assert.match(home.body, /<title>Docs home<\/title>/);
      assert.match((await getFromApp(ns, 'docs', '/guide/start'))!.body, /<em>one<\/em>/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('forks an app with its deploy and env, and serves previews on their own hostnames', async () => {
    await json(await api.request('PUT', '/api/apps/site/env', { body: { GREETING: 'hi' } }), 200);
    const fork = await json<{ app: { name: string }; deploy: DeployBody }>(
      await api.request('POST', '/api/apps/site/fork', { body: { name: 'site-copy' } }),
      201,
    );
    assert.equal(fork.app.name, 'site-copy');
    assert.equal(fork.deploy.origin, 'fork');
    await live(fork.deploy.id);
    await served('site-copy', '<h1>v2</h1>');
    assert.deepEqual((await json<{ env: Record<string, string> }>(await api.request('GET', '/api/apps/site-copy/env'), 200)).env, {
      GREETING: 'hi',
    });
    const copy = await api.deps.apps.find(ns, 'site-copy');
    assert.equal(copy?.generation, 1, 'created whole in one write: its first machines already have the env');
    const secret = await api.kube.core.readNamespacedSecret({ namespace: ns, name: copy.spec.envSecretName! });
    assert.equal(secret.metadata?.ownerReferences?.[0]?.uid, copy.id, 'the env copy goes with the fork');
    assert.equal((await json(await api.request('POST', '/api/apps/site/fork', { body: { name: 'site-copy' } }), 409)) !== undefined, true);

    const created = await json<{ preview: { ref: string; app: string }; deploy: DeployBody }>(
      await api.request('POST', '/api/apps/site/previews', { body: { ref: 'pr-7', files: { 'index.html': 'preview of pr-7' } } }),
      201,
    );
    assert.equal(created.preview.app, 'site--pr-7');
    await live(created.deploy.id);
    await served('site--pr-7', 'preview of pr-7');
    const listed = await eventually('the preview in the list', async () => {
      const l = await json<{ previews: Array<{ ref: string; url: string | null }> }>(
        await api.request('GET', '/api/apps/site/previews'),
        200,
      );
      return l.previews[0]?.url ? l : undefined;
    });
    assert.deepEqual(
      listed.previews.map((p) => [p.ref, p.url]),
      [['pr-7', 'http://site--pr-7.apps.localhost:8081']],
    );
    const apps = await json<{ apps: Array<{ name: string }> }>(await api.request('GET', '/api/apps'), 200);
    assert.ok(!apps.apps.some((a) => a.name === 'site--pr-7'), 'previews are listed under their app, not as apps');
    const redeploy = await json<DeployBody>(
      await api.request('POST', '/api/apps/site/previews/pr-7/deploy', { body: { files: { 'index.html': 'pr-7 again' } } }),
      202,
    );
    await live(redeploy.id);
    await served('site--pr-7', 'pr-7 again');
    await served('site', '<h1>v2</h1>');
    assert.equal((await api.request('DELETE', '/api/apps/site/previews/pr-7')).status, 204);
    await eventually('the preview app to go', async () => (await api.request('GET', '/api/apps/site--pr-7')).status === 404);
    assert.equal((await api.request('DELETE', '/api/apps/site/previews/pr-7')).status, 404);
  });

  it('expiry: a set expiry deletes the app when it passes; DELETE clears it', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'brief' } }), 201);
    const set = await json<{ expires_at: string }>(await api.request('PUT', '/api/apps/brief/expiry', { body: { ttl: '1h' } }), 200);
    assert.ok(Date.parse(set.expires_at) > Date.now() + 3500_000);
    assert.equal((await api.request('DELETE', '/api/apps/brief/expiry')).status, 204);
    assert.equal((await json<{ expires_at: string | null }>(await api.request('GET', '/api/apps/brief'), 200)).expires_at, null);
    // Read-your-writes: a GET right after each write shows it (reads come from the informer cache).
    for (let i = 0; i < 10; i++) {
      const put = await json<{ expires_at: string }>(
        await api.request('PUT', '/api/apps/brief/expiry', { body: { ttl: `${i + 2}h` } }),
        200,
      );
      assert.equal(
        (await json<{ expires_at: string | null }>(await api.request('GET', '/api/apps/brief'), 200)).expires_at,
        put.expires_at,
      );
      assert.equal((await api.request('DELETE', '/api/apps/brief/expiry')).status, 204);
      assert.equal((await json<{ expires_at: string | null }>(await api.request('GET', '/api/apps/brief'), 200)).expires_at, null);
    }
    await json(
      await api.request('PUT', '/api/apps/brief/expiry', { body: { expires_at: new Date(Date.now() + 2000).toISOString() } }),
      200,
    );
    await eventually('the expired app to be deleted', async () => (await api.request('GET', '/api/apps/brief')).status === 404, {
      timeoutMs: 30_000,
    });
    // A deploy whose app is deleted before it goes live ends, rather than staying in flight.
    await json(await api.request('POST', '/api/apps', { body: { name: 'gone' } }), 201);
    const orphan = await json<DeployBody>(
      await api.request('POST', '/api/apps/gone/deploy', { body: { image: images.node, command: ['sleep', '600'] } }),
      202,
    );
    assert.equal((await api.request('DELETE', '/api/apps/gone')).status, 204);
    const ended = await settled(orphan.id, 30_000);
    assert.equal(ended.status, 'failed');
    assert.equal(ended.reason, 'the app was deleted');
    await json(await api.request('PUT', '/api/apps/site/expiry', { body: { ttl: 'soon' } }), 400);
    await json(await api.request('PUT', '/api/apps/site/expiry', { body: { expires_at: '2020-01-01T00:00:00Z' } }), 400);
  });

  it('refuses bad input with a 4XX {error} and leaves nothing behind', async () => {
    const deploysBefore = (await json<{ deploys: DeployBody[] }>(await api.request('GET', '/api/apps/site/deploys'), 200)).deploys.length;
    const appBefore = await json<{ current_deploy: string }>(await api.request('GET', '/api/apps/site'), 200);
    const refuse = async (res: Response, status: number, pattern: RegExp) => {
      const body = await json<{ error: string }>(res, status);
      assert.match(body.error, pattern);
    };
    await refuse(await api.request('POST', '/api/apps', { body: { name: 'Bad_Name' } }), 400, /name/);
    await refuse(await api.request('POST', '/api/apps', { body: { name: 'a--b' } }), 400, /--/);
    await refuse(await api.request('POST', '/api/apps/nope/deploy', { body: { files: { 'index.html': 'x' } } }), 404, /app nope not found/);
    await refuse(await api.request('GET', '/api/deploys/dep-nope'), 404, /deploy dep-nope not found/);
    await refuse(await api.request('POST', '/api/apps/site/deploy', { body: { compose: 'services: [oops' } }), 400, /compose/);
    await refuse(
      await api.request('POST', '/api/apps/site/deploy', { body: { compose: 'services:\n  web:\n    build: .\n' } }),
      400,
      /services\.web\.build is not supported/,
    );
    await refuse(
      await api.request('POST', '/api/apps/site/deploy', { body: { compose: 'services:\n  a:\n    image: x\n  b:\n    image: y\n' } }),
      400,
      /none of the services a, b publishes a port/,
    );
    await refuse(await api.request('POST', '/api/apps/site/deploy', { body: { files: { '../etc/passwd': 'x' } } }), 400, /files/);
    await refuse(await api.request('POST', '/api/apps/site/deploy', { body: { files: {} } }), 400, /no files/);
    await refuse(await api.request('POST', '/api/apps/site/deploy', { body: {} }), 400, /send files, image, compose/);
    const big = Buffer.alloc(uploadLimit + 1024, 7);
    await refuse(
      await fetch(`${api.url}/api/apps/site/deploy`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/gzip' },
        body: big,
      }),
      413,
      /larger than/,
    );
    await refuse(
      await fetch(`${api.url}/api/apps/site/deploy`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/gzip' },
        body: Buffer.from('not a tarball'),
      }),
      400,
      /archive/,
    );
    const deploysAfter = (await json<{ deploys: DeployBody[] }>(await api.request('GET', '/api/apps/site/deploys'), 200)).deploys.length;
    assert.equal(deploysAfter, deploysBefore, 'no deploy recorded');
    assert.equal(
      (await json<{ current_deploy: string }>(await api.request('GET', '/api/apps/site'), 200)).current_deploy,
      appBefore.current_deploy,
    );
    const { readdirSync } = await import('node:fs');
    assert.deepEqual(readdirSync(path.join(api.deps.config.deploys.artifactDir, 'tmp')), [], 'no staged upload left');
  });

  it('deploys a compose file with one service as a container app', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'svc1' } }), 201);
    const compose = [
      'services:',
      '  web:',
      `    image: ${images.node}`,
      "    command: [node, -e, \"require('http').createServer((q, s) => s.end('hello ' + process.env.WHO)).listen(8080)\"]",
      "    ports: ['80:8080']",
      '    environment:',
      '      WHO: compose',
      '',
    ].join('\n');
    const d = await json<DeployBody>(await api.request('POST', '/api/apps/svc1/deploy', { body: { compose } }), 202);
    assert.equal(d.kind, 'container');
    assert.equal(d.origin, 'compose');
    assert.equal((await settled(d.id)).status, 'live', 'compose service live');
    await served('svc1', 'hello compose');
  });

  it('migrates a machine to the other node, the new one ready before the old goes, with no failed request', async () => {
    type Machines = { machines: Array<{ ordinal: number; node: string | null; state: string }> };
    const before = await eventually('site machine 0 running', async () => {
      const m = await json<Machines>(await api.request('GET', '/api/apps/site/machines'), 200);
      return m.machines[0]?.state === 'running' && m.machines[0].node ? m.machines[0] : undefined;
    });
    const poller = new Poller(ns, 'site');
    const moved = await json<{ ordinal: number; from: string; to: string }>(
      await api.request('POST', '/api/apps/site/machines/0/migrate', { body: {} }),
      202,
    );
    assert.equal(moved.from, before.node);
    assert.notEqual(moved.to, before.node);
    await eventually(
      'machine 0 running on the other node',
      async () => {
        const m = await json<Machines>(await api.request('GET', '/api/apps/site/machines'), 200);
        return m.machines.length === 1 && m.machines[0]!.node === moved.to && m.machines[0]!.state === 'running';
      },
      { timeoutMs: 60_000 },
    );
    await eventually(
      'only the new machine left',
      async () => {
        const pods = await api.kube.core.listNamespacedPod({ namespace: ns, labelSelector: 'svc.dev/app=site' });
        return pods.items.length === 1 && pods.items[0]!.spec?.nodeName === moved.to;
      },
      { timeoutMs: 30_000 },
    );
    await poller.more(20);
    await poller.stop();
    assert.deepEqual(poller.failures(), [], 'no failed request during the move');
    assert.ok(new Set(poller.samples.map((s) => s.body)).size === 1, 'the same content throughout');
    await json(await api.request('POST', '/api/apps/site/machines/5/migrate', { body: {} }), 404);
    await json(await api.request('POST', '/api/apps/site/machines/x/migrate', { body: {} }), 400);
    await json(await api.request('POST', '/api/apps/site/machines/0/migrate', { body: { node: moved.to } }), 409);
  });

  it('deploys a handler tree: routes answered by its modules, the rest static, handler source never served', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'fns' } }), 201);
    const refused = await json<{ error: string }>(
      await deployFiles('fns', { 'api/hello.rb': 'puts 1', 'api/ok.js': 'export default () => 1' }),
      400,
    );
    assert.match(refused.error, /api\/hello\.rb/, 'names what the runtime cannot run');
    const d = await json<DeployBody>(
      await deployFiles('fns', {
        'api/hello.js': "export default (req) => 'hello from a handler at ' + new URL(req.url).pathname;\n",
        'api/users/[id].ts':
          "export default (req: Request, { params }: { params: { id: string } }) => ({ user: params.id, who: req.headers.get('x-svc-auth-subject') });\n",
        'handlers/time.mjs': "export const GET = () => new Response('tick', { headers: { 'x-handler': 'time' } });\n",
        'about.html': '<h1>about the functions</h1>',
      }),
      202,
    );
    assert.equal(d.kind, 'handlers');
    const live = await settled(d.id);
    assert.equal(live.status, 'live', live.reason ?? '');
    await served('fns', 'hello from a handler at /api/hello', '/api/hello');
    const user = await getFromApp(ns, 'fns', '/api/users/42');
    assert.equal(user?.status, 200);
    assert.deepEqual(JSON.parse(user.body), { user: '42', who: null }, 'a TypeScript handler with a route param');
    assert.equal((await getFromApp(ns, 'fns', '/time'))?.body, 'tick', 'handlers/ files serve from the root');
    assert.equal((await getFromApp(ns, 'fns', '/about'))?.body, '<h1>about the functions</h1>', 'the rest is a static site');
    for (const p of ['/api/hello.js', '/%61pi/hello.js', '/handlers/time.mjs']) {
      const r = await getFromApp(ns, 'fns', p);
      assert.equal(r?.status, 404, p);
      assert.doesNotMatch(r?.body ?? '', /export/, p);
    }
  });

  it('svc deploy packs a directory, follows the deploy with progress until live, and fails clearly', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { repoRoot } = await import('../../lib/paths.js');
    const run = (args: string[]) =>
      promisify(execFile)(process.execPath, [path.join(repoRoot, 'bin/svc.js'), ...args], {
        env: { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token },
      });
    await json(await api.request('POST', '/api/apps', { body: { name: 'from-cli' } }), 201);
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-cli-'));
    try {
      mkdirSync(path.join(dir, 'css'));
      writeFileSync(path.join(dir, 'index.html'), '<h1>from the CLI</h1>');
      writeFileSync(path.join(dir, 'css/site.css'), 'h1 { color: teal }');
      const { stdout } = await run(['deploy', 'from-cli', dir]);
      assert.match(stdout, /Packing .*: 2 files/);
      assert.match(stdout, /Deploy dep-[0-9a-f]+ accepted: static/);
      assert.match(stdout, /Live in [\d.]+ s/);
      await served('from-cli', '<h1>from the CLI</h1>');
      assert.equal((await getFromApp(ns, 'from-cli', '/css/site.css'))?.body, 'h1 { color: teal }');
      const failed = await run(['deploy', 'from-cli', '--image', 'registry.example/nope:1']).then(
        () => undefined,
        (err: { code: number; stderr: string }) => err,
      );
      assert.equal(failed?.code, 1);
      assert.match(
        failed?.stderr ?? '',
        /failed: machine 0: container app: (ErrImagePull|ImagePullBackOff).*the previous deploy keeps serving/,
      );
      await served('from-cli', '<h1>from the CLI</h1>');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('deploys an authentication policy from compose x-svc and the pages into the App spec; rollback restores it', async () => {
    type Auth = { rules: Array<{ mode: string; source?: string; paths: string[]; except?: string[]; admit: Record<string, unknown> }> };
    const authOf = async (name: string) => ((await api.deps.apps.find(ns, name))?.spec as { auth?: Auth } | undefined)?.auth;
    await json(await api.request('POST', '/api/apps', { body: { name: 'guarded' } }), 201);
    const admit = { owner: true, emails: ['ada@example.com'] };
    const compose =
      'x-svc:\n  auth:\n    owner: true\n    emails: [" Ada@Example.com"]\n    paths: [/admin/**]\n    except: [/admin/help]\n';
    const files = {
      'index.html': '<h1>guarded</h1>',
      'members.html':
        '<head><meta name="svc-auth" content="owner"><meta name="svc-auth-emails" content="ada@example.com"></head><p>members</p>',
      'notes.md': '---\nidentity: {owner: true, emails: [ada@example.com]}\n---\n# notes\n',
    };
    const d = await json<DeployBody & { summary: { auth?: { rules: number } } }>(
      await api.request('POST', '/api/apps/guarded/deploy', { body: { compose, files } }),
      202,
    );
    assert.equal(d.origin, 'compose');
    assert.equal(d.summary.auth?.rules, 3);
    const expected = [
      { mode: 'auth', source: 'compose', paths: ['/admin/**'], except: ['/admin/help'], admit },
      { mode: 'auth', source: 'members.html', paths: ['/members.html', '/members'], admit },
      { mode: 'identity', source: 'notes.md', paths: ['/notes.md'], admit },
    ];
    assert.deepEqual(
      await eventually('the App to carry the policy', async () =>
        (await authOf('guarded'))?.rules.length === 3 ? authOf('guarded') : undefined,
      ),
      { rules: expected },
    );
    await live(d.id);
    // A deploy that declares nothing is public; rolling back restores the policy of the deploy it returns to.
    const open = await json<DeployBody>(await deployFiles('guarded', { 'index.html': '<h1>open</h1>' }), 202);
    assert.equal(
      await eventually('the policy to be removed', async () => ((await authOf('guarded')) === undefined ? 'gone' : undefined)),
      'gone',
    );
    await live(open.id);
    const back = await json<DeployBody>(await api.request('POST', '/api/apps/guarded/rollback', { body: {} }), 202);
    assert.equal(back.origin_deploy, d.id);
    assert.deepEqual(
      await eventually('the policy to be restored', async () =>
        (await authOf('guarded'))?.rules.length === 3 ? authOf('guarded') : undefined,
      ),
      { rules: expected },
    );
    // A fork keeps it.
    await json(await api.request('POST', '/api/apps/guarded/fork', { body: { name: 'guarded-fork' } }), 201);
    assert.deepEqual(await authOf('guarded-fork'), { rules: expected });
  });

  it('refuses an invalid authentication policy with 400 naming the file and the field, storing nothing', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'unsure' } }), 201);
    const d = await json<DeployBody>(await deployFiles('unsure', { 'index.html': '<h1>public</h1>' }), 202);
    const refuse = async (body: unknown, pattern: RegExp) =>
      assert.match((await json<{ error: string }>(await api.request('POST', '/api/apps/unsure/deploy', { body }), 400)).error, pattern);
    await refuse(
      { compose: 'x-svc:\n  auth: {emails: [bob]}\n', files: { 'index.html': 'x' } },
      /compose: x-svc\.auth\.emails\[0\]: "bob" is not an email address/,
    );
    await refuse(
      { compose: 'services:\n  web:\n    image: node:20\n    x-svc: {auth: {owner: false}}\n' },
      /compose: services\.web\.x-svc\.auth\.owner: /,
    );
    await refuse(
      { files: { 'index.html': '<meta name="svc-auth" content="everyone">' } },
      /index\.html: meta svc-auth: "everyone" is not a provider/,
    );
    await refuse(
      { files: { 'a.html': '<meta name="svc-auth-paths" content="/x/*"><meta name="svc-auth" content="owner">' } },
      /a\.html: meta svc-auth-paths: /,
    );
    await refuse({ files: { 'index.md': '---\nauth: {}\n---\n# x\n' } }, /index\.md: front matter auth: admits nobody/);
    await refuse(
      { compose: 'x-svc: {auth: owner}\n', files: { 'index.html': '<meta name="svc-auth" content="idp">' } },
      /index\.html: meta svc-auth: admits idp any, but compose \(x-svc\.auth\) admits owner/,
    );
    const deploys = (await json<{ deploys: DeployBody[] }>(await api.request('GET', '/api/apps/unsure/deploys'), 200)).deploys;
    assert.deepEqual(
      deploys.map((x) => x.id),
      [d.id],
      'no deploy recorded',
    );
    assert.equal((await api.deps.apps.find(ns, 'unsure'))?.spec.deployId, d.id, 'the App is unchanged');
    const { readdirSync } = await import('node:fs');
    assert.deepEqual(readdirSync(path.join(api.deps.config.deploys.artifactDir, 'tmp')), [], 'no staged upload left');
  });

  it('compiles an HTML app’s data bindings at deploy: counted in the summary, a bad one refused with 400 naming file, line and attribute', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'guestbook' } }), 201);
    const page = [
      '<!doctype html><title>Guestbook</title>',
      '<ul data-svc="list entries order=-_created"><template><li data-svc="field message"></li></template></ul>',
      '<form data-svc="create entries"><textarea name="message" maxlength="500" required></textarea><button>Sign</button></form>',
    ].join('\n');
    const d = await json<DeployBody & { summary: { detected: string; data?: unknown } }>(
      await deployFiles('guestbook', { 'index.html': page }),
      202,
    );
    assert.deepEqual(d.summary.data, { bindings: 3, collections: ['entries'] });
    // The compiled allow-list is the App's (kubectl shows it), and its fields the form's.
    const data = (await api.deps.apps.find(ns, 'guestbook'))?.spec.data;
    assert.deepEqual(
      data?.bindings.map((b) => [b.verb, b.collection, b.line]),
      [
        ['list', 'entries', 2],
        ['field', 'entries', 2],
        ['create', 'entries', 3],
      ],
    );
    assert.deepEqual(data?.collections, { entries: { message: { kind: 'text', required: true, minLength: 1, maxLength: 500 } } });
    const refuse = async (files: Record<string, string>, pattern: RegExp) =>
      assert.match(
        (await json<{ error: string }>(await api.request('POST', '/api/apps/guestbook/deploy', { body: { files } }), 400)).error,
        pattern,
      );
    await refuse(
      { 'index.html': page.replace('list entries', 'show entries') },
      /^html data binding: index\.html:2: data-svc="show entries order=-_created": "show" is not a verb/,
    );
    await refuse(
      { 'index.html': page, 'admin/index.html': '<p>\n\n<button data-svc="delete entries for=$admin">x</button>' },
      /^html data binding: admin\/index\.html:3: data-svc="delete entries for=\$admin": "\$admin" is not an audience/,
    );
    await refuse({ 'index.html': page.replace('name="message"', 'name="_author"') }, /index\.html:3: .*_author is stamped by the platform/);
    // A binding far down a large page (past what kind detection once read) is an HTML app's, checked like any other.
    await refuse(
      { 'index.html': `<p>${'x'.repeat(300 * 1024)}</p>\n<ul data-svc="list entries for=$admin"></ul>` },
      /^html data binding: index\.html:2: .*"\$admin" is not an audience/,
    );
    const deploys = (await json<{ deploys: DeployBody[] }>(await api.request('GET', '/api/apps/guestbook/deploys'), 200)).deploys;
    assert.deepEqual(
      deploys.map((x) => x.id),
      [d.id],
      'no refused deploy recorded',
    );
  });
});
