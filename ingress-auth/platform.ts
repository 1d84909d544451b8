// The platform's own routes on app hostnames and verified custom domains (`/_svc/health`, the
// identity keys, `/_svc/auth/...` sign-in), and on the platform's sign-in host (identity providers'
// callbacks, nothing else).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { platformPaths } from '../lib/contract.js';
import { sendJson } from './auth/respond.js';
import { authRequest, type IngressContext } from './context.js';
import { sendError } from './errors.js';
import { dataPrefix, dataRoute } from './data/routes.js';
import { appAtHost } from './host.js';
import { workerId } from './workers.js';

export function platformRoute(ctx: IngressContext, req: IncomingMessage, res: ServerResponse, path: string, requestId: string): void {
  const { config, log } = ctx;
  if (path === platformPaths.health && (req.method === 'GET' || req.method === 'HEAD')) {
    // Which worker answered (workers.ts): how a test, or an operator, tells them apart.
    const worker = workerId();
    const body = worker === undefined ? '{"status":"ok"}' : `{"status":"ok","worker":${worker}}`;
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': body.length,
      'cache-control': 'no-store',
      'x-request-id': requestId,
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  if (path === platformPaths.jwks && ctx.jwks && (req.method === 'GET' || req.method === 'HEAD')) {
    ctx.jwks().then(
      (set) => {
        const body = JSON.stringify(set);
        // Keys are published 15 minutes before they sign (lib/identity/assertion-keys.ts), so 5
        // minutes of caching never hides a key that signs.
        res.writeHead(200, {
          'content-type': 'application/jwk-set+json',
          'content-length': Buffer.byteLength(body),
          'cache-control': 'public, max-age=300',
          'access-control-allow-origin': '*',
          'x-request-id': requestId,
        });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        log.error({ err, reqId: requestId }, 'Reading the assertion keys failed');
        sendError(res, 503, 'the signing keys are not available right now', req.headers.accept, requestId);
      },
    );
    return;
  }
  if (path.startsWith(dataPrefix)) {
    if (!ctx.data) return sendError(res, 503, 'app data is not set up on this ingress', req.headers.accept, requestId);
    return dataRoute(ctx, ctx.data, req, res, requestId);
  }
  if (path.startsWith(`${platformPaths.auth}/`) && ctx.auth) {
    const app = appAtHost(req.headers.host, ctx.routes, config);
    if (!app) return sendError(res, 404, `no app is served at ${req.headers.host ?? 'this address'}`, req.headers.accept, requestId);
    const q = (req.url ?? '').indexOf('?');
    void ctx.auth.routes.handle({
      ...authRequest(ctx, req, res, app, requestId),
      path,
      query: new URLSearchParams(q === -1 ? '' : req.url!.slice(q + 1)),
    });
    return;
  }
  sendError(res, 404, `no platform route ${path}`, req.headers.accept, requestId);
}

/** The platform's sign-in host: identity providers' callbacks, nothing else. */
export function signInHostRoute(ctx: IngressContext, req: IncomingMessage, res: ServerResponse, requestId: string): void {
  const { log } = ctx;
  const url = new URL(req.url ?? '/', 'http://auth.invalid');
  const route = ctx.auth?.callbacks?.get(`${req.method === 'HEAD' ? 'GET' : req.method} ${url.pathname}`);
  if (!route) return sendError(res, 404, `no sign-in route ${url.pathname} here`, req.headers.accept, requestId);
  route(req, res, url, requestId).catch((err: unknown) => {
    log.error({ err, reqId: requestId }, 'Sign-in callback failed');
    if (!res.headersSent) sendJson(res, 500, { error: 'sign-in failed on the platform side; try again' }, requestId);
    else res.destroy();
  });
}
