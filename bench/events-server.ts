// A server for bench/events.ts, in its own process so the followers and publisher do not share its
// event loop. `bare`: node:http answering every GET with an SSE stream and writing each POSTed
// payload to all of them as one frame: the floor of SSE fan-out on this machine. `api`: the real API
// (GET /api/events?follow=true through the whole chain, PostgreSQL LISTEN, the hub's per-account
// read) on a fresh database, its webhook deliverer allowed to loopback. Prints
// {"url", "token", "accountId", "databaseUrl"} when ready.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApi } from '../api/server.js';
import { benchApi } from './support.js';

const mode = process.argv[2];

function bare() {
  const followers = new Set<ServerResponse>();
  let id = 0;
  const server = createServer((req, res) => {
    if (req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        id++;
        const frame = `id: ${id}\nevent: deploy.live\ndata: ${body}\n\n`;
        for (const f of followers) f.write(frame);
        res.end();
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    res.write('retry: 3000\n\n');
    followers.add(res);
    res.on('close', () => followers.delete(res));
  });
  return { server, ready: { token: 'unused', accountId: '', databaseUrl: '' }, cleanup: async () => undefined };
}

async function api() {
  const b = await benchApi({ SVC_WEBHOOK_ALLOW_PRIVATE: 'true' });
  const app = createApi(b.deps);
  // Koa's handler answers its own errors: the promise it returns never rejects.
  const handle = app.callback();
  const server = createServer((req, res) => void handle(req, res));
  return { server, ready: { token: b.token, accountId: b.accountId, databaseUrl: b.databaseUrl }, cleanup: b.cleanup };
}

const { server, ready, cleanup } = mode === 'bare' ? bare() : await api();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}`, ...ready }));
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void cleanup().finally(() => process.exit(0));
});
