// ingress-auth's HTTP server: `/_svc/` is the platform's (health for now), every other request is
// routed by its Host to an app and proxied to one of its ready machines. Every proxied request is
// logged (debug) and counted into the app's request metrics.
import { randomUUID } from 'node:crypto';
import { createServer, ServerResponse, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type * as k8s from '@kubernetes/client-node';
import type { Config } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import type { RequestRecorder } from '../lib/metrics/requests.js';
import { admitsAll } from '../lib/auth/identity.js';
import { audienceOf } from '../lib/identity/assertion.js';
import { BadRequestTarget, canonicalTarget } from '../lib/http/request-target.js';
import { decide, type AuthPolicy, type Decision } from '../lib/policy/index.js';
import type { App } from '../lib/resources/index.js';
import { isNavigation } from './auth/navigation.js';
import { safeNext } from './auth/next.js';
import { sendJson } from './auth/respond.js';
import type { CallbackRoute } from './auth/providers/flow.js';
import type { AuthRequest, AuthRoutes, CurrentSession } from './auth/routes.js';
import type { SignIn } from './auth/sign-in.js';
import { errorPage, sendError } from './errors.js';
import { clientAddress, type Forwarded } from './headers.js';
import { appOfHost } from './host.js';
import { Proxy, writeRaw, type Outcome } from './proxy.js';
import { hasBody } from './retry.js';
import { RouteTable, type RouteSource } from './routes.js';
import { appUrl, loginUrl } from '../lib/contract.js';

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
  auth?: {
    signIn: SignIn;
    routes: AuthRoutes;
    /** Routes of the platform's sign-in host (config.auth.host): provider callbacks, by `METHOD path`. */
    callbacks?: ReadonlyMap<string, CallbackRoute>;
  };
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
 * Replaces `req.url` by its canonical origin-form (lib/http/request-target.ts), so the path the gate
 * decides on is the one the app receives; the reason to refuse the request when there is none.
 */
function canonicalize(req: IncomingMessage): string | undefined {
  try {
    const t = canonicalTarget(req.url ?? '/');
    if (t.authority !== undefined && t.authority !== (req.headers.host ?? '').trim().toLowerCase()) {
      return 'the absolute-form request target names another host than the Host header';
    }
    req.url = t.target;
    return undefined;
  } catch (err) {
    if (err instanceof BadRequestTarget) return err.message;
    throw err;
  }
}

/** What the App's policy says about a path; undefined for a public one. */
function decisionFor(app: App, url: string): Decision | undefined {
  return app.spec.auth ? decide(app.spec.auth as AuthPolicy, url) : undefined;
}

const noSignIn = 'this page requires sign-in, which is not set up on this ingress';

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
    if (path.startsWith('/_svc/auth/') && opts.auth) {
      const name = appOfHost(req.headers.host, config.appsDomain);
      const app = name === undefined ? undefined : routes.app(name);
      if (!app) return sendError(res, 404, `no app is served at ${req.headers.host ?? 'this address'}`, req.headers.accept, requestId);
      const q = (req.url ?? '').indexOf('?');
      void opts.auth.routes.handle({ ...authRequest(req, res, app, requestId), path, query: new URLSearchParams(q === -1 ? '' : req.url!.slice(q + 1)) });
      return;
    }
    sendError(res, 404, `no platform route ${path}`, req.headers.accept, requestId);
  };

  const authRequest = (req: IncomingMessage, res: ServerResponse, app: App, requestId: string): Omit<AuthRequest, 'path' | 'query'> => ({
    req,
    res,
    app,
    host: audienceOf(req.headers.host ?? ''),
    // The app's configured URL, never the Host header: links in mail, passkey origins and the
    // same-origin checks must not follow whatever port or spelling a request named.
    origin: appUrl(config.site, app.metadata.name!),
    requestId,
    clientIp: clientAddress(req.socket.remoteAddress),
  });

  /** The platform's sign-in host: identity providers' callbacks, nothing else. */
  const authHost = (req: IncomingMessage, res: ServerResponse, requestId: string) => {
    const url = new URL(req.url ?? '/', 'http://auth.invalid');
    const route = opts.auth?.callbacks?.get(`${req.method === 'HEAD' ? 'GET' : req.method} ${url.pathname}`);
    if (!route) return sendError(res, 404, `no sign-in route ${url.pathname} here`, req.headers.accept, requestId);
    route(req, res, url, requestId).catch((err: unknown) => {
      log.error({ err, reqId: requestId }, 'Sign-in callback failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'sign-in failed on the platform side; try again' }, requestId);
      else res.destroy();
    });
  };

  /**
   * A path the policy covers: the visitor's session is looked up; a gate answers 303/401 without
   * one and 403 when it does not admit them; an admitted visitor's identity goes to the app. A
   * session and identity headers known from the caches are used without waiting (most requests).
   */
  const gated = (req: IncomingMessage, res: ServerResponse, app: App, decision: Decision, fwd: Forwarded, key: string, outcome: Outcome): Promise<unknown> | void => {
    const auth = opts.auth!;
    const r = authRequest(req, res, app, fwd.requestId);
    const known = auth.routes.knownSession(r);
    if (known !== undefined) return admit(r, decision, known ?? undefined, fwd, key, outcome);
    return auth.routes.currentSession(r).then(
      (current) => admit(r, decision, current, fwd, key, outcome),
      (err: unknown) => {
        // Fails closed: without a session store nothing covered by the policy is proxied.
        log.error({ err, reqId: fwd.requestId }, 'Looking up a session failed');
        sendError(res, 503, 'sign-in is not available right now; try again shortly', req.headers.accept, fwd.requestId);
      },
    );
  };

  const admit = (r: Omit<AuthRequest, 'path' | 'query'>, decision: Decision, current: CurrentSession | undefined, fwd: Forwarded, key: string, outcome: Outcome): Promise<unknown> | void => {
    const auth = opts.auth!;
    const { req, app } = r;
    const admitted = current !== undefined && admitsAll(decision.admits, current.session.identity, { namespace: app.metadata.namespace! });
    if (decision.mode === 'auth' && !admitted) {
      const navigation = isNavigation(req.method ?? 'GET', req.headers);
      const next = safeNext(req.url);
      return current ? auth.routes.denied(r, current.session, navigation, next) : auth.routes.challenge(r, navigation, next);
    }
    fwd.personal = decision.mode === 'auth' || admitted;
    const send = () => proxy.forward(req, r.res, key, () => routes.backends(app), fwd, outcome);
    if (!admitted) return send();
    fwd.identity = auth.signIn.cachedIdentityHeaders(current.session, r.host, app);
    if (fwd.identity) return send();
    return auth.signIn.identityHeaders(current.session, r.host, app).then((identity) => {
      fwd.identity = identity;
      return send();
    });
  };

  const record = (app: App, status: number, started: number) => {
    recorder?.record({ namespace: app.metadata.namespace!, app: app.metadata.name!, appUid: app.metadata.uid!, status, durationMs: performance.now() - started });
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const requestId = randomUUID();
    const bad = canonicalize(req);
    if (bad) return sendError(res, 400, bad, req.headers.accept, requestId);
    const url = req.url!;
    if (opts.auth && audienceOf(req.headers.host ?? '') === config.auth.host) return authHost(req, res, requestId);
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
    const decision = decisionFor(app, url);
    res.once('close', () => {
      // A client that left before the answer ended is counted as 499, as nginx logs it.
      const status = res.writableFinished || res.headersSent ? res.statusCode : 499;
      record(app, status, started);
      if (debug()) {
        log.debug({ reqId: requestId, app: app.metadata.name, ns: app.metadata.namespace, method: req.method, path: url, status, ms: Math.round((performance.now() - started) * 100) / 100, ...outcome }, 'Proxied');
      }
    });
    if (decision?.mode === 'auth' && !opts.auth) {
      sendError(res, 503, noSignIn, req.headers.accept, requestId);
      return;
    }
    if (routes.backends(app).length === 0) {
      const why = app.spec.kind ? 'the app is starting: no machine is ready yet' : 'the app is not deployed yet';
      sendError(res, 503, why, req.headers.accept, requestId);
      return;
    }
    const fwd = forwarded(req, requestId);
    let sent: Promise<unknown> | void;
    try {
      sent = decision && opts.auth ? gated(req, res, app, decision, fwd, key, outcome) : proxy.forward(req, res, key, () => routes.backends(app), fwd, outcome);
    } catch (err) {
      // The gate runs synchronously when the caches answer: a throw must end this request, not the process.
      sent = Promise.reject(err);
    }
    sent?.catch(
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
    if (req.method !== 'GET' || !/^\s*websocket\s*$/i.test(req.headers.upgrade ?? '')) {
      // Only WebSocket upgrades are relayed. Any other (h2c, TLS) is answered as the plain request it
      // also is (RFC 9110 7.8 lets a server ignore Upgrade), on a connection that then closes; one
      // with a body is refused, as its body was never read as HTTP.
      if (hasBody(req.headers)) return refuse(400, 'only WebSocket upgrades are served; send this request without Upgrade');
      const res = new ServerResponse(req);
      res.shouldKeepAlive = false;
      res.assignSocket(socket as Socket);
      res.once('finish', () => socket.end());
      return onRequest(req, res);
    }
    const bad = canonicalize(req);
    if (bad) return refuse(400, bad);
    if (platformPath(req.url ?? '/')) return refuse(404, 'no platform route here');
    const name = appOfHost(req.headers.host, config.appsDomain);
    const app = name === undefined ? undefined : routes.app(name);
    if (!app) return refuse(404, `no app is served at ${req.headers.host ?? 'this address'}`);
    const decision = decisionFor(app, req.url ?? '/');
    if (decision?.mode === 'auth' && !opts.auth) {
      record(app, 503, started);
      return refuse(503, noSignIn);
    }
    const backend = proxy.pick(`${app.metadata.namespace}/${app.metadata.name}`, routes.backends(app));
    if (!backend) {
      record(app, 503, started);
      return refuse(503, 'no machine of this app is ready');
    }
    const fwd = forwarded(req, requestId);
    const go = () =>
      proxy.upgrade(req, socket, head, backend, fwd, (status, error) => {
        record(app, status, started);
        if (debug()) log.debug({ reqId: requestId, app: app.metadata.name, ns: app.metadata.namespace, method: req.method, path: req.url, status, upgrade: true, upstream: backend.origin, error }, 'Upgraded');
      });
    if (!decision || !opts.auth) return go();
    // A WebSocket on a covered path: the same session check as any request; no redirect (a script opened it).
    const auth = opts.auth;
    const host = audienceOf(req.headers.host ?? '');
    auth.routes
      .currentSession({ req, app, host })
      .then(async (current) => {
        const admitted = current !== undefined && admitsAll(decision.admits, current.session.identity, { namespace: app.metadata.namespace! });
        if (decision.mode === 'auth' && !admitted) {
          record(app, current ? 403 : 401, started);
          const body = JSON.stringify(current ? { error: 'forbidden' } : { error: 'authentication_required', login_url: loginUrl(safeNext(req.url)) });
          return writeRaw(socket, { headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'private, no-store', 'x-request-id': requestId }, body }, current ? 403 : 401);
        }
        if (admitted) fwd.identity = await auth.signIn.identityHeaders(current.session, host, app);
        go();
      })
      .catch((err: unknown) => {
        log.error({ err, reqId: requestId }, 'Checking the session of a WebSocket failed');
        refuse(503, 'sign-in is not available right now');
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
