// bench/html-data: an HTML app's data bindings (issue 34) through the real ingress-auth server, on a
// throwaway PostgreSQL database, with the App's compiled bindings in a fixed route table (no cluster).
//   read   GET of a `list` binding (20 records of a guestbook, newest first) against GET of a static
//          file of the same app proxied to a node:http upstream: the latency the binding adds
//          (p50 at 8 connections, loaded by wrk or autocannon in its own process). Bound: < 5 ms.
//          Also with the read cache off (ingress-auth/data/read-cache.ts): every read a query.
//   page   GET of the page itself, its list filled by the first render (ingress-auth holds the
//          machine's HTML and writes the 20 records into it): what a crawler's or a reader's
//          first answer costs over the static file.
//   live   100 subscribers follow the list over SSE; each of 50 writes (one every 50 ms) is timed
//          from the POST to its event at every subscriber: write-to-visible p50/p99 over the
//          5,000. Bound: p99 < 200 ms. Subscribers run in this process (their parsing shares the
//          server's event loop: the figure is an upper bound).
// The rate limits are out of the way (they are per client address, and everything here is one).
// BENCH_SECONDS (5) per read run, BENCH_REPEATS (3) runs of each read, interleaved.
import { once } from 'node:events';
import * as k8s from '@kubernetes/client-node';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDataParts } from '../ingress-auth/data/parts.js';
import { startIngress } from '../ingress-auth/server.js';
import { loadConfig } from '../lib/config.js';
import { connect } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { annotatePage, compileBindings } from '../lib/html-data/compile.js';
import { createLogger } from '../lib/logger.js';
import type { App } from '../lib/resources/index.js';
import { benchHost, load, median, medianSpread } from './load.js';
import { fixedRoutes } from './routes.js';
import { benchDatabase, percentile } from './support.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const subscribers = Number(process.env.BENCH_SUBSCRIBERS ?? 100);
const writes = Number(process.env.BENCH_WRITES ?? 50);

const page = `<!doctype html><title>Guestbook</title>
<ul data-svc="list entries order=-_created limit=20"><template><li><b data-svc="field name"></b> <span data-svc="field message"></span></li></template></ul>
<form data-svc="create entries for=public"><input name="name" maxlength="80" required><textarea name="message" maxlength="500" required></textarea></form>`;
const model = compileBindings(new Map([['index.html', page]]))!;
const listId = model.bindings.find((b) => b.verb === 'list')!.id;
const createId = model.bindings.find((b) => b.verb === 'create')!.id;

const database = await benchDatabase();
const db = connect(database.url);
await migrateLatest(db);
// The page as the runtime serves it (ids beside the bindings); the static file: the same bytes as a stylesheet, never held.
const annotated = annotatePage('index.html', page)!;
const upstream = createServer((req, res) =>
  res
    .writeHead(200, {
      'content-type': req.url === '/index.html' ? 'text/html' : 'text/css',
      'content-length': Buffer.byteLength(annotated),
    })
    .end(annotated),
);
upstream.keepAliveTimeout = 65_000;
upstream.listen(0, '127.0.0.1');
await once(upstream, 'listening');
const upstreamPort = (upstream.address() as AddressInfo).port;

