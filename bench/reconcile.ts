// bench/reconcile: N container Apps (default 300, one machine each) brought to Ready by the
// controllers, against the same N machines created directly as bare Pods (the pod spec the
// controller makes) brought to Ready by the nodes' kubelets, in the same run. Prints apps/s, create-to-Ready
// p50/p99, where an App's time goes, the ratio, and the controllers process' memory.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { machinePod, type AppSettings } from '../controllers/app/desired.js';
import { labels } from '../lib/contract.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { repoRoot } from '../lib/paths.js';
import { apiVersion, group, version, type App } from '../lib/resources/index.js';
import { inParallel, percentile } from './support.js';
import { images } from '../test/support/images.js';

const count = Number(process.env.BENCH_APPS ?? 300);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);
const timeoutMs = Number(process.env.BENCH_TIMEOUT_SECONDS ?? 300) * 1000;
// Each machine is busybox's httpd from the local registry (BENCH_APP_COMMAND overrides the command).
const command = process.env.BENCH_APP_COMMAND
  ? (JSON.parse(process.env.BENCH_APP_COMMAND) as string[])
  : ['httpd', '-f', '-p', '8080', '-h', '/tmp'];
const spec: App['spec'] = { kind: 'container', image: images.busybox, command, machines: 1 };

