// `.py` and `.sh` handlers: a process per request, CGI style (RFC 3875), at most as many at once as
// the process slots allow; the response head parsed from the script's output, within the deadline.
import { spawn } from 'node:child_process';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import path from 'node:path';
import { identityHeaderPrefix } from '../../lib/contract.js';
import { processInterpreters, type HandlerRoute } from '../../lib/handlers/routes.js';
import type { Logger } from '../../lib/logger.js';
import type { ProcessSlots } from '../process-slots.js';
import { firstHeader, hopByHop, plainText } from './respond.js';

const maxCgiHeaderBytes = 64 * 1024;

export interface ProcessContext {
  /** The tree's root: scripts run from where they are, not from the copy. */
  base: string;
  timeoutMs: number;
  slots: ProcessSlots;
  log: Logger;
}

export function cgiEnv(
  req: IncomingMessage,
  route: HandlerRoute,
  params: Record<string, string>,
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
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

/** A per-request process once a slot is free; 503 when even the queue is full. */
export async function runBoundedProcess(
  ctx: ProcessContext,
  route: HandlerRoute,
  params: Record<string, string>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { slots, log } = ctx;
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
    await runProcess(ctx, route, params, req, res);
  } finally {
    release();
  }
}

function runProcess(
  ctx: ProcessContext,
  route: HandlerRoute,
  params: Record<string, string>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { base, timeoutMs, log } = ctx;
  const file = path.join(base, route.file);
  const interpreter = processInterpreters[path.extname(file).toLowerCase()]!;
  return new Promise<void>((resolve) => {
    // Its own process group, so a timeout or a client gone ends what the script started too.
    const child = spawn(interpreter, [file], {
      cwd: path.dirname(file),
      env: cgiEnv(req, route, params),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
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
        if (err)
          log.error({ err, route: route.pattern, file: route.file, url: req.url, stderr: stderr || undefined }, 'Handler process failed');
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
        if (code !== 0 && !killed)
          log.error({ route: route.pattern, file: route.file, code, signal, stderr: stderr || undefined }, 'Handler process failed');
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
