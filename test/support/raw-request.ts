// A raw HTTP request for attack tests: the target is sent as written, not normalized by a URL parser
// (fetch would resolve `/a/../b` and refuse some Host headers), and the body read as text.
import { request } from 'node:http';

export function rawRequest(
  base: string,
  target: string,
  opts: { method?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: target,
        method: opts.method ?? 'GET',
        headers: opts.headers ?? {},
        ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
