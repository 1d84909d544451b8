// bench/databases: Databases end to end through the API (in this process, over HTTP) against the
// running controllers and nodes, and a baseline in the same run:
//   ready   BENCH_DATABASES (10) databases created one after another: POST /databases until the
//           API says Ready (volume provisioned, server initialized and accepting connections)
//   attach  each attached to a running app (5 apps, each detached first the second time: an
//           account's CPU quota of 16 holds 5 machines, 10 servers and a rollout's new machine):
//           PUT /apps/{app}/database until the app's new machine answers a query through DATABASE_URL
//   base    as many bare server Pods of the same image, spec and volume created directly (a Secret,
//           a claim and a Pod, no controller, no API) until Ready
//   branch  a database filled to BENCH_BRANCH_MB (100) MB, attached to an app: POST /apps/{app}/previews
//           until the preview's branch is Ready (a physical copy: pg_basebackup); against, on the
//           source server itself, what a branch by CREATE DATABASE ... TEMPLATE and by pg_dump | psql
//           would take (no network, no new server: their copying alone)
// Goals of the issue: Ready < 10 s, a branch < 5 s.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { dataClaim, serverPod } from '../controllers/database/desired.js';
import { createApi } from '../api/server.js';
import { credentialKeys, databaseObjects } from '../lib/databases.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import type { Database } from '../lib/resources/index.js';
import { getFromApp, readyAddresses } from '../test/support/app-traffic.js';
import { dbAppScript } from '../test/support/db-app.js';
import { images } from '../test/support/images.js';
import { benchApi, percentile } from './support.js';

const count = Number(process.env.BENCH_DATABASES ?? 10);
const branchMb = Number(process.env.BENCH_BRANCH_MB ?? 100);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const p50 = (xs: number[]) =>
  `${percentile(
    [...xs].sort((a, b) => a - b),
    50,
  ).toFixed(0)} ms`;
const max = (xs: number[]) => `${Math.max(...xs).toFixed(0)} ms`;

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(50);
  }
}

