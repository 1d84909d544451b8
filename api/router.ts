// Turns the route table into a @koa/router: authentication, rate limit and authorization first,
// then body and query validation, then the handler. Also answers 404 for unknown routes and 405
// (with Allow) for known routes with another method.
import Router from '@koa/router';
import type Koa from 'koa';
import { koaBody } from 'koa-body';
import type { z } from 'zod';
import { ApiError, invalid } from './errors.js';
import type { Authenticator } from './middleware/authenticate.js';
import type { RateLimiter } from './middleware/rate-limit.js';
import type { HandlerResult, Operation } from './operation.js';
import type { Services } from './services.js';
import type { ApiState } from './state.js';

export const apiPrefix = '/api';

function parseInput<T>(schema: z.ZodType<T>, value: unknown, where: 'body' | 'query'): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => `${i.path.length ? i.path.join('.') : where}: ${i.message}`);
  throw invalid(`invalid ${where}: ${problems.join('; ')}`);
}

function respond(ctx: Koa.Context, op: Operation, result: HandlerResult): void {
  ctx.status = result.status ?? op.status ?? 200;
  if (ctx.status !== 204) ctx.body = result.body;
}

export function buildRouter(operations: readonly Operation[], s: Services, auth: Authenticator, limiter: RateLimiter): Router<ApiState> {
  const router = new Router<ApiState>({ prefix: apiPrefix });
  const limit = s.config.api.bodyLimitBytes;
  const jsonBody = koaBody({ json: true, jsonStrict: true, jsonLimit: limit, urlencoded: false, text: false, multipart: false });

  async function readBody(ctx: Koa.ParameterizedContext<ApiState>, schema: z.ZodType): Promise<unknown> {
    const hasBody = (ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (!hasBody) return parseInput(schema, {}, 'body');
    if (!ctx.is('application/json')) throw new ApiError('unsupported_media_type', 'send JSON with Content-Type: application/json');
    if ((ctx.request.length ?? 0) > limit) throw new ApiError('payload_too_large', `request body larger than ${limit} bytes`);
    await jsonBody(ctx as never, async () => undefined);
    return parseInput(schema, (ctx.request as { body?: unknown }).body, 'body');
  }

  for (const op of operations) {
    const path = op.path.replace(/\{([^}]+)\}/g, ':$1');
    router.register(path, [op.method], async (ctx) => {
      if (op.action === null) return respond(ctx, op, await op.handler());
      const principal = await auth.authenticate(ctx.get('authorization') || undefined);
      limiter.take(principal.nonce);
      const params = ctx.params as Record<string, string>;
      auth.authorize(op, principal, params);
      const caller = await auth.caller(principal);
      if (!op.handler) throw new ApiError('not_implemented', 'not_implemented');
      const body = op.body ? await readBody(ctx, op.body) : undefined;
      const query = op.query ? parseInput(op.query, ctx.query, 'query') : undefined;
      respond(ctx, op, await op.handler({ body, query, params, caller }));
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
