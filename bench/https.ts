// bench/https: GET of a 12-byte answer over HTTPS, every side terminating TLS with the same
// certificate (ECDSA P-256, as the ACME issuer makes them: a leaf for bench.apps.localhost from a CA
// made at start in a temp dir, removed at exit) in front of the same node:http upstream:
// - the floor: node:https and ingress-auth's upstream client with nothing between them, one
//   certificate and no SNI lookup (bench/proxy-server.ts `bare` with BENCH_TLS);
// - ingress-auth's HTTPS listener, signed in (the gated path with the `__Host-` session cookie), its
//   certificate chosen per handshake by SNI from the certificate store's index, which holds it as
//   the platform's `*.<apps domain>` Secret;
// - nginx (Debian) terminating TLS, upstream keep-alive.
// At equal workers (1 and BENCH_WORKERS, the CPUs), in two shapes loaded by wrk: keep-alive, and a
// new connection per request (`Connection: close`). Every request is the same on every side (path
// and cookie). Each side is measured BENCH_REPEATS (3) times, interleaved in a rotating order;
// medians are printed with the spread (lowest-highest). Also, from this process: the TLS handshake
// (connect to secureConnect, no session to resume) p50 over BENCH_HANDSHAKES (100) sequential
// connections per side and run, and how often a side resumes a session on a new connection (the
// new-connection shape depends on it: wrk offers each reconnect the ticket its previous connection got).
// The issue's bounds: ingress-auth >= floor / 1.3 in both shapes (the gate and the SNI lookup cost at
// most 30 %), and the p50 it adds on keep-alive over the floor < 1 ms (at 8 connections, as bench/proxy).
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { benchDatabase } from './support.js';
import {
  benchHost,
  generator,
  load,
  median,
  medianSpread,
  cpuSeconds,
  nginxBinary,
  pairedRatios,
  proxyServer,
  spread,
  startNginx,
  stopServers,
  type Nginx,
  type Run,
} from './load.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const duration = Number(process.env.BENCH_SECONDS ?? 5);
const latencySeconds = Math.max(1, Math.round(duration / 5));
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const workers = Number(process.env.BENCH_WORKERS ?? availableParallelism());
const handshakeCount = Number(process.env.BENCH_HANDSHAKES ?? 100);
const resumptionTries = 20;
/** The issue's bounds. */
const maxCost = 0.3;
const maxAddedMs = 1;

if (generator !== 'wrk') throw new Error(`bench/https needs wrk (hack/install-deps.sh bench installs it); BENCH_LOADGEN is ${generator}`);

