// When a failed upstream request may be sent again to another machine: only when the app cannot
// have seen it act (the connection was refused, or reset/closed before any response byte: a machine
// draining or a keep-alive connection the machine closed just as we reused it), and only when sending
// it twice is harmless (an idempotent method, RFC 9110 9.2.2) and we still have the whole request (no
// body: a streamed body is gone once sent).

const idempotent = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Error codes of node:net and the Upstream (upstream/upstream.ts) that mean "no response started". */
const beforeResponse = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'UPSTREAM_CLOSED',
  'UPSTREAM_CONNECT_TIMEOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  if (typeof e?.code === 'string') return e.code;
  if (typeof e?.cause?.code === 'string') return e.cause.code;
  return undefined;
}

/** Whether the request has a body (a length above 0 or a chunked one). */
export function hasBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length.trim() !== '0';
}

export function retryable(method: string, withBody: boolean, err: unknown, responseStarted: boolean): boolean {
  if (responseStarted || withBody || !idempotent.has(method.toUpperCase())) return false;
  const code = errorCode(err);
  return code !== undefined && beforeResponse.has(code);
}
