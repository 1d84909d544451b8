// Answers of the platform's sign-in routes: never stored by any cache (rule: login, denied and
// authenticated dynamic responses are private and no-store), always with the request id.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RenderedPage } from './pages.js';
import { readLimited } from '../../lib/http/body.js';

export const privateNoStore = 'private, no-store';

function common(requestId: string): Record<string, string> {
  return {
    'cache-control': privateNoStore,
    'x-request-id': requestId,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, requestId: string): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...common(requestId),
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(res.req?.method === 'HEAD' ? undefined : text);
}

export function sendPage(res: ServerResponse, status: number, page: RenderedPage, requestId: string): void {
  res.writeHead(status, {
    ...common(requestId),
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(page.body),
    'content-security-policy': page.csp,
    'x-frame-options': 'DENY',
  });
  res.end(res.req?.method === 'HEAD' ? undefined : page.body);
}

export function redirect(res: ServerResponse, location: string, requestId: string, status = 303): void {
  res.writeHead(status, { ...common(requestId), location, 'content-length': 0 });
  res.end();
}

/** A small request body (sign-in forms and JSON): JSON or form-encoded, at most `limit` bytes. */
export async function readForm(req: IncomingMessage, limit = 16 * 1024): Promise<Record<string, unknown>> {
  const body = await readLimited(req, limit);
  if (!body) throw new BodyError(413, `the request body is larger than ${limit} bytes`);
  const text = body.toString('utf8');
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') {
    try {
      const v: unknown = text ? JSON.parse(text) : {};
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
      return v as Record<string, unknown>;
    } catch {
      throw new BodyError(400, 'the request body is not a JSON object');
    }
  }
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(text));
  throw new BodyError(415, 'send application/json or a form');
}

export class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'BodyError';
  }
}