const kc = loadKubeConfig(process.env.KUBECONFIG);
const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const id = Date.now().toString(36);
const podsNs = `bench-reconcile-pods-${id}`;
const appsNs = `bench-reconcile-apps-${id}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- the controllers process' memory: RSS of its pid and all its descendants ----

const controllersPid = Number(
  readFileSync(path.join(process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc'), 'run/controllers.pid'), 'utf8').trim(),
);

function descendants(pid: number): number[] {
  const out = [pid];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tasks) {
    let children: string;
    try {
      children = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const c of children.split(' ').filter(Boolean)) out.push(...descendants(Number(c)));
  }
  return out;
}

/** CPU seconds (user + system) the controllers process and its children used so far. */
function controllersCpuSeconds(): number {
  let ticks = 0;
  for (const pid of descendants(controllersPid)) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    } catch {
      // a child that just ended
    }
  }
  return ticks / 100; // USER_HZ
}

/** MiB resident in the controllers process and its children; throws if it is not running. */
function controllersRssMiB(): number {
  let kib = 0;
  for (const pid of descendants(controllersPid)) {
    try {
      const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      kib += Number(m?.[1] ?? 0);
    } catch (err) {
      if (pid === controllersPid)
        throw new Error(`controllers (pid ${controllersPid} from .svc/run/controllers.pid) is not running: ${String(err)}`, { cause: err });
    }
  }
  return kib / 1024;
}

// ---- watching a namespace's objects (re-listing if the watch ends before we are done) ----

interface Listed<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

function watchAll<T extends k8s.KubernetesObject>(
  watchPath: string,
  list: () => Promise<Listed<T>>,
  seen: (o: T) => void,
): { stop(): void; started: Promise<void> } {
  let stopped = false;
  let current: AbortController | undefined;
  const run = async (): Promise<void> => {
    const listed = await list();
    listed.items.forEach(seen);
    current = await new k8s.Watch(kc).watch(
      watchPath,
      { resourceVersion: listed.metadata?.resourceVersion },
      (type: string, o: T) => {
        if (type !== 'ERROR' && type !== 'BOOKMARK') seen(o);
      },
      () => {
        if (!stopped)
          void sleep(200).then(() => (stopped ? undefined : run().catch((err) => console.error('bench/reconcile: re-watch failed', err))));
      },
    );
  };
  const started = run();
  return {
    started,
    stop() {
      stopped = true;
      current?.abort();
    },
  };
}

const podReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
const appReady = (a: App) => a.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

// ---- cleanup: delete the namespaces and wait until their pods are gone, also on Ctrl-C ----

const created = new Set<string>();
async function deleteNamespace(ns: string): Promise<void> {
  if (!created.has(ns)) return;
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
  const until = Date.now() + 120_000;
  while (Date.now() < until) {
    const left = await core.listNamespacedPod({ namespace: ns }).then(
      (l) => l.items.length,
      () => 0,
    );
    if (!left) break;
    await sleep(500);
  }
  created.delete(ns);
}
let cleaning: Promise<void> | undefined;
const cleanup = () => (cleaning ??= Promise.all([...created].map(deleteNamespace)).then(() => undefined));
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`bench/reconcile: ${signal}, deleting ${[...created].join(', ') || 'nothing'}`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function createNamespace(ns: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name: ns, labels: { 'svc.dev/bench': 'reconcile' } } } });
  created.add(ns);
  // The default ServiceAccount must exist before pods are admitted.
  while (!(await core.listNamespacedServiceAccount({ namespace: ns })).items.length) await sleep(100);
}

// ---- capacity: the kubelets take 250 pods each (maxPods, hack/nodes.sh) ----

async function freePodSlots(): Promise<{ free: number; detail: string }> {
  const nodes = (await core.listNode()).items.filter(
    (n) => !n.spec?.unschedulable && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  const pods = (await core.listPodForAllNamespaces({ fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' })).items.filter(
    (p) => p.spec?.nodeName,
  );
  const detail = nodes
    .map(
      (n) =>
        `${n.metadata!.name}: ${n.status?.allocatable?.pods ?? '?'} pods allocatable, ${pods.filter((p) => p.spec!.nodeName === n.metadata!.name).length} used`,
    )
    .join('; ');
  const free = nodes.reduce(
    (s, n) => s + Number(n.status?.allocatable?.pods ?? 0) - pods.filter((p) => p.spec!.nodeName === n.metadata!.name).length,
    0,
  );
  return { free, detail };
}

/** Why what is not Ready is not, for the timeout message. */
async function diagnose(ns: string): Promise<string> {
  const pods = (await core.listNamespacedPod({ namespace: ns })).items;
  const byState = new Map<string, number>();
  const reasons = new Map<string, number>();
  for (const p of pods) {
    const state = podReady(p) ? 'Ready' : `${p.status?.phase ?? 'unknown'}${p.spec?.nodeName ? '' : ' (unscheduled)'}`;
    byState.set(state, (byState.get(state) ?? 0) + 1);
    if (!podReady(p)) {
      const why =
        p.status?.conditions?.find((c) => c.status === 'False' && c.message)?.message ??
        p.status?.containerStatuses?.[0]?.state?.waiting?.reason;
      if (why) reasons.set(why, (reasons.get(why) ?? 0) + 1);
    }
  }
  return [
    `${pods.length} pods: ${[...byState].map(([s, n]) => `${n} ${s}`).join(', ')}`,
    ...[...reasons].map(([r, n]) => `  ${n} x ${r}`),
  ].join('\n');
}

function until(done: () => boolean, what: () => string, ns: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(tick);
      void diagnose(ns).then(
        (d) => reject(new Error(`${what()} after ${timeoutMs / 1000} s\n${d}`)),
        () => reject(new Error(`${what()} after ${timeoutMs / 1000} s`)),
      );
    }, timeoutMs);
    const tick = setInterval(() => {
      if (done()) {
        clearTimeout(timer);
        clearInterval(tick);
        resolve();
      }
    }, 20);
  });
}

interface Result {
  acceptMs: number;
  totalMs: number;
  latencies: number[];
}

const settings: AppSettings = {
  site: { appsDomain: 'bench.invalid', appsUrlSuffix: '', secure: false },
  runtimeImage: 'svc/runtime',
  artifactBaseUrl: 'http://bench.invalid',
  rolloutDeadlineMs: timeoutMs,
  assertionIssuer: 'http://bench.invalid/_svc/auth',
  jwksUrl: 'http://bench.invalid/_svc/auth/jwks.json',
};
const appName = (i: number) => `a${i}`;

/** The machine pod the controller would make for App a<i>, without its owner and under a label the controllers do not watch. */
function barePod(i: number): k8s.V1Pod {
  const app: App = {
    apiVersion,
    kind: 'App',
    metadata: { name: appName(i), namespace: podsNs, uid: '00000000-0000-0000-0000-000000000000' },
    spec,
  };
  const pod = machinePod(app, 0, settings);
  const rename = (labels: Record<string, string> | undefined) =>
    labels && Object.fromEntries(Object.entries(labels).map(([k, v]) => [k === labels.app ? 'bench.svc.dev/app' : k, v]));
  delete pod.metadata!.ownerReferences;
  pod.metadata!.labels = rename(pod.metadata!.labels);
  for (const c of pod.spec!.topologySpreadConstraints ?? [])
    if (c.labelSelector?.matchLabels) c.labelSelector.matchLabels = rename(c.labelSelector.matchLabels);
  return pod;
}

async function barePods(): Promise<Result> {
  await createNamespace(podsNs);
  const createdAt = new Map<string, number>();
  const readyAt = new Map<string, number>();
  const w = watchAll<k8s.V1Pod>(
    `/api/v1/namespaces/${podsNs}/pods`,
    () => core.listNamespacedPod({ namespace: podsNs }),
    (p) => {
      if (podReady(p) && !readyAt.has(p.metadata!.name!)) readyAt.set(p.metadata!.name!, performance.now());
    },
  );
  await w.started;
  try {
    const start = performance.now();
    await inParallel(count, concurrency, async (i) => {
      const body = barePod(i);
      await core.createNamespacedPod({ namespace: podsNs, body });
      createdAt.set(body.metadata!.name!, performance.now());
    });
    const acceptMs = performance.now() - start;
    await until(
      () => readyAt.size >= count,
      () => `bare pods: only ${readyAt.size} of ${count} Ready`,
      podsNs,
    );
    const totalMs = Math.max(...readyAt.values()) - start;
    const latencies = [...readyAt].map(([n, t]) => t - createdAt.get(n)!).sort((a, b) => a - b);
    return { acceptMs, totalMs, latencies };
  } finally {
    w.stop();
  }
}

interface AppResult extends Result {
  /** App created -> its machine pod appears; pod appears -> pod Ready; pod Ready -> App Ready. */
  stages: [number[], number[], number[]];
  rss: { before: number; peak: number; afterReady: number };
  cpuSeconds: number;
}

async function apps(): Promise<AppResult> {
  await createNamespace(appsNs);
  const createdAt = new Map<string, number>();
  const readyAt = new Map<string, number>();
  const podSeen = new Map<string, number>();
  const podReadyAt = new Map<string, number>();
  const wa = watchAll<App>(
    `/apis/${group}/${version}/namespaces/${appsNs}/apps`,
    () => custom.listNamespacedCustomObject({ group, version, namespace: appsNs, plural: 'apps' }) as Promise<Listed<App>>,
    (a) => {
      if (appReady(a) && !readyAt.has(a.metadata.name!)) readyAt.set(a.metadata.name!, performance.now());
    },
  );
  const wp = watchAll<k8s.V1Pod>(
    `/api/v1/namespaces/${appsNs}/pods`,
    () => core.listNamespacedPod({ namespace: appsNs }),
    (p) => {
      const app = p.metadata?.labels?.[labels.app];
      if (!app) return;
      if (!podSeen.has(app)) podSeen.set(app, performance.now());
      if (podReady(p) && !podReadyAt.has(app)) podReadyAt.set(app, performance.now());
    },
  );
  await Promise.all([wa.started, wp.started]);
  await sleep(1000);
  const before = controllersRssMiB();
  const cpuBefore = controllersCpuSeconds();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, controllersRssMiB())), 100);
  try {
    const start = performance.now();
    await inParallel(count, concurrency, async (i) => {
      const name = appName(i);
      await custom.createNamespacedCustomObject({
        group,
        version,
        namespace: appsNs,
        plural: 'apps',
        body: { apiVersion, kind: 'App', metadata: { name }, spec },
      });
      createdAt.set(name, performance.now());
    });
    const acceptMs = performance.now() - start;
    await until(
      () => readyAt.size >= count,
      () => `Apps: only ${readyAt.size} of ${count} Ready (${podSeen.size} machine pods made, ${podReadyAt.size} Ready)`,
      appsNs,
    );
    const totalMs = Math.max(...readyAt.values()) - start;
    clearInterval(sampler);
    const afterReady = controllersRssMiB();
    const cpuSeconds = controllersCpuSeconds() - cpuBefore;
    peak = Math.max(peak, afterReady);
    const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
    const names = [...readyAt.keys()];
    return {
      acceptMs,
      totalMs,
      latencies: sorted(names.map((n) => readyAt.get(n)! - createdAt.get(n)!)),
      stages: [
        sorted(names.map((n) => podSeen.get(n)! - createdAt.get(n)!)),
        sorted(names.map((n) => podReadyAt.get(n)! - podSeen.get(n)!)),
        sorted(names.map((n) => readyAt.get(n)! - podReadyAt.get(n)!)),
      ],
      rss: { before, peak, afterReady },
      cpuSeconds,
    };
  } finally {
    clearInterval(sampler);
    wa.stop();
    wp.stop();
  }
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const pq = (xs: number[]) => `p50 ${s(percentile(xs, 50))}  p99 ${s(percentile(xs, 99))}`;

let failed = false;
try {
  controllersRssMiB(); // fails early if the controllers do not run
  const { free, detail } = await freePodSlots();
  if (count > free && process.env.BENCH_FORCE !== '1') {
    throw new Error(
      `${count} machines do not fit: the Nodes take ${free} more pods (${detail}); each kubelet has maxPods 250 ` +
        '(hack/nodes.sh), so the scheduler leaves the rest Pending with "Too many pods". Set BENCH_APPS lower, or BENCH_FORCE=1 to see it.',
    );
  }
  const bare = await barePods();
  await deleteNamespace(podsNs); // the Apps get the same empty nodes and a quiet machine
  await sleep(2000);
  const app = await apps();
  const cleanupStart = performance.now();
  await deleteNamespace(appsNs);
  const cleanupMs = performance.now() - cleanupStart;
  await sleep(2000);
  const afterCleanup = controllersRssMiB();

  console.log(
    `bench/reconcile: ${count} machines (registry busybox ${command[0]} listener on 8080, tcp readiness), ${concurrency} creates in flight, same machine, same run`,
  );
  console.log(
    `  bare Pods (baseline)   accept ${s(bare.acceptMs)}   all Ready ${s(bare.totalMs)} (${(count / (bare.totalMs / 1000)).toFixed(1)} pods/s)   create-to-Ready ${pq(bare.latencies)}`,
  );
  console.log(
    `  Apps via controllers   accept ${s(app.acceptMs)}   all Ready ${s(app.totalMs)} (${(count / (app.totalMs / 1000)).toFixed(1)} apps/s)   create-to-Ready ${pq(app.latencies)}`,
  );
  console.log(`    App created -> machine pod made   ${pq(app.stages[0])}`);
  console.log(`    machine pod made -> pod Ready     ${pq(app.stages[1])}`);
  console.log(`    pod Ready -> App Ready            ${pq(app.stages[2])}`);
  console.log(
    `  ratio Apps / bare Pods  all Ready ${(app.totalMs / bare.totalMs).toFixed(2)}   p50 ${(percentile(app.latencies, 50) / percentile(bare.latencies, 50)).toFixed(2)}   p99 ${(percentile(app.latencies, 99) / percentile(bare.latencies, 99)).toFixed(2)}`,
  );
  console.log(
    `  controllers CPU until all Ready  ${app.cpuSeconds.toFixed(1)} s (${((100 * app.cpuSeconds) / (app.totalMs / 1000)).toFixed(0)}% of one core)`,
  );
  console.log(
    `  controllers RSS (pid ${controllersPid} + children)  before ${app.rss.before.toFixed(0)} MiB   peak ${app.rss.peak.toFixed(0)} MiB   all Ready ${app.rss.afterReady.toFixed(0)} MiB   after cleanup (${s(cleanupMs)}) ${afterCleanup.toFixed(0)} MiB`,
  );
} catch (err) {
  failed = true;
  console.error(`bench/reconcile: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await cleanup();
}
process.exit(failed ? 1 : 0);
