// Starts the API: configuration, migrations, the first account, then HTTP on SVC_API_HOST:SVC_API_PORT
// and the machine listener on SVC_API_MACHINE_HOST:SVC_API_MACHINE_PORT.
import { loadConfigOrExit } from '../lib/config.js';
import { connect } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { MailSender } from '../lib/mail/sender.js';
import { TokenStore } from '../lib/tokens/store.js';
import { ensureFirstAccount } from './bootstrap.js';
import { createMachineApi } from './machine.js';
import { createApi } from './server.js';
import { assembleDeps } from './deps.js';

const config = loadConfigOrExit('api');
const log = createLogger('api', config.logLevel);
const db = connect(config.databaseUrl, { log });
const applied = await migrateLatest(db);
if (applied.length) log.info({ applied }, `Applied ${applied.length} migrations`);
const tokens = new TokenStore(db);
tokens.start();
const kc = loadKubeConfig(config.kubeconfig);
const { services, kube, stop } = await assembleDeps({ config, db, kc, tokens, log });
await ensureFirstAccount(services, kube, db);
// Outgoing mail leaves from here, off the request path: requests only enqueue it (lib/mail/outbox.ts).
const mailer = new MailSender({ db, databaseUrl: config.databaseUrl, kc, mail: config.mail, log });
mailer.start();

const server = createApi(services).listen(config.api.port, config.api.host, () => {
  log.info({ host: config.api.host, port: config.api.port }, `API listening on http://${config.api.host}:${config.api.port}/api`);
});
// Streams (logs, events) stay open for long; keep-alive sockets should not hold shutdown.
server.keepAliveTimeout = 65_000;
const machineServer = createMachineApi(services).listen(config.api.machinePort, config.api.machineHost, () => {
  log.info(
    { host: config.api.machineHost, port: config.api.machinePort },
    `Machine listener (artifacts, identity keys) on http://${config.api.machineHost}:${config.api.machinePort}`,
  );
});

function shutdown(signal: string): void {
  log.info({ signal }, 'Shutting down');
  tokens.stop();
  void stop();
  // The mailer gives its Lease up and finishes its batch before the pool it writes through closes.
  const mailStopped = mailer.stop().catch((err: unknown) => log.warn({ err }, 'Stopping the mail sender failed'));
  server.close(() => {
    void mailStopped.then(() => db.destroy()).then(() => process.exit(0));
  });
  machineServer.close();
  machineServer.closeIdleConnections();
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 10_000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