const bench = await benchApi({ SVC_DATABASE_MAX_PER_ACCOUNT: '1000', SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: String(2 ** 50) });
const { deps, token } = bench;
const ns = bench.account.namespace;
const core = loadKubeConfig(deps.config.kubeconfig).makeApiClient(k8s.CoreV1Api);
// Koa's handler answers its own errors: the promise it returns never rejects.
const apiHandler = createApi(deps).callback();
const server = createServer((req, res) => void apiHandler(req, res));
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
async function call<T>(method: string, route: string, body?: unknown): Promise<T> {
  const res = await fetch(base + route, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const cleanups: Array<() => Promise<void>> = [];
try {
  console.log(`bench/databases: ${count} databases, API in this process, same machine, same run`);
  // Apps to attach to, deployed first (their start is not what is measured).
  const apps = Math.min(count, 5);
  for (let i = 0; i < apps; i++) {
    await call('POST', '/apps', { name: `app${i}` });
    await call('POST', `/apps/app${i}/deploy`, { image: images.runtime, command: ['node', '-e', dbAppScript] });
  }
  for (let i = 0; i < apps; i++) await until(`app${i} serving`, async () => (await getFromApp(ns, `app${i}`, '/env'))?.status === 200);

  const ready: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await call('POST', '/databases', { name: `db${i}` });
    await until(`db${i} Ready`, async () =>
      (await call<{ databases: Array<{ name: string; phase: string }> }>('GET', '/databases')).databases.some(
        (d) => d.name === `db${i}` && d.phase === 'Ready',
      ),
    );
    ready.push(performance.now() - t0);
  }
  console.log(`  create to Ready                 p50 ${p50(ready)}   max ${max(ready)}`);

  const attach: number[] = [];
  for (let i = 0; i < count; i++) {
    const app = `app${i % apps}`;
    if (i >= apps) {
      await call('DELETE', `/apps/${app}/database`);
      await until(`${app} detached`, async () => (await getFromApp(ns, app, '/env'))?.body.includes('"url":null'));
    }
    const t0 = performance.now();
    await call('PUT', `/apps/${app}/database`, { name: `db${i}` });
    await until(`${app} querying db${i}`, async () => (await getFromApp(ns, app, `/write/x${i}`))?.body === `x${i}`);
    attach.push(performance.now() - t0);
  }
  console.log(`  attach to app serving a query   p50 ${p50(attach)}   max ${max(attach)}`);

  // In a namespace of its own: no account quota, no policies, nothing but the Pods.
  const baseNs = `bench-databases-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name: baseNs } } });
  cleanups.push(() => core.deleteNamespace({ name: baseNs }).then(() => undefined));
  const baseline: number[] = [];
  for (let i = 0; i < count; i++) {
    const name = `base${i}`;
    const db = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Database',
      metadata: { name, namespace: baseNs, uid: 'none' },
      spec: {},
    } as Database;
    const settings = { ...deps.config.databases, image: images.postgres, platformCidrs: [] };
    const strip = <T extends k8s.KubernetesObject>(o: T): T => ({ ...o, metadata: { ...o.metadata, ownerReferences: undefined } });
    const t0 = performance.now();
    await core.createNamespacedSecret({
      namespace: baseNs,
      body: {
        metadata: { name: databaseObjects(name).secret },
        stringData: { [credentialKeys.username]: 'app', [credentialKeys.password]: 'bench', [credentialKeys.database]: name },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({ namespace: baseNs, body: strip(dataClaim(db, settings)) });
    await core.createNamespacedPod({ namespace: baseNs, body: strip(serverPod(db, settings)) });
    await until(`${name} Ready`, async () =>
      (await core.readNamespacedPod({ namespace: baseNs, name: databaseObjects(name).pod })).status?.conditions?.some(
        (c) => c.type === 'Ready' && c.status === 'True',
      ),
    );
    baseline.push(performance.now() - t0);
  }
  console.log(`  baseline: bare server Pod Ready p50 ${p50(baseline)}   max ${max(baseline)}`);
  const ratio =
    percentile(
      [...ready].sort((a, b) => a - b),
      50,
    ) /
    percentile(
      [...baseline].sort((a, b) => a - b),
      50,
    );
  console.log(
    `  API create-to-Ready / bare Pod: ${ratio.toFixed(2)}x; goal Ready < 10 s: ${
      percentile(
        [...ready].sort((a, b) => a - b),
        50,
      ) < 10_000
        ? 'met'
        : 'NOT met'
    }`,
  );

  // Branches: the servers above go first (the account's CPU quota), then one database is filled.
  for (let i = 0; i < apps; i++) await call('DELETE', `/apps/app${i}/database`);
  for (let i = 0; i < count; i++) await call('DELETE', `/databases/db${i}`);
  await call('POST', '/databases', { name: 'big', storage_bytes: 4 * 1024 ** 3 });
  await until('big Ready', async () =>
    (await call<{ databases: Array<{ name: string; phase: string }> }>('GET', '/databases')).databases.some(
      (d) => d.name === 'big' && d.phase === 'Ready',
    ),
  );
  await call('PUT', '/apps/app0/database', { name: 'big' });
  await until('app0 querying big', async () => (await getFromApp(ns, 'app0', '/write/b'))?.body === 'b');
  const chunk = 5;
  let bytes = 0;
  for (let mb = 0; mb < branchMb; mb += chunk) {
    const [address] = await readyAddresses(ns, 'app0');
    bytes = Number(await (await fetch(`http://${address}:8080/fill/${chunk}`, { signal: AbortSignal.timeout(120_000) })).text());
  }
  console.log(`  branch source: database "big" of ${(bytes / 1024 ** 2).toFixed(0)} MB (pg_database_size)`);
  const branchTimes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const { preview } = await call<{ preview: { database: string } }>('POST', '/apps/app0/previews', { ref: `b${i}` });
    await until(
      `branch ${preview.database} Ready`,
      async () =>
        (await call<{ databases: Array<{ name: string; phase: string }> }>('GET', '/databases')).databases.some(
          (d) => d.name === preview.database && d.phase === 'Ready',
        ),
      300_000,
    );
    branchTimes.push(performance.now() - t0);
    await call('DELETE', `/apps/app0/previews/b${i}`);
    await until(
      `branch ${preview.database} gone`,
      async () =>
        !(await call<{ databases: Array<{ name: string }> }>('GET', '/databases')).databases.some((d) => d.name === preview.database),
      120_000,
    );
  }
  console.log(`  preview to branch Ready (pg_basebackup into a new server)  p50 ${p50(branchTimes)}   max ${max(branchTimes)}`);
  // The alternatives, timed inside the source server (its socket, no network): their copy alone.
  const exec = new k8s.Exec(loadKubeConfig(deps.config.kubeconfig));
  const inServer = async (script: string) => {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      void exec.exec(ns, databaseObjects('big').pod, 'postgres', ['sh', '-c', script], null, process.stderr, null, false, (status) =>
        status.status === 'Success' ? resolve() : reject(new Error(`${script}: ${status.message}`)),
      );
    });
    return performance.now() - t0;
  };
  const template: number[] = [];
  const dump: number[] = [];
  for (let i = 0; i < 3; i++) {
    template.push(
      await inServer(
        `psql -q -h /tmp -d postgres -c 'CREATE DATABASE t${i} TEMPLATE big' && psql -q -h /tmp -d postgres -c 'DROP DATABASE t${i}'`,
      ),
    );
    dump.push(
      await inServer(`createdb -h /tmp d${i} && pg_dump -h /tmp big | psql -q -h /tmp -d d${i} >/dev/null && dropdb -h /tmp d${i}`),
    );
  }
  console.log(
    `  on the source server: CREATE DATABASE ... TEMPLATE (and drop) p50 ${p50(template)}   pg_dump | psql (and drop) p50 ${p50(dump)}`,
  );
  const branchP50 = percentile(
    [...branchTimes].sort((a, b) => a - b),
    50,
  );
  console.log(`  goal branch < 5 s: ${branchP50 < 5000 ? 'met' : 'NOT met'}`);
} finally {
  for (const c of cleanups) await c().catch(() => undefined);
  server.closeAllConnections();
  server.close();
  await bench.cleanup();
}
process.exit(0);
