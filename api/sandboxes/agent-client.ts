// The API's side of the sandbox agent (sandbox-agent/server.ts): execs, streams and files, over
// HTTP/1.1 to the pod's address with keep-alive connections (a warm exec costs no TCP handshake),
// authenticated with the pod's derived token. The agent's refusals become the API's errors here;
// nothing of the agent's internals is passed on except its message.
import http from 'node:http';
import type { Readable } from 'node:stream';
import { agentToken, type AgentExecRequest, type ExecResult } from '../../lib/sandbox/exec.js';
import { ApiError, type ErrorCode } from '../errors.js';

/** Where one sandbox's agent is: its pod's address and name (which its token derives from). */
export interface AgentTarget {
  address: string;
  podName: string;
}

const byStatus: Record<number, ErrorCode> = { 400: 'invalid_request', 404: 'not_found', 413: 'payload_too_large', 429: 'rate_limited', 507: 'payload_too_large' };

export class AgentClient {
  private readonly pool = new http.Agent({ keepAlive: true, keepAliveMsecs: 10_000, maxSockets: 64, maxFreeSockets: 16, timeout: 60_000 });

  /** Without a key (no artifact key configured) no sandbox can be reached: 503. */
  constructor(private readonly key: Buffer | undefined) {}

  close(): void {
    this.pool.destroy();
  }

  /** Runs an exec and answers its result (JSON). */
  async exec(target: AgentTarget, req: AgentExecRequest): Promise<ExecResult> {
    const res = await this.request(target, 'POST', '/exec', { body: JSON.stringify(req), type: 'application/json', timeoutMs: req.timeoutMs + 30_000 });
    return (await readJson(res)) as ExecResult;
  }

  /** Runs an exec and answers its NDJSON stream (output lines, then the exit line) as it comes. */
  async execStream(target: AgentTarget, req: AgentExecRequest): Promise<Readable> {
    return this.request(target, 'POST', '/exec?stream=1', { body: JSON.stringify(req), type: 'application/json', timeoutMs: req.timeoutMs + 30_000 });
  }

  /** Streams `body` into the file at `path` in the sandbox. */
  async upload(target: AgentTarget, path: string, body: Readable, length: number | undefined): Promise<{ path: string; size: number }> {
    const res = await this.request(target, 'PUT', `/files?path=${encodeURIComponent(path)}`, { body, type: 'application/octet-stream', length, timeoutMs: 600_000 });
    return (await readJson(res)) as { path: string; size: number };
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
    if (!this.key) return Promise.reject(new ApiError('unavailable', 'sandboxes are not configured on this platform (no artifact key: SVC_ARTIFACT_KEY_FILE)'));
    const [host, port] = splitAddress(target.address);
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${agentToken(this.key, target.podName)}` };
    if (opts.type) headers['content-type'] = opts.type;
    if (typeof opts.body === 'string') headers['content-length'] = Buffer.byteLength(opts.body);
    else if (opts.length !== undefined) headers['content-length'] = opts.length;
    return new Promise((resolve, reject) => {
      const req = http.request({ host, port, method, path, headers, agent: this.pool, timeout: opts.timeoutMs }, (res) => {
        if ((res.statusCode ?? 500) < 400) return resolve(res);
        readJson(res, true).then(
          (body) => reject(agentError(res.statusCode ?? 500, (body as { error?: string }).error)),
          () => reject(agentError(res.statusCode ?? 500, undefined)),
        );
      });
      req.once('timeout', () => req.destroy(new Error('the sandbox agent did not answer in time')));
      req.once('error', (err) => reject(new ApiError('unavailable', `the sandbox did not answer (${err.message}); it may have just ended`, { 'Retry-After': '1' })));
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
  if (code) return new ApiError(code, message ?? `the sandbox refused the request (${status})`, code === 'rate_limited' ? { 'Retry-After': '1' } : {});
  return new ApiError('unavailable', `the sandbox failed the request (${status}${message ? `: ${message}` : ''})`, { 'Retry-After': '1' });
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}

async function readJson(res: http.IncomingMessage, lenient = false): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    // An error answer is short; an exec result is at most twice the output cap plus a little.
    if (size > 256 * 1024 * 1024) throw new Error('the sandbox answered too much');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (lenient && !text.startsWith('{')) return { error: text || undefined };
  return JSON.parse(text) as unknown;
}
