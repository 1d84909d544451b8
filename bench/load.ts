// What bench/proxy and bench/https share: the servers of bench/proxy-server.ts in their own
// processes, nginx as the reference proxy (plain or terminating TLS), the load generator (wrk, else
// autocannon; BENCH_LOADGEN chooses) and the median of interleaved runs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePort } from '../test/support/ports.js';

/** The app hostname every request names (Host, and SNI over TLS). */
export const benchHost = 'bench.apps.localhost';

export interface ServerInfo {
  url: string;
  /** ingress-auth's HTTPS listener, when started with BENCH_TLS. */
  tlsUrl?: string;
  /** A signed-in owner's session cookie for plain HTTP, and for HTTPS (`__Host-` named). */
  cookie?: string;
  tlsCookie?: string;
  child: ChildProcess;
}

/** One of bench/proxy-server.ts's servers, started beside this file so it runs from any outDir. */
export async function proxyServer(args: string[], env: Record<string, string> = {}): Promise<ServerInfo> {
  const script = fileURLToPath(new URL('./proxy-server.js', import.meta.url));
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return { ...(JSON.parse(line) as Omit<ServerInfo, 'child'>), child };
}

export async function stopServers(servers: (ServerInfo | undefined)[]): Promise<void> {
  for (const child of new Set(servers.map((s) => s?.child))) {
    if (!child || child.exitCode !== null) continue;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

export function nginxBinary(): string | undefined {
  for (const bin of ['nginx', '/usr/sbin/nginx']) if (spawnSync(bin, ['-v']).status === 0) return bin;
  return undefined;
}

export interface Nginx {
  url: string;
  /** The master's: its workers are its children (cpuSeconds counts them). */
  pid: number;
  stop: () => Promise<void>;
}

// The versions node's TLS defaults to: Debian's nginx 1.22 would not offer TLS 1.3 (its default from 1.23.4).
const tlsDirectives = (tls: { cert: string; key: string }) => `
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate ${tls.cert};
    ssl_certificate_key ${tls.key};`;

/** nginx as a reverse proxy with upstream keep-alive; with `tls` (PEM files), terminating TLS. */
export async function startNginx(bin: string, upstreamUrl: string, processes: number, tls?: { cert: string; key: string }): Promise<Nginx> {
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
    listen 127.0.0.1:${port}${tls ? ' ssl' : ''};${tls ? tlsDirectives(tls) : ''}
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
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGQUIT');
      await once(child, 'exit');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One load run's figures; latencies in milliseconds. */
export interface Run {
  rps: number;
  /** Requests completed in the run. */
  requests: number;
  p50: number;
  p99: number;
  mean: number;
}

export interface LoadOptions {
  headers?: Record<string, string>;
  /**
   * The address to connect to when the URL names a host that does not resolve (an https URL must
   * name `benchHost`, which wrk sends as SNI). wrk only.
   */
  connectTo?: string;
}

/** wrk (C, one thread) when installed: it leaves more of the two cores to the servers and reports fractional milliseconds. */
const wrk = spawnSync('wrk', ['--version']).error ? undefined : 'wrk';
export const generator = process.env.BENCH_LOADGEN ?? wrk ?? 'autocannon';

export async function load(url: string, conns: number, seconds: number, opts: LoadOptions = {}): Promise<Run> {
  if (opts.connectTo !== undefined && generator !== 'wrk') throw new Error(`${url}: only wrk can connect elsewhere than the URL's host`);
  return generator === 'wrk' ? loadWithWrk(url, conns, seconds, opts) : loadWithAutocannon(url, conns, seconds, opts.headers ?? {});
}

// A lone socket error of the load generator (seen against nginx too) is noise; a wrong status is not.
function checkFailures(url: string, total: number, non2xx: number, errors: number, detail: string): void {
  if (non2xx > 0 || errors > Math.max(1, total / 10_000))
    throw new Error(`${url}: failed requests (non-2xx ${non2xx}, errors ${errors} ${detail})`);
}

async function loadWithAutocannon(url: string, conns: number, seconds: number, headers: Record<string, string>): Promise<Run> {
  const kinds = new Map<string, number>();
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      { url, connections: conns, duration: seconds, headers: { host: benchHost, ...headers }, pipelining: 1 },
      (err, result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result)),
    );
    run.on('reqError', (err: NodeJS.ErrnoException) => kinds.set(err.code ?? err.message, (kinds.get(err.code ?? err.message) ?? 0) + 1));
  });
  checkFailures(url, r.requests.total, r.non2xx, r.errors + r.timeouts, JSON.stringify(Object.fromEntries(kinds)));
  return { rps: r.requests.average, requests: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, mean: r.latency.average };
}

