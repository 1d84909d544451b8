// The one error middleware: every failure below it becomes {"error": message} with the registry's
// status. The domain errors of repositories and actions (lib/errors.ts) are mapped here, and only
// here; errors from parsers (koa-body, raw-body) by their status; the database being unreachable is
// a 503 with Retry-After; anything else is a 500 whose message carries no internals, only the
// request id that finds the log line.
import type Koa from 'koa';
import { databaseUnavailable } from '../../lib/db/connection.js';
import { DomainError } from '../../lib/errors.js';
import { ApiError, type ErrorCode } from '../errors.js';
import type { Logger } from '../../lib/logger.js';
import type { ApiState } from '../state.js';

function translate(err: unknown): ApiError | undefined {
  if (err instanceof ApiError) return err;
  if (err instanceof DomainError)
    return new ApiError(
      err.kind === 'invalid' ? 'invalid_request' : err.kind,
      err.message,
      err.kind === 'unavailable' ? { 'Retry-After': '5' } : {},
    );
  // Nothing was decided: the client may retry as it is (it is told when).
  if (databaseUnavailable(err)) return new ApiError('unavailable', 'the database is unavailable; retry shortly', { 'Retry-After': '5' });
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean };
  const status = e?.status ?? e?.statusCode;
  if (typeof status !== 'number' || status >= 500) return undefined;
  const byStatus: Record<number, ErrorCode> = { 400: 'invalid_request', 413: 'payload_too_large', 415: 'unsupported_media_type' };
  if (e.type === 'entity.parse.failed' || (status === 400 && /JSON/i.test(String((err as Error).message)))) {
    return new ApiError('invalid_json', 'malformed JSON in request body');
  }
  if (status === 413) return new ApiError('payload_too_large', 'request body too large');
  const code = byStatus[status];
  return code ? new ApiError(code, (err as Error).message) : undefined;
}

export function errorHandler(): Koa.Middleware<ApiState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const apiError = translate(err);
      if (apiError) {
        ctx.status = apiError.status;
        ctx.set(apiError.headers);
        ctx.body = { error: apiError.message };
        if (apiError.status >= 500) ctx.state.log.error({ err, requestId: ctx.state.requestId }, 'Request failed');
        return;
      }
      ctx.state.log.error({ err, requestId: ctx.state.requestId }, 'Unhandled error');
      ctx.status = 500;
      ctx.body = { error: `internal error (request id ${ctx.state.requestId})` };
    }
  };
}

/** What a client hanging up mid-response raises: nothing went wrong here. */
const clientGone = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE']);

/**
 * Koa's own errors (those raised after the middleware returned, as a streamed body failing) into
 * the one logger, not printed to stderr: a client that went away before the end of a download (a
 * restore's pg_restore, a fetch cut short) at debug, anything else as an error with its request id.
 */
export function logAppErrors(app: Koa<ApiState>, log: Logger): void {
  app.on('error', (err: NodeJS.ErrnoException, ctx?: Koa.ParameterizedContext<ApiState>) => {
    const fields = { err, requestId: ctx?.state.requestId, path: ctx?.path };
    if (err.code && clientGone.has(err.code)) log.debug(fields, 'The client went away before the response ended');
    else log.error(fields, 'Responding failed');
  });
}
