// Servers for bench/proxy.ts, each in its own process(es) so none shares an event loop with the load
// generator. `upstream [workers]`: a bare node:http server answering 12 bytes. `bare <upstream port>
// [workers]`: node:http and ingress-auth's upstream client with nothing between them (what any
// proxy on node:http costs here, the floor ingress-auth is measured against). `ingress <upstream port>
// <database url> [workers]`: the real ingress-auth server (host parsing, header scrubbing, request id, round
// robin, the upstream client, request metrics in memory, sign-in with sessions in PostgreSQL and signed
// assertions) with a fixed route table in place of the informers, so no cluster is needed and
// EndpointSlices need not point at loopback. The app gates /private/** (owner); a signed-in owner's
// session cookie is printed with the URL: {"url", "cookie"}. With workers > 1, that many processes
// share one port by SO_REUSEPORT, as ingress-auth's worker mode runs (ingress-auth/workers.ts).
//
// With BENCH_TLS (a directory holding cert.pem and key.pem; bench/https.ts), the bare proxy is a
// node:https server with that certificate, and ingress-auth also listens for HTTPS (its tlsUrl and
// tlsCookie, the `__Host-` session cookie TLS requests carry, are printed too), the certificate held
// as the platform's Secret for `*.<apps domain>` in the certificate store's own index, chosen by SNI
// per handshake as in production; only the informer feeding the index is left out.
import cluster from 'node:cluster';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { cookieNames } from '../ingress-auth/auth/cookies.js';
import { AuthRoutes } from '../ingress-auth/auth/routes.js';
import { SignIn } from '../ingress-auth/auth/sign-in.js';
import { appAtHost } from '../ingress-auth/host.js';
import { startIngress } from '../ingress-auth/server.js';
import { CertificateIndex, tlsSecretType, type CertificateSource } from '../ingress-auth/tls/certificates.js';
import { ChallengeIndex } from '../ingress-auth/tls/challenges.js';
import { Upstream } from '../ingress-auth/upstream/upstream.js';
import { loadConfig } from '../lib/config.js';
import { connect, type Db } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { AssertionKeyStore } from '../lib/identity/assertion-keys.js';
import { AssertionSigner } from '../lib/identity/assertion.js';
import { createLogger } from '../lib/logger.js';
import { RequestRecorder } from '../lib/metrics/requests.js';
import type { App } from '../lib/resources/index.js';
import { freePort } from '../test/support/ports.js';
import { fixedRoutes } from './routes.js';

const [mode, upstreamPort] = process.argv.slice(2);
const workers = Number(process.argv[{ upstream: 3, bare: 4 }[mode ?? ''] ?? 5] ?? 1);
/** In a worker: the ports the primary chose, shared by every worker (the second for ingress-auth's HTTPS). */
const sharedPort = process.env.BENCH_PORT !== undefined ? Number(process.env.BENCH_PORT) : undefined;
const sharedTlsPort = process.env.BENCH_TLS_PORT !== undefined ? Number(process.env.BENCH_TLS_PORT) : undefined;
const tls =
  process.env.BENCH_TLS !== undefined
    ? { cert: readFileSync(path.join(process.env.BENCH_TLS, 'cert.pem')), key: readFileSync(path.join(process.env.BENCH_TLS, 'key.pem')) }
    : undefined;

