// Handler modules (JavaScript and TypeScript) run in the runtime's process: loaded once from the
// runnable copy, picked by method, called with a Fetch API Request, their result sent as the answer,
// within the deadline for the response to start.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import type { HandlerRoute } from '../../lib/handlers/routes.js';
import type { Logger } from '../../lib/logger.js';
import { runnablePath, type RunnableCopy } from './copy.js';
import { firstHeader, hopByHop, plainText } from './respond.js';

const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

export interface HandlerContext {
  params: Record<string, string>;
}
type Entry = (req: Request, ctx: HandlerContext) => unknown;
export interface LoadedModule {
  byMethod: Map<string, Entry>;
  fallback: Entry | undefined;
}

class HandlerTimeout extends Error {
  constructor(ms: number) {
    super(`the handler did not respond within ${ms} ms`);
    this.name = 'HandlerTimeout';
  }
}

export function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const proto = firstHeader(req.headers['x-forwarded-proto'])?.split(',')[0]?.trim() === 'https' ? 'https' : 'http';
  const target = req.url?.startsWith('/') ? req.url : '/';
  // Only a host name (and port) as the authority: a Host like `a/b` would otherwise shift the path.
  const host = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(req.headers.host ?? '')
    ? req.headers.host!
    : 'localhost';
  const url = new URL(`${proto}://${host}${target}`);
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const method = req.method ?? 'GET';
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal };
  if (method !== 'GET' && method !== 'HEAD') {
    init.body = Readable.toWeb(req);
    init.duplex = 'half';
  }
  return new Request(url, init);
}

/** What a handler returned, as a Response. */

export function toResponse(result: unknown): Response {
  if (result instanceof Response) return result;
  if (result === undefined) return new Response(null, { status: 204 });
  if (typeof result === 'string') {
    const type = /^\s*</.test(result) ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8';
    return new Response(result, { headers: { 'content-type': type } });
  }
  if (result instanceof Uint8Array || result instanceof ArrayBuffer) {
    return new Response(result, { headers: { 'content-type': 'application/octet-stream' } });
  }
  const json = JSON.stringify(result);
  if (json === undefined) throw new TypeError(`the handler returned a ${typeof result}, which is not a response`);
  return new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } });
}

async function sendResponse(response: Response, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const headers: OutgoingHttpHeaders = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie' && !hopByHop.has(name)) headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText || undefined, headers);
  if (!response.body || req.method === 'HEAD' || response.status === 204 || response.status === 304) {
    await response.body?.cancel().catch(() => {});
    res.end();
    return;
  }
  await pipeline(Readable.fromWeb(response.body), res);
}

function entriesOf(mod: Record<string, unknown>): LoadedModule {
  const byMethod = new Map<string, Entry>();
  for (const m of methods) if (typeof mod[m] === 'function') byMethod.set(m, mod[m] as Entry);
  const def = mod.default as Record<string, unknown> | ((...a: unknown[]) => unknown) | undefined;
  const fallback =
    typeof def === 'function'
      ? (def as Entry)
      : typeof mod.handler === 'function'
        ? (mod.handler as Entry)
        : def && typeof def === 'object' && typeof def.handler === 'function'
          ? (def.handler as Entry)
          : undefined;
  if (!byMethod.size && !fallback)
    throw new TypeError('the module exports no handler: export default function handler(req), or GET, POST, ...');
  return { byMethod, fallback };
}

/** What serves `method`: a function, or the methods there are. */

function pick(mod: LoadedModule, method: string): Entry | { allow: string } {
  const own = mod.byMethod.get(method) ?? (method === 'HEAD' ? mod.byMethod.get('GET') : undefined) ?? mod.fallback;
  if (own) return own;
  const allow = [...mod.byMethod.keys()];
  if (mod.byMethod.has('GET') && !allow.includes('HEAD')) allow.push('HEAD');
  return { allow: allow.join(', ') };
}

/** The CGI environment of a request (RFC 3875), plus the viewer and route params. */

export function loadModule(
  copy: RunnableCopy,
  loaded: Map<string, Promise<LoadedModule>>,
  route: HandlerRoute,
  log: Logger,
): Promise<LoadedModule> {
  let p = loaded.get(route.file);
  if (!p) {
    const failed = copy.broken.get(route.file);
    p = failed
      ? Promise.reject(failed)
      : import(pathToFileURL(path.join(copy.cacheDir, runnablePath(route.file))).href).then((mod: Record<string, unknown>) =>
          entriesOf(mod),
        );
    // Node keeps a module that failed to evaluate failed; so do we, logging it once.
    p.catch((err: unknown) => log.error({ err, route: route.pattern, file: route.file }, 'Handler module failed to load'));
    loaded.set(route.file, p);
  }
  return p;
}

export async function runModule(
  ctx: { load: (route: HandlerRoute) => Promise<LoadedModule>; timeoutMs: number; log: Logger },
  route: HandlerRoute,
  params: Record<string, string>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { timeoutMs, log } = ctx;
  let mod: LoadedModule;
  try {
    mod = await ctx.load(route);
  } catch {
    plainText(res, 500, 'internal server error\n');
    return;
  }
  const method = req.method ?? 'GET';
  const entry = pick(mod, method);
  if (typeof entry !== 'function') {
    plainText(res, 405, 'method not allowed\n', { Allow: entry.allow });
    return;
  }
  const abort = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort(new Error('the client went away'));
  });
  let request: Request;
  try {
    request = toRequest(req, abort.signal);
  } catch (err) {
    // Methods a Request cannot carry (CONNECT, TRACE).
    plainText(res, 405, 'method not allowed\n');
    log.debug({ err, method }, 'Request not representable');
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const result = await Promise.race([
      Promise.resolve().then(() => entry(request, { params })),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new HandlerTimeout(timeoutMs)), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    await sendResponse(toResponse(result), req, res);
  } catch (err) {
    clearTimeout(timer);
    if (err instanceof HandlerTimeout) {
      abort.abort(err);
      log.warn({ route: route.pattern, file: route.file, url: req.url, timeoutMs }, 'Handler timed out');
      plainText(res, 504, 'the handler did not respond in time\n');
    } else if (abort.signal.aborted && res.destroyed) {
      log.debug({ err, route: route.pattern }, 'Client went away');
    } else {
      log.error({ err, route: route.pattern, file: route.file, url: req.url }, 'Handler failed');
      plainText(res, 500, 'internal server error\n');
    }
  }
}
