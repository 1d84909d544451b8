// bench/deploy: from POST /apps/{app}/deploy to the first 200 with the new content, over 20
// deploys of a static site (p50, p99). Baseline in the same run: the same machine (the runtime image
// fetching the same kind of artifact) created directly as a bare Pod, to its first 200, so the ratio
// shows what the platform adds to a machine start (deploy record, App write, controller, rollout).
// Runs the API in-process against a fresh database, with the cluster's nodes and controllers.
// Each deploy's timeline is read from watches of the app's Pods, EndpointSlices and App as the
// bench sees them (ms after the POST): the API's answer, the machine Pod created, scheduled, its
// container running, Ready, its address ready in the EndpointSlice, the new page served, the
// controller's status saying Live; printed as medians (docs/benchmarks.md).
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
});
const db = connect(config.databaseUrl);
await migrateLatest(db);
const kc = loadKubeConfig(config.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
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

/** Polls the app's ready endpoints (as an ingress would see them) until one answers `want`. */
async function firstServed(service: string, want: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const slices = await discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: `kubernetes.io/service-name=${service}` });
    const addresses = slices.items
      .flatMap((s) => s.endpoints ?? [])
      .filter((e) => e.conditions?.ready)
      .flatMap((e) => e.addresses);
    for (const a of addresses) {
      const body = await fetch(`http://${a}:8080/`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => (r.ok ? r.text() : ''),
        () => '',
      );
      if (body.includes(want)) return;
    }
    await sleep(20);
  }
  throw new Error(`${service} did not serve ${want} within ${timeoutMs} ms`);
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
  podCreated?: number;
  scheduled?: number;
  running?: number;
  ready?: number;
  endpoint?: number;
  served?: number;
  live?: number;
}
const steps: Array<keyof Timeline> = ['answered', 'podCreated', 'scheduled', 'running', 'ready', 'endpoint', 'served', 'live'];
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
  await watchDeploys();
  for (let i = 0; i < deploys; i++) {
    const marker = `<p>deploy ${i} ${randomBytes(4).toString('hex')}</p>`;
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

  times.sort((a, b) => a - b);
  baseline.sort((a, b) => a - b);
  const p50 = percentile(times, 50);
  const b50 = percentile(baseline, 50);
  console.log(`bench/deploy: ${deploys} deploys of a static site (inline files), POST to first 200 of the new content, same run`);
  console.log(
    `  deploy   p50 ${p50.toFixed(0)} ms   p99 ${percentile(times, 99).toFixed(0)} ms   (min ${times[0]!.toFixed(0)}, max ${times.at(-1)!.toFixed(0)})`,
  );
  console.log(`  baseline bare runtime Pod to first 200: p50 ${b50.toFixed(0)} ms over ${baselineRuns}`);
  console.log(`  ratio deploy p50 / bare Pod p50 ${(p50 / b50).toFixed(2)}   goal p50 < 2000 ms: ${p50 < 2000 ? 'met' : 'NOT met'}`);
  const median = (step: keyof Timeline) => {
    const xs = timelines.map((t) => t[step]).filter((x): x is number => x !== undefined);
    xs.sort((a, b) => a - b);
    return xs.length ? `${percentile(xs, 50).toFixed(0)}${xs.length < timelines.length ? ` (${xs.length} seen)` : ''}` : '-';
  };
  console.log(`  timeline, ms after the POST (medians): ${steps.map((s) => `${s} ${median(s)}`).join(', ')}`);
} finally {
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
