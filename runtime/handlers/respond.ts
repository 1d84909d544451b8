// Small answers the handler runtime writes itself, and header helpers its parts share.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

export function plainText(res: ServerResponse, status: number, body: string, headers: OutgoingHttpHeaders = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers }).end(body);
}

export function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The Web-standard Request for an incoming request: its body streams from the socket. */

export const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

/** Writes a Response: status and headers, then its body streamed with backpressure. */
