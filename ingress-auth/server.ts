// ingress-auth's HTTP server: `/_svc/` is the platform's (health for now), every other request is
// routed by its Host to an app and proxied to one of its ready machines. Every proxied request is
// logged (debug) and counted into the app's request metrics.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type * as k8s from '@kubernetes/client-node';
import type { Config } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import type { RequestRecorder } from '../lib/metrics/requests.js';
import { decide, type AuthPolicy } from '../lib/policy/index.js';
import type { App } from '../lib/resources/index.js';
import { errorPage, sendError } from './errors.js';
import { clientAddress, type Forwarded } from './headers.js';
import { appOfHost } from './host.js';
import { Proxy, writeRaw, type Outcome } from './proxy.js';
import { RouteTable, type RouteSource } from './routes.js';

export interface IngressOptions {
  config: Config;
  kc: k8s.KubeConfig;
  log: Logger;
  recorder?: RequestRecorder;
  /** Default: informers of Apps and EndpointSlices through `kc`. */
  routes?: RouteSource;
  /** The public keys of identity assertions, served at /_svc/auth/jwks.json (AssertionKeyStore.jwks). */
  jwks?: () => Promise<{ keys: object[] }>;
  /** Overrides config.proxy (tests listen on port 0). */
  host?: string;
  port?: number;
}

export interface Ingress {
  url: string;
  routes: RouteSource;
  close(): Promise<void>;
}

/** `/_svc` and everything under it, however the path is spelled (case, percent-encoding). */
export function platformPath(url: string): string | undefined {
  const q = url.indexOf('?');
  let p = q === -1 ? url : url.slice(0, q);
  if (p.includes('%')) {
    try {
      p = decodeURIComponent(p);
    } catch {
      // Undecodable: left as it is.
    }
  }
  p = p.replace(/\/{2,}/g, '/').toLowerCase();
  return p === '/_svc' || p.startsWith('/_svc/') ? p : undefined;
}

/**
 * Fails closed until sign-in lands (issue 6, next slice): a path the App's policy gates is never
 * proxied without an admitted identity, and none can be established yet.
 */
function signInRequired(app: App, url: string): string | undefined {
  if (!app.spec.auth) return undefined;
  return decide(app.spec.auth as AuthPolicy, url)?.mode === 'auth' ? 'this page requires sign-in, which is not available on this platform yet' : undefined;
}

