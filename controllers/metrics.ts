// The controllers' own listener: GET /metrics (Prometheus text: controllers' work, the sandbox
// pool's depth, launches by kind) and GET /healthz (the process answers; a follower too). On
// loopback by default (SVC_CONTROLLERS_METRICS_HOST/PORT).
import { createServer, type Server } from 'node:http';

export function serveMetrics(host: string, port: number, metrics: () => string): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(metrics());
    } else if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
