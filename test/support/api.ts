// Runs the API in-process on an ephemeral port, against a fresh database and the test cluster.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { AppRepository } from '../../api/repositories/apps.js';
import { EnvRepository } from '../../api/repositories/env.js';
import { createApi } from '../../api/server.js';
import type { Operation } from '../../api/operation.js';
import type { Services } from '../../api/services.js';
import { createAccount, type Account } from '../../lib/accounts.js';
import { loadConfig } from '../../lib/config.js';
import { migrateLatest } from '../../lib/db/migrate.js';
import { createLogger } from '../../lib/logger.js';
import { TokenStore } from '../../lib/tokens/store.js';
import { freshDatabase } from './db.js';
import { kubeConfig } from './kube.js';

export class TestClock {
  constructor(public now = new Date()) {}
  advance(ms: number): void {
    this.now = new Date(this.now.getTime() + ms);
  }
  read = (): Date => new Date(this.now);
}

export interface TestApi {
  url: string;
  services: Services;
  clock: TestClock;
  logLines: Array<Record<string, unknown>>;
  /** An account with a full-authority token. */
  account: Account;
  token: string;
  request(method: string, path: string, opts?: { token?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<Response>;
  /** Another API replica on the same database, with its own caches. */
  replica(): Promise<{ url: string; close: () => Promise<void> }>;
  close(): Promise<void>;
}

async function listen(app: ReturnType<typeof createApi>): Promise<{ server: Server; url: string }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function startTestApi(opts: { env?: Record<string, string>; operations?: (s: Services) => Operation[] } = {}): Promise<TestApi> {
  const fresh = await freshDatabase();
  await migrateLatest(fresh.db);
  const config = loadConfig({ SVC_DATABASE_URL: fresh.url, SVC_LOG_LEVEL: 'info', ...opts.env }, { exists: () => false });
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
  const apps = new AppRepository(kc, log);
  await apps.start();
  const env = new EnvRepository(core, kc.makeApiClient(k8s.CustomObjectsApi));
  const services: Services = { config, db: fresh.db, tokens, core, apps, env, log, clock: clock.read };
  const { server, url } = await listen(createApi(services, opts.operations?.(services)));
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
    services,
    clock,
    logLines,
    account,
    token,
    request,
    replica: async () => {
      const other = new TokenStore(fresh.db, clock.read);
      other.start(100);
      const r = await listen(createApi({ ...services, tokens: other }));
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
      await apps.stop();
      server.closeAllConnections();
      await new Promise((res) => server.close(res));
      await core.deleteNamespace({ name: account.namespace }).catch(() => undefined);
      await fresh.dispose();
    },
  };
}
