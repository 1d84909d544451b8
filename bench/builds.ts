// bench/builds: push-to-live of a source tree through the API (in this process, with its machine
// listener) and the running controllers, nodes and registry, against the same build commands run
// directly on the host in the same run:
//   site     a static site with a build step (npm ci, npm run build into dist/), deployed as an artifact
//   service  a small Node.js service (npm ci, started by npm start), deployed as an image
// Each cold (a new app: an empty cache volume, the builder's first start on a node) then warm (the
// same app, a changed tree); measured: the first log byte after POST /builds, and POST to the app
// serving the new content. Goals of the issue: warm push-to-live < 20 s; first log byte < 2 s.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createMachineApi } from '../api/machine.js';
import { createApi } from '../api/server.js';
import { packTree } from '../lib/artifacts/tarball.js';
import { getFromEveryMachine } from '../test/support/app-traffic.js';
import { packageLock } from '../test/support/build-trees.js';
import { images } from '../test/support/images.js';
import { benchApi } from './support.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const trees = {
  site: (mark: string) => ({
    'package.json': JSON.stringify({ name: 'site', version: '1.0.0', scripts: { build: 'node build.js' } }),
    'package-lock.json': packageLock('site'),
    'build.js': `require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/index.html','${mark}')`,
  }),
  service: (mark: string) => ({
    'package.json': JSON.stringify({ name: 'svc', version: '1.0.0', scripts: { start: 'node server.js' } }),
    'package-lock.json': packageLock('svc'),
    'server.js': `require('http').createServer((q, r) => r.end('${mark}')).listen(process.env.PORT)`,
  }),
};
const hostCommands = { site: 'npm ci --no-audit --no-fund && npm run build', service: 'npm ci --no-audit --no-fund' };

// The machine listener on a port pods reach (sources are fetched from it, results sent to it).
const machine = createServer();
const { listenOnMachinePort } = await import('../test/support/api.js');
const machinePort = await listenOnMachinePort(machine);
const bench = await benchApi({
  SVC_API_MACHINE_PORT: String(machinePort),
  SVC_BUILD_REGISTRY: images.registry,
  SVC_IMAGE_BUILDER: images.builder,
});
const { deps, token } = bench;
const ns = bench.account.namespace;
// Koa's handler answers its own errors: the promise it returns never rejects.
const machineHandler = createMachineApi(deps).callback();
machine.on('request', (req, res) => void machineHandler(req, res));
const apiHandler = createApi(deps).callback();
const server = createServer((req, res) => void apiHandler(req, res));
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
const auth = { authorization: `Bearer ${token}` };
async function call<T>(method: string, route: string, body?: unknown): Promise<T> {
  const res = await fetch(base + route, {
    method,
    headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** POST /builds of `files` for `app` (deploy), until the app serves `mark`: [first log byte ms, push-to-live ms]. */
async function pushToLive(app: string, files: Record<string, string>, mark: string): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await fetch(`${base}/builds?app=${app}&deploy=true`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/gzip' },
    body: await packTree(files),
  });
  if (res.status !== 202) throw new Error(`POST /builds: ${res.status} ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  const logs = await fetch(`${base}/builds/${id}/logs?follow=true`, { headers: auth });
  const reader = logs.body!.getReader();
  await reader.read();
  const firstByte = performance.now() - t0;
  void (async () => {
    while (!(await reader.read()).done);
  })().catch(() => undefined);
  for (const deadline = Date.now() + 300_000; Date.now() < deadline; await sleep(100)) {
    const b = await call<{ status: string; reason: string; message: string }>('GET', `/builds/${id}`);
    if (b.status === 'failed' || b.status === 'canceled') throw new Error(`build ${id} ${b.status}: ${b.reason} ${b.message}`);
    if ((await getFromEveryMachine(ns, app, '/').catch(() => undefined)) === mark) return [firstByte, performance.now() - t0];
  }
  throw new Error(`${app} not serving ${mark} within 300 s`);
}

function onHost(kind: keyof typeof trees): number {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-build-'));
  try {
    for (const [p, c] of Object.entries(trees[kind]('host'))) {
      mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      writeFileSync(path.join(dir, p), c);
    }
    const t0 = performance.now();
    execFileSync('sh', ['-c', hostCommands[kind]], { cwd: dir, stdio: 'ignore' });
    return performance.now() - t0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (x: number) => `${x.toFixed(0)} ms`;
const rows: Array<[string, number, number, number, number, number]> = [];
try {
  console.log(
    'bench/builds: push-to-live through the API (this process) and the running controllers, nodes and registry; baseline: the same commands on the host',
  );
  for (const kind of ['site', 'service'] as const) {
    const app = `bench-${kind}-${Date.now().toString(36)}`;
    await call('POST', '/apps', { name: app });
    const [coldByte, cold] = await pushToLive(app, trees[kind](`${kind}-1`), `${kind}-1`);
    const [warmByte, warm] = await pushToLive(app, trees[kind](`${kind}-2`), `${kind}-2`);
    rows.push([kind, coldByte, cold, warmByte, warm, onHost(kind)]);
    await call('DELETE', `/apps/${app}`);
  }
  console.log('  kind      first byte cold / warm   push-to-live cold / warm   the commands on the host');
  for (const [kind, cb, c, wb, w, host] of rows)
    console.log(
      `  ${kind.padEnd(8)}  ${ms(cb).padStart(8)} / ${ms(wb).padEnd(8)}    ${ms(c).padStart(8)} / ${ms(w).padEnd(8)}       ${ms(host)}`,
    );
  const worstWarm = Math.max(...rows.map((r) => r[4]));
  const worstByte = Math.max(...rows.flatMap((r) => [r[1], r[3]]));
  console.log(
    `  goals: warm push-to-live < 20 s: ${worstWarm < 20_000 ? 'met' : 'NOT met'} (${ms(worstWarm)}); first log byte < 2 s: ${worstByte < 2000 ? 'met' : 'NOT met'} (${ms(worstByte)})`,
  );
} finally {
  server.closeAllConnections();
  server.close();
  machine.closeAllConnections();
  machine.close();
  await bench.cleanup();
}
process.exit(0);
