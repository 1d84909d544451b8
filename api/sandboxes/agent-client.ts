// The API's side of the sandbox agent (sandbox-agent/server.ts): execs, streams and files, over
// HTTP/1.1 to the pod's address with keep-alive connections (a warm exec costs no TCP handshake),
// authenticated with the pod's derived token. The agent's refusals become the API's errors here;
// nothing of the agent's internals is passed on except its message. Everything the agent answers
// is the tenant's to forge (agent-replies.ts): bounded, checked and held to the request's caps
// before anything is kept, and each request has a deadline, however slowly the agent answers.
import http from 'node:http';
import type { Readable } from 'node:stream';
import { agentToken, type AgentExecRequest, type ExecResult } from '../../lib/sandbox/exec.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { AgentReplyError, boundedExecStream, checkExecResult, execReplyBytes, readBounded, smallReplyBytes } from './agent-replies.js';

/** Where one sandbox's agent is: its pod's address and name (which its token derives from). */
export interface AgentTarget {
  address: string;
  podName: string;
}

const byStatus: Record<number, ErrorCode> = {
  400: 'invalid_request',
  404: 'not_found',
  413: 'payload_too_large',
  429: 'rate_limited',
  507: 'payload_too_large',
};

export class AgentClient {
  private readonly pool = new http.Agent({ keepAlive: true, keepAliveMsecs: 10_000, maxSockets: 64, maxFreeSockets: 16, timeout: 60_000 });

  private readonly execGraceMs: number;

  /** Without a key (no artifact key configured) no sandbox can be reached: 503. */
  constructor(
    private readonly key: Buffer | undefined,
    opts: { execGraceMs?: number } = {},
  ) {
    this.execGraceMs = opts.execGraceMs ?? execGraceMs;
  }

  close(): void {
    this.pool.destroy();
  }

  /** Runs an exec and answers its result (JSON). */
  async exec(target: AgentTarget, req: AgentExecRequest): Promise<ExecResult> {
    const res = await this.request(target, 'POST', '/exec', {
      body: JSON.stringify(req),
      type: 'application/json',
      timeoutMs: req.timeoutMs + this.execGraceMs,
    });
    const body = await bounded(res, execReplyBytes(req.maxOutputBytes));
    try {
      return checkExecResult(body, req.maxOutputBytes);
    } catch (err) {
      if (err instanceof AgentReplyError) throw new ApiError('bad_gateway', err.message);
      throw err;
    }
  }

  /** Runs an exec and answers its NDJSON stream (output lines, then the exit line) as it comes, re-made within bounds. */
  async execStream(target: AgentTarget, req: AgentExecRequest): Promise<Readable> {
    const res = await this.request(target, 'POST', '/exec?stream=1', {
      body: JSON.stringify(req),
      type: 'application/json',
      timeoutMs: req.timeoutMs + this.execGraceMs,
    });
    const out = boundedExecStream(req.maxOutputBytes, () => res.destroy());
    // A connection cut mid-stream (at the deadline, or here for breaking its bounds) ends the
    // stream; flushing adds an exit line saying so where the agent sent none.
    res.once('error', () => undefined);
    res.once('close', () => {
      if (!out.writableEnded) out.end();
    });
    out.once('close', () => res.destroy());
    return res.pipe(out);
  }

  /** Streams `body` into the file at `path` in the sandbox. */
  async upload(target: AgentTarget, path: string, body: Readable, length: number | undefined): Promise<{ path: string; size: number }> {
    const res = await this.request(target, 'PUT', `/files?path=${encodeURIComponent(path)}`, {
      body,
      type: 'application/octet-stream',
      length,
      timeoutMs: 600_000,
    });
    const answer = parse(await bounded(res, smallReplyBytes)) as { path?: unknown; size?: unknown };
    if (
      typeof answer.path !== 'string' ||
      answer.path.length > 4096 ||
      typeof answer.size !== 'number' ||
      !Number.isSafeInteger(answer.size) ||
      answer.size < 0
    ) {
      throw new ApiError('bad_gateway', 'the sandbox agent answered an upload of the wrong shape');
    }
    return { path: answer.path, size: answer.size };
  }

