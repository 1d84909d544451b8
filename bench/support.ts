// What the benchmarks share: percentiles, bounded parallelism, a throwaway database, and the real
// API's services on one.
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import pino from 'pino';
import { assembleDeps, type ApiDeps } from '../api/deps.js';
import { createAccount, type Account } from '../lib/accounts.js';
import { loadConfig } from '../lib/config.js';
import { connect, type Db } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { TokenStore } from '../lib/tokens/store.js';

/** The p-th percentile of ascending `sorted` (nearest rank). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Runs work(0..n-1) with at most `concurrency` in flight. */
export async function inParallel(n: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

/** A fresh database on the test server; drop() removes it. */
export async function benchDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.SVC_TEST_PG_ADMIN_URL ?? 'postgres://svc@127.0.0.1:55432/postgres';
  const name = `svc_bench_${randomBytes(4).toString('hex')}`;
  const admin: Db = connect(adminUrl, { poolMax: 1 });
  await admin.raw('CREATE DATABASE ??', [name]);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
      await admin.destroy();
    },
  };
}

/**
 * The API's dependencies (ApiDeps) on a fresh database with one account and a token, rate limits out of the way,
 * logging one line per request to /dev/null (its cost is part of any figure).
 */
export async function benchApi(env: Record<string, string> = {}): Promise<{
  deps: ApiDeps;
  db: Db;
  databaseUrl: string;
  account: Account;
  accountId: string;
  token: string;
  cleanup: () => Promise<void>;
}> {
  const database = await benchDatabase();
  const config = loadConfig({
    ...process.env,
    SVC_DATABASE_URL: database.url,
    SVC_API_RATE_PER_SECOND: '1000000000',
    SVC_API_RATE_BURST: '1000000000',
    ...env,
  });
  const db = connect(config.databaseUrl);
  await migrateLatest(db);
  const core = loadKubeConfig(config.kubeconfig).makeApiClient(k8s.CoreV1Api);
  const tokens = new TokenStore(db);
  tokens.start();
  const acct = await createAccount(db, core, { email: 'bench@example.test' });
  const { token } = await tokens.issue(acct.id, { name: 'bench' });
  const log = createLogger('api', 'info', pino.destination({ dest: '/dev/null', sync: false }));
  const { services, stop } = await assembleDeps({
    config,
    db,
    kc: loadKubeConfig(config.kubeconfig),
    tokens,
    log,
    recorderLease: 'svc-deploy-recorder-bench',
  });
  return {
    deps: services,
    db,
    databaseUrl: database.url,
    account: acct,
    accountId: acct.id,
    token,
    cleanup: async () => {
      tokens.stop();
      await stop();
      await core.deleteNamespace({ name: acct.namespace }).catch(() => undefined);
      await db.destroy();
      await database.drop();
    },
  };
}
