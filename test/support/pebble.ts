// Pebble, Let's Encrypt's ACME test server (hack/build-pebble.sh builds it), for one test file: a
// private server on free loopback ports, so a file's orders, accounts and validations meet no other
// file's (docs/decisions/0028-https.md). Its VA validates an HTTP-01 challenge of a name by
// resolving the name through `dnsServer` (the local DNS server by default: publish `A <name>
// 127.0.0.1` there, test/support/dns.ts) and asking `http://<that address>:<httpPort>` (the test's
// ingress-auth HTTP port) for `/.well-known/acme-challenge/<token>`, three times at once (as Let's
// Encrypt asks from several places): each must answer the key authorization, or the challenge fails.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { homedir } from 'node:os';
import path from 'node:path';
import { supervise } from './child.js';
import { freePort } from './ports.js';
import { scratchDir } from './scratch.js';

/** The release hack/build-pebble.sh builds (PEBBLE_VERSION there and in hack/lib.sh). */
export const pebbleVersion = process.env.PEBBLE_VERSION || 'v2.10.3';

/** The directory of `pebble` and `pebble-challtestsrv`: SVC_PEBBLE_BIN (hack/test.sh), else the cache's. */
export function pebbleBin(): string {
  const cache = process.env.SVC_CACHE || path.join(homedir(), '.cache/svc-platform');
  return process.env.SVC_PEBBLE_BIN || path.join(cache, `pebble-${pebbleVersion}`, 'bin');
}

/**
 * The release's test certificates, which hack/build-pebble.sh copies beside the binaries: Pebble's
 * own for its HTTPS listeners (127.0.0.1, localhost), and `ca`, the CA that signed it, which a
 * client of the directory trusts (SVC_ACME_CA_FILE). Not the CA of the certificates Pebble issues:
 * that one is new at each start (Pebble.rootCertificate).
 */
export function pebbleCerts(): { ca: string; cert: string; key: string } {
  const dir = path.join(path.dirname(pebbleBin()), 'certs');
  return { ca: path.join(dir, 'pebble.minica.pem'), cert: path.join(dir, 'localhost/cert.pem'), key: path.join(dir, 'localhost/key.pem') };
}

export interface PebbleOptions {
  /** The port Pebble's VA asks for HTTP-01 challenges, at the address the name resolves to: ingress-auth's HTTP port. */
  httpPort: number;
  /**
   * The DNS server (`host:port`) the VA resolves names through: the first of SVC_DOMAINS_DNS_SERVERS
   * (hack/test.sh), else the local DNS server, 127.0.0.1:8053.
   */
  dnsServer?: string;
  /** Seconds the certificates it issues are valid (Pebble's default: 90 days). */
  certificateValidityPeriod?: number;
  /**
   * Percent of orders for a name validated before that reuse its valid authorization instead of a
   * new challenge (Pebble's default 50, Let's Encrypt's practice); 0 by default here: every order is
   * validated, so a test sees its challenge answered each time.
   */
  authzReuse?: number;
}

export interface Pebble {
  /** `https://127.0.0.1:<port>/dir` (SVC_ACME_DIRECTORY_URL). */
  directoryUrl: string;
  /** The PEM file of the CA of Pebble's HTTPS certificate (SVC_ACME_CA_FILE). */
  caFile: string;
  /** `https://127.0.0.1:<port>` of its management API (same certificate). */
  managementUrl: string;
  /** The root that signs the certificates it issues (PEM): a chain it issued verifies against it. */
  rootCertificate(): Promise<string>;
  /** The intermediate that signs them (issued chains include it). */
  intermediateCertificate(): Promise<string>;
  /** What Pebble has logged so far (each validation, each order). */
  output(): string;
  close(): Promise<void>;
}

/** Pebble answered, but not 200: waiting longer will not change it. */
class AnsweredError extends Error {}

