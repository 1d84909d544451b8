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
// - JavaScript and TypeScript modules (.js .mjs .cjs .ts .mts .cts) run in this process. A module
//   exports `default` or `handler`, `(req: Request, ctx: { params }) => Response | string | object`,
//   and/or per-method functions (`GET`, `POST`, ...: other methods get 405; HEAD falls back to GET).
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
// The tree is mounted read-only, so modules are run from a copy in a cache directory under
// os.tmpdir(): JavaScript and JSON copied, TypeScript transpiled (typescript's transpileModule:
// types are stripped, not checked; `./x.ts` imports are rewritten to `./x.js`), everything else
// symlinked (so `new URL('./data.json', import.meta.url)` reads work). Its package.json says
// `"type": "module"`: .js files are ES modules, .cjs CommonJS.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../lib/logger.js';
import { handlerDirs, isTypeDeclaration, matchRoute, planHandlerRoutes, processInterpreters, type HandlerRoute } from '../lib/handlers/routes.js';
import { slotsFromEnv, type ProcessSlots } from './process-slots.js';
import { createStaticSite, reservedPrefix, type SiteHandler } from './static-site.js';
import { identityHeaderPrefix } from '../lib/contract.js';

const tsOutput: Record<string, string> = { '.ts': '.js', '.mts': '.mjs', '.cts': '.cjs' };
const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const defaultTimeoutMs = 30_000;
const maxCgiHeaderBytes = 64 * 1024;

export interface HandlerContext {
  params: Record<string, string>;
}
type Entry = (req: Request, ctx: HandlerContext) => unknown;
interface LoadedModule {
  byMethod: Map<string, Entry>;
  fallback: Entry | undefined;
}

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

class HandlerTimeout extends Error {
  constructor(ms: number) {
    super(`the handler did not respond within ${ms} ms`);
    this.name = 'HandlerTimeout';
  }
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

/** Every file and node_modules directory of the tree (posix, relative), platform names left out. */
async function walk(base: string, rel = ''): Promise<{ files: string[]; packages: string[] }> {
  const out = { files: [] as string[], packages: [] as string[] };
  for (const entry of await readdir(path.join(base, rel), { withFileTypes: true })) {
    if (entry.name.startsWith(reservedPrefix)) continue;
    const p = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules') out.packages.push(p);
      else {
        const sub = await walk(base, p);
        out.files.push(...sub.files);
        out.packages.push(...sub.packages);
      }
    } else if (entry.isFile()) out.files.push(p);
  }
  return out;
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

function plainText(res: ServerResponse, status: number, body: string, headers: OutgoingHttpHeaders = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers }).end(body);
}

function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The Web-standard Request for an incoming request: its body streams from the socket. */
export function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const proto = firstHeader(req.headers['x-forwarded-proto'])?.split(',')[0]?.trim() === 'https' ? 'https' : 'http';
  const target = req.url?.startsWith('/') ? req.url : '/';
  // Only a host name (and port) as the authority: a Host like `a/b` would otherwise shift the path.
  const host = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(req.headers.host ?? '') ? req.headers.host! : 'localhost';
  const url = new URL(`${proto}://${host}${target}`);
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const method = req.method ?? 'GET';
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal };
  if (method !== 'GET' && method !== 'HEAD') {
    init.body = Readable.toWeb(req) as unknown as RequestInit['body'];
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

const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

/** Writes a Response: status and headers, then its body streamed with backpressure. */
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
  await pipeline(Readable.fromWeb(response.body as unknown as Parameters<typeof Readable.fromWeb>[0]), res);
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
  if (!byMethod.size && !fallback) throw new TypeError('the module exports no handler: export default function handler(req), or GET, POST, ...');
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
export function cgiEnv(req: IncomingMessage, route: HandlerRoute, params: Record<string, string>, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  // The app's own environment (its env vars and secrets), without anything a request could claim.
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !/^(HTTP_|SVC_AUTH_|SVC_PARAM_)/.test(k)) env[k] = v;
  const url = new URL(req.url?.startsWith('/') ? req.url : '/', 'http://site');
  const host = firstHeader(req.headers.host) ?? '';
  Object.assign(env, {
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
    SERVER_SOFTWARE: 'svc-runtime',
    SERVER_NAME: host.replace(/:\d+$/, '') || 'localhost',
    SERVER_PORT: String(req.socket.localPort ?? ''),
    REMOTE_ADDR: req.socket.remoteAddress ?? '',
    REQUEST_METHOD: req.method ?? 'GET',
    REQUEST_URI: req.url ?? '/',
    SCRIPT_NAME: url.pathname,
    PATH_INFO: '',
    QUERY_STRING: url.search.slice(1),
    SVC_ROUTE: route.pattern,
  });
  if (req.headers['content-type']) env.CONTENT_TYPE = req.headers['content-type'];
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  for (const [name, value] of Object.entries(req.headers)) {
    // `Proxy` as HTTP_PROXY would point the script's HTTP clients at the requester (httpoxy).
    if (value === undefined || name === 'content-type' || name === 'content-length' || name === 'proxy') continue;
    const key = name.toUpperCase().replace(/-/g, '_');
    const joined = Array.isArray(value) ? value.join(name === 'cookie' ? '; ' : ', ') : value;
    env[`HTTP_${key}`] = joined;
    // The verified viewer, as the auth proxy says (it strips client-supplied x-svc-* headers).
    if (name.startsWith(identityHeaderPrefix)) env[`SVC_AUTH_${key.slice(identityHeaderPrefix.length)}`] = joined;
  }
  for (const [name, value] of Object.entries(params)) env[`SVC_PARAM_${name.toUpperCase()}`] = value;
  return env;
}

