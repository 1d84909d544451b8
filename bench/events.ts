// bench/events: publish-to-follower latency of the event log's SSE follow at 1, 100 and 1,000
// followers of one account on one API process, against a bare node:http SSE fan-out of the same
// payload measured in the same run; then webhook deliveries per second to a loopback receiver.
// The API's publish is the real one: recordEvent (insert under the account's lock, NOTIFY at
// commit), then the hub's one read for all followers. Goal: p99 under 100 ms at 1,000 followers.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, createServer, get, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { connect } from '../lib/db/connection.js';
import { recordEvent } from '../lib/events.js';
import { repoRoot } from '../lib/paths.js';
import { createWebhook } from '../lib/webhooks/store.js';
import { percentile } from './support.js';

const followerCounts = (process.env.BENCH_FOLLOWERS ?? '1,100,1000').split(',').map(Number);
const publishes = Number(process.env.BENCH_PUBLISHES ?? 50);
const gapMs = Number(process.env.BENCH_GAP_MS ?? 20);
const deliveries = Number(process.env.BENCH_DELIVERIES ?? 2000);

const now = () => performance.timeOrigin + performance.now();

interface Ready {
  url: string;
  token: string;
  accountId: string;
  databaseUrl: string;
}

async function startServer(mode: 'bare' | 'api') {
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist/bench/events-server.js'), mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return {
    ...(JSON.parse(line) as Ready),
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** n SSE followers; each frame's `t` (when it was published) gives one latency sample. */
async function follow(url: string, token: string, n: number, onSample: (ms: number) => void) {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const requests: Array<ReturnType<typeof get>> = [];
  let connected = 0;
  await new Promise<void>((resolve, reject) => {
    for (let i = 0; i < n; i++) {
      const req = get(url, { agent, headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`follow answered ${res.statusCode}`));
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          let i: number;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const data = /^data: (.*)$/m.exec(frame)?.[1];
            if (!data) continue;
            const t = /"t":([0-9.]+)/.exec(data)?.[1];
            if (t) onSample(now() - Number(t));
          }
        });
        if (++connected === n) resolve();
      });
      req.on('error', reject);
      requests.push(req);
    }
  });
  return () => {
    for (const r of requests) r.destroy();
    agent.destroy();
  };
}

async function latency(mode: 'bare' | 'api', followers: number) {
  const s = await startServer(mode);
  const db = mode === 'api' ? connect(s.databaseUrl, { poolMax: 2 }) : undefined;
  try {
    const samples: number[] = [];
    const url = mode === 'api' ? `${s.url}/api/events?follow=true&kinds=deploy.live` : `${s.url}/`;
    const close = await follow(url, s.token, followers, (ms) => samples.push(ms));
    const publish = async () => {
      const payload = { t: now() };
      if (db) await recordEvent(db, s.accountId, 'deploy.live', 'bench', payload);
      else {
        const req = request(`${s.url}/`, { method: 'POST' });
        req.end(JSON.stringify(payload));
        await once(req, 'response');
      }
    };
    for (let i = 0; i < 5; i++) await publish(); // warm-up: JIT, the hub's first reads
    await new Promise((r) => setTimeout(r, 500));
    samples.length = 0;
    for (let i = 0; i < publishes; i++) {
      await publish();
      await new Promise((r) => setTimeout(r, gapMs));
    }
    const want = publishes * followers;
    const deadline = Date.now() + 30_000;
    while (samples.length < want && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    close();
    if (samples.length < want) throw new Error(`${mode}, ${followers} followers: ${samples.length} of ${want} frames arrived`);
    samples.sort((a, b) => a - b);
    return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
  } finally {
    await db?.destroy();
    await s.stop();
  }
}

async function webhookRate() {
  const s = await startServer('api');
  const db = connect(s.databaseUrl, { poolMax: 4 });
  let received = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => (done = r));
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.end('ok');
      if (++received === deliveries) done();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    await createWebhook(db, s.accountId, {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      eventTypes: ['deploy.*'],
    });
    const started = now();
    for (let i = 0; i < deliveries; i += 100) {
      await db.transaction(async (tx) => {
        for (let j = i; j < Math.min(i + 100, deliveries); j++) await recordEvent(tx, s.accountId, 'deploy.live', 'bench', { n: j });
      });
    }
    await Promise.race([
      all,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`${received} of ${deliveries} deliveries in 120 s`)), 120_000)),
    ]);
    const seconds = (now() - started) / 1000;
    return { perSecond: deliveries / seconds, seconds };
  } finally {
    receiver.close();
    await db.destroy();
    await s.stop();
  }
}

const fmt = (n: number) => n.toFixed(1).padStart(7);
console.log(`bench/events: ${publishes} publishes ${gapMs} ms apart per row; latency publish → follower (ms)`);
console.log('followers   bare p50   bare p99    api p50    api p99');
let worstP99 = 0;
for (const n of followerCounts) {
  const bare = await latency('bare', n);
  const api = await latency('api', n);
  worstP99 = Math.max(worstP99, api.p99);
  console.log(`${String(n).padStart(9)}  ${fmt(bare.p50)}    ${fmt(bare.p99)}    ${fmt(api.p50)}    ${fmt(api.p99)}`);
}
const rate = await webhookRate();
console.log(`webhooks: ${deliveries} deliveries to a loopback receiver in ${rate.seconds.toFixed(1)} s: ${rate.perSecond.toFixed(0)}/s`);
console.log(
  `goal: api p99 < 100 ms at ${followerCounts.at(-1)} followers: ${worstP99 < 100 ? 'met' : 'NOT met'} (${worstP99.toFixed(1)} ms)`,
);
process.exit(0);
