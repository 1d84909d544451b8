// The client's address behind proxies: the API trusts SVC_API_PROXY_HOPS of them (api/server.ts
// sets Koa's proxy and maxIpsCount); with none trusted, a forwarded request is worth a warning.
import type Koa from 'koa';
import type { Logger } from '../../lib/logger.js';

/**
 * With no proxy hop trusted, a request that says X-Forwarded-For came through a proxy the API was
 * not told of: every per-address limit then counts the proxy's one address for all its clients, and
 * the console shows that address. Said once, as a warning an operator finds in the logs.
 */
export function untrustedForwardingWarning(log: Pick<Logger, 'warn'>): Koa.Middleware {
  let warned = false;
  return async (ctx, next) => {
    if (!warned && ctx.get('x-forwarded-for')) {
      warned = true;
      log.warn(
        { from: ctx.request.socket.remoteAddress },
        'Requests arrive with X-Forwarded-For but SVC_API_PROXY_HOPS is 0: per-address limits count the proxy as one client; set it to the number of proxies in front of the API',
      );
    }
    await next();
  };
}
