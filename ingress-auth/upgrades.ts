// An upgrade request on an app hostname or a verified custom domain. Only WebSocket upgrades are relayed, through the same
// gate (gate.ts) as any request on the path, never redirected (a script opened it); any other
// upgrade (h2c, TLS) is answered as the plain request it also is, on a connection that then closes.
import { randomUUID } from 'node:crypto';
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { loginUrl } from '../lib/contract.js';
import { audienceOf } from '../lib/identity/assertion.js';
import { forwarded, noSignIn, record, type IngressContext } from './context.js';
import { errorPage } from './errors.js';
import { decisionsFor, gateAll } from './gate.js';
import { appAtHost } from './host.js';
import { balanceKey, writeRaw } from './proxy.js';
import type { RequestHandler } from './requests.js';
import { hasBody } from './retry.js';
import { canonicalize, platformPath } from './target.js';
import { isChallengePath } from './tls/challenges.js';
import { misdirected, misdirectedAnswer } from './tls/connection.js';

export function upgradeHandler(
  ctx: IngressContext,
  onRequest: RequestHandler,
): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const { config, log, routes, proxy } = ctx;
  const debug = () => log.isLevelEnabled('debug');
  return (req, socket, head) => {
    const started = performance.now();
    const requestId = randomUUID();
    socket.on('error', () => undefined);
    const refuse = (status: number, message: string) => writeRaw(socket, errorPage(status, message, req.headers.accept, requestId), status);
    if (misdirected(req)) return writeRaw(socket, misdirectedAnswer(requestId), 421);
    if (req.method !== 'GET' || !/^\s*websocket\s*$/i.test(req.headers.upgrade ?? '')) {
      // RFC 9110 7.8 lets a server ignore Upgrade; one with a body is refused, as its body was
      // never read as HTTP.
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
    if (ctx.challenges && isChallengePath(req.url ?? '/')) return refuse(404, 'no such ACME challenge here');
    const app = appAtHost(req.headers.host, routes, config);
    if (!app) return refuse(404, `no app is served at ${req.headers.host ?? 'this address'}`);
    const decisions = decisionsFor(app, req.url ?? '/');
    if (decisions.some((d) => d.mode === 'auth') && !ctx.auth) {
      record(ctx, app, 503, started);
      return refuse(503, noSignIn);
    }
    const backend = proxy.pick(balanceKey(app), routes.backends(app));
    if (!backend) {
      record(ctx, app, 503, started);
      return refuse(503, 'no machine of this app is ready');
    }
    const fwd = forwarded(req, requestId);
    const go = () =>
      proxy.upgrade(req, socket, head, backend, fwd, (status, error) => {
        record(ctx, app, status, started);
        if (debug())
          log.debug(
            {
              reqId: requestId,
              app: app.metadata.name,
              ns: app.metadata.namespace,
              method: req.method,
              path: req.url,
              status,
              upgrade: true,
              upstream: backend.origin,
              error,
            },
            'Upgraded',
          );
      });
    const auth = ctx.auth;
    if (!decisions.length || !auth) return go();
    const host = audienceOf(req.headers.host ?? '');
    auth.routes
      .currentSession({ req, app, host })
      .then(async (current) => {
        const verdict = gateAll(decisions, current, {
          method: 'GET',
          headers: req.headers,
          url: req.url ?? '/',
          namespace: app.metadata.namespace!,
          upgrade: true,
        });
        if (verdict.kind !== 'forward') {
          const status = verdict.kind === 'forbidden' ? 403 : 401;
          record(ctx, app, status, started);
          const body = JSON.stringify(
            status === 403 ? { error: 'forbidden' } : { error: 'authentication_required', login_url: loginUrl(verdict.next) },
          );
          return writeRaw(
            socket,
            {
              headers: {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
                'cache-control': 'private, no-store',
                'x-request-id': requestId,
              },
              body,
            },
            status,
          );
        }
        if (verdict.identity) fwd.identity = await auth.signIn.identityHeaders(current!.session, host, app);
        go();
      })
      .catch((err: unknown) => {
        log.error({ err, reqId: requestId }, 'Checking the session of a WebSocket failed');
        refuse(503, 'sign-in is not available right now');
      });
  };
}
