// Starts the API: configuration, migrations, the first account, then HTTP on SVC_API_HOST:SVC_API_PORT.
import * as k8s from '@kubernetes/client-node';
import { loadConfigOrExit } from '../lib/config.js';
import { connect } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { TokenStore } from '../lib/tokens/store.js';
import { ensureFirstAccount } from './bootstrap.js';
import { AppRepository } from './repositories/apps.js';
import { EnvRepository } from './repositories/env.js';
import { createApi } from './server.js';
import type { Services } from './services.js';

const config = loadConfigOrExit('api');
const log = createLogger('api', config.logLevel);
const db = connect(config.databaseUrl);
const applied = await migrateLatest(db);
if (applied.length) log.info({ applied }, `Applied ${applied.length} migrations`);
const tokens = new TokenStore(db);
tokens.start();
const kc = loadKubeConfig(config.kubeconfig);
const apps = new AppRepository(kc, log);
await apps.start();
const services: Services = {
  config,
  db,
  tokens,
  apps,
  env: new EnvRepository(kc.makeApiClient(k8s.CoreV1Api), kc.makeApiClient(k8s.CustomObjectsApi)),
  core: kc.makeApiClient(k8s.CoreV1Api),
  log,
  clock: () => new Date(),
};
await ensureFirstAccount(services);

const server = createApi(services).listen(config.api.port, config.api.host, () => {
  log.info({ host: config.api.host, port: config.api.port }, `API listening on http://${config.api.host}:${config.api.port}/api`);
});
// Streams (logs, events) stay open for long; keep-alive sockets should not hold shutdown.
server.keepAliveTimeout = 65_000;

function shutdown(signal: string): void {
  log.info({ signal }, 'Shutting down');
  tokens.stop();
  void apps.stop();
  server.close(() => {
    void db.destroy().then(() => process.exit(0));
  });
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 10_000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
