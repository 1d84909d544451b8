// Gives every request an id (kept from X-Request-Id when it is sane, else new), echoes it in the
// response, and logs one line per request with it.
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from '../../lib/logger.js';
import type { ApiState } from '../state.js';

const saneId = /^[A-Za-z0-9._-]{1,64}$/;

export function requestContext(log: Logger): Koa.Middleware<ApiState> {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = saneId.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = log;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const level = ctx.status >= 500 ? 'error' : 'info';
      log[level]({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 100) / 100 }, 'Handled request');
    }
  };
}