/** GET of one of Pebble's HTTPS URLs, trusting `ca` only; the body of a 200. */
function get(url: string, ca: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    // Pebble refuses a request without a User-Agent (400), as RFC 8555 lets a server do.
    const req = https.get(url, { ca, timeout: timeoutMs, headers: { 'user-agent': 'svc-platform-tests' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(body) : reject(new AnsweredError(`GET ${url} answered ${res.statusCode}: ${body}`)),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts Pebble and waits until its directory and its management API answer. It stops with the
 * test file's process if close() was not called. A port another process took in the meantime (the
 * ports are free when picked) is retried on new ports.
 */
export async function startPebble(options: PebbleOptions): Promise<Pebble> {
  const bin = path.join(pebbleBin(), 'pebble');
  const certs = pebbleCerts();
  if (!existsSync(bin)) throw new Error(`Pebble is not built: ${bin} is missing; run hack/build-pebble.sh (make dev and make test run it)`);
  for (const file of [certs.ca, certs.cert, certs.key])
    if (!existsSync(file))
      throw new Error(`Pebble's certificate ${file} is missing; run hack/build-pebble.sh (it copies them from the release into the cache)`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(bin, certs, options);
    } catch (err) {
      if (attempt < 3 && err instanceof PortTakenError) continue;
      throw err;
    }
  }
}

class PortTakenError extends Error {}

async function startOnce(bin: string, certs: ReturnType<typeof pebbleCerts>, options: PebbleOptions): Promise<Pebble> {
  const dnsServer = options.dnsServer ?? (process.env.SVC_DOMAINS_DNS_SERVERS?.split(',')[0]?.trim() || '127.0.0.1:8053');
  const [port, managementPort, tlsPort] = [await freePort(), await freePort(), await freePort()];
  const dir = scratchDir('svc-pebble-');
  const config = path.join(dir, 'pebble-config.json');
  writeFileSync(
    config,
    JSON.stringify(
      {
        pebble: {
          listenAddress: `127.0.0.1:${port}`,
          managementListenAddress: `127.0.0.1:${managementPort}`,
          certificate: certs.cert,
          privateKey: certs.key,
          httpPort: options.httpPort,
          // TLS-ALPN-01 is not used: a port nothing listens on.
          tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: false,
          domainBlocklist: [],
          retryAfter: { authz: 3, order: 5 },
          // The CA's keys are made at each start: ECDSA ones start it in about 50 ms, RSA ones in 200.
          keyAlgorithm: 'ecdsa',
          // v2.10's certificateValidityPeriod is ignored (deprecated): the validity is a profile's.
          ...(options.certificateValidityPeriod === undefined
            ? {}
            : { profiles: { default: { description: 'the test profile', validityPeriod: options.certificateValidityPeriod } } }),
        },
      },
      null,
      2,
    ),
  );
  const child = spawn(bin, ['-config', config, '-dnsserver', dnsServer], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      // Validate at once (by default the VA sleeps up to 15 s first), never reject a good nonce (5%
      // by default, to exercise clients' retries: a test would fail at random).
      PEBBLE_VA_NOSLEEP: '1',
      PEBBLE_WFE_NONCEREJECT: '0',
      PEBBLE_AUTHZREUSE: String(options.authzReuse ?? 0),
    },
  });
  const proc = supervise(child);

  const directoryUrl = `https://127.0.0.1:${port}/dir`;
  const managementUrl = `https://127.0.0.1:${managementPort}`;
  const ca = readFileSync(certs.ca, 'utf8');
  const deadline = Date.now() + 20_000;
  let last: unknown;
  for (;;) {
    const exited = proc.exited();
    if (exited !== undefined) {
      proc.kill();
      const message = `Pebble ${exited} during start-up (${bin} -config ${config} -dnsserver ${dnsServer}); its output:\n${proc.output()}`;
      throw /address already in use/.test(proc.output()) ? new PortTakenError(message) : new Error(message);
    }
    try {
      await get(directoryUrl, ca, 2000);
      await get(`${managementUrl}/roots/0`, ca, 2000);
      break;
    } catch (err) {
      last = err;
    }
    if (last instanceof AnsweredError || Date.now() > deadline) {
      proc.kill();
      const what = last instanceof AnsweredError ? last.message : `no answer at ${directoryUrl} in 20 s (last: ${String(last)})`;
      throw new Error(`Pebble did not start: ${what}; its output:\n${proc.output()}`);
    }
    await sleep(100);
  }

  return {
    directoryUrl,
    caFile: certs.ca,
    managementUrl,
    rootCertificate: () => get(`${managementUrl}/roots/0`, ca),
    intermediateCertificate: () => get(`${managementUrl}/intermediates/0`, ca),
    output: () => proc.output(),
    close: () => proc.stop(),
  };
}