const app = {
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: { name: 'bench', namespace: 'svc-acct-bench', uid: '00000000-0000-4000-8000-0000000000d1' },
  spec: { kind: 'html', data: model },
} as unknown as App;
const routes = fixedRoutes(app, upstreamPort);
const config = loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_DATABASE_URL: database.url }, { exists: () => false });
const log = createLogger('ingress-auth', 'silent');
const unlimited = { burst: 1e12, perSecond: 1e12 };
const data = await startDataParts(db, database.url, log, { read: unlimited, write: unlimited });
const { store } = data;
const ingress = await startIngress({ config, kc: new k8s.KubeConfig(), log, routes, data, host: '127.0.0.1', port: 0 });
const base = ingress.url;
/** A request to ingress-auth with the app's Host (fetch cannot set it). */
function send(method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path, method, headers: { host: benchHost, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
const appUid = app.metadata.uid!;
for (let i = 0; i < 40; i++) await store.create(appUid, 'entries', null, { name: `guest ${i}`, message: 'hello '.repeat(20) });

try {
  // ---- read: a list binding against a static file, both through ingress-auth ----
  type Side = 'static' | 'binding' | 'uncached' | 'page';
  const sides: Record<Side, number[]> = { static: [], binding: [], uncached: [], page: [] };
  const sidesP99: Record<Side, number[]> = { static: [], binding: [], uncached: [], page: [] };
  const urls: Record<Side, string> = {
    static: `${base}/style.css`,
    binding: `${base}/_svc/data/${listId}`,
    uncached: `${base}/_svc/data/${listId}`,
    page: `${base}/index.html`,
  };
  const order: Side[] = ['static', 'binding', 'uncached', 'page'];
  const filled = (await send('GET', '/index.html')).body;
  if ((filled.match(/data-svc-item=/g) ?? []).length !== 20) throw new Error('the page was not filled with 20 records');
  for (const side of order) await load(urls[side], 8, 1); // warm-up
  for (let r = 0; r < repeats; r++) {
    for (const side of order.map((_, i) => order[(i + r) % order.length]!)) {
      // The read cache off: every read a query (what a page read right after a change costs).
      data.cache.enable(side !== 'uncached');
      const run = await load(urls[side], 8, seconds);
      sides[side].push(run.p50);
      sidesP99[side].push(run.p99);
    }
  }
  data.cache.enable(true);
  const added = sides.binding.map((b, i) => b - sides.static[i]!);
  const addedUncached = sides.uncached.map((b, i) => b - sides.static[i]!);
  const addedPage = sides.page.map((b, i) => b - sides.static[i]!);
  console.log(`html-data read, p50 at 8 connections (ms), median of ${repeats} (spread):`);
  console.log(`  static file through ingress-auth   ${medianSpread(sides.static)}   p99 ${medianSpread(sidesP99.static)}`);
  console.log(`  list binding (20 of 40 records)    ${medianSpread(sides.binding)}   p99 ${medianSpread(sidesP99.binding)}`);
  console.log(`  the same, read cache off           ${medianSpread(sides.uncached)}   p99 ${medianSpread(sidesP99.uncached)}`);
  console.log(`  added by the binding               ${medianSpread(added)}   bound < 5 ms: ${median(added) < 5 ? 'held' : 'CROSSED'}`);
  console.log(`  added with the cache off           ${medianSpread(addedUncached)}`);
  console.log(`  the page, its list filled (20)     ${medianSpread(sides.page)}   p99 ${medianSpread(sidesP99.page)}`);
  console.log(`  added by the first render          ${medianSpread(addedPage)}`);

  // ---- live: write-to-visible at 100 subscribers ----
  // When each subscriber saw each record (an event may come before the POST's answer names its id).
  const arrivals = new Map<string, number[]>();
  const streams: IncomingMessage[] = [];
  const onText = (text: string) => {
    const now = performance.now();
    for (const m of text.matchAll(/"_id":"([a-z2-7]{20})"/g)) {
      let times = arrivals.get(m[1]!);
      if (!times) arrivals.set(m[1]!, (times = []));
      times.push(now);
    }
  };
  const u = new URL(base);
  for (let i = 0; i < subscribers; i++) {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(
        { host: u.hostname, port: u.port, path: `/_svc/data/live?b=${listId}`, headers: { host: benchHost, accept: 'text/event-stream' } },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    if (res.statusCode !== 200) throw new Error(`subscriber ${i}: ${res.statusCode}`);
    res.setEncoding('utf8');
    let buffered = '';
    res.on('data', (c: string) => {
      buffered += c;
      const end = buffered.lastIndexOf('\n\n');
      if (end === -1) return;
      onText(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
    });
    streams.push(res);
  }
  const written: Array<{ id: string; started: number }> = [];
  for (let i = 0; i < writes; i++) {
    const started = performance.now();
    const answer = await send('POST', `/_svc/data/${createId}`, JSON.stringify({ name: `writer ${i}`, message: 'live' }));
    if (answer.status !== 201) throw new Error(`write ${i}: ${answer.status} ${answer.body}`);
    const { record } = JSON.parse(answer.body) as { record: { _id: string } };
    written.push({ id: record._id, started });
    await new Promise((r) => setTimeout(r, 50));
  }
  const everyone = () => written.every((w) => (arrivals.get(w.id)?.length ?? 0) >= subscribers);
  const deadline = Date.now() + 10_000;
  while (!everyone() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const s of streams) s.destroy();
  const seen = written.flatMap((w) => (arrivals.get(w.id) ?? []).map((t) => t - w.started)).sort((a, b) => a - b);
  const expected = subscribers * writes;
  console.log(`html-data live, ${subscribers} subscribers, ${writes} writes one every 50 ms:`);
  console.log(
    `  write-to-visible p50 ${percentile(seen, 50).toFixed(1)} ms, p99 ${percentile(seen, 99).toFixed(1)} ms, max ${seen[seen.length - 1]!.toFixed(1)} ms over ${seen.length} of ${expected} deliveries timed   bound p99 < 200 ms: ${percentile(seen, 99) < 200 ? 'held' : 'CROSSED'}`,
  );
  if (seen.length < expected) console.log(`  ${expected - seen.length} deliveries missing after 10 s`);
} finally {
  await data.stop();
  await ingress.close();
  upstream.close();
  await db.destroy();
  await database.drop();
}
