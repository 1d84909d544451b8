// bench/sandboxes: sandboxes end to end through the API (in this process, over HTTP) against the
// running controllers and nodes, and a baseline in the same run:
//   paced  30 opens, each with the pool full: open (POST /sandboxes until ready) and open-to-first-exec
//          p50/p99: the platform's own path
//   burst  BENCH_SANDBOXES (200) opens back to back, 2 in flight: the same, for those a ready pool
//          member served (and how many), while the nodes start the pool's replacements
//   cold   10 opens with network on (never from the pool): open and open-to-first-exec p50
//   eval   30 one-shot `print(1)` in Python (POST /eval), each with the pool full, p50/p99
//   exec   100 `true` in one open sandbox through the API and its in-pod agent, against 100
//          through the apiserver's exec subresource into the same pod (what decided the agent)
//   base   10 bare Pods of the sandbox image created and exec'd through the apiserver
// `make bench` runs it with a pool of 16 (SVC_SANDBOX_POOL_SIZE); it prints the pool's size.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { sandboxPod } from '../controllers/sandbox/pod.js';
import { createApi } from '../api/server.js';
import { labels } from '../lib/contract.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { repoRoot } from '../lib/paths.js';
import { defaultResources } from '../lib/sandbox/limits.js';
import { images } from '../test/support/images.js';
import { benchApi, inParallel, percentile } from './support.js';

const count = Number(process.env.BENCH_SANDBOXES ?? 200);
const stateDir = process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const p = (xs: number[], q: number) =>
  xs.length
    ? `${percentile(
        [...xs].sort((a, b) => a - b),
        q,
      ).toFixed(0)} ms`
    : 'n/a';

const bench = await benchApi({
  SVC_SANDBOX_MAX_OPEN: '10000',
  SVC_SANDBOX_EXEC_PER_MINUTE: '1000000',
  SVC_ARTIFACT_KEY: readFileSync(path.join(stateDir, 'artifact-key'), 'utf8'),
});
const { deps, token } = bench;
const kc = loadKubeConfig(process.env.KUBECONFIG ?? path.join(stateDir, 'kubeconfig'));
const core = kc.makeApiClient(k8s.CoreV1Api);
// Koa's handler answers its own errors: the promise it returns never rejects.
const apiHandler = createApi(deps).callback();
const server = createServer((req, res) => void apiHandler(req, res));
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
const baselineNs = `bench-sandboxes-${Date.now().toString(36)}`;

