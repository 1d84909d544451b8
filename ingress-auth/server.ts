// ingress-auth's HTTP server: every request to every app hostname. It builds the handlers' shared
// parts once (context.ts) and listens; a plain request goes through requests.ts, an upgrade through
// upgrades.ts, both through the one gate (gate.ts); `/_svc/` is the platform's (platform.ts).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type * as k8s from '@kubernetes/client-node';
import type { ComponentConfig } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import type { RequestRecorder } from '../lib/metrics/requests.js';
import type { IngressContext, SignInParts } from './context.js';
import { Proxy } from './proxy.js';
import { requestHandler } from './requests.js';
import { RouteTable, type RouteSource } from './routes.js';
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
}

export interface Ingress {
  url: string;
  routes: RouteSource;
  close(): Promise<void>;
}

export async function startIngress(opts: IngressOptions): Promise<Ingress> {
  const { config, log } = opts;
  const routes = opts.routes ?? new RouteTable(opts.kc, log);
  await routes.start();
  const proxy = new Proxy({
    connectionsPerUpstream: config.proxy.upstreamConnections,
    headersTimeoutMs: config.proxy.upstreamTimeoutMs,
    log,
  });
  const pruneTimer = setInterval(() => proxy.prune(routes.origins()), 30_000);
  pruneTimer.unref();
  const ctx: IngressContext = { config, log, routes, proxy, auth: opts.auth, jwks: opts.jwks, recorder: opts.recorder };

  const server = createServer({ keepAlive: true });
  const onRequest = requestHandler(ctx);
  server.on('request', onRequest);
  server.on('upgrade', upgradeHandler(ctx, onRequest));
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') log.debug({ err: err.message }, 'Malformed request');
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  });
  // Longer than the usual balancer's idle timeout (60 s), so the balancer closes first.
  server.keepAliveTimeout = 65_000;
  const host = opts.host ?? config.proxy.host;
  const port = opts.port ?? config.proxy.port;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A cluster worker binds its own socket (exclusive), which SO_REUSEPORT lets the others share.
    server.listen({ port, host, ...(opts.reusePort ? { reusePort: true, exclusive: true } : {}) }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.address === '0.0.0.0' || addr.address === '::' ? '127.0.0.1' : addr.address}:${addr.port}`;
  log.info({ host, port: addr.port, appsDomain: config.appsDomain }, `ingress-auth listening on ${url}`);

  return {
    url,
    routes,
    close: async () => {
      clearInterval(pruneTimer);
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      // In-flight requests get a few seconds to finish; then whatever is left is cut.
      const cut = setTimeout(() => server.closeAllConnections(), 5_000);
      await closed;
      clearTimeout(cut);
      await proxy.close();
      await routes.stop();
    },
  };
}
