// What the API serves at /console (outside /api): the console's files. Every path without a file
// extension is one of the single page's routes, /console/auth (where a mailed sign-in link lands)
// among them: opening a link spends nothing; the page then presents the code with
// POST /api/console/auth (api/operations/console.ts), which a link checker never does.
import type Koa from 'koa';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../errors.js';
import { consolePrefix, fileFor, loadConsoleFiles, securityHeaders, type ConsoleFile } from './static.js';

export interface ConsoleRoutesDeps {
  /** Where the built console is (default dist/console). */
  dir?: string;
}

export function consoleRoutes(d: ConsoleRoutesDeps = {}): Koa.Middleware {
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
}