async function call<T>(method: string, route: string, body?: unknown): Promise<T> {
  const res = await fetch(base + route, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

interface Opened {
  id: string;
  state: string;
  launch: string | null;
}

async function readyMembers(): Promise<number> {
  const pods = await core.listNamespacedPod({ namespace: deps.config.sandboxes.namespace, labelSelector: labels.sandboxPool });
  return pods.items.filter((pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
}

/** Waits (up to a minute) for the pool to be full again, so a phase starts from the same state. */
async function poolFull(size: number): Promise<void> {
  for (let i = 0; i < 600 && (await readyMembers()) < size; i++) await sleep(100);
}

/** Runs `cmd` in a pod through the apiserver's exec subresource; resolves when it exits. */
async function apiserverExec(pod: string, namespace: string, cmd: string[]): Promise<void> {
  const exec = new k8s.Exec(kc);
  await new Promise<void>((resolve, reject) => {
    const out = new PassThrough();
    out.resume();
    exec
      .exec(namespace, pod, 'sandbox', cmd, out, out, null, false, (status) => {
        if (status.status === 'Success') resolve();
        else reject(new Error(`exec ${cmd.join(' ')}: ${status.message ?? status.status}`));
      })
      .catch(reject);
  });
}

try {
  await call('GET', '/runtimes').catch(async () => {
    await sleep(5000);
    return call('GET', '/runtimes');
  });
  const size = await readyMembers();
  console.log(
    `bench/sandboxes: ${count} opens, pool of ${size} ready members (SVC_SANDBOX_POOL_SIZE), API in this process, same machine, same run`,
  );

  // One open, its first exec and its end; what it took.
  const cycle = async (body: object = {}) => {
    const start = performance.now();
    const sb = await call<Opened>('POST', '/sandboxes', { ...body, wait_seconds: 120 });
    const opened = performance.now();
    await call('POST', `/sandboxes/${sb.id}/exec`, { argv: ['true'] });
    const first = performance.now();
    await call('DELETE', `/sandboxes/${sb.id}`);
    return { launch: sb.launch, open: opened - start, first: first - start };
  };

  // paced: the pool full before each open.
  const paced = { open: [] as number[], first: [] as number[] };
  for (let i = 0; i < 30; i++) {
    await poolFull(size);
    const c = await cycle();
    if (c.launch !== 'warm') throw new Error(`a paced open launched ${c.launch}`);
    paced.open.push(c.open);
    paced.first.push(c.first);
  }
  console.log(`  paced warm open, 30             p50 ${p(paced.open, 50)}   p99 ${p(paced.open, 99)}`);
  console.log(`  paced warm open-to-first-exec   p50 ${p(paced.first, 50)}   p99 ${p(paced.first, 99)}`);

  // burst
  await poolFull(size);
  const burst = { open: [] as number[], first: [] as number[], cold: [] as number[] };
  const t0 = performance.now();
  await inParallel(count, 2, async () => {
    const c = await cycle();
    if (c.launch === 'warm') {
      burst.open.push(c.open);
      burst.first.push(c.first);
    } else burst.cold.push(c.open);
  });
  const burstS = (performance.now() - t0) / 1000;
  console.log(
    `  burst of ${count}, 2 in flight      ${burstS.toFixed(1)} s (${(count / burstS).toFixed(1)} opens/s), ${burst.open.length} served warm, ${burst.cold.length} cold (pool drained)`,
  );
  console.log(`  burst warm open                 p50 ${p(burst.open, 50)}   p99 ${p(burst.open, 99)}`);
  console.log(`  burst warm open-to-first-exec   p50 ${p(burst.first, 50)}   p99 ${p(burst.first, 99)}`);
  if (burst.cold.length) console.log(`  burst cold (pool empty)         p50 ${p(burst.cold, 50)}   p99 ${p(burst.cold, 99)}`);

  // eval, paced
  const evals: number[] = [];
  let evalWarm = 0;
  for (let i = 0; i < 30; i++) {
    await poolFull(size);
    const start = performance.now();
    const r = await call<{ stdout: string; launch: string }>('POST', '/eval', { runtime: 'python', code: 'print(1)' });
    evals.push(performance.now() - start);
    if (r.stdout !== '1\n') throw new Error(`eval answered ${JSON.stringify(r)}`);
    if (r.launch === 'warm') evalWarm += 1;
  }
  console.log(`  eval python print(1), 30 paced  p50 ${p(evals, 50)}   p99 ${p(evals, 99)}   (${evalWarm} warm)`);

  // cold
  const coldOpen: number[] = [];
  const coldFirst: number[] = [];
  for (let i = 0; i < 10; i++) {
    await poolFull(size);
    const c = await cycle({ network: true });
    coldOpen.push(c.open);
    coldFirst.push(c.first);
  }
  console.log(`  cold open (network on), 10      p50 ${p(coldOpen, 50)}   first exec p50 ${p(coldFirst, 50)}`);

  // exec paths, one pod
  await poolFull(size);
  const s = await call<Opened>('POST', '/sandboxes', {});
  const sandbox = deps.sandboxes.get({ accountId: bench.account.id, namespace: bench.account.namespace, createdBy: 'bench' }, s.id);
  const viaAgent: number[] = [];
  const viaApiserver: number[] = [];
  for (let i = 0; i < 100; i++) {
    let start = performance.now();
    await call('POST', `/sandboxes/${s.id}/exec`, { argv: ['true'] });
    viaAgent.push(performance.now() - start);
    start = performance.now();
    await apiserverExec(sandbox.podName!, sandbox.podNamespace!, ['true']);
    viaApiserver.push(performance.now() - start);
  }
  await call('DELETE', `/sandboxes/${s.id}`);
  console.log(`  exec \`true\`, API + agent          p50 ${p(viaAgent, 50)}   p99 ${p(viaAgent, 99)}`);
  console.log(`  exec \`true\`, apiserver exec       p50 ${p(viaApiserver, 50)}   p99 ${p(viaApiserver, 99)}   (same pod)`);

  // baseline: bare pods of the same image, exec'd through the apiserver
  await core.createNamespace({ body: { metadata: { name: baselineNs } } });
  while (!(await core.listNamespacedServiceAccount({ namespace: baselineNs })).items.length) await sleep(100);
  const bare: number[] = [];
  for (let i = 0; i < 10; i++) {
    const name = `bare-${i}`;
    const start = performance.now();
    const body = sandboxPod(
      {
        image: images.sandbox,
        namespace: baselineNs,
        runtimeClass: deps.config.sandboxes.runtimeClass,
        agentKey: deps.config.deploys.artifactKey!,
      },
      { name, resources: { ...defaultResources }, network: false, labels: {} },
    );
    await core.createNamespacedPod({ namespace: baselineNs, body });
    for (;;) {
      const pod = await core.readNamespacedPod({ name, namespace: baselineNs });
      if (pod.status?.containerStatuses?.[0]?.state?.running) break;
      await sleep(20);
    }
    await apiserverExec(name, baselineNs, ['python3', '-c', 'print(1)']);
    bare.push(performance.now() - start);
  }
  console.log(`  baseline: bare Pod create -> Running -> apiserver exec python print(1), 10   p50 ${p(bare, 50)}   p99 ${p(bare, 99)}`);
  const ok = (v: number, goal: number) => (v < goal ? 'met' : 'MISSED');
  const w50 = percentile(
    [...burst.open].sort((a, b) => a - b),
    50,
  );
  const w99 = percentile(
    [...burst.open].sort((a, b) => a - b),
    99,
  );
  const q50 = percentile(
    [...paced.open].sort((a, b) => a - b),
    50,
  );
  const q99 = percentile(
    [...paced.open].sort((a, b) => a - b),
    99,
  );
  const e50 = percentile(
    [...evals].sort((a, b) => a - b),
    50,
  );
  const c50 = percentile(
    [...coldOpen].sort((a, b) => a - b),
    50,
  );
  console.log(
    `  goals: warm open p50 < 50 ms: paced ${ok(q50, 50)}, burst ${ok(w50, 50)}; p99 < 250 ms: paced ${ok(q99, 250)}, burst ${ok(w99, 250)}; eval p50 < 150 ms ${ok(e50, 150)}; cold < 3 s ${ok(c50, 3000)}`,
  );
  console.log(
    `  baseline / paced warm open-to-first-exec p50: ${(
      percentile(
        [...bare].sort((a, b) => a - b),
        50,
      ) /
      percentile(
        [...paced.first].sort((a, b) => a - b),
        50,
      )
    ).toFixed(1)}x`,
  );
} finally {
  server.closeAllConnections();
  server.close();
  await core.deleteNamespace({ name: baselineNs }).catch(() => undefined);
  await bench.cleanup();
}
