// ingress-auth as it runs in make dev and the chart: its real entry point with SVC_PROXY_WORKERS=2,
// two processes on one port (SO_REUSEPORT). Connections reach both workers; a sign-in on one worker
// is honoured by the other; a session revoked through the API is refused by every worker within a
// second; a worker that dies is started again while the other keeps serving.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request as httpRequest } from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { appsDomain, fragmentSecret, freePort, type Answer } from '../support/ingress.js';
import { eventually } from '../support/wait.js';

describe('ingress-auth workers', () => {
  let api: TestApi;
  let child: ChildProcess;
  let port: number;
  const app = 'workers';
  const host = () => `${app}.${appsDomain}:${port}`;
  const json = expectJson;
  /** One request on `agent`'s one keep-alive connection, so it goes to that connection's worker. */
  const request = (agent: Agent, p: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: p, method: opts.method ?? 'GET', agent, headers: { host: host(), ...opts.headers } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.end(opts.body);
    });
  const workerOf = async (agent: Agent) => (JSON.parse((await request(agent, '/_svc/health')).body) as { worker?: number }).worker;
  const fetchWith = (agent: Agent, cookie: string) =>
    request(agent, '/', { headers: { accept: 'application/json', 'sec-fetch-mode': 'cors', cookie } });

  /** A keep-alive connection to each of the two workers (the kernel spreads new connections over the listening ones). */
  const reachBoth = async (): Promise<Map<number, Agent> | undefined> => {
    const byWorker = new Map<number, Agent>();
    for (let i = 0; i < 64 && byWorker.size < 2; i++) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const w = await workerOf(agent);
      assert.ok(w !== undefined, 'a worker says which it is');
      if (!byWorker.has(w)) byWorker.set(w, agent);
      else agent.destroy();
    }
    if (byWorker.size === 2) return byWorker;
    for (const agent of byWorker.values()) agent.destroy();
    return undefined;
  };
  const connections = async (): Promise<Map<number, Agent>> => {
    const byWorker = await reachBoth();
    assert.ok(byWorker, 'new connections reach both workers');
    return byWorker;
  };

  before(async () => {
    api = await startTestApi();
    port = await freePort();
    child = spawn(process.execPath, [path.join(repoRoot, 'dist/ingress-auth/main.js')], {
      env: {
        ...process.env,
        SVC_LOG_LEVEL: 'warn',
        SVC_PROXY_WORKERS: '2',
        SVC_PROXY_HOST: '127.0.0.1',
        SVC_PROXY_PORT: String(port),
        SVC_DATABASE_URL: api.deps.config.databaseUrl,
        SVC_APPS_DOMAIN: appsDomain,
        SVC_APPS_URL_SUFFIX: `:${port}`,
        SVC_ASSERTION_ISSUER: api.deps.config.assertion.issuer,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    await eventually(
      'ingress-auth workers listening',
      async () => {
        const a = new Agent({ keepAlive: false });
        const ok = await request(a, '/_svc/health').then(
          (r) => r.status === 200,
          () => false,
        );
        a.destroy();
        return ok || undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    await json(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    const d = await json<{ id: string }>(
      await api.request('POST', `/api/apps/${app}/deploy`, {
        body: { compose: 'x-svc:\n  auth: owner\n', files: { 'index.html': '<h1>behind the gate</h1>' } },
      }),
      202,
    );
    await eventually(
      `deploy ${d.id} live`,
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${d.id}`), 200)).status === 'live',
      { timeoutMs: 90_000 },
    );
  });
  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    await api?.close();
  });

  it('a sign-in on one worker is honoured by the other; a revoked session is refused by both within a second', async () => {
    const [[first, a], [second, b]] = [...(await connections())] as [[number, Agent], [number, Agent]];
    assert.notEqual(first, second);
    const link = (await json<{ url: string }>(await api.request('POST', `/api/apps/${app}/auth/owner-link`, { body: { next: '/' } }), 201))
      .url;
    const redeemed = await request(a, '/_svc/auth/redeem', {
      method: 'POST',
      headers: {
        origin: `http://${host()}`,
        'content-type': 'application/json',
        'sec-fetch-site': 'same-origin',
        'sec-fetch-mode': 'cors',
      },
      body: JSON.stringify({ token: fragmentSecret(link) }),
    });
    assert.equal(redeemed.status, 200, redeemed.body);
    const cookie = ([] as string[])
      .concat(redeemed.headers['set-cookie'] ?? [])
      .map((c) => c.split(';')[0]!)
      .find((c) => c.startsWith('svc-session='))!;
    assert.ok(cookie, 'a session cookie');
    // Both workers now hold the session in their caches.
    for (const agent of [a, b]) {
      const r = await fetchWith(agent, cookie);
      assert.equal(r.status, 200, r.body);
      assert.match(r.body, /behind the gate/);
    }
    const started = Date.now();
    await json(await api.request('POST', `/api/apps/${app}/auth/sessions/revoke`, { body: {} }), 200);
    for (const [w, agent] of [[first, a] as const, [second, b] as const]) {
      await eventually(`worker ${w} to refuse the revoked session`, async () => (await fetchWith(agent, cookie)).status === 401, {
        timeoutMs: 1_000,
        intervalMs: 20,
      });
    }
    assert.ok(Date.now() - started < 1_500, `refused by both after ${Date.now() - started} ms`);
    a.destroy();
    b.destroy();
  });

  it('starts a worker that died again, while the other keeps serving', async () => {
    const workerPids = () =>
      execFileSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map(Number);
    const before = workerPids();
    assert.equal(before.length, 2, 'two worker processes');
    process.kill(before[0]!, 'SIGKILL');
    await eventually('the killed worker gone', () => !workerPids().includes(before[0]!) || undefined, { timeoutMs: 5_000, intervalMs: 20 });
    // New connections meanwhile: the kernel gives them to the listening worker only.
    for (let i = 0; i < 10; i++) {
      const agent = new Agent({ keepAlive: false });
      assert.equal((await request(agent, '/_svc/health')).status, 200);
      agent.destroy();
    }
    await eventually(
      'a replacement worker',
      () => {
        const now = workerPids();
        return (now.length === 2 && !now.includes(before[0]!)) || undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    // Once it listens, new connections reach it too.
    const byWorker = await eventually('connections reaching the replacement', () => reachBoth(), { timeoutMs: 15_000, intervalMs: 200 });
    for (const agent of byWorker.values()) agent.destroy();
  });
});
