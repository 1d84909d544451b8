// ingress-auth's HTTP server: every request to every app hostname. It builds the handlers' shared
// parts once (context.ts) and listens; a plain request goes through requests.ts, an upgrade through
// upgrades.ts, both through the one gate (gate.ts); `/_svc/` is the platform's (platform.ts). With
// `proxy.tlsPort`, the same handlers also serve HTTPS, the certificate chosen by SNI
// (tls/certificates.ts; docs/decisions/0028-https.md).
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import type * as k8s from '@kubernetes/client-node';
import type { ComponentConfig } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import type { RequestRecorder } from '../lib/metrics/requests.js';
import type { TicketKeySource } from '../lib/tls/ticket-keys.js';
import type { IngressContext, SignInParts } from './context.js';
import type { DataParts } from './data/routes.js';
import { Proxy } from './proxy.js';
import { requestHandler } from './requests.js';
import { RouteTable, type RouteSource } from './routes.js';
import { appAtHost, appOfHost } from './host.js';
import { CertificateStore, type CertificateSource } from './tls/certificates.js';
import { ChallengeStore, type ChallengeSource } from './tls/challenges.js';
import { upgradeHandler } from './upgrades.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'ingress-auth'>;

export { platformPath } from './target.js';

export interface IngressOptions {
  config: Config;
  kc: k8s.KubeConfig;
  log: Logger;
  recorder?: RequestRecorder;
  /** Default: informers of Apps and EndpointSlices through `kc`. */
  routes?: RouteSource;
  /** The public keys of identity assertions, served at /_svc/auth/jwks.json (AssertionKeyStore.jwks). */
  jwks?: () => Promise<{ keys: object[] }>;
  /** Sign-in: without it, gated paths fail closed (503) and identity is never resolved. */
  auth?: SignInParts;
  /** Overrides config.proxy (tests listen on port 0). */
  host?: string;
  port?: number;
  /** Bind with SO_REUSEPORT, beside the other workers on the same port (workers.ts). */
  reusePort?: boolean;
  /** Overrides config.proxy.tlsPort (tests listen on port 0); undefined in both: no HTTPS listener. */
  tlsPort?: number;
  /** Default with an HTTPS listener: an informer of the certificate Secrets through `kc`. */
  certificates?: CertificateSource;
  /**
   * Default with an HTTPS listener or the ACME issuer configured: an informer of the challenge
   * ConfigMaps through `kc`. Without either, the challenge path is an app's like any other.
   */
  challenges?: ChallengeSource;
  /**
   * The TLS session-ticket key every worker and replica shares (TicketKeyStore), started and stopped
   * with the HTTPS listener; without it (or without an HTTPS listener) a process keeps Node's own
   * random key, and a ticket resumes only on the process that issued it.
   */
  ticketKeys?: TicketKeySource;
  /** HTML apps' data bindings (data/routes.ts): their store, live updates, rates and client. */
  data?: DataParts;
}

/** The certificate store main.ts and startIngress build from the configuration. */
export function certificateStore(
  config: Config,
  kc: k8s.KubeConfig,
  routes: Pick<RouteSource, 'app' | 'domainApp'>,
  log: Logger,
): CertificateStore {
  return new CertificateStore(kc, {
    namespace: config.certificates.namespace,
    platformSecret: config.certificates.platformSecret,
    appsDomain: config.appsDomain,
    routedIn: (hostname) => appAtHost(hostname, routes, config)?.metadata.namespace,
    log,
  });
}

/**
 * The challenge store main.ts and startIngress build: the ACME issuer's ConfigMaps, and with
 * cert-manager its Challenges, answered only while a verified Domain routes the name (never an app
 * hostname, the platform's).
 */
export function challengeStore(
  config: Config,
  kc: k8s.KubeConfig,
  routes: Pick<RouteSource, 'app' | 'domainApp'>,
  log: Logger,
): ChallengeStore {
  return new ChallengeStore(kc, {
    namespace: config.certificates.namespace,
    log,
    ...(config.certificates.issuer === 'cert-manager'
      ? {
          certManager: {
            routed: (h: string) => appOfHost(h, config.appsDomain) === undefined && appAtHost(h, routes, config) !== undefined,
          },
        }
      : {}),
  });
}

export interface Ingress {
  url: string;
  /** `https://...` of the HTTPS listener, when there is one. */
  tlsUrl?: string;
  routes: RouteSource;
  close(): Promise<void>;
}

