// Starts the API: configuration, migrations, the first account, then HTTP on SVC_API_HOST:SVC_API_PORT.
import { loadConfigOrExit } from '../lib/config.js';
import { connect } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { TokenStore } from '../lib/tokens/store.js';
import { ensureFirstAccount } from './bootstrap.js';
import { createApi } from './server.js';
import { assembleServices } from './services.js';

const config = loadConfigOrExit('api');
const log = createLogger('api', config.logLevel);
const db = connect(config.databaseUrl);
const applied = await migrateLatest(db);
if (applied.length) log.info({ applied }, `Applied ${applied.length} migrations`);
const tokens = new TokenStore(db);
tokens.start();
const { services, stop } = await assembleServices({ config, db, kc: loadKubeConfig(config.kubeconfig), tokens, log });
await ensureFirstAccount(services);

const server = createApi(services).listen(config.api.port, config.api.host, () => {
  log.info({ host: config.api.host, port: config.api.port }, `API listening on http://${config.api.host}:${config.api.port}/api`);
});
// Streams (logs, events) stay open for long; keep-alive sockets should not hold shutdown.
server.keepAliveTimeout = 65_000;

function shutdown(signal: string): void {
  log.info({ signal }, 'Shutting down');
  tokens.stop();
  void stop();
  server.close(() => {
    void db.destroy().then(() => process.exit(0));
  });
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 10_000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