/** The primary of `workers` processes on one port: forks them, waits until each listens, prints `info` with the URLs. */
async function runWorkers(info: Record<string, string> = {}): Promise<void> {
  const ports = { BENCH_PORT: String(await freePort()), ...(tls ? { BENCH_TLS_PORT: String(await freePort()) } : {}) };
  const urls = await Promise.all(
    Array.from({ length: workers }, async () => {
      const w = cluster.fork(ports);
      return ((await once(w, 'message')) as [Record<string, string>])[0];
    }),
  );
  console.log(JSON.stringify({ ...urls[0], ...info }));
  const stop = () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
const inWorker = cluster.isWorker;
const listenOptions = (port: number) => ({ port, host: '127.0.0.1', ...(inWorker ? { reusePort: true, exclusive: true } : {}) });
const ready = (urls: Record<string, string>, extra: Record<string, string> = {}) =>
  inWorker ? process.send!(urls) : console.log(JSON.stringify({ ...urls, ...extra }));
const urlOf = (scheme: string, server: { address(): unknown }) => `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;

// What a proxy must not pass on (RFC 9110 7.6.1), as ingress-auth and nginx do not: the client's
// `Connection: close` would close the upstream connection after every request, and the upstream's
// `Connection: keep-alive` would keep open a client connection that asked to be closed.
const hopByHop = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
function endToEnd(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!hopByHop.has(raw[i]!.toLowerCase())) out.push(raw[i]!, raw[i + 1]!);
  return out;
}

if (mode === 'upstream' && workers > 1 && cluster.isPrimary) {
  await runWorkers();
} else if (mode === 'upstream') {
  const body = 'hello world\n';
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(listenOptions(sharedPort ?? 0), () => ready({ url: urlOf('http', server) }));
} else if (mode === 'bare' && workers > 1 && cluster.isPrimary) {
  await runWorkers();
} else if (mode === 'bare') {
  // The floor of any proxy built on node:http here: the same server and upstream client as
  // ingress-auth, and nothing else (no checks, no headers added, none filtered but hop-by-hop ones,
  // no metrics); over TLS, one certificate and no SNI lookup.
  const up = new Upstream('127.0.0.1', Number(upstreamPort), { connections: 256, headersTimeoutMs: 60_000 });
  const proxy = (req: IncomingMessage, res: ServerResponse) => {
    up.request(
      { method: req.method!, path: req.url!, headers: endToEnd(req.rawHeaders) },
      {
        onHead: (status, _reason, headers) => res.writeHead(status, endToEnd(headers)),
        onBody: (chunk) => res.write(chunk),
        onEnd: () => res.end(),
        onError: () => res.destroy(),
      },
    );
  };
  const server = tls ? createHttpsServer({ ...tls, keepAlive: true }, proxy) : createServer({ keepAlive: true }, proxy);
  server.keepAliveTimeout = 65_000;
  server.listen(listenOptions(sharedPort ?? 0), () => ready({ url: urlOf(tls ? 'https' : 'http', server) }));
} else if (mode === 'ingress') {
  const databaseUrl = process.argv[4]!;
  const app = {
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'bench', namespace: 'svc-acct-bench', uid: '00000000-0000-4000-8000-000000000001' },
    spec: { kind: 'static', auth: { rules: [{ mode: 'auth', source: 'bench', paths: ['/private/**'], admit: { owner: true } }] } },
  } as App;
  const routes = fixedRoutes(app, Number(upstreamPort));
  // Recorded in memory like in production; never flushed (not part of what is measured).
  const recorder = new RequestRecorder(undefined as unknown as Db);
  const config = loadConfig(
    { SVC_LOG_LEVEL: 'silent', SVC_DATABASE_URL: databaseUrl, SVC_CERTIFICATES_PLATFORM_SECRET: 'svc-bench-apps' },
    { exists: () => false },
  );
  const log = createLogger('ingress-auth', 'silent');
  const db = connect(databaseUrl);
  await migrateLatest(db);
  const keys = new AssertionKeyStore(db, {
    rotationMs: config.assertion.rotationMs,
    maxAssertionLifetimeMs: config.assertion.lifetimeSeconds * 1000,
  });
  const signer = new AssertionSigner(keys, { issuer: config.assertion.issuer, lifetimeSeconds: config.assertion.lifetimeSeconds });
  const signIn = new SignIn({ db, config, log, signer, assertionLifetimeSeconds: config.assertion.lifetimeSeconds });
  await signIn.start();
  const authRoutes = new AuthRoutes(signIn, {
    config,
    log,
    mail: undefined,
    available: { email: false, passkey: false, idp: false, codehost: false },
  });
  // One session for every worker (the primary makes it; workers find it in PostgreSQL like any other).
  const token =
    process.env.BENCH_SESSION ??
    (
      await signIn.sessions.create(app.metadata.uid!, 'bench.apps.localhost', {
        provider: 'svc',
        subject: 'acct_bench',
        email: 'owner@bench.test',
        facts: { namespace: 'svc-acct-bench' },
      })
    ).token;
  const cookies = { cookie: `${signIn.cookies.session}=${token}`, ...(tls ? { tlsCookie: `${cookieNames(true).session}=${token}` } : {}) };
  if (workers > 1 && cluster.isPrimary) {
    await signIn.stop();
    await db.destroy();
    process.env.BENCH_SESSION = token;
    await runWorkers(cookies);
  } else {
    let certificates: CertificateSource | undefined;
    if (tls) {
      // The store's index, fed the Secret its informer would deliver.
      const index = new CertificateIndex({
        appsDomain: config.appsDomain,
        platformSecret: config.certificates.platformSecret,
        routedIn: (hostname) => appAtHost(hostname, routes, config)?.metadata.namespace,
        log,
      });
      index.upsert({
        apiVersion: 'v1',
        kind: 'Secret',
        type: tlsSecretType,
        metadata: { name: config.certificates.platformSecret, namespace: config.certificates.namespace },
        data: { 'tls.crt': tls.cert.toString('base64'), 'tls.key': tls.key.toString('base64') },
      });
      if (!index.contextFor('bench.apps.localhost')) throw new Error('the bench certificate is not served for bench.apps.localhost');
      certificates = { start: async () => undefined, stop: async () => undefined, contextFor: (name) => index.contextFor(name) };
    }
    const ingress = await startIngress({
      config,
      kc: new k8s.KubeConfig(),
      log,
      recorder,
      routes,
      host: '127.0.0.1',
      port: sharedPort ?? 0,
      reusePort: inWorker,
      auth: { signIn, routes: authRoutes },
      ...(certificates ? { tlsPort: sharedTlsPort ?? 0, certificates, challenges: new ChallengeIndex() } : {}),
    });
    ready({ url: ingress.url, ...(ingress.tlsUrl ? { tlsUrl: ingress.tlsUrl } : {}) }, cookies);
  }
} else {
  console.error(
    'usage: proxy-server.js upstream [workers] | bare <upstream port> [workers] | ingress <upstream port> <database url> [workers]',
  );
  process.exit(2);
}

// A clean exit, so `node --cpu-prof` writes its profile.
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
