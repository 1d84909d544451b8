// bench/deploy: how long a deploy takes, from the POST to the first 200 of the new content through
// ingress-auth (started in-process, routing from the cluster like the platform's): 20 content
// redeploys of a static site (swapped in place on its running machine), 10 rollbacks, 10
// redeploys of a handler tree (swapped in place, a new process per revision), 5 first deploys of
// new static apps, 5 image deploys (new machines, the image already on the node); p50
// and p99 of each. Then 100 content swaps under load through ingress-auth, counting failed and
// mixed answers. Baseline in the same run: the machine the controller makes, created directly as a
// bare Pod, to its first 200, so the ratio shows what the platform adds to a machine start.
// Runs the API in-process against a fresh database, with the cluster's nodes and controllers.
// Each redeploy's timeline is read from watches of the app's Pods, EndpointSlices and App as the
// bench sees them (ms after the POST): the API's answer, the machine marked as serving it (a swap)
// or a new machine Pod created, scheduled, running, Ready, in the EndpointSlice, the new page
// served through ingress-auth, the controller's status saying Live; medians (docs/benchmarks.md).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import pino from 'pino';
import { createMachineApi } from '../api/machine.js';
import { createApi } from '../api/server.js';
import { listenOnMachinePort } from '../test/support/api.js';
import { images } from '../test/support/images.js';
import { rawRequest } from '../test/support/raw-request.js';
import { startIngress } from '../ingress-auth/server.js';
import { assembleDeps } from '../api/deps.js';
import { createAccount } from '../lib/accounts.js';
import { loadConfig } from '../lib/config.js';
import { annotations, group, labels, pluralOf, version, type App } from '../lib/contract.js';
import { connect } from '../lib/db/connection.js';
import { benchDatabase, percentile } from './support.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { TokenStore } from '../lib/tokens/store.js';

const deploys = Number(process.env.BENCH_DEPLOYS ?? 20);
const rollbacks = Number(process.env.BENCH_ROLLBACKS ?? 10);
const handlerDeploys = Number(process.env.BENCH_HANDLER_DEPLOYS ?? 10);
const firstDeploys = Number(process.env.BENCH_FIRST_DEPLOYS ?? 5);
const imageDeploys = Number(process.env.BENCH_IMAGE_DEPLOYS ?? 5);
const swapsUnderLoad = Number(process.env.BENCH_SWAPS_UNDER_LOAD ?? 100);
const baselineRuns = Number(process.env.BENCH_BASELINE_PODS ?? 5);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const database = await benchDatabase();

const server = createServer();
server.listen(0, '127.0.0.1');
await new Promise<void>((r) => server.once('listening', () => r()));
const port = (server.address() as AddressInfo).port;
// Machines fetch artifacts from the machine listener, on a port the nodes' firewall lets pods reach.
const machineServer = createServer();
const machinePort = await listenOnMachinePort(machineServer);
const artifactDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-artifacts-'));
const config = loadConfig({
  ...process.env,
  SVC_DATABASE_URL: database.url,
  SVC_API_PORT: String(port),
  SVC_API_MACHINE_PORT: String(machinePort),
  SVC_ARTIFACT_DIR: artifactDir,
  SVC_RUNTIME_IMAGE: images.runtime,
  // Tenants' images from the platform's registry are allowed, as on the running platform (the image deploys).
  SVC_BUILD_REGISTRY: images.registry,
});
const db = connect(config.databaseUrl);
await migrateLatest(db);
const kc = loadKubeConfig(config.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const tokens = new TokenStore(db);
tokens.start();
const log = createLogger('api', 'info', pino.destination({ dest: '/dev/null', sync: false }));
const { services, stop } = await assembleDeps({ config, db, kc, tokens, log, recorderLease: 'svc-deploy-recorder-bench' });
// Koa's handler answers its own errors: the promise it returns never rejects.
const apiHandler = createApi(services).callback();
server.on('request', (req, res) => void apiHandler(req, res));
const machineHandler = createMachineApi(services).callback();
machineServer.on('request', (req, res) => void machineHandler(req, res));
const account = await createAccount(db, core, { email: 'bench-deploy@example.test' });
const { token } = await tokens.issue(account.id, { name: 'bench' });
const ns = account.namespace;
const base = `http://127.0.0.1:${port}/api`;
const ingress = await startIngress({ config, kc, log: createLogger('ingress-auth', 'silent'), host: '127.0.0.1', port: 0 });
const throughIngress = (app: string) =>
  rawRequest(ingress.url, '/', { headers: { host: `${app}.${config.site.appsDomain}` }, timeoutMs: 5000 });

async function call(method: string, p: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/** Requests `app` through ingress-auth until it answers 200 with `want`. */
async function firstServed(app: string, want: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const r = await throughIngress(app).catch(() => undefined);
    if (r?.status === 200 && r.body.includes(want)) return;
    await sleep(10);
  }
  throw new Error(`${app} did not serve ${want} within ${timeoutMs} ms`);
}

/** Waits until the API says deploy `id` is live. */
async function settledLive(id: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const d = await call('GET', `/deploys/${id}`);
    if (d.status === 'live') return;
    if (d.status === 'failed') throw new Error(`deploy ${id} failed: ${String(d.reason)}`);
    await sleep(10);
  }
  throw new Error(`deploy ${id} was not live within ${timeoutMs} ms`);
}

