// Git import on the real apiserver, nodes and a Git server the test runs (git http-backend): the
// preview of an import plans the repository and finds its compose services and policies, creating
// nothing; an import creates the app, builds and deploys it; a signed push to a branch builds that
// branch's preview (made on its first push), a redelivered push builds once, a bad signature is
// refused; a newer push cancels the older build of its branch; a push no webhook told of is found by
// the poll; deleting the branch deletes its preview.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromEveryMachine } from '../support/app-traffic.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { images } from '../support/images.js';
import { packageLock } from '../support/build-trees.js';
import { eventually } from '../support/wait.js';

interface BuildBody {
  id: string;
  app: string;
  status: string;
  reason: string | null;
  message: string | null;
  source: { commit: string | null; ref: string | null };
}

const lock = packageLock('site');
const site = (mark: string, extra = '') => ({
  'package.json': JSON.stringify({ name: 'site', version: '1.0.0', scripts: { build: 'node build.js' } }),
  'package-lock.json': lock,
  'build.js': `${extra}require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/index.html','<h1>${mark}</h1>')`,
});

describe('Git import', () => {
  let api: TestApi;
  let ns: string;
  let git: GitServer;
  const json = expectJson;
  const builds = async (app: string) =>
    (await json<{ builds: BuildBody[] }>(await api.request('GET', `/api/apps/${app}/builds`), 200)).builds;
  const ended = (id: string) =>
    eventually(
      `build ${id} ended`,
      async () => {
        const b = await json<BuildBody>(await api.request('GET', `/api/builds/${id}`), 200);
        return ['succeeded', 'failed', 'canceled'].includes(b.status) ? b : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 250 },
    );
  const served = (app: string, want: string) =>
    eventually(`${app} serving ${want}`, async () => (await getFromEveryMachine(ns, app, '/')) === want, { timeoutMs: 120_000 });
  let hook: { path: string; secret: string };
  const push = (body: unknown, opts: { event?: string; delivery?: string; secret?: string } = {}) => {
    const raw = JSON.stringify(body);
    return fetch(`${api.url}${hook.path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': opts.event ?? 'push',
        'x-github-delivery': opts.delivery ?? randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', opts.secret ?? hook.secret)
          .update(raw)
          .digest('hex')}`,
      },
      body: raw,
    });
  };

  before(async () => {
    api = await startTestApi({
      env: {
        SVC_BUILD_REGISTRY: images.registry,
        SVC_IMAGE_BUILDER: images.builder,
        SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        SVC_GIT_POLL_SECONDS: '2',
      },
    });
    ns = api.account.namespace;
    git = await startGitServer(new URL(api.deps.config.deploys.artifactBaseUrl).hostname);
  });
  after(async () => {
    await git?.close();
    await api?.close();
  });

  it('previews an import: the plan, compose services and policies found, nothing created', async () => {
    const commit = git.commit('web', 'main', site('main-1'));
    const p = await json<{ ref: string; commit: string; plan: { kind: string; build: string[] }; problem: null; auth_from: string }>(
      await api.request('GET', `/api/apps/imports/preview?repository=${encodeURIComponent(`${git.base}/web.git`)}`),
      200,
    );
    assert.deepEqual([p.ref, p.commit, p.plan.kind, p.plan.build, p.problem], ['main', commit, 'static', ['npm run build'], null]);
    assert.match(p.auth_from, /decided by what the build outputs/);
    git.commit('stack', 'main', {
      'compose.yaml': [
        'services:',
        '  web:',
        `    image: ${images.busybox}`,
        '    ports: ["8080"]',
        'x-svc:',
        '  auth:',
        '    paths: ["/admin/**"]',
        '    emails: [ops@example.test]',
      ].join('\n'),
    });
    const c = await json<{ plan: { kind: string }; services: Array<{ name: string; port: number }>; auth: { rules: unknown[] } | null }>(
      await api.request('GET', `/api/apps/imports/preview?repository=${encodeURIComponent(`${git.base}/stack.git`)}`),
      200,
    );
    assert.equal(c.plan.kind, 'compose', JSON.stringify(c));
    assert.deepEqual(
      c.services.map((s) => [s.name, s.port]),
      [['web', 8080]],
    );
    assert.equal(c.auth?.rules.length, 1, 'the x-svc.auth policy found');
    git.commit('empty', 'main', { 'README.md': '# nothing' });
    const e = await json<{ plan: null; problem: string }>(
      await api.request('GET', `/api/apps/imports/preview?repository=${encodeURIComponent(`${git.base}/empty.git`)}`),
      200,
    );
    assert.match(e.problem, /the tree is empty/);
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('GET', `/api/apps/imports/preview?repository=${encodeURIComponent(`${git.base}/web.git`)}&ref=nope`),
          400,
        )
      ).error,
      /has no branch or tag nope/,
    );
    assert.deepEqual((await json<{ apps: unknown[] }>(await api.request('GET', '/api/apps'), 200)).apps, [], 'nothing created');
  });

  it("imports a repository, builds each push of a branch into its preview (once per delivery), cancels an older build of the branch, polls for pushes not told, and deletes a deleted branch's preview", async () => {
    const imported = await json<{
      app: { name: string };
      build: BuildBody;
      repository: { default_branch: string; hook_path: string; hook_secret: string };
    }>(await api.request('POST', '/api/apps/imports', { body: { repository: `${git.base}/web.git` } }), 202);
    assert.deepEqual([imported.app.name, imported.repository.default_branch], ['web', 'main']);
    hook = { path: imported.repository.hook_path, secret: imported.repository.hook_secret };
    assert.equal((await ended(imported.build.id)).status, 'succeeded');
    await served('web', '<h1>main-1</h1>');
    await json(await api.request('POST', '/api/apps/imports', { body: { repository: `${git.base}/web.git` } }), 409);

    // A push to a branch: its preview, with the branch's content.
    const feat1 = git.commit('web', 'feature/x', site('feat-1'));
    assert.equal((await push({ ref: 'refs/heads/feature/x', after: feat1 }, { secret: 'whsec_wrong' })).status, 401);
    const delivery = randomUUID();
    const told = await json<{ branch: string; build: string }>(
      await push({ ref: 'refs/heads/feature/x', after: feat1 }, { delivery }),
      202,
    );
    assert.equal(told.branch, 'feature/x');
    assert.deepEqual(
      await json(await push({ ref: 'refs/heads/feature/x', after: feat1 }, { delivery }), 200),
      { duplicate: delivery },
      'a redelivery builds nothing',
    );
    const fb = await ended(told.build);
    assert.deepEqual([fb.app, fb.status, fb.source.commit], ['web--feature-x', 'succeeded', feat1]);
    await served('web--feature-x', '<h1>feat-1</h1>');
    assert.equal(await getFromEveryMachine(ns, 'web', '/'), '<h1>main-1</h1>', 'the app keeps the default branch');

    // Two pushes in a row: the older build is canceled, the newer one serves.
    const slow = git.commit('web', 'feature/x', site('feat-2', 'setTimeout(()=>{},600000);'));
    const first = await json<{ build: string }>(await push({ ref: 'refs/heads/feature/x', after: slow }), 202);
    await eventually(
      'the slow build running',
      async () => (await json<BuildBody>(await api.request('GET', `/api/builds/${first.build}`), 200)).status === 'building',
      { timeoutMs: 90_000 },
    );
    const feat3 = git.commit('web', 'feature/x', site('feat-3'));
    const second = await json<{ build: string }>(await push({ ref: 'refs/heads/feature/x', after: feat3 }), 202);
    assert.equal((await ended(first.build)).status, 'canceled');
    assert.equal((await ended(second.build)).status, 'succeeded');
    await served('web--feature-x', '<h1>feat-3</h1>');

    // A push no webhook told of: the poll finds it.
    const main2 = git.commit('web', 'main', site('main-2'));
    const polled = await eventually('the poll to build main', async () => (await builds('web')).find((b) => b.source.commit === main2), {
      timeoutMs: 60_000,
    });
    assert.equal((await ended(polled.id)).status, 'succeeded');
    await served('web', '<h1>main-2</h1>');

    // The branch deleted: its preview goes.
    await json(await push({ ref: 'feature/x', ref_type: 'branch' }, { event: 'delete' }), 202);
    await eventually(
      'the preview deleted',
      async () =>
        !(await json<{ previews: Array<{ app: string }> }>(await api.request('GET', '/api/apps/web/previews'), 200)).previews.length,
      { timeoutMs: 30_000 },
    );
  });
});
