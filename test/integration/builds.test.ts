// Builds on the real apiserver, nodes and registry: a source tree sent by the CLI's route is planned,
// built by a Job running the builder as non-root, and its output deployed; the log streams while it
// runs (its first byte at once) and stays after; the same tree again is served from the first
// build's output (a cache hit, nothing run); a failing build command fails the build with the
// command in its log and leaves the live app serving; a tree with nothing to build is refused before
// anything is made; a Node service builds into an image in the local registry and serves through
// ingress-auth; a Git repository builds at the commit its ref names (a private one with a token only
// its clone sees); a running build is canceled; `svc build` streams and exits with the result; another
// account can read neither a build nor its log.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../lib/paths.js';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { createAccount } from '../../lib/accounts.js';
import { packTree } from '../../lib/artifacts/tarball.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromEveryMachine } from '../support/app-traffic.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { appsDomain, Browser, startTestIngress } from '../support/ingress.js';
import { images } from '../support/images.js';
import { packageLock } from '../support/build-trees.js';
import { eventually } from '../support/wait.js';

interface BuildBody {
  id: string;
  app: string;
  status: string;
  reason: string | null;
  message: string | null;
  plan: { kind: string; build: string[]; outputDir: string } | null;
  artifact: { digest: string; bytes: number | null } | null;
  image: string | null;
  reused_from: string | null;
  deploy_id: string | null;
  deploy_error: string | null;
  duration_seconds: number | null;
}

const pkg = (v: Record<string, unknown>) => JSON.stringify({ name: 'site', version: '1.0.0', ...v });
const lock = packageLock('site');
/** A site whose build step writes dist/index.html saying `mark` (no dependencies: nothing to fetch). */
const site = (
  mark: string,
  build = `require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/index.html','<h1>${mark}</h1>');console.log('wrote dist/index.html')`,
) => ({
  'package.json': pkg({ scripts: { build: 'node build.js' } }),
  'package-lock.json': lock,
  'build.js': build,
  'src/page.txt': mark,
});