/** A CA and a leaf for benchHost signed by it, in a temp dir removed when this process exits (the CA's key at once). */
function makeCertificate(): { dir: string; ca: Buffer } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-tls-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  // Interrupted, the temp dir still goes ('exit' is not emitted on a signal's default action).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const p256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  const ca = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign'];
  openssl('req', '-x509', ...p256, ...ca, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=svc bench CA');
  openssl('req', ...p256, '-keyout', 'key.pem', '-out', 'leaf.csr', '-subj', `/CN=${benchHost}`);
  writeFileSync(
    path.join(dir, 'leaf.ext'),
    `subjectAltName=DNS:${benchHost}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'leaf.ext',
    '-out',
    'cert.pem',
  );
  rmSync(path.join(dir, 'ca.key'));
  return { dir, ca: readFileSync(path.join(dir, 'ca.pem')) };
}

const certificate = makeCertificate();

/**
 * A TLS connection to a side, verified as a browser would (the CA, the name). Key exchange X25519
 * only, as wrk's: node's OpenSSL 3.5 would offer X25519MLKEM768 first, which node's servers take
 * and Debian's nginx (OpenSSL 3.0) does not know, so the sides would not do the same work.
 */
function connect(port: number, session?: Buffer): tls.TLSSocket {
  return tls.connect({
    host: '127.0.0.1',
    port,
    servername: benchHost,
    ca: certificate.ca,
    ecdhCurve: 'X25519',
    ...(session ? { session } : {}),
  });
}

/** Connect to secureConnect, in ms, for `n` sequential new connections (full handshakes: no session offered). */
async function handshakes(port: number, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const socket = connect(port);
    await once(socket, 'secureConnect');
    times.push(performance.now() - started);
    socket.end();
    await once(socket, 'close');
  }
  return times;
}

/**
 * What a side negotiates, and of `tries` requests each on a new connection (`Connection: close`)
 * offering the ticket the previous connection got, how many resumed the session: each ticket used
 * once, as wrk's OpenSSL and browsers do (RFC 8446 C.4), so a server that sends no new ticket on a
 * resumed connection gets a full handshake next time.
 */
async function negotiated(port: number, tries: number, headers: Record<string, string>): Promise<{ parameters: string; resumed: number }> {
  const request = `GET /private/page HTTP/1.1\r\nhost: ${benchHost}\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}connection: close\r\n\r\n`;
  let offer: Buffer | undefined;
  let resumed = 0;
  let parameters = '';
  for (let i = 0; i <= tries; i++) {
    const socket = connect(port, offer);
    offer = undefined;
    // TLS 1.3 tickets come after the handshake, before the answer: read to its end, then they are in.
    socket.on('session', (ticket: Buffer) => (offer = ticket));
    await once(socket, 'secureConnect');
    if (i > 0 && socket.isSessionReused()) resumed++;
    const key = socket.getEphemeralKeyInfo() as { name?: string } | null;
    parameters = `${socket.getProtocol()} ${socket.getCipher().standardName} ${key?.name ?? ''}`.trim();
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.write(request);
    await once(socket, 'end');
    if (!answer.startsWith('HTTP/1.1 200')) throw new Error(`${port}: ${answer.split('\r\n')[0]}`);
    socket.end();
    await once(socket, 'close');
  }
  return { parameters, resumed };
}

interface Figures {
  keepAlive: Run;
  /** Keep-alive at 8 connections: the latency figure. */
  keepAlive8: Run;
  close: Run;
  /** p50 of this run's handshakes, ms. */
  handshake: number;
  /** CPU µs a request cost the side's processes, and the upstream's, in each 32-connection shape. */
  cpu: Record<'keepAlive' | 'close', { side: number; upstream: number }>;
}

interface Side {
  name: string;
  port: number;
  /** The server's process (with its workers as children): its CPU time is the side's cost. */
  pid: number;
  /** What wrk loads: the URL names benchHost (its SNI), connecting to loopback. */
  url: string;
  headers: Record<string, string>;
  runs: Figures[];
  tls?: Awaited<ReturnType<typeof negotiated>>;
}

const connectTo = '127.0.0.1';
const closing = (side: Side) => ({ headers: { ...side.headers, Connection: 'close' }, connectTo });

/** A load run, and what each of its requests cost the side's processes and the upstream's in CPU µs. */
async function costed(side: Side, run: () => Promise<Run>): Promise<{ run: Run; cpu: { side: number; upstream: number } }> {
  const before = [cpuSeconds(side.pid), cpuSeconds(upstreamPid)];
  const r = await run();
  const [sideCpu, upstreamCpu] = [cpuSeconds(side.pid) - before[0]!, cpuSeconds(upstreamPid) - before[1]!];
  return { run: r, cpu: { side: (sideCpu / r.requests) * 1e6, upstream: (upstreamCpu / r.requests) * 1e6 } };
}

async function measure(side: Side): Promise<Figures> {
  const handshake = median(await handshakes(side.port, handshakeCount));
  const keepAlive = await costed(side, () => load(side.url, connections, duration, { headers: side.headers, connectTo }));
  const keepAlive8 = await load(side.url, 8, latencySeconds, { headers: side.headers, connectTo });
  const close = await costed(side, () => load(side.url, connections, duration, closing(side)));
  return { keepAlive: keepAlive.run, keepAlive8, close: close.run, handshake, cpu: { keepAlive: keepAlive.cpu, close: close.cpu } };
}

const started = performance.now();
const database = await benchDatabase();
const upstream = await proxyServer(['upstream', String(workers)]);
const upstreamPort = new URL(upstream.url).port;
const upstreamPid = upstream.child.pid!;
const withTls = { BENCH_TLS: certificate.dir };
const counts = workers > 1 ? [1, workers] : [1];
const floors = await Promise.all(counts.map((n) => proxyServer(['bare', upstreamPort, String(n)], withTls)));
const ingresses: Awaited<ReturnType<typeof proxyServer>>[] = [];
// One after another: each primary migrates the same database before its workers start.
for (const n of counts) ingresses.push(await proxyServer(['ingress', upstreamPort, database.url, String(n)], withTls));
const bin = nginxBinary();
const pem = { cert: path.join(certificate.dir, 'cert.pem'), key: path.join(certificate.dir, 'key.pem') };
const nginxes: Nginx[] = [];
if (bin) for (const n of counts) nginxes.push(await startNginx(bin, upstream.url, n, pem));
try {
  // The same request everywhere: the floor and nginx pass on the cookie ingress-auth reads.
  const headers = { cookie: `theme=dark; ${ingresses[0]!.tlsCookie!}` };
  const side = (name: string, url: string, pid: number): Side => {
    const port = Number(new URL(url).port);
    return { name, port, pid, url: `https://${benchHost}:${port}/private/page`, headers, runs: [] };
  };
  const groups = counts.map((n, i) => ({
    n,
    floor: side(`floor (bare node:https) x${n}`, floors[i]!.url, floors[i]!.child.pid!),
    ingress: side(`ingress-auth signed in x${n}`, ingresses[i]!.tlsUrl!, ingresses[i]!.child.pid!),
    nginx: nginxes[i] ? side(`nginx x${n}`, nginxes[i].url, nginxes[i].pid) : undefined,
  }));
  const sides = groups.flatMap((g) => [g.floor, g.ingress, ...(g.nginx ? [g.nginx] : [])]);
  // Every process warm in both shapes before anything is measured (the first one measured would pay for the JIT).
  for (const s of sides) {
    s.tls = await negotiated(s.port, resumptionTries, s.headers);
    await load(s.url, connections, 1, { headers: s.headers, connectTo });
    await load(s.url, connections, 1, closing(s));
  }
  for (let round = 0; round < repeats; round++) {
    // A rotating order: no side is always measured first, or right after the same neighbour.
    for (let i = 0; i < sides.length; i++) {
      const s = sides[(i + round) % sides.length]!;
      s.runs.push(await measure(s));
    }
  }

  const pick = (s: Side, f: (x: Figures) => number) => s.runs.map(f);
  const rps = (s: Side, shape: 'keepAlive' | 'close') => pick(s, (x) => x[shape].rps);
  const parameters = [...new Set(sides.map((s) => s.tls!.parameters))].join(' / ');
  console.log(
    `bench/https: GET over ${parameters} (ECDSA P-256 certificate for ${benchHost}, the same on every side), 12-byte answer, wrk at ${connections} connections for ${duration}s per shape (keep-alive; a new connection per request), keep-alive latency at 8 connections, handshakes from node (${handshakeCount} sequential per run), ${repeats} interleaved runs per side (median, and lowest-highest), same machine, same run`,
  );
  console.log(
    `  ${''.padEnd(29)} ${'keep-alive req/s'.padStart(24)} ${'new connection req/s'.padStart(24)}   keep-alive p50 at 8   handshake p50   resumed on reconnect`,
  );
  for (const s of sides) {
    const ka = rps(s, 'keepAlive');
    const cl = rps(s, 'close');
    console.log(
      `  ${s.name.padEnd(29)} ${median(ka).toFixed(0).padStart(7)} (${spread(ka).padStart(13)})   ${median(cl).toFixed(0).padStart(7)} (${spread(cl).padStart(13)})   ${median(pick(s, (x) => x.keepAlive8.p50)).toFixed(3)} ms              ${median(pick(s, (x) => x.handshake)).toFixed(3)} ms        ${s.tls!.resumed}/${resumptionTries}`,
    );
  }
  if (!bin) console.log('  nginx                         not installed (apt-get install nginx-light): left out');
  // What the load cost each side's own processes, apart from the load generator and the upstream
  // sharing the same cores: the proxy's own cost, which throughput on a small machine blurs.
  const cpu = (s: Side, shape: 'keepAlive' | 'close', of: 'side' | 'upstream') => pick(s, (x) => x.cpu[shape][of]);
  console.log(
    `  CPU per request, µs (median):  ${'keep-alive: side / upstream'.padStart(29)}   ${'new connection: side / upstream'.padStart(31)}`,
  );
  for (const s of sides) {
    const two = (shape: 'keepAlive' | 'close') =>
      `${median(cpu(s, shape, 'side')).toFixed(1)} / ${median(cpu(s, shape, 'upstream')).toFixed(1)}`;
    console.log(`  ${s.name.padEnd(29)} ${two('keepAlive').padStart(29)}   ${two('close').padStart(31)}`);
  }
  const verdict = (ok: boolean) => (ok ? 'holds' : 'MISSED');
  let held = true;
  for (const { n, floor, ingress, nginx } of groups) {
    for (const [shape, label] of [
      ['keepAlive', 'keep-alive'],
      ['close', 'new connections'],
    ] as const) {
      const ratios = pairedRatios(rps(ingress, shape), rps(floor, shape));
      const ok = median(ratios) >= 1 / (1 + maxCost);
      held &&= ok;
      const cost = 1 / median(ratios) - 1;
      const cpuRatios = pairedRatios(cpu(ingress, shape, 'side'), cpu(floor, shape, 'side'));
      const cpuOk = median(cpuRatios) <= 1 + maxCost;
      held &&= cpuOk;
      console.log(
        `  x${n} ${label.padEnd(15)}: CPU per request, ingress-auth/floor ${medianSpread(cpuRatios)}, cost ${((median(cpuRatios) - 1) * 100).toFixed(0)} % over the floor   (bound: cost <= ${maxCost * 100} %: ${verdict(cpuOk)})`,
      );
      console.log(
        `  x${n} ${label.padEnd(15)}: ingress-auth/floor ${medianSpread(ratios)}, cost ${(cost * 100).toFixed(0)} % over the floor   (bound: >= ${(1 / (1 + maxCost)).toFixed(2)}, cost <= ${maxCost * 100} %: ${verdict(ok)})${nginx ? `;  ingress-auth/nginx ${medianSpread(pairedRatios(rps(ingress, shape), rps(nginx, shape)))}, floor/nginx ${medianSpread(pairedRatios(rps(floor, shape), rps(nginx, shape)))}` : ''}`,
      );
    }
    const over = (s: Side, f: (x: Figures) => number) => s.runs.map((r, i) => f(r) - f(floor.runs[i]!));
    const added = over(ingress, (x) => x.keepAlive8.p50);
    const ok = median(added) < maxAddedMs;
    held &&= ok;
    const addedNginx = nginx && over(nginx, (x) => x.keepAlive8.p50);
    const handshakeAdded = over(ingress, (x) => x.handshake);
    console.log(
      `  x${n} added p50 on keep-alive over the floor, at 8 connections: ${medianSpread(added, 3)} ms   (bound: < ${maxAddedMs} ms: ${verdict(ok)})${addedNginx ? `;  nginx ${medianSpread(addedNginx, 3)} ms` : ''};  handshake p50 over the floor ${medianSpread(handshakeAdded, 3)} ms`,
    );
  }
  console.log(`  bounds: ${held ? 'all hold' : 'NOT all hold'}   (${((performance.now() - started) / 1000).toFixed(0)} s)`);
} finally {
  for (const n of nginxes) await n.stop();
  await stopServers([...ingresses, ...floors, upstream]);
  await database.drop();
}
