// Starts ingress-auth: the proxy on every app hostname, on SVC_PROXY_HOST:SVC_PROXY_PORT (and HTTPS on
// SVC_PROXY_TLS_PORT when set), as SVC_PROXY_WORKERS processes sharing the ports (workers.ts) or,
// with one, this process alone.
import cluster from 'node:cluster';
import { loadConfigOrExit } from '../lib/config.js';
import { connect } from '../lib/db/connection.js';
import { AssertionKeyStore } from '../lib/identity/assertion-keys.js';
import { AssertionSigner } from '../lib/identity/assertion.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { MailOutbox } from '../lib/mail/outbox.js';
import { RequestRecorder } from '../lib/metrics/requests.js';
import { TicketKeyStore } from '../lib/tls/ticket-keys.js';
import { AuthRoutes } from './auth/routes.js';
import { startDataParts } from './data/parts.js';
import { SignIn } from './auth/sign-in.js';
import { signInProviders } from './auth/setup.js';
import { appAtHost, heldHostname } from './host.js';
import { RouteTable } from './routes.js';
import { certificateStore, startIngress } from './server.js';
import { superviseWorkers } from './workers.js';

const config = loadConfigOrExit('ingress-auth');
const log = createLogger('ingress-auth', config.logLevel);
const workers = config.proxy.workers;
if (workers > 1 && cluster.isPrimary) await superviseWorkers(workers, log);

const db = connect(config.databaseUrl, { log });
const recorder = new RequestRecorder(db, { log });
recorder.start();
// Public keys of the identity assertions, on every app hostname at /_svc/auth/jwks.json.
const keys = new AssertionKeyStore(db, {
  rotationMs: config.assertion.rotationMs,
  maxAssertionLifetimeMs: config.assertion.lifetimeSeconds * 1000,
});
const signer = new AssertionSigner(keys, { issuer: config.assertion.issuer, lifetimeSeconds: config.assertion.lifetimeSeconds });
// The route table first: provider callbacks look Apps up in it, and the server serves from it.
const kc = loadKubeConfig(config.kubeconfig);
const routes = new RouteTable(kc, log);
const signIn = new SignIn({
  db,
  config,
  log,
  signer,
  assertionLifetimeSeconds: config.assertion.lifetimeSeconds,
  heldHostname: (app) => heldHostname(app, routes, config.appsDomain),
});
await signIn.start();
// With an HTTPS listener, its certificates (informer started by startIngress): a provider's sign-in
// returns over https to a hostname that has one.
const certificates = config.proxy.tlsPort === undefined ? undefined : certificateStore(config, kc, routes, log);
// With an HTTPS listener, the TLS session-ticket key shared by every worker and replica (started by
// startIngress): a ticket from one resumes on any other.
const ticketKeys = config.proxy.tlsPort === undefined ? undefined : new TicketKeyStore(db, { log });
const providers = signInProviders({
  config,
  log,
  db,
  signIn,
  mail: config.mail.smtpUrl !== undefined,
  appOfHost: (host) => appAtHost(host, routes, config),
  ...(certificates ? { servedOverTls: (host: string) => certificates.contextFor(host) !== undefined } : {}),
});
const authRoutes = new AuthRoutes(signIn, {
  config,
  log,
  mail: new MailOutbox(db),
  providerRoutes: providers.routes,
  available: providers.available,
});
// HTML apps' data bindings (decision 0034): records in PostgreSQL, live updates over one LISTEN.
const data = await startDataParts(db, config.databaseUrl, log);
signIn.onRevoked((appUid) => data.live.recheckAll(appUid));
const ingress = await startIngress({
  config,
  kc,
  log,
  recorder,
  routes,
  ...(certificates ? { certificates } : {}),
  ...(ticketKeys ? { ticketKeys } : {}),
  jwks: () => keys.jwks(),
  auth: { signIn, routes: authRoutes, callbacks: providers.callbacks },
  reusePort: workers > 1,
  data,
});

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'Shutting down');
  setTimeout(() => process.exit(0), 10_000).unref();
  // Live streams never end on their own: ended first, so closing the listeners does not wait on them.
  await data.stop();
  await ingress.close();
  await signIn.stop();
  await recorder.stop().catch(() => undefined);
  await db.destroy();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
