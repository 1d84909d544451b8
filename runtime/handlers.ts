// Handler trees: files under api/ and handlers/ answer requests as code, everything else in the tree
// is a static site. The routing and module shape follow the file-based functions of hosting
// platforms (Vercel, Netlify, Next.js route handlers):
//
// - `api/hello.js` serves /api/hello (the api/ prefix stays in the URL); `handlers/hello.js` serves
//   /hello (handlers/ is a root for routes, so `handlers/index.js` serves /). `index` files serve
//   their directory: `api/index.js` → /api, `api/users/index.ts` → /api/users.
// - `[name]` segments match one path segment (`api/users/[id].js` → /api/users/42, params.id = '42');
//   a last `[...name]` segment matches one or more (`params.name` = 'a/b'). Static segments win
//   over `[name]`, which wins over `[...name]`.
// - Files and directories starting with `_` or `.` are never routes (shared code: `api/_lib/db.ts`).
//   Nothing under api/ or handlers/ is ever served as static content, route or not, so handler
//   source does not leak.
// - JavaScript and TypeScript modules (.js .mjs .cjs .ts .mts .cts) run in this process (a
//   revision's own: runtime/handler-child.ts). A module exports `default` or `handler`,
//   `(req: Request, ctx: { params }) => Response | string | object`, and/or per-method functions (`GET`, `POST`, ...: other methods get 405; HEAD falls back to GET).
//   A string is sent as text/html when it starts with `<`, text/plain otherwise; a Uint8Array or
//   ArrayBuffer as application/octet-stream; undefined as 204; anything else as JSON.
// - `.py` and `.sh` files run as a process per request, CGI style (RFC 3875): method, path, query and
//   headers as environment variables (plus SVC_AUTH_* for the viewer and SVC_PARAM_* for route
//   params), the body on stdin, and a header block (`Status: 404`, `Content-Type: ...`, or an
//   `HTTP/1.1 404 Not Found` status line) then a blank line then the body on stdout.
// - Identity reaches handlers as the auth proxy's request headers (`x-svc-auth-subject`, ...), never
//   through the shared process environment (process handlers get their own environment).
// - A handler that throws, a module that fails to load, or a process that fails before its header
//   block is a 500 with a generic body, logged with the cause. Producing the response (its status
//   and headers) has a deadline, SVC_HANDLER_TIMEOUT_MS (30 s): past it 504, the request's signal
//   aborts and a process is killed. A body that streams after that has no deadline (server-sent
//   events) and stops when the client goes away.
// - At most SVC_HANDLER_MAX_PROCESSES (16) processes run at once, SVC_HANDLER_MAX_WAITING (64)
//   more requests wait for one; past that 503 with Retry-After (runtime/process-slots.ts).
//
// The tree is left as the artifact made it (never written here), so modules are run from a copy in a cache directory under
// os.tmpdir(): JavaScript and JSON copied, TypeScript transpiled (typescript's transpileModule:
// types are stripped, not checked; `./x.ts` imports are rewritten to `./x.js`), everything else
// symlinked (so `new URL('./data.json', import.meta.url)` reads work). Its package.json says
// `"type": "module"`: .js files are ES modules, .cjs CommonJS.
import { rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Logger } from '../lib/logger.js';
import { handlerDirs, matchRoute, type HandlerRoute } from '../lib/handlers/routes.js';
import { prepareRunnableCopy, type RunnableCopy } from './handlers/copy.js';
import { loadModule, runModule, type LoadedModule } from './handlers/modules.js';
import { runBoundedProcess } from './handlers/processes.js';
import { plainText } from './handlers/respond.js';
import { slotsFromEnv, type ProcessSlots } from './process-slots.js';
import { createStaticSite, reservedPrefix, type SiteHandler } from './static-site.js';

export { toRequest, toResponse, type HandlerContext } from './handlers/modules.js';
export { cgiEnv, parseCgiHead } from './handlers/processes.js';

const defaultTimeoutMs = 30_000;

export interface HandlerTreeOptions {
  log?: Logger;
  /** Deadline for a response to start; default SVC_HANDLER_TIMEOUT_MS or 30 s. */
  timeoutMs?: number;
  /** Where the runnable copy of the tree goes; default a new directory under os.tmpdir(). */
  cacheDir?: string;
  /** The bound on per-request processes; default from SVC_HANDLER_MAX_PROCESSES / _MAX_WAITING. */
  processSlots?: ProcessSlots;
}

export interface HandlerTree extends SiteHandler {
  /** Settles once the runnable copy is built (requests wait for it anyway). */
  ready: Promise<void>;
  /** Removes the runnable copy. */
  close(): Promise<void>;
}

const silent = {
  error() {},
  warn() {},
  info() {},
  debug() {},
} as unknown as Logger;

function envTimeout(): number {
  const v = Number(process.env.SVC_HANDLER_TIMEOUT_MS);
  return Number.isFinite(v) && v > 0 ? v : defaultTimeoutMs;
}

const hiddenFirstSegments = new Set<string>(handlerDirs);

/** Whether the static site would look under a handler directory for this URL path. */
function underHandlerDir(pathname: string): boolean {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return false;
  }
  // The static site's own normalization, so no spelling of a path reaches handler source.
  const first = path.posix.normalize('/' + decoded).split('/')[1] ?? '';
  return hiddenFirstSegments.has(first.toLowerCase());
}

export function createHandlerTree(root: string, options: HandlerTreeOptions = {}): HandlerTree {
  const base = path.resolve(root);
  const log = options.log ?? silent;
  const timeoutMs = options.timeoutMs ?? envTimeout();
  const slots = options.processSlots ?? slotsFromEnv();
  const site = createStaticSite(base);
  const loaded = new Map<string, Promise<LoadedModule>>();
  let copy: RunnableCopy | undefined;
  const ready = prepareRunnableCopy(base, options.cacheDir, log).then((c) => {
    copy = c;
  });
  // Failure shows on every request (500) and once here.
  ready.catch((err: unknown) => log.error({ err }, 'Could not prepare the handler tree'));
  const modules = { load: (route: HandlerRoute) => loadModule(copy!, loaded, route, log), timeoutMs, log };
  const processes = { base, timeoutMs, slots, log };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      await ready;
    } catch {
      plainText(res, 500, 'internal server error\n');
      return;
    }
    const url = new URL(req.url?.startsWith('/') ? req.url : '/', 'http://site');
    let parts: string[] | undefined;
    try {
      parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      parts = undefined; // malformed escapes: no route; the static site answers 404
    }
    const found = parts && matchRoute(copy!.routes, parts);
    if (found) {
      if (found.route.runner === 'module') await runModule(modules, found.route, found.params, req, res);
      else await runBoundedProcess(processes, found.route, found.params, req, res);
      return;
    }
    if (underHandlerDir(url.pathname)) {
      if (req.method === 'GET' || req.method === 'HEAD') {
        // The site's own 404 page: reserved names are never found.
        req.url = `/${reservedPrefix}not-found`;
        await site(req, res);
      } else plainText(res, 404, 'not found\n');
      return;
    }
    await site(req, res);
  };
  return Object.assign(handle, {
    ready,
    close: async () => {
      await ready.catch(() => {});
      if (copy) await rm(copy.cacheDir, { recursive: true, force: true });
    },
  });
}
