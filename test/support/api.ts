// Runs the API in-process on an ephemeral port, against a fresh database and the test cluster.
import { dropBucket, freshBucketEnv } from './object-store.js';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import type Koa from 'koa';
import { createMachineApi } from '../../api/machine.js';
import { createApi } from '../../api/server.js';
import type { ApiState } from '../../api/state.js';
import type { Operation } from '../../api/operation.js';
import { assembleDeps, type ApiDeps, type Workers } from '../../api/deps.js';
import { createAccount, type Account } from '../../lib/accounts.js';
import { loadConfig } from '../../lib/config.js';
import { migrateLatest } from '../../lib/db/migrate.js';
import { createLogger } from '../../lib/logger.js';
import { repoRoot } from '../../lib/paths.js';
import { TokenStore } from '../../lib/tokens/store.js';
import { connect, type Db } from '../../lib/db/connection.js';
import { freshDatabase } from './db.js';
import { kubeConfig } from './kube.js';
import { eventually } from './wait.js';

export class TestClock {
  constructor(public now = new Date()) {}
  advance(ms: number): void {
    this.now = new Date(this.now.getTime() + ms);
  }
  read = (): Date => new Date(this.now);
}

export interface TestApi {
  url: string;
  /** The machine listener (api/machine.ts), as machines reach it. */
  /** Where people (a browser) reach it: SVC_API_PUBLIC_URL's origin; `url` unless publicHost was given. */
  publicUrl: string;
  machineUrl: string;
  deps: ApiDeps;
  /** The background workers, to run a pass now or stop one. */
  workers: Workers;
  clock: TestClock;
  logLines: Array<Record<string, unknown>>;
  /** An account with a full-authority token. */
  account: Account;
  /** The cluster as the API reaches it, for tests that look behind the API. */
  kube: { kc: k8s.KubeConfig; core: k8s.CoreV1Api };
  /** The API's database, for tests that look behind the API. */
  db: Db;
  databaseUrl: string;
  /** The Lease its recorder (and the workers that only its leader runs) lead by. */
  recorderLease: string;
  /** The object store's SVC_ARTIFACT_S3_* its artifacts are kept under (a bucket of its own; a sharing API's first's). */
  objectStoreEnv: Record<string, string>;
  token: string;
  request(
    method: string,
    path: string,
    opts?: { token?: string | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  /** Another API replica on the same database, with its own caches. */
  replica(): Promise<{ url: string; close: () => Promise<void> }>;
  close(): Promise<void>;
}

type Listener = { server: Server; url: string; port: number; serve: (app: Koa<ApiState>) => void };

/** Koa's handler answers its own errors: the promise it returns never rejects. */
function serveKoa(server: Server, app: Koa<ApiState>): void {
  const handle = app.callback();
  server.on('request', (req, res) => void handle(req, res));
}

/** Listens before the app exists (the configuration names the ports), on `host`, at `port` (0: any). */
async function listen(host = '127.0.0.1', port = 0): Promise<Listener> {
  const server = createServer();
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const bound = (server.address() as AddressInfo).port;
  return { server, url: `http://127.0.0.1:${bound}`, port: bound, serve: (app) => serveKoa(server, app) };
}

/**
 * The machine listener, on all interfaces: machines fetch artifacts and identity keys from it over
 * the pod bridge. The nodes' firewall lets pods reach the host only on the platform's machine port
 * and on this range, reserved for test APIs (hack/nodes.sh).
 */
export const testMachinePorts = { first: 18000, last: 18099 } as const;
async function listenForMachines(): Promise<Listener> {
  const server = createServer();
  const port = await listenOnMachinePort(server);
  return { server, url: `http://127.0.0.1:${port}`, port, serve: (app) => serveKoa(server, app) };
}

/** Listens on all interfaces at a free port of the range pods may reach (a test's own artifact store, say). */
export async function listenOnMachinePort(server: Server): Promise<number> {
  const span = testMachinePorts.last - testMachinePorts.first + 1;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const port = testMachinePorts.first + ((start + i) % span);
    const bound = await new Promise<boolean>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err));
      server.once('error', onError);
      server.listen(port, '0.0.0.0', () => {
        server.off('error', onError);
        resolve(true);
      });
    });
    if (bound) return port;
  }
  throw new Error(`no free port for a machine listener in ${testMachinePorts.first}-${testMachinePorts.last}`);
}

/**
 * The artifact key of the running platform (hack/dev.sh made it): the controllers mint machines'
 * credentials with it, so this API must check them with the same one.
 */
