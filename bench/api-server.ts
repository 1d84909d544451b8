// A server for bench/api.ts, in its own process so the load generator does not share its event
// loop. `bare`: a plain Koa handler answering a fixed account. `api`: the real API with its whole
// chain (request id, log line, error handler, router, token verification, revocation check, rate
// limiter, account lookup) against a fresh database. Prints {"url", "token"} when ready.
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createApi } from '../api/server.js';
import { benchApi } from './support.js';

const mode = process.argv[2];
const account = { id: 'acct_0', email: 'bench@example.test', name: 'bench', namespace: 'svc-acct-0', created_at: new Date().toISOString() };

async function bare(): Promise<{ app: Koa; token: string; cleanup: () => Promise<void> }> {
  const app = new Koa();
  app.use(async (ctx) => {
    ctx.body = account;
  });
  return { app, token: 'unused', cleanup: async () => undefined };
}

async function api(): Promise<{ app: Koa; token: string; cleanup: () => Promise<void> }> {
  const b = await benchApi();
  return { app: createApi(b.deps), token: b.token, cleanup: b.cleanup };
}

const { app, token, cleanup } = mode === 'bare' ? await bare() : await api();
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}`, token }));
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void cleanup().finally(() => process.exit(0));
});