async function podServes(address: () => Promise<string | undefined>, want: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const a = await address();
    if (a) {
      const body = await fetch(`http://${a}:8080/`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => (r.ok ? r.text() : ''),
        () => '',
      );
      if (body.includes(want)) return;
    }
    await sleep(20);
  }
  throw new Error(`pod did not serve ${want} within ${timeoutMs} ms`);
}

/** When each step of one deploy was seen, in ms after its POST (docs/benchmarks.md's timeline). */
interface Timeline {
  answered?: number;
  swapped?: number;
  podCreated?: number;
  scheduled?: number;
  running?: number;
  ready?: number;
  endpoint?: number;
  served?: number;
  live?: number;
}
const steps: Array<keyof Timeline> = ['answered', 'swapped', 'podCreated', 'scheduled', 'running', 'ready', 'endpoint', 'served', 'live'];
/** The deploy being timed: its id once the API answers, its start, and what was seen. */
let timing: { id?: string; start: number; t: Timeline; podIps: Set<string> } | undefined;
const seen = (step: keyof Timeline) => {
  if (timing && timing.t[step] === undefined) timing.t[step] = performance.now() - timing.start;
};
const watches: Array<{ abort(): void }> = [];
async function watchDeploys(): Promise<void> {
  const w = new k8s.Watch(kc);
  watches.push(
    await w.watch(
      `/api/v1/namespaces/${ns}/pods`,
      { labelSelector: `${labels.app}=bench` },
      (_type: string, pod: k8s.V1Pod) => {
        if (!timing?.id || pod.metadata?.annotations?.[annotations.deploy] !== timing.id) return;
        // A running machine marked with the deploy once it swapped to it; a new one carries it from the start.
        if (pod.metadata?.annotations?.[annotations.content]) {
          seen('swapped');
          return;
        }
        seen('podCreated');
        if (pod.spec?.nodeName) seen('scheduled');
        if (pod.status?.containerStatuses?.[0]?.state?.running) seen('running');
        if (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) seen('ready');
        if (pod.status?.podIP) timing.podIps.add(pod.status.podIP);
      },
      () => undefined,
    ),
    await w.watch(
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
      { labelSelector: 'kubernetes.io/service-name=bench' },
      (_type: string, slice: k8s.V1EndpointSlice) => {
        if (!timing) return;
        const ready = (slice.endpoints ?? []).filter((e) => e.conditions?.ready).flatMap((e) => e.addresses);
        if (ready.some((a) => timing!.podIps.has(a))) seen('endpoint');
      },
      () => undefined,
    ),
    await w.watch(
      `/apis/${group}/${version}/namespaces/${ns}/${pluralOf('App')}`,
      {},
      (_type: string, app: App) => {
        const r = app.status?.rollout;
        if (timing?.id && r?.deploy === timing.id && r.state === 'Live') seen('live');
      },
      () => undefined,
    ),
  );
}