/** wrk's duration (`512.00us`, `1.20ms`, `2.00s`) in milliseconds. */
function wrkMs(text: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text ?? '');
  if (!m) throw new Error(`wrk: unreadable duration ${text}`);
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
}

let connectScripts: string | undefined;

/**
 * A wrk script that connects to `address` whatever the URL's host: the host still names the server
 * in SNI (wrk sends the URL's host) without having to resolve.
 */
function connectScript(address: string): string {
  if (!connectScripts) {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-wrk-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    connectScripts = dir;
  }
  const file = path.join(connectScripts, `connect-${address.replace(/[^\w.-]/g, '_')}.lua`);
  writeFileSync(file, `wrk.resolve = function(host, service)\n  wrk.addrs = wrk.lookup(${JSON.stringify(address)}, service)\nend\n`);
  return file;
}

async function loadWithWrk(url: string, conns: number, seconds: number, opts: LoadOptions): Promise<Run> {
  const args = ['-t1', `-c${conns}`, `-d${seconds}s`, '--latency', '-H', `Host: ${benchHost}`];
  for (const [name, value] of Object.entries(opts.headers ?? {})) args.push('-H', `${name}: ${value}`);
  if (opts.connectTo !== undefined) args.push('-s', connectScript(opts.connectTo));
  const child = spawn('wrk', [...args, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${out}`);
  const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  if (total === 0) throw new Error(`${url}: wrk completed no request: ${out}`);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  checkFailures(url, total, Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0), errors, socketErrors?.[0] ?? '');
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    requests: total,
    p50: wrkMs(/^\s+50%\s+(\S+)/m.exec(out)?.[1]),
    p99: wrkMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1]),
    mean: wrkMs(/^\s+Latency\s+(\S+)/m.exec(out)?.[1]),
  };
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** `lowest-highest`, rounded to `digits`. */
export const spread = (xs: number[], digits = 0): string => `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`;

/** The median with the spread: `0.85 (0.80-0.90)`. */
export const medianSpread = (xs: number[], digits = 2): string => `${median(xs).toFixed(digits)} (${spread(xs, digits)})`;

/** Per run, a's figure over b's (runs interleaved, so run i of each shares the machine's moment). */
export const pairedRatios = (a: number[], b: number[]): number[] => a.map((x, i) => x / b[i]!);

/** Clock ticks a second of /proc/<pid>/stat's times (USER_HZ: 100 on every Linux ABI node runs on). */
const ticksPerSecond = 100;

/**
 * CPU seconds (user and system) a process and every living descendant used so far, from
 * /proc/<pid>/stat and /proc/<pid>/task/<tid>/children: a server's own cost, whatever its number of
 * workers (cluster or nginx), apart from the load generator's and the upstream's beside it on the
 * same cores. Linux only; a process that exited in between counts as 0.
 */
export function cpuSeconds(pid: number): number {
  let ticks = 0;
  const visit = (p: number) => {
    try {
      // The fields after the parenthesised name, which may hold spaces: utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
      for (const tid of readdirSync(`/proc/${p}/task`)) {
        for (const child of readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8').split(' ')) if (child) visit(Number(child));
      }
    } catch {
      // Gone meanwhile.
    }
  };
  visit(pid);
  return ticks / ticksPerSecond;
}
