// The agent's HTTP interface, as the platform (and nobody else) calls it: every route but /healthz
// needs the pod's bearer token (lib/sandbox/exec.ts, agentToken). The NetworkPolicy of the sandbox
// namespace already admits only the platform's addresses to the agent's port; the token is the
// second lock, and the only one on a cluster without a policy engine.
//
//   GET  /healthz          "ok" once warmed up (the kubelet's readiness probe)
//   GET  /info             last activity, execs running; with ?runtimes=1 the installed runtimes
//   POST /exec             an exec (lib/sandbox/exec.ts AgentExecRequest): JSON result, or with
//                          ?stream=1 NDJSON lines as output comes and an exit line
//   PUT  /files?path=P     the request body, streamed, becomes file P (parents made)
//   GET  /files?path=P     file P, streamed
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { drain } from '../lib/drain.js';
import { parseAgentExecRequest, sameToken, type AgentInfo, type ExecEvent } from '../lib/sandbox/exec.js';
import type { InstalledRuntime } from '../lib/sandbox/runtimes.js';
import { runExec, type ExecEnvironment } from './exec.js';

export interface AgentOptions {
  token: string;
  env: ExecEnvironment;
  /** The installed runtimes (probed once, on the first ask). */
  runtimes: () => Promise<InstalledRuntime[]>;
  /** Execs at once; more are refused with 429. */
  maxRunning: number;
  /**
   * Ends what execs left running once none runs (strays.ts), sparing these processes (the
   * agent's own helpers). Only in a sandbox pod: elsewhere it would end the user's other processes.
   */
  endStrays?: (() => Promise<void>) | undefined;
}

const maxExecBody = 64 * 1024 * 1024;

export class Agent {
  /** Until set, /healthz answers 503: the kubelet marks the pod ready only once the agent is warm. */
  warm = false;
  private running = 0;
  /** Ending what the last exec left behind (strays.ts); the next exec waits for it. */
  private cleaning: Promise<void> = Promise.resolve();
  private lastActivity = new Date();
  readonly startedAt = new Date();

  constructor(private readonly opts: AgentOptions) {}

  listen(port: number, host = '0.0.0.0'): Promise<Server> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) send(res, 500, { error: err instanceof Error ? err.message : String(err) });
        else res.destroy();
      });
    });
    server.keepAliveTimeout = 65_000;
    return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
  }

  private touch(): void {
    this.lastActivity = new Date();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://agent');
    if (url.pathname === '/healthz') return this.warm ? send(res, 200, 'ok') : send(res, 503, 'warming up');
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !sameToken(auth.slice(7), this.opts.token)) return send(res, 401, { error: 'unauthorized' });
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case 'GET /info': {
        const info: AgentInfo = {
          ...(url.searchParams.get('runtimes') === '1' ? { runtimes: await this.opts.runtimes() } : {}),
          started_at: this.startedAt.toISOString(),
          last_activity_at: this.lastActivity.toISOString(),
          running: this.running,
        };
        return send(res, 200, info);
      }
      case 'POST /exec':
        return this.exec(req, res, url.searchParams.get('stream') === '1');
      case 'PUT /files':
        return this.upload(req, res, url.searchParams.get('path'));
      case 'GET /files':
        return this.download(res, url.searchParams.get('path'));
      default:
        return send(res, 404, { error: `no route ${route}` });
    }
  }

  private resolve(p: string | null): string | undefined {
    if (!p) return undefined;
    return path.resolve(this.opts.env.home, p);
  }

  private async exec(req: IncomingMessage, res: ServerResponse, stream: boolean): Promise<void> {
    const raw = await readBody(req, maxExecBody);
    if (raw === undefined) return send(res, 413, { error: `exec request larger than ${maxExecBody} bytes` });
    let parsed;
    try {
      parsed = parseAgentExecRequest(JSON.parse(raw.toString('utf8')));
    } catch {
      return send(res, 400, { error: 'body is not JSON' });
    }
    if (typeof parsed === 'string') return send(res, 400, { error: parsed });
    if (this.running >= this.opts.maxRunning)
      return send(res, 429, {
        error: `${this.running} execs are running in this sandbox already (at most ${this.opts.maxRunning} at once)`,
      });
    this.running += 1;
    this.touch();
    // What the last exec left behind is ended before anything of this one starts.
    await this.cleaning;
    try {
      if (!stream) {
        const result = await runExec(parsed, this.opts.env);
        return send(res, 200, result);
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
      res.flushHeaders();
      const line = (e: ExecEvent) => res.write(`${JSON.stringify(e)}\n`);
      const result = await runExec(parsed, this.opts.env, line);
      const { stdout: _o, stderr: _e, ...exit } = result;
      res.end(`${JSON.stringify({ type: 'exit', ...exit })}\n`);
    } finally {
      this.running -= 1;
      this.touch();
      if (this.running === 0 && this.opts.endStrays) this.cleaning = this.opts.endStrays().catch(() => undefined);
    }
  }

  private async upload(req: IncomingMessage, res: ServerResponse, p: string | null): Promise<void> {
    const file = this.resolve(p);
    if (!file) {
      await drain(req);
      return send(res, 400, { error: 'path is required' });
    }
    this.touch();
    try {
      await mkdir(path.dirname(file), { recursive: true });
      await writeAll(req, file);
    } catch (err) {
      // Nothing half-written stays behind (a full disk, a cut connection); the rest of the body is
      // read and dropped, so the caller, still sending, gets this answer and not a reset connection.
      await rm(file, { force: true }).catch(() => undefined);
      await drain(req);
      return send(res, fsStatus(err), { error: fsMessage(err, file) });
    }
    this.touch();
    const { size } = await stat(file);
    return send(res, 200, { path: file, size });
  }

  private async download(res: ServerResponse, p: string | null): Promise<void> {
    const file = this.resolve(p);
    if (!file) return send(res, 400, { error: 'path is required' });
    this.touch();
    let size: number;
    try {
      const s = await stat(file);
      if (!s.isFile()) return send(res, 400, { error: `${file} is not a regular file` });
      size = s.size;
    } catch (err) {
      return send(res, fsStatus(err), { error: fsMessage(err, file) });
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
    await pipeline(createReadStream(file), res).catch(() => res.destroy());
  }
}

/** The request body into `file`; the body is left unconsumed (not destroyed) if writing fails. */
function writeAll(req: IncomingMessage, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(file);
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      req.unpipe(out);
      out.destroy();
      reject(err);
    };
    out.once('error', fail);
    req.once('error', fail);
    req.once('aborted', () => fail(Object.assign(new Error('the upload was cut off'), { code: 'ECONNRESET' })));
    out.once('finish', () => {
      if (!failed) resolve();
    });
    req.pipe(out);
  });
}

function fsStatus(err: unknown): number {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT'
    ? 404
    : code === 'EACCES' || code === 'EROFS' || code === 'EISDIR' || code === 'ENOTDIR'
      ? 400
      : code === 'ENOSPC' || code === 'EFBIG'
        ? 507
        : 500;
}

function fsMessage(err: unknown, file: string): string {
  const code = (err as NodeJS.ErrnoException).code;
  const what: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EROFS: 'read-only file system (write under /home/app or /tmp)',
    EISDIR: 'is a directory',
    ENOTDIR: 'a parent is not a directory',
    ENOSPC: 'no space left: the sandbox disk is full',
    EFBIG: 'file too large for the sandbox',
  };
  return `${file}: ${what[code ?? ''] ?? (err instanceof Error ? err.message : String(err))}`;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/plain' : 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
