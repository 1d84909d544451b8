// A server for bench/api.ts, in its own process so the load generator does not share its event
// loop. `bare`: a plain Koa handler answering a fixed account. `api`: the real API with its whole
// chain (request id, log line, error handler, router, token verification, revocation check, rate
// limiter, account lookup) against a fresh database. Prints {"url", "token"} when ready.
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import * as k8s from '@kubernetes/client-node';
import pino from 'pino';
import { createApi } from '../api/server.js';
import { assembleServices } from '../api/services.js';
import { createAccount } from '../lib/accounts.js';
import { loadConfig } from '../lib/config.js';
import { connect } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { TokenStore } from '../lib/tokens/store.js';
import { benchDatabase } from './support.js';

const mode = process.argv[2];
const account = { id: 'acct_0', email: 'bench@example.test', name: 'bench', namespace: 'svc-acct-0', created_at: new Date().toISOString() };

async function bare(): Promise<{ app: Koa; token: string; cleanup: () => Promise<void> }> {
  const app = new Koa();
  app.use(async (ctx) => {
    ctx.body = account;
  });
  return { app, token: 'unused', cleanup: async () => undefined };
}

async function api(): Promise<{ app: Koa; token: string; cleanup: () => Promise<void> }> {
  const database = await benchDatabase();
  const config = loadConfig({
    ...process.env,
    SVC_DATABASE_URL: database.url,
    SVC_API_RATE_PER_SECOND: '1000000000',
    SVC_API_RATE_BURST: '1000000000',
  });
  const db = connect(config.databaseUrl);
  await migrateLatest(db);
  const core = loadKubeConfig(config.kubeconfig).makeApiClient(k8s.CoreV1Api);
  const tokens = new TokenStore(db);
  tokens.start();
  const acct = await createAccount(db, core, { email: 'bench@example.test' });
  const { token } = await tokens.issue(acct.id, { name: 'bench' });
  // The production logger, writing one line per request to /dev/null: its cost is part of the figure.
  const log = createLogger('api', 'info', pino.destination({ dest: '/dev/null', sync: false }));
  const { services, stop } = await assembleServices({ config, db, kc: loadKubeConfig(config.kubeconfig), tokens, log, recorderLease: 'svc-deploy-recorder-bench' });
  const app = createApi(services);
  return {
    app,
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

const { app, token, cleanup } = mode === 'bare' ? await bare() : await api();
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}`, token }));
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void cleanup().finally(() => process.exit(0));
});