try {
  await call('POST', '/apps', { name: 'bench' });
  // A first deploy warms the path (first artifact, Service, endpoints) and is not counted.
  await call('POST', '/apps/bench/deploy', { files: { 'index.html': '<p>warm</p>' } });
  await firstServed('bench', '<p>warm</p>');

  const times: number[] = [];
  const timelines: Timeline[] = [];
  const lastMarkers: string[] = [];
  await watchDeploys();
  for (let i = 0; i < deploys; i++) {
    const marker = `<p>deploy ${i} ${randomBytes(4).toString('hex')}</p>`;
    lastMarkers.push(marker);
    const start = performance.now();
    timing = { start, t: {}, podIps: new Set() };
    const answer = await call('POST', '/apps/bench/deploy', { files: { 'index.html': marker } });
    timing.id = String(answer.id);
    seen('answered');
    await firstServed('bench', marker);
    seen('served');
    times.push(performance.now() - start);
    // The controller's Live may come a moment after the page is served.
    for (let w = 0; w < 100 && timing.t.live === undefined; w++) await sleep(20);
    timelines.push(timing.t);
  }
  timing = undefined;
  for (const w of watches) w.abort();

  // Rollbacks: each to the deploy before the current one, which the machine keeps (a switch).
  const rollbackTimes: number[] = [];
  for (let i = 0; i < rollbacks; i++) {
    const start = performance.now();
    const back = await call('POST', '/apps/bench/rollback', {});
    const want = lastMarkers[lastMarkers.length - 2 + (i % 2)]!;
    await firstServed('bench', want);
    rollbackTimes.push(performance.now() - start);
    // As `svc rollback` does: the next one once this one is live (the controller's word, what a
    // rollback steps back from), not counted.
    await settledLive(String(back.id));
  }

  // Handler-tree redeploys: swapped in place too, each revision's modules in a process of its own.
  const handlerTree = (marker: string) => ({ 'handlers/index.js': `export default () => '${marker}';\n` });
  await call('POST', '/apps', { name: 'bench-fns' });
  await call('POST', '/apps/bench-fns/deploy', { files: handlerTree('<p>warm</p>') });
  await firstServed('bench-fns', '<p>warm</p>');
  const handlerTimes: number[] = [];
  for (let i = 0; i < handlerDeploys; i++) {
    const marker = `<p>fns ${i} ${randomBytes(4).toString('hex')}</p>`;
    const start = performance.now();
    await call('POST', '/apps/bench-fns/deploy', { files: handlerTree(marker) });
    await firstServed('bench-fns', marker);
    handlerTimes.push(performance.now() - start);
  }

  // First deploys of new static apps: machines made, the runtime image on the node.
  const firstTimes: number[] = [];
  for (let i = 0; i < firstDeploys; i++) {
    const name = `bench-new-${i}`;
    const marker = `<p>new ${i} ${randomBytes(4).toString('hex')}</p>`;
    const start = performance.now();
    await call('POST', '/apps', { name });
    await call('POST', `/apps/${name}/deploy`, { files: { 'index.html': marker } });
    await firstServed(name, marker);
    firstTimes.push(performance.now() - start);
    // Gone before the next, so the account's quota never limits how many are measured.
    await call('DELETE', `/apps/${name}`);
  }

  // Image deploys: new machines of an image already on the node (a warm-up deploy pulled it).
  const imageTimes: number[] = [];
  const imageCommand = (marker: string) => [
    'sh',
    '-c',
    `mkdir -p /tmp/w && echo '${marker}' > /tmp/w/index.html && cd /tmp/w && exec python3 -m http.server 8080`,
  ];
  await call('POST', '/apps', { name: 'bench-image' });
  await call('POST', '/apps/bench-image/deploy', { image: images.python, command: imageCommand('warm') });
  await firstServed('bench-image', 'warm');
  for (let i = 0; i < imageDeploys; i++) {
    const marker = `image-${i}-${randomBytes(4).toString('hex')}`;
    const start = performance.now();
    await call('POST', '/apps/bench-image/deploy', { image: images.python, command: imageCommand(marker) });
    await firstServed('bench-image', marker);
    imageTimes.push(performance.now() - start);
  }

  // Swaps under load: clients request through ingress-auth while the app is redeployed again and
  // again; an answer that fails, or is not wholly one deploy's page, counts.
  let loading = true;
  let answered = 0;
  const failures: string[] = [];
  const expected = new Set<string>();
  expected.add((await throughIngress('bench')).body);
  const clients = Array.from({ length: 4 }, async () => {
    while (loading) {
      const r = await throughIngress('bench').catch((err: unknown) => ({ status: 0, body: String(err) }));
      answered++;
      if (r.status !== 200 || !expected.has(r.body)) failures.push(`${r.status} ${r.body.slice(0, 80)}`);
    }
  });
  const loadStart = performance.now();
  for (let i = 0; i < swapsUnderLoad; i++) {
    const marker = `<p>load ${i} ${randomBytes(4).toString('hex')}</p>`;
    expected.add(marker);
    await call('POST', '/apps/bench/deploy', { files: { 'index.html': marker } });
    await firstServed('bench', marker);
  }
  loading = false;
  await Promise.all(clients);
  const loadMs = performance.now() - loadStart;

  // Baseline: the machine the controller would make, as a bare Pod, for a fresh artifact each time.
  // The machine pod as the controller makes it, from the App as the cluster has it.
  const app = (await kc
    .makeApiClient(k8s.CustomObjectsApi)
    .getNamespacedCustomObject({ group, version, namespace: ns, plural: pluralOf('App'), name: 'bench' })) as App;
  const { machinePod, machinePolicy } = await import('../controllers/app/desired.js');
  const { appSettings } = await import('../controllers/app/settings.js');
  const settings = { ...appSettings(config), rolloutDeadlineMs: 120_000 };

  // The bare Pods are machines of no App: the account's deny-all holds them unless a policy like an
  // App's opens them (the controller ignores the label: no App of that name exists).
  const bare = 'bench-bare';
  const policy = machinePolicy({ ...app, metadata: { ...app.metadata, name: bare } }, settings)!;
  policy.metadata = { name: bare, namespace: ns };
  await kc.makeApiClient(k8s.NetworkingV1Api).createNamespacedNetworkPolicy({ namespace: ns, body: policy });
  const baseline: number[] = [];
  for (let i = 0; i < baselineRuns; i++) {
    const marker = `<p>bare ${i} ${randomBytes(4).toString('hex')}</p>`;
    const prepared = await services.deployer.prepareBody({ files: { 'index.html': marker } }, (staged) =>
      services.storage.admit(account.id, ns, staged, 'the bench tree'),
    );
    const pod = machinePod({ ...app, spec: { ...app.spec, source: prepared.spec.source!, deployId: `bare-${i}` } }, 0, settings);
    const name = `bare-${i}`;
    pod.metadata = { name, namespace: ns, labels: { [labels.app]: bare } };
    const start = performance.now();
    await core.createNamespacedPod({ namespace: ns, body: pod });
    await podServes(async () => (await core.readNamespacedPod({ namespace: ns, name })).status?.podIP, marker);
    baseline.push(performance.now() - start);
    await core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: 0 });
  }

  baseline.sort((a, b) => a - b);
  const b50 = percentile(baseline, 50);
  const row = (what: string, xs: number[], goal: number, goal99?: number) => {
    xs.sort((a, b) => a - b);
    const p50 = percentile(xs, 50);
    const p99 = percentile(xs, 99);
    const met = p50 < goal && (goal99 === undefined || p99 < goal99);
    console.log(
      `  ${what.padEnd(28)} p50 ${p50.toFixed(0).padStart(5)} ms   p99 ${p99.toFixed(0).padStart(5)} ms   (n ${xs.length}, min ${xs[0]!.toFixed(0)}, max ${xs.at(-1)!.toFixed(0)})   goal p50 < ${goal}${goal99 ? ` / p99 < ${goal99}` : ''} ms: ${met ? 'met' : 'NOT met'}`,
    );
    return p50;
  };
  console.log('bench/deploy: POST to the first 200 of the new content through ingress-auth, same run');
  const p50 = row('content redeploy (swap)', times, 500, 1000);
  row('rollback (switch)', rollbackTimes, 300);
  row('handler-tree redeploy (swap)', handlerTimes, 500, 1000);
  row('first deploy, new static app', firstTimes, 2000);
  row('image deploy, image on node', imageTimes, 2000);
  console.log(
    `  ${swapsUnderLoad} swaps under load in ${(loadMs / 1000).toFixed(1)} s: ${answered} requests through ingress-auth, ${failures.length} failed or mixed (goal 0: ${failures.length === 0 ? 'met' : 'NOT met'})${failures.length ? `; first: ${failures.slice(0, 3).join(' | ')}` : ''}`,
  );
  console.log(
    `  baseline bare runtime Pod to first 200: p50 ${b50.toFixed(0)} ms over ${baselineRuns}; content redeploy / bare Pod ${(p50 / b50).toFixed(2)}`,
  );
  const median = (step: keyof Timeline) => {
    const xs = timelines.map((t) => t[step]).filter((x): x is number => x !== undefined);
    xs.sort((a, b) => a - b);
    return xs.length ? `${percentile(xs, 50).toFixed(0)}${xs.length < timelines.length ? ` (${xs.length} seen)` : ''}` : '-';
  };
  console.log(`  timeline, ms after the POST (medians): ${steps.map((s) => `${s} ${median(s)}`).join(', ')}`);
} finally {
  await ingress.close();
  tokens.stop();
  await stop();
  server.closeAllConnections();
  server.close();
  machineServer.closeAllConnections();
  machineServer.close();
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
  await db.destroy();
  await database.drop();
  await rm(artifactDir, { recursive: true, force: true });
}