  /** The file at `path` in the sandbox, streamed, with its size. */
  async download(target: AgentTarget, path: string): Promise<{ stream: Readable; size: number | undefined }> {
    const res = await this.request(target, 'GET', `/files?path=${encodeURIComponent(path)}`, { timeoutMs: 600_000 });
    const length = res.headers['content-length'];
    return { stream: res, size: length === undefined ? undefined : Number(length) };
  }

  private request(
    target: AgentTarget,
    method: string,
    path: string,
    opts: { body?: string | Readable; type?: string; length?: number | undefined; timeoutMs: number },
  ): Promise<http.IncomingMessage> {
    if (!this.key)
      return Promise.reject(
        new ApiError('unavailable', 'sandboxes are not configured on this platform (no artifact key: SVC_ARTIFACT_KEY_FILE)'),
      );
    const [host, port] = splitAddress(target.address);
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${agentToken(this.key, target.podName)}` };
    if (opts.type) headers['content-type'] = opts.type;
    if (typeof opts.body === 'string') headers['content-length'] = Buffer.byteLength(opts.body);
    else if (opts.length !== undefined) headers['content-length'] = opts.length;
    return new Promise((resolve, reject) => {
      const req = http.request({ host, port, method, path, headers, agent: this.pool, timeout: opts.timeoutMs }, (res) => {
        // The deadline holds for the whole answer, not only its head: an agent dripping a byte a
        // minute is cut when it passes.
        answered = true;
        res.once('close', () => clearTimeout(deadline));
        if ((res.statusCode ?? 500) < 400) return resolve(res);
        bounded(res, smallReplyBytes).then(
          (body) => reject(agentError(res.statusCode ?? 500, errorOf(body))),
          () => reject(agentError(res.statusCode ?? 500, undefined)),
        );
      });
      let answered = false;
      const deadline = setTimeout(
        () => req.destroy(new Error(`the sandbox agent did not finish within ${Math.round(opts.timeoutMs / 1000)} s`)),
        opts.timeoutMs,
      );
      req.once('close', () => {
        if (!answered) clearTimeout(deadline);
      });
      req.once('timeout', () => req.destroy(new Error('the sandbox agent did not answer in time')));
      req.once('error', (err) =>
        reject(new ApiError('unavailable', `the sandbox did not answer (${err.message}); it may have just ended`, { 'Retry-After': '1' })),
      );
      if (opts.body === undefined) req.end();
      else if (typeof opts.body === 'string') req.end(opts.body);
      else {
        opts.body.once('error', (err) => req.destroy(err));
        opts.body.pipe(req);
      }
    });
  }
}

function agentError(status: number, message: string | undefined): ApiError {
  const code = byStatus[status];
  if (code)
    return new ApiError(
      code,
      message ?? `the sandbox refused the request (${status})`,
      code === 'rate_limited' ? { 'Retry-After': '1' } : {},
    );
  return new ApiError('unavailable', `the sandbox failed the request (${status}${message ? `: ${message}` : ''})`, { 'Retry-After': '1' });
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}

/** After an exec's own timeout, how long the agent has to answer its end. */
const execGraceMs = 10_000;

/** A whole answer within `limit`; breaking it (or the connection) is a 502 naming what the agent did. */
async function bounded(res: http.IncomingMessage, limit: number): Promise<Buffer> {
  try {
    return await readBounded(res, limit);
  } catch (err) {
    throw new ApiError(
      'bad_gateway',
      err instanceof AgentReplyError
        ? err.message
        : `the sandbox agent's answer broke off (${err instanceof Error ? err.message : String(err)})`,
    );
  }
}

function parse(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    throw new ApiError('bad_gateway', 'the sandbox agent answered something that is not JSON');
  }
}

/** The message of an error answer, if it has one that reads as a message. */
function errorOf(body: Buffer): string | undefined {
  const text = body.toString('utf8');
  let said: unknown = text;
  try {
    said = (JSON.parse(text) as { error?: unknown }).error;
  } catch {
    // a plain-text answer: its text
  }
  return typeof said === 'string' && said ? said.slice(0, 1000) : undefined;
}
