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
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { repoRoot } from '../lib/paths.js';
import { freePort } from '../test/support/ports.js';
import { benchDatabase } from './support.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const duration = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const workers = Number(process.env.BENCH_WORKERS ?? availableParallelism());
const host = 'bench.apps.localhost';

async function server(...args: string[]): Promise<{ url: string; cookie?: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist/bench/proxy-server.js'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return { ...(JSON.parse(line) as { url: string; cookie?: string }), child };
}

function nginxBinary(): string | undefined {
  for (const bin of ['nginx', '/usr/sbin/nginx']) if (spawnSync(bin, ['-v']).status === 0) return bin;
  return undefined;
}

async function startNginx(bin: string, upstreamUrl: string, processes: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-bench-nginx-'));
  const port = await freePort();
  const up = new URL(upstreamUrl);
  await writeFile(
    path.join(dir, 'nginx.conf'),
    `worker_processes ${processes};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream app { server ${up.hostname}:${up.port}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}
`,
  );
  const child = spawn(bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  for (let i = 0; i < 50; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGQUIT');
      await once(child, 'exit');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** At 8 connections. */
  p50At8: number;
  p99At8: number;
  meanAt8: number;
}

/** One load run's figures; latencies in milliseconds. */
interface Run {
  rps: number;
  p50: number;
  p99: number;
  mean: number;
}

/** wrk (C, one thread) when installed: it leaves more of the two cores to the servers and reports fractional milliseconds. */
const wrk = spawnSync('wrk', ['--version']).error ? undefined : 'wrk';
const generator = process.env.BENCH_LOADGEN ?? wrk ?? 'autocannon';

async function load(url: string, conns: number, seconds: number, headers: Record<string, string> = {}): Promise<Run> {
  return generator === 'wrk' ? loadWithWrk(url, conns, seconds, headers) : loadWithAutocannon(url, conns, seconds, headers);
}

// A lone socket error of the load generator (seen against nginx too) is noise; a wrong status is not.
function checkFailures(url: string, total: number, non2xx: number, errors: number, detail: string): void {
  if (non2xx > 0 || errors > Math.max(1, total / 10_000))
    throw new Error(`${url}: failed requests (non-2xx ${non2xx}, errors ${errors} ${detail})`);
}

async function loadWithAutocannon(url: string, conns: number, seconds: number, headers: Record<string, string>): Promise<Run> {
  const kinds = new Map<string, number>();
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon({ url, connections: conns, duration: seconds, headers: { host, ...headers }, pipelining: 1 }, (err, result) =>
      err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result),
    );
    run.on('reqError', (err: NodeJS.ErrnoException) => kinds.set(err.code ?? err.message, (kinds.get(err.code ?? err.message) ?? 0) + 1));
  });
  checkFailures(url, r.requests.total, r.non2xx, r.errors + r.timeouts, JSON.stringify(Object.fromEntries(kinds)));
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, mean: r.latency.average };
}

/** wrk's duration (`512.00us`, `1.20ms`, `2.00s`) in milliseconds. */
function wrkMs(text: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text ?? '');
  if (!m) throw new Error(`wrk: unreadable duration ${text}`);
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
}

async function loadWithWrk(url: string, conns: number, seconds: number, headers: Record<string, string>): Promise<Run> {
  const args = ['-t1', `-c${conns}`, `-d${seconds}s`, '--latency', '-H', `Host: ${host}`];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  const child = spawn('wrk', [...args, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${out}`);
  const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  checkFailures(url, total, Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0), errors, socketErrors?.[0] ?? '');
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50: wrkMs(/^\s+50%\s+(\S+)/m.exec(out)?.[1]),
    p99: wrkMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1]),
    mean: wrkMs(/^\s+Latency\s+(\S+)/m.exec(out)?.[1]),
  };
}

async function measure(url: string, headers: Record<string, string> = {}): Promise<Figures> {
  await load(url, connections, 1, headers); // warm-up: JIT, pools
  const many = await load(url, connections, duration, headers);
  const few = await load(url, 8, Math.max(2, Math.round(duration / 2)), headers);
  return { rps: many.rps, p50: many.p50, p99: many.p99, p50At8: few.p50, p99At8: few.p99, meanAt8: few.mean };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Side {
  name: string;
  url: string;
  headers?: Record<string, string>;
  runs: Figures[];
}

const database = await benchDatabase();
const upstream = await server('upstream', String(workers));
const ingress1 = await server('ingress', new URL(upstream.url).port, database.url, '1');
const ingressN = workers > 1 ? await server('ingress', new URL(upstream.url).port, database.url, String(workers)) : ingress1;
const bare1 = await server('bare', new URL(upstream.url).port, '1');
const bareN = workers > 1 ? await server('bare', new URL(upstream.url).port, String(workers)) : bare1;
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
  for (const side of sides) await load(side.url, connections, 2, side.headers);
  for (let round = 0; round < repeats; round++) {
    // A rotating order: no side is always measured first, or right after the same neighbour.
    for (let i = 0; i < sides.length; i++) {
      const side = sides[(i + round) % sides.length]!;
      side.runs.push(await measure(side.url, side.headers));
    }
  }
  const pick = (side: Side, f: (x: Figures) => number) => side.runs.map(f);
  const spread = (xs: number[]) => `${Math.round(Math.min(...xs))}-${Math.round(Math.max(...xs))}`;
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
    const ratios = (a: Side, b: Side) => a.runs.map((r, i) => r.rps / b.runs[i]!.rps);
    const fmt = (xs: number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;
    if (ref)
      console.log(
        `  x${n}: ingress-auth/nginx   ${fmt(ratios(pub, ref))} public, ${fmt(ratios(signed, ref))} signed in   (goal >= 0.6); bare node proxy/nginx ${fmt(ratios(bare, ref))}`,
      );
    console.log(
      `  x${n}: ingress-auth/bare node proxy   ${fmt(ratios(pub, bare))} public, ${fmt(ratios(signed, bare))} signed in   (what the gate costs over node:http alone)`,
    );
    const added = signed.runs.map((r, i) => r.p50At8 - direct.runs[i]!.p50At8);
    const addedNginx = ref ? ref.runs.map((r, i) => r.p50At8 - direct.runs[i]!.p50At8) : undefined;
    console.log(
      `  x${n}: added p50 at 8 connections, signed in ${median(added).toFixed(3)} ms (${Math.min(...added).toFixed(3)}-${Math.max(...added).toFixed(3)})${addedNginx ? `; nginx ${median(addedNginx).toFixed(3)} ms` : ''}   (goal < 1 ms)`,
    );
  }
} finally {
  for (const n of new Set([nginx1, nginxN])) await n?.stop();
  for (const c of new Set([ingress1.child, ingressN.child, bare1.child, bareN.child, upstream.child])) {
    c.kill('SIGTERM');
    await once(c, 'exit');
  }
  await database.drop();
}
