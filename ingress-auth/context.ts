// What ingress-auth's handlers share (ingress-auth/requests.ts, upgrades.ts, platform.ts): the
// configuration, the route table, the proxy, sign-in when configured, and the request metrics;
// built once by startIngress (server.ts), never late-bound.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ComponentConfig } from '../lib/config.js';
import { audienceOf } from '../lib/identity/assertion.js';
import type { Logger } from '../lib/logger.js';
import type { RequestRecorder } from '../lib/metrics/requests.js';
import type { App } from '../lib/resources/index.js';
import type { CallbackRoute } from './auth/providers/flow.js';
import type { AuthRequest, AuthRoutes } from './auth/routes.js';
import type { SignIn } from './auth/sign-in.js';
import { clientAddress, type Forwarded } from './headers.js';
import { originOf } from './host.js';
import type { Proxy } from './proxy.js';
import type { RouteSource } from './routes.js';
import type { DataParts } from './data/routes.js';
import type { CertificateSource } from './tls/certificates.js';
import type { ChallengeSource } from './tls/challenges.js';
import { httpsOrigin, isTls } from './tls/connection.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'ingress-auth'>;

export interface SignInParts {
  signIn: SignIn;
  routes: AuthRoutes;
  /** Routes of the platform's sign-in host (config.auth.host): provider callbacks, by `METHOD path`. */
  callbacks?: ReadonlyMap<string, CallbackRoute>;
}

export interface IngressContext {
  readonly config: Config;
  readonly log: Logger;
  readonly routes: RouteSource;
  readonly proxy: Proxy;
  /** Sign-in: without it, gated paths fail closed (503) and identity is never resolved. */
  readonly auth: SignInParts | undefined;
  /** The public keys of identity assertions, served at /_svc/auth/jwks.json. */
  readonly jwks: (() => Promise<{ keys: object[] }>) | undefined;
  readonly recorder: RequestRecorder | undefined;
  /** The HTTPS listener's certificates (tls/certificates.ts); undefined: no HTTPS listener, no redirects. */
  readonly certificates?: CertificateSource | undefined;
  /** HTTP-01 answers (tls/challenges.ts); undefined: the challenge path is an app's like any other. */
  readonly challenges?: ChallengeSource | undefined;
  /** HTML apps' data bindings under /_svc/data/ (data/routes.ts); undefined: they answer 503. */
  readonly data?: DataParts | undefined;
}

export const noSignIn = 'this page requires sign-in, which is not set up on this ingress';

export function forwarded(req: IncomingMessage, requestId: string): Forwarded {
  return {
    requestId,
    clientIp: clientAddress(req.socket.remoteAddress),
    proto: isTls(req) ? 'https' : 'http',
    host: req.headers.host ?? '',
  };
}

export function authRequest(
  ctx: IngressContext,
  req: IncomingMessage,
  res: ServerResponse,
  app: App,
  requestId: string,
  host = audienceOf(req.headers.host ?? ''),
): Omit<AuthRequest, 'path' | 'query'> {
  return {
    req,
    res,
    app,
    host,
    // The hostname's configured URL, never the Host header: links in mail, passkey origins and the
    // same-origin checks must not follow whatever port or spelling a request named. The hostname is
    // the app's own or one of its verified domains (the request was routed by it, appAtHost), so a
    // sign-in on a custom domain stays there. Over TLS: https, on the port clients reach it on.
    origin: isTls(req) ? httpsOrigin(host, ctx.config.proxy.tlsPublicPort) : originOf(ctx.config.site, host),
    requestId,
    clientIp: clientAddress(req.socket.remoteAddress),
  };
}

/** Counts a request into the app's request metrics. */
export function record(ctx: IngressContext, app: App, status: number, started: number): void {
  ctx.recorder?.record({
    namespace: app.metadata.namespace!,
    app: app.metadata.name!,
    appUid: app.metadata.uid!,
    status,
    durationMs: performance.now() - started,
  });
}
