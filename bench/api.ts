// bench/api: authenticated GET /api/account through the whole API chain, against a bare Koa
// handler measured in the same run on the same machine. Prints requests/s, the ratio, and latency.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { repoRoot } from '../lib/paths.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const duration = Number(process.env.BENCH_SECONDS ?? 10);

async function startServer(mode: 'bare' | 'api') {
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist/bench/api-server.js'), mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const { url, token } = JSON.parse(line) as { url: string; token: string };
  return {
    url,
    token,
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

async function load(url: string, headers: Record<string, string>, seconds: number) {
  const result = await autocannon({ url, connections, duration: seconds, headers, pipelining: 1 });
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad > 0) throw new Error(`${url}: ${bad} failed requests (non-2xx ${result.non2xx}, errors ${result.errors})`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, total: result.requests.total };
}

async function measure(mode: 'bare' | 'api') {
  const s = await startServer(mode);
  try {
    const url = `${s.url}/api/account`;
    const headers = { authorization: `Bearer ${s.token}` };
    await load(url, headers, 2); // warm-up: JIT, connection pools, caches
    return await load(url, headers, duration);
  } finally {
    await s.stop();
  }
}

const bare = await measure('bare');
const api = await measure('api');
const ratio = api.rps / bare.rps;
console.log(`bench/api: GET /api/account, ${connections} connections, ${duration}s each, same machine, same run`);
console.log(`  bare Koa handler   ${bare.rps.toFixed(0).padStart(7)} req/s   p50 ${bare.p50} ms   p99 ${bare.p99} ms`);
console.log(`  API, authenticated ${api.rps.toFixed(0).padStart(7)} req/s   p50 ${api.p50} ms   p99 ${api.p99} ms`);
console.log(`  ratio API/bare     ${ratio.toFixed(2)}   (goal >= 0.5)`);
