// What a request's connection says about it: whether it came over TLS (the HTTPS listener), and
// whether its Host is the name the connection was opened for (SNI), which it must be: a connection
// opened for one tenant's name never carries another's requests (421 Misdirected Request, RFC 9110
// 15.5.20). And the https origin of a hostname, for redirects and links.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { hostnameOf } from '../host.js';

export function isTls(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket> | null)?.encrypted === true;
}

/** The connection's SNI name (lowercased, without a trailing dot), or undefined for plain HTTP or no SNI. */
export function sniName(req: IncomingMessage): string | undefined {
  if (!isTls(req)) return undefined;
  const name = (req.socket as TLSSocket).servername;
  if (typeof name !== 'string' || !name) return undefined;
  const n = name.toLowerCase();
  return n.endsWith('.') ? n.slice(0, -1) : n;
}

/** A request over TLS whose Host is not the connection's SNI name. */
export function misdirected(req: IncomingMessage): boolean {
  if (!isTls(req)) return false;
  const sni = sniName(req);
  return sni === undefined || hostnameOf(req.headers.host) !== sni;
}

export const misdirectedBody = 'this connection was opened for another name: open one for this host\n';

/** `https://<hostname>`, with the port clients reach the HTTPS listener on unless it is 443. */
export function httpsOrigin(hostname: string, publicPort: number): string {
  return `https://${hostname}${publicPort === 443 ? '' : `:${publicPort}`}`;
}

/** The 421 answer's headers and body (plain text: whoever reads it is a client, not a person). */
export function misdirectedAnswer(requestId: string): { headers: Record<string, string | number>; body: string } {
  return {
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(misdirectedBody),
      'cache-control': 'no-store',
      'x-request-id': requestId,
    },
    body: misdirectedBody,
  };
}