export async function startIngress(opts: IngressOptions): Promise<Ingress> {
  const { config, log } = opts;
  const routes = opts.routes ?? new RouteTable(opts.kc, log);
  const tlsPort = opts.tlsPort ?? config.proxy.tlsPort;
  const certificates = tlsPort === undefined ? undefined : (opts.certificates ?? certificateStore(config, opts.kc, routes, log));
  const challenges =
    opts.challenges ??
    (tlsPort !== undefined || config.certificates.issuer !== 'none' ? challengeStore(config, opts.kc, routes, log) : undefined);
  await Promise.all([routes.start(), certificates?.start(), challenges?.start()]);
  const proxy = new Proxy({
    connectionsPerUpstream: config.proxy.upstreamConnections,
    headersTimeoutMs: config.proxy.upstreamTimeoutMs,
    log,
  });
  const pruneTimer = setInterval(() => proxy.prune(routes.origins()), 30_000);
  pruneTimer.unref();
  const ctx: IngressContext = {
    config,
    log,
    routes,
    proxy,
    auth: opts.auth,
    jwks: opts.jwks,
    recorder: opts.recorder,
    certificates,
    challenges,
    data: opts.data,
  };

  const onRequest = requestHandler(ctx);
  const onUpgrade = upgradeHandler(ctx, onRequest);
  const serve = <S extends Server | HttpsServer>(server: S): S => {
    server.on('request', onRequest);
    server.on('upgrade', onUpgrade);
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') log.debug({ err: err.message }, 'Malformed request');
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    });
    // Longer than the usual balancer's idle timeout (60 s), so the balancer closes first.
    server.keepAliveTimeout = 65_000;
    return server;
  };
  const host = opts.host ?? config.proxy.host;
  const server = await listen(serve(createServer({ keepAlive: true })), host, opts.port ?? config.proxy.port, opts.reusePort);
  const url = urlOf('http', server);
  log.info({ host, port: (server.address() as AddressInfo).port, appsDomain: config.appsDomain }, `ingress-auth listening on ${url}`);

  let tlsServer: HttpsServer | undefined;
  let tlsUrl: string | undefined;
  if (certificates && tlsPort !== undefined) {
    // No certificate of its own: a name nothing is served for, or no SNI at all, ends the handshake.
    const https = createHttpsServer({
      keepAlive: true,
      SNICallback: (servername, done) => {
        const context = certificates.contextFor(servername);
        if (context) done(null, context);
        else done(new Error(`no certificate is served for ${servername}`));
      },
    });
    https.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
      if (log.isLevelEnabled('debug')) log.debug({ err: err.message, servername: socket.servername }, 'TLS handshake failed');
      socket.destroy();
    });
    const ticketKeys = opts.ticketKeys;
    try {
      // Before the first connection, so its tickets are sealed with the shared key. The server's keys
      // are the ones tickets are sealed and opened with, whichever context SNI chose: Node serves an
      // SNI context by copying only its certificate, key and chain into the connection (ncrypto
      // SSLPointer::setSniContext), which keeps the server's SSL_CTX and its ticket callback
      // (measured: keys on the SNI contexts alone resume nothing across listeners).
      await ticketKeys?.start((keys) => https.setTicketKeys(keys));
      tlsServer = await listen(serve(https), host, tlsPort, opts.reusePort);
    } catch (err) {
      await Promise.all([closeServer(server), ticketKeys?.stop()]);
      throw err;
    }
    tlsUrl = urlOf('https', tlsServer);
    log.info({ host, port: (tlsServer.address() as AddressInfo).port }, `ingress-auth listening on ${tlsUrl}`);
  }

  return {
    url,
    ...(tlsUrl ? { tlsUrl } : {}),
    routes,
    close: async () => {
      clearInterval(pruneTimer);
      await Promise.all([closeServer(server), tlsServer && closeServer(tlsServer), tlsServer && opts.ticketKeys?.stop()]);
      await proxy.close();
      await Promise.all([routes.stop(), certificates?.stop(), challenges?.stop()]);
    },
  };
}

async function listen<S extends Server | HttpsServer>(server: S, host: string, port: number, reusePort: boolean | undefined): Promise<S> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A cluster worker binds its own socket (exclusive), which SO_REUSEPORT lets the others share.
    server.listen({ port, host, ...(reusePort ? { reusePort: true, exclusive: true } : {}) }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

function urlOf(scheme: 'http' | 'https', server: Server | HttpsServer): string {
  const addr = server.address() as AddressInfo;
  return `${scheme}://${addr.address === '0.0.0.0' || addr.address === '::' ? '127.0.0.1' : addr.address}:${addr.port}`;
}

async function closeServer(server: Server | HttpsServer): Promise<void> {
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeIdleConnections();
  // In-flight requests get a few seconds to finish; then whatever is left is cut.
  const cut = setTimeout(() => server.closeAllConnections(), 5_000);
  await closed;
  clearTimeout(cut);
}
