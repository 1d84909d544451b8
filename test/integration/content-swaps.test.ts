// Content deploys swapped in place on the real nodes (issue 36): through ingress-auth, a static
// site's running machines serve each new deploy and each rollback without being replaced, Live
// once every machine serves it; a machine that cannot fetch an artifact fails the rollout with its
// reason and keeps serving; a change of what the machines are made of still replaces them; a handler
// tree's machines swap too, each revision's modules in a process of its own. A client
// requests the app through ingress-auth all along: no request fails, and every answer is wholly
// one deploy's page.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { after, before, describe, it } from 'node:test';
import { group, labels, pluralOf, version, type App } from '../../lib/contract.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { startTestIngress, type TestIngress } from '../support/ingress.js';
import { kubeConfig } from '../support/kube.js';
import { rawRequest } from '../support/raw-request.js';
import { eventually } from '../support/wait.js';

interface DeployBody {
  id: string;
  status: string;
  reason: string | null;
  origin_deploy: string | null;
}

describe('content swapped in place, through ingress-auth', () => {
  let api: TestApi;
  let ingress: TestIngress;
  let ns: string;
  const core = () => kubeConfig().makeApiClient(k8s.CoreV1Api);
  const page = (n: number) => `<p>content ${n}</p>`;

  before(async () => {
    api = await startTestApi({ env: { SVC_ROLLOUT_DEADLINE_SECONDS: '60' } });
    ingress = await startTestIngress(api);
    ns = api.account.namespace;
  });
  after(async () => {
    await ingress?.close();
    await api?.close();
  });

  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  const via = () => rawRequest(ingress.url, '/', { headers: { host: 'swap.apps.localhost' }, timeoutMs: 10_000 });
  const deploy = async (n: number) =>
    json<DeployBody>(await api.request('POST', '/api/apps/swap/deploy', { body: { files: { 'index.html': page(n) } } }), 202);
  const settled = (id: string) =>
    eventually(
      `deploy ${id} to settle`,
      async () => {
        const d = await json<DeployBody>(await api.request('GET', `/api/deploys/${id}`), 200);
        return d.status === 'live' || d.status === 'failed' ? d : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 50 },
    );
  const machines = async () =>
    (await core().listNamespacedPod({ namespace: ns, labelSelector: `${labels.app}=swap` })).items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => p.metadata!.name!)
      .sort();

  /** Requests the app through ingress-auth until stopped; every answer that is not one whole page of ours is a failure. */
  function traffic() {
    let running = true;
    let answered = 0;
    const failures: string[] = [];
    const pages = new Set(Array.from({ length: 40 }, (_, i) => page(i)));
    const clients = Array.from({ length: 4 }, async () => {
      while (running) {
        try {
          const r = await via();
          answered++;
          if (r.status !== 200 || !pages.has(r.body)) failures.push(`${r.status} ${r.body.slice(0, 120)}`);
        } catch (err) {
          failures.push(String(err));
        }
      }
    });
    // Stops by itself after two minutes, so a test that fails before stop() leaves no client running.
    const cap = setTimeout(() => (running = false), 120_000);
    return {
      stop: async () => {
        running = false;
        clearTimeout(cap);
        await Promise.all(clients);
        return { answered, failures };
      },
    };
  }

  it('serves 20 content deploys and 10 rollbacks on the same machines, with no failed or mixed request', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'swap', machines: 2 } }), 201);
    const first = await deploy(0);
    assert.equal((await settled(first.id)).status, 'live');
    await eventually('the page through ingress-auth', async () => ((await via()).body === page(0) ? true : undefined), {
      timeoutMs: 30_000,
    });
    const before = await machines();
    assert.equal(before.length, 2);

    const load = traffic();
    const times: number[] = [];
    for (let n = 1; n <= 20; n++) {
      const started = Date.now();
      const d = await deploy(n);
      const done = await settled(d.id);
      assert.equal(done.status, 'live', done.reason ?? '');
      // Live means every machine serves it: the next request through ingress-auth is the new page.
      assert.equal((await via()).body, page(n), `deploy ${n} served once live`);
      times.push(Date.now() - started);
    }
    for (let i = 0; i < 10; i++) {
      const back = await json<DeployBody>(await api.request('POST', '/api/apps/swap/rollback', { body: {} }), 202);
      assert.equal((await settled(back.id)).status, 'live');
      assert.equal((await via()).body, page(i % 2 === 0 ? 19 : 20), 'a rollback serves the deploy before');
    }
    const { answered, failures } = await load.stop();
    assert.deepEqual(failures, [], 'no failed or mixed request');
    assert.ok(answered > 100, `requests flowed all along (${answered})`);
    assert.deepEqual(await machines(), before, 'the same machines served every deploy');
    times.sort((a, b) => a - b);
    console.log(`# 20 content deploys, POST to live: p50 ${times[10]} ms, max ${times[19]} ms; ${answered} requests, 0 failed`);
  });

  it("fails a deploy whose artifact a machine cannot fetch, with the machine's reason; the live content keeps serving", async () => {
    const serving = (await via()).body;
    const custom = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
    // As a GitOps tool could apply it: a digest the store does not have.
    const missing = `sha256:${'e'.repeat(64)}`;
    await custom.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace: ns,
        plural: pluralOf('App'),
        name: 'swap',
        body: {
          spec: { source: { digest: missing, url: `${api.deps.config.deploys.artifactBaseUrl}/${missing}` }, deployId: 'gitops-missing' },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const failed = await eventually(
      'the rollout to fail',
      async () => {
        const app = (await custom.getNamespacedCustomObject({
          group,
          version,
          namespace: ns,
          plural: pluralOf('App'),
          name: 'swap',
        })) as App;
        return app.status?.rollout?.deploy === 'gitops-missing' && app.status.rollout.state === 'Failed' ? app.status.rollout : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assert.match(failed.reason ?? '', new RegExp(`machine [01]: cannot serve ${missing}: .*answered 40[34]`));
    assert.equal((await via()).body, serving, 'the machines serve what they served');
    const pods = (await core().listNamespacedPod({ namespace: ns, labelSelector: `${labels.app}=swap` })).items;
    assert.ok(pods.every((p) => p.metadata?.annotations?.['svc.dev/content-failed']?.includes(missing)));
    // The next deploy through the API swaps again.
    const next = await deploy(30);
    assert.equal((await settled(next.id)).status, 'live');
    assert.equal((await via()).body, page(30));
  });

  it('still replaces the machines when what they are made of changes (env), with no failed request', async () => {
    const before = await machines();
    const load = traffic();
    await json(await api.request('PUT', '/api/apps/swap/env', { body: { GREETING: 'hello' } }), 200).catch(async (err: unknown) => {
      await load.stop();
      throw err;
    });
    await eventually(
      'new machines, the old ones gone',
      async () => {
        const now = await machines();
        return now.length === 2 && now.every((m) => !before.includes(m)) ? now : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    ).finally(() => load.stop());
    const { answered, failures } = await load.stop();
    assert.deepEqual(failures, []);
    assert.ok(answered > 10, `requests flowed (${answered})`);
    assert.equal((await via()).body, page(30));
  });

  it("swaps a handler tree's machines in place, each revision in a fresh process, and a restart comes back on the App's", async () => {
    // A module with state: a fresh process per revision starts it afresh; hits counts this revision's requests.
    const tree = (n: number) => ({
      'about.html': `<p>fns ${n}</p>`,
      'api/rev.js': `let hits = 0;\nexport default () => ({ rev: ${n}, hits: ++hits, pid: process.pid });\n`,
      'api/exit.js': 'export default () => { setTimeout(() => process.exit(3), 20); return "bye"; };\n',
      // A process its shell leaves behind (adopted by the container's process 1), and what runs.
      'api/leave.js':
        "import { spawn } from 'node:child_process';\nexport default () => { spawn('sh', ['-c', 'sleep 303 >/dev/null 2>&1 &'], { stdio: 'ignore' }); return 'left'; };\n",
      'api/ps.js':
        "import { readdirSync, readFileSync } from 'node:fs';\nexport default () => readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).map((p) => { try { return readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\\0', ' ').trim(); } catch { return ''; } }).filter(Boolean);\n",
    });
    const viaFns = (p: string) => rawRequest(ingress.url, p, { headers: { host: 'fns.apps.localhost' }, timeoutMs: 10_000 });
    const rev = async () => {
      const r = await viaFns('/api/rev');
      assert.equal(r.status, 200, r.body);
      return JSON.parse(r.body) as { rev: number; hits: number; pid: number };
    };
    const deployFns = async (n: number) => {
      const d = await json<DeployBody>(await api.request('POST', '/api/apps/fns/deploy', { body: { files: tree(n) } }), 202);
      const done = await settled(d.id);
      assert.equal(done.status, 'live', done.reason ?? '');
    };
    await json(await api.request('POST', '/api/apps', { body: { name: 'fns' } }), 201);
    await deployFns(0);
    await eventually('the handler through ingress-auth', async () => ((await viaFns('/api/rev')).status === 200 ? true : undefined), {
      timeoutMs: 30_000,
    });
    const pods = async () =>
      (await core().listNamespacedPod({ namespace: ns, labelSelector: `${labels.app}=fns` })).items.filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
    const [machine] = await pods();
    const first = await rev();
    // What the first revision's code leaves running does not outlive it.
    const ps = async () => JSON.parse((await viaFns('/api/ps')).body) as string[];
    assert.equal((await viaFns('/api/leave')).body, 'left');
    await eventually('the orphan running', async () => ((await ps()).includes('sleep 303') ? true : undefined), { timeoutMs: 5000 });

    let running = true;
    const failures: string[] = [];
    let answered = 0;
    const client = (async () => {
      while (running) {
        const r = await viaFns('/api/rev').catch((err: unknown) => ({ status: 0, body: String(err) }));
        answered++;
        if (r.status !== 200) failures.push(`${r.status} ${r.body.slice(0, 120)}`);
      }
    })();
    const times: number[] = [];
    try {
      for (let n = 1; n <= 5; n++) {
        const started = Date.now();
        await deployFns(n);
        times.push(Date.now() - started);
        const now = await rev();
        assert.equal(now.rev, n, `deploy ${n} served once live`);
        if (n === 1) assert.ok(!(await ps()).includes('sleep 303'), 'ended with its revision: ' + (await ps()).join(' | '));
        assert.notEqual(now.pid, first.pid, 'not the first revision’s process');
      }
      const back = await json<DeployBody>(await api.request('POST', '/api/apps/fns/rollback', { body: {} }), 202);
      assert.equal((await settled(back.id)).status, 'live');
      assert.equal((await rev()).rev, 4, 'a rollback serves the deploy before');
    } finally {
      running = false;
      await client;
    }
    assert.deepEqual(failures, [], 'no failed request');
    assert.ok(answered > 20, `requests flowed (${answered})`);
    assert.deepEqual(
      (await pods()).map((p) => p.metadata!.uid),
      [machine!.metadata!.uid],
      'the same machine served every deploy',
    );
    times.sort((a, b) => a - b);
    console.log(`# 5 handler-tree deploys, POST to live: p50 ${times[2]} ms, max ${times[4]} ms; ${answered} requests, 0 failed`);

    // The app's code ends its revision's process: the container restarts, and comes back on the
    // revision the App says (the rollback's), not on the one its spec was made with.
    assert.equal((await viaFns('/api/exit')).body, 'bye');
    const restarted = await eventually(
      'the machine to restart and serve again',
      async () => {
        const [p] = await pods();
        const count = p?.status?.containerStatuses?.[0]?.restartCount ?? 0;
        if (count < 1) return undefined;
        const r = await viaFns('/api/rev').catch(() => undefined);
        return r?.status === 200 ? (JSON.parse(r.body) as { rev: number; hits: number }) : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assert.equal(restarted.rev, 4);
    assert.equal((await pods())[0]!.metadata!.uid, machine!.metadata!.uid, 'the same Pod, restarted');
  });
});