describe('Builds', () => {
  let api: TestApi;
  let ns: string;
  let gitServer: GitServer;
  const json = expectJson;
  const upload = async (app: string, files: Record<string, string>, opts: { deploy?: boolean; token?: string } = {}) =>
    fetch(`${api.url}/api/builds?app=${app}${opts.deploy ? '&deploy=true' : ''}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${opts.token ?? api.token}`, 'content-type': 'application/gzip' },
      body: await packTree(files),
    });
  const get = async (id: string) => json<BuildBody>(await api.request('GET', `/api/builds/${id}`), 200);
  const ended = (id: string) =>
    eventually(
      `build ${id} ended`,
      async () => {
        const b = await get(id);
        return ['succeeded', 'failed', 'canceled'].includes(b.status) ? b : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 250 },
    );
  const page = (app: string) => getFromEveryMachine(ns, app, '/');
  /** GET / of the app through an ingress-auth of this API, once it answers 200: the body. */
  const throughIngress = async (app: string) => {
    const ia = await startTestIngress(api);
    try {
      const answer = await eventually(
        `${app} served through ingress-auth`,
        async () => {
          const a = await new Browser(ia.url).request(`${app}.${appsDomain}`, '/');
          return a.status === 200 ? a : undefined;
        },
        { timeoutMs: 60_000 },
      );
      return answer.body;
    } finally {
      await ia.close();
    }
  };

  before(async () => {
    // Git hosts on the machine network are allowed here (the test's Git server is one).
    api = await startTestApi({
      env: { SVC_BUILD_REGISTRY: images.registry, SVC_IMAGE_BUILDER: images.builder, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
    ns = api.account.namespace;
    gitServer = await startGitServer(new URL(api.deps.config.deploys.artifactBaseUrl).hostname);
    await json(await api.request('POST', '/api/apps', { body: { name: 'site' } }), 201);
  });
  after(async () => {
    await gitServer?.close();
    await api?.close();
  });

  it('builds a site with a build step and deploys it; the log streams from its first byte and stays after the build', async () => {
    const started = Date.now();
    const created = await json<BuildBody>(await upload('site', site('one'), { deploy: true }), 202);
    assert.match(created.id, /^bld-[0-9a-f]{16}$/);
    assert.equal(created.status, 'queued');
    // Followed from the start: the first byte comes at once, the rest as the builder writes it.
    // Timed from the request for the log, not from the upload (which other test files loading
    // the machine can slow down).
    const asked = Date.now();
    const res = await api.request('GET', `/api/builds/${created.id}/logs?follow=true`);
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    const firstByteMs = Date.now() - asked;
    let log = new TextDecoder().decode(first.value);
    for (let r = await reader.read(); !r.done; r = await reader.read()) log += new TextDecoder().decode(r.value);
    console.log(
      `# first log byte ${firstByteMs} ms after the log was asked for; build ended ${Date.now() - started} ms after it was asked for`,
    );
    assert.ok(firstByteMs < 2000, `first byte after ${firstByteMs} ms`);
    assert.match(log, /^==> build bld-[0-9a-f]{16} of app site/);
    assert.match(log, /==> plan: static \(package\.json has a build script and no start script: a site built into dist\/\)/);
    assert.match(log, /==> \$ npm ci\n/);
    assert.match(log, /==> \$ npm run build\n[\s\S]*wrote dist\/index\.html/);
    assert.match(log, /==> Succeeded \(Built\)/);

    const b = await ended(created.id);
    assert.deepEqual([b.status, b.reason, b.plan?.kind, b.plan?.outputDir], ['succeeded', 'Built', 'static', 'dist']);
    assert.match(b.artifact?.digest ?? '', /^sha256:[0-9a-f]{64}$/);
    const deployed = await eventually('the deploy made', async () => (await get(created.id)).deploy_id ?? undefined);
    await eventually(
      'the deploy live',
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${deployed}`), 200)).status === 'live',
      { timeoutMs: 90_000 },
    );
    assert.equal(await eventually('the built page served', () => page('site'), { timeoutMs: 60_000 }), '<h1>one</h1>');

    // The Job ran as non-root under the restricted profile, with limits.
    const job = await api.kube.kc.makeApiClient(k8s.BatchV1Api).readNamespacedJob({ namespace: ns, name: created.id });
    const pod = job.spec!.template.spec!;
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(pod.containers[0]!.securityContext?.allowPrivilegeEscalation, false);
    assert.ok(pod.containers[0]!.resources?.limits?.memory, 'a memory limit');
    assert.ok(job.spec!.activeDeadlineSeconds, 'a time limit');

    // Kept after the Job: the same log, read from the record once the Job is gone.
    await api.kube.kc
      .makeApiClient(k8s.BatchV1Api)
      .deleteNamespacedJob({ namespace: ns, name: created.id, propagationPolicy: 'Foreground' });
    await eventually(
      'the Job gone',
      async () => !(await api.kube.core.listNamespacedPod({ namespace: ns, labelSelector: `svc.dev/build=${created.id}` })).items.length,
      { timeoutMs: 60_000 },
    );
    const kept = await (await api.request('GET', `/api/builds/${created.id}/logs`)).text();
    assert.match(kept, /==> \$ npm run build\n[\s\S]*wrote dist\/index\.html/);
    // Kept in the object store (its record names it by digest; no text in PostgreSQL), the
    // platform's record: held by no account, so no account's storage counts it.
    const row = await api
      .db('builds')
      .where({ id: created.id })
      .first<{ log: string | null; log_digest: string | null; log_bytes: string }>('log', 'log_digest', 'log_bytes');
    assert.equal(row.log, null);
    assert.match(row.log_digest ?? '', /^sha256:[0-9a-f]{64}$/);
    const object = await api.deps.artifacts.open(row.log_digest!);
    assert.ok(object, 'the log is in the store');
    let stored = '';
    for await (const chunk of object.stream) stored += String(chunk);
    assert.equal(Buffer.byteLength(stored), Number(row.log_bytes));
    assert.ok(kept.includes(stored), 'what the API serves is the stored log, framed');
    assert.equal(await api.db('artifact_holds').where({ digest: row.log_digest }).first(), undefined, 'held by no account');

    const events = (
      await json<{ events: Array<{ type: string; subject: string }> }>(await api.request('GET', '/api/events?kinds=build.*'), 200)
    ).events
      .filter((e) => e.subject === created.id)
      .map((e) => e.type);
    assert.deepEqual(events, ['build.queued', 'build.started', 'build.succeeded']);
    // The seconds its Job ran are metered. Usage is of [start of month, now) by the API's clock, which
    // this test holds still: moved on past the build's real end (not past its credentials' hour).
    api.clock.advance(Math.max(0, Date.now() - api.clock.now.getTime()) + 60_000);
    const usage = (await json<{ meters: { build_seconds: number } }>(await api.request('GET', '/api/account/usage'), 200)).meters;
    assert.ok(usage.build_seconds > 0 && usage.build_seconds < 120, `build_seconds ${usage.build_seconds}`);
  });

  it("serves a second build of the same tree from the first one's output: a cache hit, nothing run", async () => {
    const first = (await json<{ builds: BuildBody[] }>(await api.request('GET', '/api/apps/site/builds'), 200)).builds[0]!;
    const again = await json<BuildBody>(await upload('site', site('one')), 202);
    const b = await ended(again.id);
    assert.deepEqual([b.status, b.reason, b.reused_from, b.artifact?.digest], ['succeeded', 'Reused', first.id, first.artifact?.digest]);
    const jobs = await api.kube.kc
      .makeApiClient(k8s.BatchV1Api)
      .listNamespacedJob({ namespace: ns, labelSelector: `svc.dev/build=${again.id}` });
    assert.equal(jobs.items.length, 0, 'no Job ran');
  });

  it('fails a build whose command fails, saying which in its status and log, and leaves the live app serving', async () => {
    const failing = await json<BuildBody>(
      await upload('site', site('two', "console.error('boom: the build broke'); process.exit(3)"), { deploy: true }),
      202,
    );
    const b = await ended(failing.id);
    assert.deepEqual([b.status, b.reason, b.message], ['failed', 'CommandFailed', '`npm run build` exited with code 3']);
    const log = await (await api.request('GET', `/api/builds/${failing.id}/logs`)).text();
    assert.match(log, /==> \$ npm run build\n[\s\S]*boom: the build broke[\s\S]*==> build failed: `npm run build` exited with code 3/);
    assert.equal(b.deploy_id, null);
    assert.equal(await page('site'), '<h1>one</h1>', 'the live app is untouched');
  });

  it('refuses a tree with nothing to build before making anything', async () => {
    const before = (await json<{ builds: BuildBody[] }>(await api.request('GET', '/api/apps/site/builds'), 200)).builds.length;
    const refused = await json<{ error: string }>(await upload('site', { 'main.go': 'package main', 'README.md': '# hi' }), 400);
    assert.match(refused.error, /nothing can be built from this tree: nothing to build in 1 files: no Dockerfile/);
    assert.equal((await json<{ builds: BuildBody[] }>(await api.request('GET', '/api/apps/site/builds'), 200)).builds.length, before);
    await json(await upload('nope', site('x')), 404);
    assert.match(
      (await json<{ error: string }>(await api.request('POST', '/api/builds', { body: { app: 'site' } }), 400)).error,
      /send the source/,
    );
  });

  it('builds a Node service into an image in the local registry, which the app then runs', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'svcapp' } }), 201);
    const server = "require('http').createServer((q, r) => r.end('service ' + process.env.NODE_ENV)).listen(process.env.PORT)";
    const created = await json<BuildBody>(
      await upload(
        'svcapp',
        { 'package.json': pkg({ scripts: { start: 'node server.js' } }), 'package-lock.json': lock, 'server.js': server },
        { deploy: true },
      ),
      202,
    );
    const b = await ended(created.id);
    assert.equal(b.status, 'succeeded', `${b.reason}: ${b.message}`);
    assert.equal(b.plan?.kind, 'container');
    assert.match(b.image ?? '', new RegExp(`^${images.registry.replace(/\./g, '\\.')}/builds/${ns}/svcapp@sha256:[0-9a-f]{64}$`));
    const deployed = await eventually('the deploy made', async () => (await get(created.id)).deploy_id ?? undefined);
    await eventually(
      'the service live',
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${deployed}`), 200)).status === 'live',
      { timeoutMs: 120_000 },
    );
    assert.equal(await eventually('the service answering', () => page('svcapp'), { timeoutMs: 60_000 }), 'service production');
    assert.equal(await throughIngress('svcapp'), 'service production', 'and through ingress-auth, as its users reach it');
  });

  it('builds a Node service from its Dockerfile (its steps run as non-root, its WORKDIR the layer) into an image that serves through ingress-auth', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'dockerapp' } }), 201);
    const dockerfile = [
      'FROM node:22',
      'WORKDIR /srv/app',
      'ENV GREETING="from a Dockerfile"',
      'COPY package*.json ./',
      'RUN npm ci && echo installed > installed.txt',
      'COPY . .',
      'EXPOSE 3000',
      'CMD ["node", "server.js"]',
    ].join('\n');
    const server =
      "const fs = require('fs'); require('http').createServer((q, r) => r.end(`${process.env.GREETING} in ${process.cwd()}, ${fs.readFileSync('installed.txt', 'utf8').trim()}`)).listen(process.env.PORT)";
    const created = await json<BuildBody>(
      await upload(
        'dockerapp',
        { Dockerfile: dockerfile, 'package.json': pkg({}), 'package-lock.json': lock, 'server.js': server },
        { deploy: true },
      ),
      202,
    );
    const b = await ended(created.id);
    assert.equal(b.status, 'succeeded', `${b.reason}: ${b.message}`);
    assert.match(b.image ?? '', /\/builds\/.+\/dockerapp@sha256:/);
    const log = await (await api.request('GET', `/api/builds/${created.id}/logs`)).text();
    assert.match(
      log,
      /==> COPY package\*\.json \/srv\/app\/\n==> \$ npm ci && echo installed > installed\.txt\n[\s\S]*==> COPY \. \/srv\/app\n/,
    );
    const deployed = await eventually('the deploy made', async () => (await get(created.id)).deploy_id ?? undefined);
    await eventually(
      'live',
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${deployed}`), 200)).status === 'live',
      { timeoutMs: 120_000 },
    );
    assert.equal(await throughIngress('dockerapp'), 'from a Dockerfile in /srv/app, installed');
    // What the builder cannot honour is refused before anything runs, naming the line.
    const refused = await json<{ error: string }>(
      await upload('dockerapp', { Dockerfile: 'FROM node:22\nUSER root\nWORKDIR /app\nCMD ["x"]' }),
      400,
    );
    assert.match(refused.error, /Dockerfile:2: USER: builds and machines never run as root/);
  });

  it('builds a Git repository at the commit its branch points at, and a private one with a token only the clone sees', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'gitsite' } }), 201);
    const main = gitServer.commit('site', 'main', site('from-main'));
    gitServer.commit('site', 'feat', { 'build.js': site('from-feat')['build.js'] });
    const created = await json<BuildBody & { source: { commit: string; ref: string } }>(
      await api.request('POST', '/api/builds', {
        body: { app: 'gitsite', deploy: true, git: { url: `${gitServer.base}/site.git`, ref: 'main' } },
      }),
      202,
    );
    assert.deepEqual([created.source.ref, created.source.commit], ['main', main], 'the commit main pointed at');
    const b = await ended(created.id);
    assert.equal(b.status, 'succeeded', `${b.reason}: ${b.message}`);
    const log = await (await api.request('GET', `/api/builds/${created.id}/logs`)).text();
    assert.match(log, new RegExp(`==> fetching ${gitServer.base}/site.git at ${main}`));
    const deployed = await eventually('the deploy made', async () => (await get(created.id)).deploy_id ?? undefined);
    await eventually(
      'live',
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${deployed}`), 200)).status === 'live',
      { timeoutMs: 90_000 },
    );
    assert.equal(await eventually('the main branch served', () => page('gitsite'), { timeoutMs: 60_000 }), '<h1>from-main</h1>');

    // Bad input, each refused with why, nothing made.
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('POST', '/api/builds', { body: { app: 'gitsite', git: { url: `${gitServer.base}/site.git`, ref: 'nope' } } }),
          400,
        )
      ).error,
      /has no branch or tag nope/,
    );
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('POST', '/api/builds', { body: { app: 'gitsite', git: { url: `${gitServer.base}/missing.git` } } }),
          400,
        )
      ).error,
      /is not a Git repository this platform can read/,
    );
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('POST', '/api/builds', { body: { app: 'gitsite', git: { url: 'ftp://example.com/r.git' } } }),
          400,
        )
      ).error,
      /repository: must use https/,
    );
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('POST', '/api/builds', {
            body: { app: 'gitsite', git: { url: `${gitServer.base}/site.git`, ref: '--upload-pack=x' } },
          }),
          400,
        )
      ).error,
      /ref: must be a branch or tag name/,
    );

    // A private repository: refused without its token; with it, the clone alone has it.
    gitServer.commit('private', 'main', site('secret-site'));
    gitServer.protect('private', 'tok-123');
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('POST', '/api/builds', { body: { app: 'gitsite', git: { url: `${gitServer.base}/private.git` } } }),
          400,
        )
      ).error,
      /refused access/,
    );
    const priv = await json<BuildBody>(
      await api.request('POST', '/api/builds', {
        body: { app: 'gitsite', git: { url: `${gitServer.base}/private.git`, token: 'tok-123' } },
      }),
      202,
    );
    const pb = await ended(priv.id);
    assert.equal(pb.status, 'succeeded', `${pb.reason}: ${pb.message}`);
    const job = await api.kube.kc.makeApiClient(k8s.BatchV1Api).readNamespacedJob({ namespace: ns, name: priv.id });
    const spec = job.spec!.template.spec!;
    assert.equal(spec.initContainers![0]!.env!.find((e) => e.name === 'SVC_GIT_TOKEN')?.valueFrom?.secretKeyRef?.name, 'build-git-gitsite');
    assert.ok(!JSON.stringify(spec.containers).includes('SVC_GIT_TOKEN'), "the build's commands never see the token");
    assert.ok(!(await (await api.request('GET', `/api/builds/${priv.id}/logs`)).text()).includes('tok-123'));
  });

  it('cancels a running build: its Job goes, it stays as canceled', async () => {
    const slow = await json<BuildBody>(
      await upload('site', site('slow', "setTimeout(() => {}, 600000); console.log('building slowly')")),
      202,
    );
    await eventually('building', async () => (await get(slow.id)).status === 'building', { timeoutMs: 90_000 });
    const canceled = await json<BuildBody>(await api.request('POST', `/api/builds/${slow.id}/cancel`), 202);
    assert.deepEqual([canceled.status, canceled.reason], ['canceled', 'Canceled']);
    await eventually(
      'its Job gone',
      async () =>
        !(await api.kube.kc.makeApiClient(k8s.BatchV1Api).listNamespacedJob({ namespace: ns, labelSelector: `svc.dev/build=${slow.id}` }))
          .items.length,
      { timeoutMs: 30_000 },
    );
    await json(await api.request('POST', `/api/builds/${slow.id}/cancel`), 409);
    await eventually('build.canceled told', async () =>
      (await json<{ events: Array<{ subject: string }> }>(await api.request('GET', '/api/events?kinds=build.canceled'), 200)).events.some(
        (e) => e.subject === slow.id,
      ),
    );
  });

  it("svc build streams the log and exits with the build's result", async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'cli-site' } }), 201);
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-build-cli-'));
    const write = (files: Record<string, string>) => {
      for (const [p, c] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
        writeFileSync(path.join(dir, p), c);
      }
    };
    const svc = (...args: string[]) =>
      new Promise<{ code: number; out: string }>((resolve) =>
        execFile(
          process.execPath,
          [path.join(repoRoot, 'bin/svc.js'), ...args],
          { env: { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token } },
          (err, out, errOut) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: out + errOut }),
        ),
      );
    try {
      // A node_modules of the developer's own is not sent (the build installs its own).
      write({ ...site('cli'), 'node_modules/junk/index.js': 'x'.repeat(1000) });
      const ok = await svc('build', dir, '--app', 'cli-site', '--deploy');
      assert.equal(ok.code, 0, ok.out);
      assert.match(ok.out, /^Build bld-[0-9a-f]{16} of cli-site queued\n==> build bld-/);
      assert.match(ok.out, /==> \$ npm run build\n/);
      assert.match(ok.out, /\nBuild bld-[0-9a-f]{16} succeeded in [\d.]+ s: sha256:[0-9a-f]{12}…/);
      write({ 'build.js': 'process.exit(2)' });
      const bad = await svc('build', dir, '--app', 'cli-site');
      assert.equal(bad.code, 1);
      assert.match(bad.out, /failed: `npm run build` exited with code 2/);
      const usage = await svc('build', dir);
      assert.match(usage.out, /--app names the app to build for/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shows another account neither a build nor its log', async () => {
    const other = await createAccount(api.db, api.kube.core, { email: `other-${Date.now()}@example.test` });
    const { token } = await api.deps.tokens.issue(other.id, { name: 'other' });
    try {
      const mine = (await json<{ builds: BuildBody[] }>(await api.request('GET', '/api/apps/site/builds'), 200)).builds[0]!;
      await json(await api.request('GET', `/api/builds/${mine.id}`, { token }), 404);
      await json(await api.request('GET', `/api/builds/${mine.id}/logs`, { token }), 404);
      await json(await upload('site', site('x'), { token }), 404);
    } finally {
      await api.kube.core.deleteNamespace({ name: other.namespace }).catch(() => undefined);
    }
  });
});