export async function startIngress(opts: IngressOptions): Promise<Ingress> {
  const { config, log, recorder } = opts;
  const routes = opts.routes ?? new RouteTable(opts.kc, log);
  await routes.start();
  const proxy = new Proxy({ connectionsPerUpstream: config.proxy.upstreamConnections, headersTimeoutMs: config.proxy.upstreamTimeoutMs, log });
  const pruneTimer = setInterval(() => proxy.prune(routes.origins()), 30_000);
  pruneTimer.unref();
  const debug = () => log.isLevelEnabled('debug');

  const forwarded = (req: IncomingMessage, requestId: string): Forwarded => ({
    requestId,
    clientIp: clientAddress(req.socket.remoteAddress),
    proto: 'http',
    host: req.headers.host ?? '',
  });

  const platform = (req: IncomingMessage, res: ServerResponse, path: string, requestId: string) => {
    if (path === '/_svc/health' && (req.method === 'GET' || req.method === 'HEAD')) {
      const body = '{"status":"ok"}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length, 'cache-control': 'no-store', 'x-request-id': requestId });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (path === '/_svc/auth/jwks.json' && opts.jwks && (req.method === 'GET' || req.method === 'HEAD')) {
      opts.jwks().then(
        (set) => {
          const body = JSON.stringify(set);
          // Keys are published 15 minutes before they sign (lib/identity/assertion-keys.ts), so 5
          // minutes of caching never hides a key that signs.
          res.writeHead(200, { 'content-type': 'application/jwk-set+json', 'content-length': Buffer.byteLength(body), 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*', 'x-request-id': requestId });
          res.end(req.method === 'HEAD' ? undefined : body);
        },
        (err: unknown) => {
          log.error({ err, reqId: requestId }, 'Reading the assertion keys failed');
          sendError(res, 503, 'the signing keys are not available right now', req.headers.accept, requestId);
        },
      );
      return;
    }
    sendError(res, 404, `no platform route ${path}`, req.headers.accept, requestId);
  };

  const record = (app: App, status: number, started: number) => {
    recorder?.record({ namespace: app.metadata.namespace!, app: app.metadata.name!, appUid: app.metadata.uid!, status, durationMs: performance.now() - started });
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const requestId = randomUUID();
    const url = req.url ?? '/';
    const reserved = platformPath(url);
    if (reserved) {
      platform(req, res, reserved, requestId);
      return;
    }
    const name = appOfHost(req.headers.host, config.appsDomain);
    const app = name === undefined ? undefined : routes.app(name);
    if (!app) {
      sendError(res, 404, `no app is served at ${req.headers.host ?? 'this address'}`, req.headers.accept, requestId);
      if (debug()) log.debug({ reqId: requestId, host: req.headers.host, method: req.method, path: url, status: 404 }, 'Unknown host');
      return;
    }
    const key = `${app.metadata.namespace}/${app.metadata.name}`;
    const outcome: Outcome = {};
    const gated = signInRequired(app, url);
    res.once('close', () => {
      // A client that left before the answer ended is counted as 499, as nginx logs it.
      const status = res.writableFinished || res.headersSent ? res.statusCode : 499;
      record(app, status, started);
      if (debug()) {
        log.debug({ reqId: requestId, app: app.metadata.name, ns: app.metadata.namespace, method: req.method, path: url, status, ms: Math.round((performance.now() - started) * 100) / 100, ...outcome }, 'Proxied');
      }
    });
    if (gated) {
      sendError(res, 503, gated, req.headers.accept, requestId);
      return;
    }
    if (routes.backends(app).length === 0) {
      const why = app.spec.kind ? 'the app is starting: no machine is ready yet' : 'the app is not deployed yet';
      sendError(res, 503, why, req.headers.accept, requestId);
      return;
    }
    proxy.forward(req, res, key, () => routes.backends(app), forwarded(req, requestId), outcome).catch(
      (err: unknown) => {
        log.warn({ err, reqId: requestId }, 'Proxying failed');
        sendError(res, 502, "the app's machine did not answer", req.headers.accept, requestId);
      },
    );
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const started = performance.now();
    const requestId = randomUUID();
    socket.on('error', () => undefined);
    const refuse = (status: number, message: string) => writeRaw(socket, errorPage(status, message, req.headers.accept, requestId), status);
    if (platformPath(req.url ?? '/')) return refuse(404, 'no platform route here');
    const name = appOfHost(req.headers.host, config.appsDomain);
    const app = name === undefined ? undefined : routes.app(name);
    if (!app) return refuse(404, `no app is served at ${req.headers.host ?? 'this address'}`);
    const gated = signInRequired(app, req.url ?? '/');
    if (gated) {
      record(app, 503, started);
      return refuse(503, gated);
    }
    const backend = proxy.pick(`${app.metadata.namespace}/${app.metadata.name}`, routes.backends(app));
    if (!backend) {
      record(app, 503, started);
      return refuse(503, 'no machine of this app is ready');
    }
    proxy.upgrade(req, socket, head, backend, forwarded(req, requestId), (status, error) => {
      record(app, status, started);
      if (debug()) log.debug({ reqId: requestId, app: app.metadata.name, ns: app.metadata.namespace, method: req.method, path: req.url, status, upgrade: true, upstream: backend.origin, error }, 'Upgraded');
    });
  };

  const server = createServer({ keepAlive: true });
  server.on('request', onRequest);
  server.on('upgrade', onUpgrade);
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
    server.listen(port, host, () => {
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
