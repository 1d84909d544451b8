// What the API serves at /console (outside /api): the console's files, and GET /console/auth, where
// a mailed sign-in link lands: the code is redeemed once, the session cookie set, and the browser
// sent on to /console/ with 303 (so the code leaves the address bar and history at once).
import type Koa from 'koa';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../errors.js';
import type { RateLimiter } from '../middleware/rate-limit.js';
import type { ConsoleSignIn } from './sign-in.js';
import { sessionCookie, sessionCookieName } from './session.js';
import { consolePrefix, fileFor, loadConsoleFiles, securityHeaders, type ConsoleFile } from './static.js';

export interface ConsoleRoutesDeps {
  signIn: Pick<ConsoleSignIn, 'redeem'>;
  /** Per client address: link redemptions. */
  limiter: Pick<RateLimiter, 'take'>;
  /** Whether cookies are Secure on plain HTTP (SVC_AUTH_SECURE_COOKIES: TLS ends before the API). */
  secureCookies: boolean;
  /** Where the built console is (default dist/console). */
  dir?: string;
}

export function consoleRoutes(d: ConsoleRoutesDeps): Koa.Middleware {
  // dist/api/console/routes.js → dist/console: beside the compiled code, in a checkout and an image alike.
  const dir = d.dir ?? fileURLToPath(new URL('../../console/', import.meta.url));
  let files: Promise<Map<string, ConsoleFile> | undefined> | undefined;
  // A new build (make build while the API runs) is picked up: index.html's time is looked at once a second.
  let built = { checkedAt: 0, mtimeMs: 0 };
  const current = async (): Promise<Map<string, ConsoleFile> | undefined> => {
    const now = Date.now();
    if (now - built.checkedAt >= 1000) {
      const mtimeMs = (await stat(path.join(dir, 'index.html')).catch(() => undefined))?.mtimeMs ?? 0;
      if (mtimeMs !== built.mtimeMs) files = undefined;
      built = { checkedAt: now, mtimeMs };
    }
    files ??= loadConsoleFiles(dir);
    return files;
  };
  return async (ctx, next) => {
    if (ctx.path !== consolePrefix && !ctx.path.startsWith(consolePrefix + '/')) return next() as Promise<void>;
    ctx.set(securityHeaders);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw new ApiError('method_not_allowed', `method ${ctx.method} not allowed on ${ctx.path}`, { Allow: 'GET, HEAD' });
    }
    if (ctx.path === consolePrefix) return ctx.redirect(`${consolePrefix}/`);
    if (ctx.path === `${consolePrefix}/auth`) return redeem(ctx);
    const loaded = await current();
    // Not built yet: looked for again on the next request.
    if (!loaded) {
      files = undefined;
      throw new ApiError('unavailable', 'the console is not built: run make build (it writes dist/console)');
    }
    const file = fileFor(loaded, ctx.path);
    if (!file) throw new ApiError('not_found', `no console file ${ctx.path}`);
    ctx.set('Cache-Control', file.cacheControl);
    ctx.type = file.type;
    ctx.body = file.body;
  };

  async function redeem(ctx: Koa.Context): Promise<void> {
    d.limiter.take(`console-auth:${ctx.ip}`);
    ctx.set('Cache-Control', 'no-store');
    // A HEAD (a link checker) must not spend the one use.
    if (ctx.method === 'HEAD') {
      ctx.status = 204;
      return;
    }
    const code = typeof ctx.query.code === 'string' ? ctx.query.code : '';
    const session = await d.signIn.redeem(code);
    if (!session) {
      ctx.redirect(`${consolePrefix}/sign-in?link=invalid`);
      ctx.status = 303;
      return;
    }
    const secure = ctx.secure || d.secureCookies;
    ctx.set('Set-Cookie', sessionCookie(sessionCookieName(secure), session.token, { secure, maxAgeSeconds: session.maxAgeSeconds }));
    ctx.redirect(`${consolePrefix}/`);
    ctx.status = 303;
  }
}
