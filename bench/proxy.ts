// bench/proxy: GET of a 12-byte answer straight to a node:http upstream (the baseline), through
// ingress-auth (a public path, and a gated path with a signed-in session: cookie, session cache,
// admission, identity headers and assertion), through node:http and ingress-auth's upstream client
// with nothing between them (the floor of any proxy on node:http), and through nginx (Debian,
// upstream keep-alive) as a plain reverse proxy, in one run on one machine, loaded by wrk (else autocannon; BENCH_LOADGEN
// chooses). ingress-auth and nginx are compared at equal worker counts: 1, and BENCH_WORKERS (the
// CPUs). Every side is measured BENCH_REPEATS (3) times, interleaved and in a rotating order, and
// the median is printed with the spread (lowest-highest), since one run moves with the machine's
// load. Prints requests/s at BENCH_CONNECTIONS (32) and latency at 8 connections, with the ratios.
// nginx is left out, with a note, when it is not installed.
import { availableParallelism } from 'node:os';
import { benchDatabase } from './support.js';
import { generator, load, median, medianSpread, nginxBinary, pairedRatios, proxyServer, spread, startNginx, stopServers } from './load.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const duration = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const workers = Number(process.env.BENCH_WORKERS ?? availableParallelism());

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** At 8 connections. */
  p50At8: number;
  p99At8: number;
  meanAt8: number;
}

async function measure(url: string, headers: Record<string, string> = {}): Promise<Figures> {
  await load(url, connections, 1, { headers }); // warm-up: JIT, pools
  const many = await load(url, connections, duration, { headers });
  const few = await load(url, 8, Math.max(2, Math.round(duration / 2)), { headers });
  return { rps: many.rps, p50: many.p50, p99: many.p99, p50At8: few.p50, p99At8: few.p99, meanAt8: few.mean };
}

interface Side {
  name: string;
  url: string;
  headers?: Record<string, string>;
  runs: Figures[];
}

const database = await benchDatabase();
const upstream = await proxyServer(['upstream', String(workers)]);
const upstreamPort = new URL(upstream.url).port;
const ingress1 = await proxyServer(['ingress', upstreamPort, database.url, '1']);
const ingressN = workers > 1 ? await proxyServer(['ingress', upstreamPort, database.url, String(workers)]) : ingress1;
const bare1 = await proxyServer(['bare', upstreamPort, '1']);
const bareN = workers > 1 ? await proxyServer(['bare', upstreamPort, String(workers)]) : bare1;
const bin = nginxBinary();
const nginx1 = bin ? await startNginx(bin, upstream.url, 1) : undefined;
const nginxN = bin && workers > 1 ? await startNginx(bin, upstream.url, workers) : nginx1;
try {
  const signedIn = (url: string, cookie: string) => ({ url: `${url}/private/page`, headers: { cookie: `theme=dark; ${cookie}` } });
  interface Group {
    n: number;
    pub: Side;
    signed: Side;
    bare: Side;
    ref: Side | undefined;
  }
  const direct: Side = { name: 'direct upstream', url: upstream.url, runs: [] };
  const group = (n: number, ingress: typeof ingress1, bare: typeof bare1, nginx: typeof nginx1): Group => ({
    n,
    pub: { name: `ingress-auth x${n}`, url: ingress.url, runs: [] },
    signed: { name: '  signed in', ...signedIn(ingress.url, ingress.cookie!), runs: [] },
    bare: { name: `bare node proxy x${n}`, url: bare.url, runs: [] },
    ref: nginx ? { name: `nginx x${n}`, url: nginx.url, runs: [] } : undefined,
  });
  const groups = [group(1, ingress1, bare1, nginx1), ...(workers > 1 ? [group(workers, ingressN, bareN, nginxN)] : [])];
  const sides: Side[] = [direct, ...groups.flatMap((g) => [g.pub, g.signed, g.bare, ...(g.ref ? [g.ref] : [])])];
  // Every process warm on both ingress paths before anything is measured (the first one measured
  // would pay for the JIT: seen 10-20 % lower).
  for (const side of sides) await load(side.url, connections, 2, { headers: side.headers ?? {} });
  for (let round = 0; round < repeats; round++) {
    // A rotating order: no side is always measured first, or right after the same neighbour.
    for (let i = 0; i < sides.length; i++) {
      const side = sides[(i + round) % sides.length]!;
      side.runs.push(await measure(side.url, side.headers));
    }
  }
  const pick = (side: Side, f: (x: Figures) => number) => side.runs.map(f);
  console.log(
    `bench/proxy: GET, 12-byte answer, ${connections} connections for ${duration}s each (latency at 8), load from ${generator}, ${repeats} interleaved runs per side (median, and lowest-highest), same machine, same run`,
  );
  for (const side of sides) {
    const rps = pick(side, (x) => x.rps);
    console.log(
      `  ${side.name.padEnd(18)} ${median(rps).toFixed(0).padStart(7)} req/s (${spread(rps).padStart(13)})   p50 ${median(pick(side, (x) => x.p50)).toFixed(2)} / p99 ${median(pick(side, (x) => x.p99)).toFixed(2)} ms   at 8 conns: p50 ${median(pick(side, (x) => x.p50At8)).toFixed(3)} / p99 ${median(pick(side, (x) => x.p99At8)).toFixed(2)} ms`,
    );
  }
  if (!nginx1) console.log('  nginx              not installed (apt-get install nginx-light): left out');
  for (const { n, pub, signed, bare, ref } of groups) {
    const ratios = (a: Side, b: Side) =>
      pairedRatios(
        pick(a, (x) => x.rps),
        pick(b, (x) => x.rps),
      );
    if (ref)
      console.log(
        `  x${n}: ingress-auth/nginx   ${medianSpread(ratios(pub, ref))} public, ${medianSpread(ratios(signed, ref))} signed in   (goal >= 0.6); bare node proxy/nginx ${medianSpread(ratios(bare, ref))}`,
      );
    console.log(
      `  x${n}: ingress-auth/bare node proxy   ${medianSpread(ratios(pub, bare))} public, ${medianSpread(ratios(signed, bare))} signed in   (what the gate costs over node:http alone)`,
    );
    const added = signed.runs.map((r, i) => r.p50At8 - direct.runs[i]!.p50At8);
    const addedNginx = ref ? ref.runs.map((r, i) => r.p50At8 - direct.runs[i]!.p50At8) : undefined;
    console.log(
      `  x${n}: added p50 at 8 connections, signed in ${medianSpread(added, 3)} ms${addedNginx ? `; nginx ${median(addedNginx).toFixed(3)} ms` : ''}   (goal < 1 ms)`,
    );
  }
} finally {
  for (const n of new Set([nginx1, nginxN])) await n?.stop();
  await stopServers([ingress1, ingressN, bare1, bareN, upstream]);
  await database.drop();
}