/** The head of a CGI response: status and headers. Throws when it is not one. */
export function parseCgiHead(head: string): { status: number; statusText?: string; headers: [string, string][] } {
  const lines = head.split(/\r?\n/).filter((l) => l !== '');
  let status: number | undefined;
  let statusText: string | undefined;
  const headers: [string, string][] = [];
  const statusLine = /^HTTP\/\d(?:\.\d)? (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
  if (statusLine) {
    status = Number(statusLine[1]);
    statusText = statusLine[2];
    lines.shift();
  }
  for (const line of lines) {
    const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/.exec(line);
    if (!m) throw new Error(`not a response header line: ${JSON.stringify(line.slice(0, 100))}`);
    const name = m[1]!.toLowerCase();
    if (name === 'status') {
      const s = /^(\d{3})(?: (.*))?$/.exec(m[2]!);
      if (!s) throw new Error(`not a status: ${JSON.stringify(m[2])}`);
      status = Number(s[1]);
      statusText = s[2];
    } else headers.push([m[1]!, m[2]!]);
  }
  if (status === undefined) status = headers.some(([n]) => n.toLowerCase() === 'location') ? 302 : 200;
  if (status < 200 || status > 599) throw new Error(`status ${status} is not a final response status`);
  if (!headers.some(([n]) => n.toLowerCase() === 'content-type')) headers.push(['Content-Type', 'text/plain; charset=utf-8']);
  return { status, ...(statusText ? { statusText } : {}), headers };
}

/** Where a CGI head ends in `buf`: the index of the body, or -1. */
function headEnd(buf: Buffer): { head: number; body: number } | undefined {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { head: crlf, body: crlf + 4 };
  if (lf >= 0) return { head: lf, body: lf + 2 };
  return undefined;
}

export function createHandlerTree(root: string, options: HandlerTreeOptions = {}): HandlerTree {
  const base = path.resolve(root);
  const log = options.log ?? silent;
  const timeoutMs = options.timeoutMs ?? envTimeout();
  const slots = options.processSlots ?? slotsFromEnv();
  const site = createStaticSite(base);
  let cacheDir: string | undefined = options.cacheDir;
  let routes: HandlerRoute[] = [];
  /** Modules that could not be made runnable, and why. */
  const broken = new Map<string, Error>();
  const loaded = new Map<string, Promise<LoadedModule>>();

  const runnablePath = (rel: string) => {
    const ext = path.posix.extname(rel);
    const out = tsOutput[ext.toLowerCase()];
    return out ? rel.slice(0, -ext.length) + out : rel;
  };

  async function prepare(): Promise<void> {
    const { files, packages } = await walk(base);
    const plan = planHandlerRoutes(files);
    routes = plan.routes;
    for (const problem of plan.problems) log.warn({ problem }, 'Handler tree problem');
    cacheDir ??= await mkdtemp(path.join(tmpdir(), 'svc-handlers-'));
    const dest = cacheDir;
    const present = new Set(files);
    const tsFiles = files.filter((f) => tsOutput[path.posix.extname(f).toLowerCase()] && !isTypeDeclaration(f));
    let ts: typeof import('typescript') | undefined;
    if (tsFiles.length) {
      try {
        ts = ((await import('typescript')) as unknown as { default: typeof import('typescript') }).default;
      } catch (err) {
        const missing = new Error(`TypeScript modules need the typescript package in the runtime: ${(err as Error).message}`);
        for (const f of tsFiles) broken.set(f, missing);
      }
    }
    for (const dir of new Set(files.map((f) => path.posix.dirname(f)))) await mkdir(path.join(dest, dir), { recursive: true });
    for (const p of packages) {
      await mkdir(path.join(dest, path.posix.dirname(p)), { recursive: true });
      await symlink(path.join(base, p), path.join(dest, p), 'dir');
    }
    let pkg: Record<string, unknown> = {};
    if (present.has('package.json')) {
      try {
        pkg = JSON.parse(await readFile(path.join(base, 'package.json'), 'utf8')) as Record<string, unknown>;
      } catch (err) {
        log.warn({ err }, 'The tree’s package.json is not JSON; modules run without it');
      }
    }
    await writeFile(path.join(dest, 'package.json'), JSON.stringify({ ...pkg, type: 'module' }));
    for (const file of files) {
      if (file === 'package.json') continue;
      const ext = path.posix.extname(file).toLowerCase();
      const from = path.join(base, file);
      if (tsOutput[ext] && !isTypeDeclaration(file) && ts) {
        const out = runnablePath(file);
        // A JavaScript file of the same name is taken to be this module compiled: it runs as it is.
        if (present.has(out)) continue;
        const result = ts.transpileModule(await readFile(from, 'utf8'), {
          fileName: file,
          reportDiagnostics: true,
          compilerOptions: {
            module: ext === '.cts' ? ts.ModuleKind.CommonJS : ts.ModuleKind.ESNext,
            target: ts.ScriptTarget.ES2022,
            rewriteRelativeImportExtensions: true,
            inlineSourceMap: true,
            inlineSources: false,
          },
        });
        const errors = (result.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
        if (errors.length) {
          broken.set(file, new SyntaxError(`${file}: ${errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`));
          continue;
        }
        await writeFile(path.join(dest, out), result.outputText);
      } else if (['.js', '.mjs', '.cjs', '.json'].includes(ext)) {
        await copyFile(from, path.join(dest, file));
      } else {
        await symlink(from, path.join(dest, file));
      }
    }
    log.info({ routes: routes.map((r) => `${r.pattern} ← ${r.file}`), cacheDir: dest }, 'Handler routes');
  }

  const ready = prepare();
  // Failure shows on every request (500) and once here.
  ready.catch((err: unknown) => log.error({ err }, 'Could not prepare the handler tree'));

  function load(route: HandlerRoute): Promise<LoadedModule> {
    let p = loaded.get(route.file);
    if (!p) {
      const failed = broken.get(route.file);
      p = failed
        ? Promise.reject(failed)
        : import(pathToFileURL(path.join(cacheDir!, runnablePath(route.file))).href).then((mod: Record<string, unknown>) => entriesOf(mod));
      // Node keeps a module that failed to evaluate failed; so do we, logging it once.
      p.catch((err: unknown) => log.error({ err, route: route.pattern, file: route.file }, 'Handler module failed to load'));
      loaded.set(route.file, p);
    }
    return p;
  }

  async function runModule(route: HandlerRoute, params: Record<string, string>, req: IncomingMessage, res: ServerResponse): Promise<void> {
    let mod: LoadedModule;
    try {
      mod = await load(route);
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

  /** A per-request process once a slot is free; 503 when even the queue is full. */
  async function runBoundedProcess(route: HandlerRoute, params: Record<string, string>, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const gone = new AbortController();
    const leave = () => gone.abort();
    res.once('close', leave);
    const release = await slots.acquire(gone.signal);
    res.off('close', leave);
    if (!release) {
      if (res.destroyed) return;
      log.warn({ route: route.pattern, running: slots.inUse, max: slots.max }, 'Handler processes at their limit; request refused');
      res.setHeader('retry-after', '1');
      plainText(res, 503, 'too many requests in progress; try again shortly\n');
      return;
    }
    try {
      await runProcess(route, params, req, res);
    } finally {
      release();
    }
  }

  function runProcess(route: HandlerRoute, params: Record<string, string>, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const file = path.join(base, route.file);
    const interpreter = processInterpreters[path.extname(file).toLowerCase()]!;
    return new Promise<void>((resolve) => {
      // Its own process group, so a timeout or a client gone ends what the script started too.
      const child = spawn(interpreter, [file], { cwd: path.dirname(file), env: cgiEnv(req, route, params), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      let killed = false;
      const kill = () => {
        killed = true;
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      };
      let stderr = '';
      let head: Buffer | undefined = Buffer.alloc(0);
      let finished = false;
      const finish = (status?: number, body?: string, err?: unknown) => {
        if (status && !res.headersSent) {
          if (err) log.error({ err, route: route.pattern, file: route.file, url: req.url, stderr: stderr || undefined }, 'Handler process failed');
          plainText(res, status, body ?? '');
        }
        if (!finished) {
          finished = true;
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        if (res.headersSent) return;
        kill();
        log.warn({ route: route.pattern, file: route.file, url: req.url, timeoutMs }, 'Handler timed out');
        finish(504, 'the handler did not respond in time\n');
      }, timeoutMs);
      const start = (buf: Buffer, end: { head: number; body: number } | undefined) => {
        let parsed: ReturnType<typeof parseCgiHead>;
        try {
          parsed = parseCgiHead(buf.subarray(0, end ? end.head : buf.length).toString('latin1'));
        } catch (err) {
          kill();
          child.stdout.destroy();
          finish(500, 'internal server error\n', err);
          return;
        }
        clearTimeout(timer);
        const headers: OutgoingHttpHeaders = {};
        for (const [name, value] of parsed.headers) {
          const key = name.toLowerCase();
          if (hopByHop.has(key)) continue;
          const had = headers[key];
          headers[key] = had === undefined ? value : ([] as string[]).concat(had as string | string[], value);
        }
        try {
          res.writeHead(parsed.status, parsed.statusText, headers);
        } catch (err) {
          kill();
          child.stdout.destroy();
          finish(500, 'internal server error\n', err);
          return;
        }
        if (req.method === 'HEAD' || !end) {
          res.end();
          child.stdout.destroy();
          return;
        }
        const rest = buf.subarray(end.body);
        if (rest.length) res.write(rest);
        child.stdout.pipe(res);
      };
      child.stdout.on('data', (chunk: Buffer) => {
        if (!head) return;
        head = Buffer.concat([head, chunk]);
        const end = headEnd(head);
        if (end) {
          const buf = head;
          head = undefined;
          start(buf, end);
        } else if (head.length > maxCgiHeaderBytes) {
          head = undefined;
          kill();
          finish(500, 'internal server error\n', new Error(`no end of the response head in the first ${maxCgiHeaderBytes} bytes`));
        }
      });
      child.stdout.on('end', () => {
        // Output without a blank line: a head without a body, if it is one.
        if (head && head.length) {
          const buf = head;
          head = undefined;
          start(buf, undefined);
        }
      });
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (s: string) => {
        stderr = (stderr + s).slice(-4096);
      });
      child.on('error', (err) => finish(500, 'internal server error\n', err));
      child.on('close', (code, signal) => {
        if (!res.headersSent) {
          finish(500, 'internal server error\n', new Error(`the process exited (${signal ?? `code ${code}`}) before its response head`));
        } else {
          if (code !== 0 && !killed) log.error({ route: route.pattern, file: route.file, code, signal, stderr: stderr || undefined }, 'Handler process failed');
          else if (stderr) log.info({ route: route.pattern, file: route.file, stderr }, 'Handler process wrote to stderr');
          if (!res.writableEnded) res.end();
          finish();
        }
      });
      res.once('close', () => {
        // Whatever the script still runs (it or what it started) ends with the response.
        kill();
      });
      child.stdin.on('error', () => {}); // a script that does not read its body
      if (req.method === 'GET' || req.method === 'HEAD') child.stdin.end();
      else req.pipe(child.stdin);
    });
  }

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
    const found = parts && matchRoute(routes, parts);
    if (found) {
      if (found.route.runner === 'module') await runModule(found.route, found.params, req, res);
      else await runBoundedProcess(found.route, found.params, req, res);
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
      if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
    },
  });
}
