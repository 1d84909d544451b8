// A plain request on an app hostname or a verified custom domain: canonical target, the platform's
// paths, the App its Host names (appAtHost), the gate (gate.ts) when the policy covers the path,
// then the proxy to a ready machine. Every proxied request is logged (debug) and counted into the
// app's request metrics.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Decision } from '../lib/policy/index.js';
import type { App } from '../lib/resources/index.js';
import { audienceOf } from '../lib/identity/assertion.js';
import type { AuthRequest, CurrentSession } from './auth/routes.js';
import { authRequest, forwarded, noSignIn, record, type IngressContext, type SignInParts } from './context.js';
import { sendError } from './errors.js';
import { anonymousReads, firstRender } from './data/first-render.js';
import { decisionsFor, gateAll } from './gate.js';
import type { Forwarded } from './headers.js';
import { appAtHost, hostnameOf } from './host.js';
import { platformRoute, signInHostRoute } from './platform.js';
import { balanceKey, type Outcome } from './proxy.js';
import { canonicalize, platformPath } from './target.js';
import { challengeRoute, isChallengePath } from './tls/challenges.js';
import { httpsOrigin, isTls, misdirected, misdirectedAnswer } from './tls/connection.js';

/** How long a request to a deployed app with no ready machine waits for one before its 503. */
const endpointsLagMs = 3_000;

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export function requestHandler(ctx: IngressContext): RequestHandler {
  const { config, log, routes, proxy } = ctx;
  const debug = () => log.isLevelEnabled('debug');

  /**
   * A path the policy covers: the visitor's session is looked up (from the cache without waiting
   * when it is there, as for most requests), and the gate's verdict carried out.
   */
  const gated = (
    auth: SignInParts,
    req: IncomingMessage,
    res: ServerResponse,
    app: App,
    decisions: readonly Decision[],
    fwd: Forwarded,
    key: string,
    outcome: Outcome,
    audience: string,
  ): Promise<unknown> | void => {
    const r = authRequest(ctx, req, res, app, fwd.requestId, audience);
    const known = auth.routes.knownSession(r);
    if (known !== undefined) return carryOut(auth, r, decisions, known ?? undefined, fwd, key, outcome);
    return auth.routes.currentSession(r).then(
      (current) => carryOut(auth, r, decisions, current, fwd, key, outcome),
      (err: unknown) => {
        // Fails closed: without a session store nothing covered by the policy is proxied.
        log.error({ err, reqId: fwd.requestId }, 'Looking up a session failed');
        sendError(res, 503, 'sign-in is not available right now; try again shortly', req.headers.accept, fwd.requestId);
      },
    );
  };

  const carryOut = (
    auth: SignInParts,
    r: Omit<AuthRequest, 'path' | 'query'>,
    decisions: readonly Decision[],
    current: CurrentSession | undefined,
    fwd: Forwarded,
    key: string,
    outcome: Outcome,
  ): Promise<unknown> | void => {
    const { req, app } = r;
    const verdict = gateAll(decisions, current, {
      method: req.method ?? 'GET',
      headers: req.headers,
      url: req.url ?? '/',
      namespace: app.metadata.namespace!,
      upgrade: false,
    });
    switch (verdict.kind) {
      case 'sign-in':
      case 'unauthenticated':
        return auth.routes.challenge(r, verdict.kind === 'sign-in', verdict.next);
      case 'forbidden':
        return auth.routes.denied(r, current!.session, verdict.navigation, verdict.next);
    }
    fwd.personal = verdict.personal;
    // Not waited for: the request's 'close' records how it went, and dispatch never throws for a machine's failure.
    const send = () => proxy.dispatch(req, r.res, key, () => routes.backends(app), fwd, outcome);
    if (!verdict.identity) return send();
    fwd.identity = auth.signIn.cachedIdentityHeaders(current!.session, r.host, app);
    if (fwd.identity) return send();
    return auth.signIn.identityHeaders(current!.session, r.host, app).then((identity) => {
      fwd.identity = identity;
      return send();
    });
  };

  return (req, res) => {
    const started = performance.now();
    const requestId = randomUUID();
    // Over TLS, only requests for the name the connection was opened for (its SNI name).
    if (misdirected(req)) {
      const page = misdirectedAnswer(requestId);
      res.writeHead(421, page.headers);
      res.end(req.method === 'HEAD' ? undefined : page.body);
      return;
    }
    const bad = canonicalize(req);
    if (bad) return sendError(res, 400, bad, req.headers.accept, requestId);
    const url = req.url!;
    // ACME HTTP-01: answered here, before sign-in and the app, and never redirected.
    if (ctx.challenges && isChallengePath(url)) return challengeRoute(ctx.challenges, req, res, requestId);
    // Plain HTTP for a name served over HTTPS: there (308 keeps the method and body). Not behind a
    // balancer that terminates TLS itself (site.secure): its requests arrive here as plain HTTP,
    // and a redirect would send them round forever.
    if (ctx.certificates && !isTls(req) && !config.site.secure) {
      const hostname = hostnameOf(req.headers.host);
      if (hostname !== undefined && ctx.certificates.contextFor(hostname)) {
        res.writeHead(308, {
          location: `${httpsOrigin(hostname, config.proxy.tlsPublicPort)}${url}`,
          'content-length': 0,
          'cache-control': 'no-store',
          'x-request-id': requestId,
        });
        res.end();
        return;
      }
    }
    // Read once: the sign-in host's check here, the session's scope in gated().
    const audience = ctx.auth ? audienceOf(req.headers.host ?? '') : '';
    if (ctx.auth && audience === config.auth.host) return signInHostRoute(ctx, req, res, requestId);
    const reserved = platformPath(url);
    if (reserved) return platformRoute(ctx, req, res, reserved, requestId);
    const app = appAtHost(req.headers.host, routes, config);
    if (!app) {
      sendError(res, 404, `no app is served at ${req.headers.host ?? 'this address'}`, req.headers.accept, requestId);
      if (debug()) log.debug({ reqId: requestId, host: req.headers.host, method: req.method, path: url, status: 404 }, 'Unknown host');
      return;
    }
    const key = balanceKey(app);
    const outcome: Outcome = {};
    const decisions = decisionsFor(app, url);
    // `on`, not `once`: 'close' comes once per response, and no wrapper is made per request. The
    // one listener of a proxied request: the exchange hears of the close from here (Proxy.dispatch).
    res.on('close', () => {
      outcome.exchange?.clientGone();
      // A client that left before the answer ended is counted as 499, as nginx logs it.
      const status = res.writableFinished || res.headersSent ? res.statusCode : 499;
      record(ctx, app, status, started);
      if (debug()) {
        log.debug(
          {
            reqId: requestId,
            app: app.metadata.name,
            ns: app.metadata.namespace,
            method: req.method,
            path: url,
            status,
            ms: Math.round((performance.now() - started) * 100) / 100,
            backend: outcome.backend,
            retried: outcome.retried,
            error: outcome.error,
          },
          'Proxied',
        );
      }
    });
    if (!ctx.auth && decisions.some((d) => d.mode === 'auth')) return sendError(res, 503, noSignIn, req.headers.accept, requestId);
    const fwd = forwarded(req, requestId);
    // A page of an HTML app with reads anyone may make: those are filled in before it goes back,
    // within the same per-address rate as the reads themselves (past it, the page goes as written).
    if (ctx.data && req.method === 'GET' && anonymousReads(app).size > 0) {
      const data = ctx.data;
      fwd.rewrite = async (html) => {
        if (data.rates.read.take(`${app.metadata.uid}|${req.socket.remoteAddress ?? ''}`)) return undefined;
        const filled = await firstRender(data, app, html, `${fwd.proto}://${fwd.host}${url}`);
        if (filled !== undefined) data.usage.request(app);
        return filled;
      };
    }
    const proceed = (): void => {
      let sent: Promise<unknown> | void;
      try {
        sent =
          decisions.length && ctx.auth
            ? gated(ctx.auth, req, res, app, decisions, fwd, key, outcome, audience)
            : proxy.dispatch(req, res, key, () => routes.backends(app), fwd, outcome);
      } catch (err) {
        // The gate runs synchronously when the caches answer: a throw must end this request, not the process.
        sent = Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
      sent?.catch((err: unknown) => {
        log.warn({ err, reqId: requestId }, 'Proxying failed');
        sendError(res, 502, "the app's machine did not answer", req.headers.accept, requestId);
      });
    };
    if (routes.backends(app).length > 0) return proceed();
    if (!app.spec.kind) return sendError(res, 503, 'the app is not deployed yet', req.headers.accept, requestId);
    // A deployed app with no ready machine in this cache: its machines may be ready already, their
    // EndpointSlice (written by another controller, watched apart from the App) not here yet, as
    // right after a deploy is reported live, or one may be starting. Wait for one a moment rather
    // than answer 503 at once.
    void routes.whenBackends(app, endpointsLagMs).then((found) => {
      if (res.destroyed) return;
      if (found.length === 0) return sendError(res, 503, 'the app is starting: no machine is ready yet', req.headers.accept, requestId);
      proceed();
    });
  };
}