function platformArtifactKey(): { SVC_ARTIFACT_KEY?: string } {
  const file = path.join(process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc'), 'artifact-key');
  return existsSync(file) ? { SVC_ARTIFACT_KEY: readFileSync(file, 'utf8') } : {};
}

/**
 * The platform's registry as make dev configures it (hack/dev.sh: SVC_BUILD_REGISTRY), from the
 * images hack/images.sh pushed there: tenants' images from it are allowed (lib/images/registry-policy.ts),
 * as on the running platform.
 */
function platformRegistry(): { SVC_BUILD_REGISTRY?: string } {
  const file = path.join(process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc'), 'images.env');
  const line = existsSync(file) ? /^SVC_IMAGE_BUSYBOX=([^/\s]+)\//m.exec(readFileSync(file, 'utf8')) : null;
  return line ? { SVC_BUILD_REGISTRY: line[1]! } : {};
}

export async function startTestApi(
  opts: {
    env?: Record<string, string>;
    operations?: (s: ApiDeps) => Operation[];
    /** Listen at this port (default: any free one), for a provider that must know the redirect URI first. */
    port?: number;
    /** Publish the API as http://<publicHost>:<port> (SVC_API_PUBLIC_URL): a host name where a browser needs one (passkeys refuse an IP). */
    publicHost?: string;
    /** false: artifacts as files in its directory (the store a chart without an object store runs), not in a bucket. */
    objectStore?: false;
    /**
     * Another API process of the same platform as this one: its database and its Lease, so the two
     * elect one leader (a replica, with workers of its own, unlike `replica()`).
     */
    sharing?: TestApi;
  } = {},
): Promise<TestApi> {
  const shared = opts.sharing;
  const fresh = shared
    ? (() => {
        const db = connect(shared.databaseUrl);
        return { url: shared.databaseUrl, db, dispose: () => db.destroy() };
      })()
    : await freshDatabase();
  if (!shared) await migrateLatest(fresh.db);
  const listener = await listen('127.0.0.1', opts.port ?? 0);
  const publicUrl = opts.publicHost ? `http://${opts.publicHost}:${listener.port}` : listener.url;
  const machineListener = await listenForMachines();
  // Artifacts in the local object store, as make dev keeps them; the directory is the API's cache.
  const objectStoreEnv = shared?.objectStoreEnv ?? (opts.objectStore === false ? {} : freshBucketEnv());
  const artifactDir = await mkdtemp(path.join(tmpdir(), 'svc-artifacts-'));
  const config = loadConfig(
    {
      SVC_DATABASE_URL: fresh.url,
      SVC_LOG_LEVEL: 'info',
      SVC_API_PORT: String(listener.port),
      SVC_API_MACHINE_PORT: String(machineListener.port),
      SVC_ARTIFACT_DIR: artifactDir,
      ...objectStoreEnv,
      ...platformArtifactKey(),
      ...platformRegistry(),
      ...(opts.publicHost ? { SVC_API_PUBLIC_URL: publicUrl } : {}),
      ...opts.env,
    },
    { exists: () => false },
  );
  const logLines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      logLines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const clock = new TestClock();
  const kc = kubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const tokens = new TokenStore(fresh.db, clock.read);
  tokens.start(100);
  const log = createLogger('api', 'info', sink);
  // A recorder of deploy outcomes per database: this API's Lease is its own.
  const recorderLease = shared?.recorderLease ?? `svc-deploy-recorder-${randomBytes(4).toString('hex')}`;
  const { services, workers, kube, stop } = await assembleDeps({
    config,
    db: fresh.db,
    kc,
    tokens,
    log,
    clock: clock.read,
    recorderLease,
  });
  listener.serve(createApi(services, opts.operations?.(services)));
  machineListener.serve(createMachineApi(services));
  const { server, url } = listener;
  const account = await createAccount(fresh.db, core, { email: `owner-${Date.now()}@example.test` });
  const { token } = await tokens.issue(account.id, { name: 'test' });
  const extra: Array<() => Promise<void>> = [];

  const request: TestApi['request'] = (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    const bearer = o.token === undefined ? token : o.token;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    let body: string | undefined;
    if (o.body !== undefined) {
      body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    return fetch(url + path, { method, headers, body });
  };

  return {
    url,
    publicUrl,
    machineUrl: machineListener.url,
    deps: services,
    workers,
    clock,
    logLines,
    account,
    kube,
    db: fresh.db,
    databaseUrl: fresh.url,
    recorderLease,
    objectStoreEnv,
    token,
    request,
    replica: async () => {
      const other = new TokenStore(fresh.db, clock.read);
      other.start(100);
      const r = await listen();
      r.serve(createApi({ ...services, tokens: other }));
      const close = async () => {
        other.stop();
        await new Promise((res) => r.server.close(res));
      };
      extra.push(close);
      return { url: r.url, close };
    },
    close: async () => {
      for (const c of extra) await c();
      tokens.stop();
      await stop();
      for (const s of [server, machineListener.server]) {
        s.closeAllConnections();
        await new Promise((res) => s.close(res));
      }
      await core.deleteNamespace({ name: account.namespace }).catch(() => undefined);
      // Its recorder's Lease goes with it (one per test API would pile up in kube-system); a sharing one leaves it to its first.
      if (!shared)
        await kc
          .makeApiClient(k8s.CoordinationV1Api)
          .deleteNamespacedLease({ namespace: 'kube-system', name: recorderLease })
          .catch(() => undefined);
      await fresh.dispose();
      await rm(artifactDir, { recursive: true, force: true });
      if (!shared && objectStoreEnv.SVC_ARTIFACT_S3_BUCKET) await dropBucket(objectStoreEnv.SVC_ARTIFACT_S3_BUCKET).catch(() => undefined);
    },
  };
}

/** The JSON body of `res` after asserting its status (the body in the message when it differs); undefined for an empty body. */
export async function expectJson<T>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Deploys `body` to the app and waits until the deploy is live (a failed one fails at once); its id. */
export async function deployLive(
  api: Pick<TestApi, 'request'>,
  app: string,
  body: Record<string, unknown>,
  timeoutMs = 90_000,
): Promise<string> {
  const { id } = await expectJson<{ id: string }>(await api.request('POST', `/api/apps/${app}/deploy`, { body }), 202);
  await eventually(
    'the app live',
    async () => {
      const s = (await expectJson<{ status: string }>(await api.request('GET', `/api/deploys/${id}`), 200)).status;
      if (s === 'failed') throw new Error(`deploy ${id} of ${app} failed`);
      return s === 'live';
    },
    { timeoutMs },
  );
  return id;
}
