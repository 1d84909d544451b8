// Turns the route table into a @koa/router: authentication, rate limit and authorization first,
// then body and query validation, then the handler. Also answers 404 for unknown routes and 405
// (with Allow) for known routes with another method.
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type Koa from 'koa';
import { koaBody } from 'koa-body';
import type { z } from 'zod';
import { ApiError, invalid } from './errors.js';
import type { Authenticator } from './middleware/authenticate.js';
import type { RateLimiter } from './middleware/rate-limit.js';
import type { HandlerResult, Operation } from './operation.js';
import type { ApiDeps } from './deps.js';
import type { ApiState } from './state.js';
import { resolveApp, type AppLookup } from './app-access.js';
import type { BrowserRequest } from './console/session.js';

export const apiPrefix = '/api';

function parseInput<T>(schema: z.ZodType<T>, value: unknown, where: 'body' | 'query'): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => `${i.path.length ? i.path.join('.') : where}: ${i.message}`);
  throw invalid(`invalid ${where}: ${problems.join('; ')}`);
}

function respond(ctx: Koa.Context, op: Operation, result: HandlerResult): void {
  ctx.status = result.status ?? op.status ?? 200;
  if (result.headers) ctx.set(result.headers);
  if (ctx.status === 204) return;
  if (result.body instanceof Readable) return respondStream(ctx, result.body);
  ctx.body = result.body;
}

/**
 * A stream body (logs, events) lives as long as the client wants: its socket gets no idle timeout,
 * the status and headers go out now rather than with the first chunk (which may come much later),
 * and the client going away destroys the stream, which ends whatever feeds it. That is a normal end,
 * not an error, so the stream is piped here rather than by Koa (which reports it as one).
 */
function respondStream(ctx: Koa.Context, body: Readable): void {
  ctx.respond = false;
  if (!ctx.response.get('Content-Type')) ctx.type = 'bin';
  ctx.req.socket.setTimeout(0);
  const res = ctx.res;
  res.flushHeaders();
  if (ctx.method === 'HEAD') {
    body.destroy();
    res.end();
    return;
  }
  res.once('close', () => body.destroy());
  body.once('error', (err) => {
    (ctx.state as Partial<ApiState>).log?.error({ err, requestId: (ctx.state as Partial<ApiState>).requestId }, 'Response stream failed');
    res.destroy();
  });
  body.pipe(res);
}

/** The router's own: the body limit, and the app lookup of operations not built yet (their 404s). */
export interface RouterDeps extends AppLookup {
  /** `auth.secureCookies`: TLS ends before the API, so its cookies are Secure and its origin https. */
  config: { api: Pick<ApiDeps['config']['api'], 'bodyLimitBytes' | 'publicUrl'>; auth: Pick<ApiDeps['config']['auth'], 'secureCookies'> };
}

/**
 * What a public operation's handler may read of its request: the client's address (for its rate
 * limit), the console's view of it, and its JSON body parsed by a schema. Handlers that need none
 * of it declare no parameter (the document's generator calls getOpenApi's with none).
 */
export interface PublicRequest {
  ip: string;
  browser: BrowserRequest;
  body<T>(schema: z.ZodType<T>): Promise<T>;
}

function browserRequest(ctx: Koa.Context, config: RouterDeps['config']): BrowserRequest {
  return {
    method: ctx.method,
    cookie: ctx.get('cookie') || undefined,
    consoleHeader: ctx.get('x-svc-console') || undefined,
    origin: ctx.get('origin') || undefined,
    secure: ctx.secure || config.auth.secureCookies,
    host: ctx.host,
    publicOrigin: config.api.publicUrl,
  };
}

export function buildRouter(operations: readonly Operation[], s: RouterDeps, auth: Authenticator, limiter: RateLimiter): Router<ApiState> {
  const router = new Router<ApiState>({ prefix: apiPrefix });
  const limit = s.config.api.bodyLimitBytes;
  const jsonBody = koaBody({ json: true, jsonStrict: true, jsonLimit: limit, urlencoded: false, text: false, multipart: false });

  async function readBody<T>(ctx: Koa.ParameterizedContext<ApiState>, schema: z.ZodType<T>): Promise<T> {
    const hasBody = (ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (!hasBody) return parseInput(schema, {}, 'body');
    if (!ctx.is('application/json')) throw new ApiError('unsupported_media_type', 'send JSON with Content-Type: application/json');
    if ((ctx.request.length ?? 0) > limit) throw new ApiError('payload_too_large', `request body larger than ${limit} bytes`);
    await jsonBody(ctx, async () => undefined);
    return parseInput(schema, (ctx.request as { body?: unknown }).body, 'body');
  }

  for (const op of operations) {
    const path = op.path.replace(/\{([^}]+)\}/g, ':$1');
    router.register(path, [op.method], async (ctx) => {
      if (op.action === null) {
        const handler: (request?: PublicRequest) => Promise<HandlerResult> | HandlerResult = op.handler;
        const browser = browserRequest(ctx, s.config);
        return respond(ctx, op, await handler({ ip: ctx.ip, browser, body: (schema) => readBody(ctx, schema) }));
      }
      // The console's cookie is looked at only without a bearer header (which always wins).
      const authorization = ctx.get('authorization') || undefined;
      const browser = authorization ? undefined : browserRequest(ctx, s.config);
      const principal = await auth.authenticate(authorization, browser);
      limiter.take(principal.nonce);
      const params = ctx.params;
      if (!op.ownCredential?.(params, principal)) auth.authorize(op, principal);
      const caller = await auth.caller(principal, auth.presented(authorization, browser)!.token);
      if (!op.handler) {
        // Resolved like every app's operation (name or ID, the token's apps restriction, 404), then 501.
        if (params.appID !== undefined) await resolveApp(s, caller, params.appID);
        throw new ApiError('not_implemented', 'not_implemented');
      }
      const query = op.query ? parseInput(op.query, ctx.query, 'query') : undefined;
      const uploadType = op.upload && ctx.is(op.upload.types);
      if (op.upload && uploadType) {
        const length = ctx.request.length;
        if (length !== undefined && length > op.upload.limitBytes)
          throw new ApiError('payload_too_large', `upload larger than ${op.upload.limitBytes} bytes`);
        const upload = { stream: ctx.req, contentType: uploadType, length };
        return respond(ctx, op, await op.handler({ body: undefined, query, params, caller, headers: ctx.headers, ip: ctx.ip, upload }));
      }
      const body = op.body ? await readBody(ctx, op.body) : undefined;
      respond(ctx, op, await op.handler({ body, query, params, caller, headers: ctx.headers, ip: ctx.ip }));
    });
  }
  return router;
}

/** After the router: 405 with Allow when the path exists with other methods, else 404. */
export function unmatched(router: Router<ApiState>): Koa.Middleware<ApiState> {
  return async (ctx) => {
    const match = router.match(ctx.path, ctx.method);
    const allowed = new Set(match.path.flatMap((layer) => layer.methods).filter((m) => m !== 'HEAD'));
    if (allowed.size > 0) {
      throw new ApiError('method_not_allowed', `method ${ctx.method} not allowed on ${ctx.path}`, { Allow: [...allowed].join(', ') });
    }
    throw new ApiError('not_found', `no route ${ctx.method} ${ctx.path}`);
  };
}
