// ingress-auth with sign-in, in-process, on the database of a test API (startTestApi), and a
// cookie-keeping HTTP client that talks to it with any Host header, as a browser would.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { AuthRoutes } from '../../ingress-auth/auth/routes.js';
import { startDataParts } from '../../ingress-auth/data/parts.js';
import type { DataParts } from '../../ingress-auth/data/routes.js';
import { signInProviders } from '../../ingress-auth/auth/setup.js';
import { SignIn } from '../../ingress-auth/auth/sign-in.js';
import { appAtHost, heldHostname } from '../../ingress-auth/host.js';
import { RouteTable } from '../../ingress-auth/routes.js';
import { certificateStore, startIngress, type Ingress } from '../../ingress-auth/server.js';
import type { CertificateSource } from '../../ingress-auth/tls/certificates.js';
import type { ChallengeSource } from '../../ingress-auth/tls/challenges.js';
import type { MailEnqueuer } from '../../lib/auth/invitations.js';
import { loadConfig, type Config } from '../../lib/config.js';
import { AssertionKeyStore } from '../../lib/identity/assertion-keys.js';
import { AssertionSigner } from '../../lib/identity/assertion.js';
import { createLogger } from '../../lib/logger.js';
import { TestClock, type TestApi } from './api.js';
import { kubeConfig } from './kube.js';
import { freePort } from './ports.js';

export const appsDomain = 'apps.localhost';

export interface TestIngress {
  url: string;
  port: number;
  /** With `tls: true`: the HTTPS listener (certificates from the cluster's certificate Secrets). */
  tlsUrl?: string;
  tlsPort?: number;
  config: Config;
  ingress: Ingress;
  signIn: SignIn;
  keys: AssertionKeyStore;
  clock: TestClock;
  data: DataParts;
  close(): Promise<void>;
}

export { freePort };

export async function startTestIngress(
  api: TestApi,
  opts: {
    port?: number;
    env?: Record<string, string>;
    mail?: MailEnqueuer;
    /** Also an HTTPS listener, on a free port that is also its public port (https:// redirects and origins). */
    tls?: boolean;
    /** With `tls`: certificates fed by the test (default: an informer of the cluster's certificate Secrets). */
    certificates?: CertificateSource;
    /** HTTP-01 answers fed by the test (default with `tls`: an informer of the cluster's challenge ConfigMaps). */
    challenges?: ChallengeSource;
  } = {},
): Promise<TestIngress> {
  // App URLs (mail links, passkey origins, same-origin checks) come from configuration: say where
  // this ingress really listens, as an operator would.
  const port = opts.port ?? (await freePort());
  const tlsPort = opts.tls ? await freePort() : undefined;
  const config = loadConfig(
    {
      SVC_LOG_LEVEL: 'silent',
      SVC_APPS_DOMAIN: appsDomain,
      SVC_DATABASE_URL: api.deps.config.databaseUrl,
      SVC_APPS_URL_SUFFIX: `:${port}`,
      SVC_ASSERTION_ISSUER: api.deps.config.assertion.issuer,
      ...(tlsPort === undefined ? {} : { SVC_PROXY_TLS_PORT: String(tlsPort), SVC_PROXY_TLS_PUBLIC_PORT: String(tlsPort) }),
      ...opts.env,
    },
    { exists: () => false },
  );
  const log = createLogger('ingress-auth', (process.env.SVC_TEST_INGRESS_LOG as 'debug' | undefined) ?? 'silent');
  const clock = new TestClock();
  const db = api.db;
  const keys = new AssertionKeyStore(db, {
    rotationMs: config.assertion.rotationMs,
    maxAssertionLifetimeMs: config.assertion.lifetimeSeconds * 1000,
  });
  const signer = new AssertionSigner(keys, { issuer: config.assertion.issuer, lifetimeSeconds: config.assertion.lifetimeSeconds });
  const table = new RouteTable(kubeConfig(), log);
  const signIn = new SignIn({
    db,
    config,
    log,
    signer,
    assertionLifetimeSeconds: config.assertion.lifetimeSeconds,
    clock: clock.read,
    heldHostname: (app) => heldHostname(app, table, config.appsDomain),
  });
  await signIn.start();
  const certificates =
    config.proxy.tlsPort === undefined ? undefined : (opts.certificates ?? certificateStore(config, kubeConfig(), table, log));
  const providers = signInProviders({
    config,
    log,
    db,
    signIn,
    mail: opts.mail !== undefined,
    appOfHost: (h) => appAtHost(h, table, config),
    ...(certificates ? { servedOverTls: (h: string) => certificates.contextFor(h) !== undefined } : {}),
  });
  const routes = new AuthRoutes(signIn, { config, log, mail: opts.mail, providerRoutes: providers.routes, available: providers.available });
  // HTML data bindings as main.ts serves them (decision 0034).
  const data = await startDataParts(db, config.databaseUrl, log);
  signIn.onRevoked((appUid) => data.live.recheckAll(appUid));
  const ingress: Ingress = await startIngress({
    config,
    kc: kubeConfig(),
    log,
    routes: table,
    jwks: () => keys.jwks(),
    auth: { signIn, routes, callbacks: providers.callbacks },
    host: '127.0.0.1',
    port,
    ...(certificates ? { certificates } : {}),
    ...(opts.challenges ? { challenges: opts.challenges } : {}),
    data,
  });
  return {
    url: ingress.url,
    port: Number(new URL(ingress.url).port),
    ...(ingress.tlsUrl ? { tlsUrl: ingress.tlsUrl, tlsPort: Number(new URL(ingress.tlsUrl).port) } : {}),
    config,
    ingress,
    signIn,
    keys,
    clock,
    data,
    close: async () => {
      await data.stop();
      await ingress.close();
      await signIn.stop();
    },
  };
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface TlsAnswer extends Answer {
  /** The certificate the server showed. */
  peer: PeerCertificate;
}

/**
 * GET `path` over TLS at 127.0.0.1:`port` on a new connection: SNI `servername` (undefined: no SNI
 * at all), Host `host` (default the servername), `ca` trusted.
 */
export function tlsGet(o: { port: number; ca: string; servername: string | undefined; path?: string; host?: string }): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: o.port,
        path: o.path ?? '/',
        method: 'GET',
        headers: { host: o.host ?? o.servername ?? 'none', accept: 'text/html' },
        // An empty servername sends no SNI at all (otherwise Node takes it from the Host header).
        servername: o.servername ?? '',
        ca: o.ca,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
            peer: (res.socket as TLSSocket).getPeerCertificate(),
          }),
        );
      },
    );
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
    req.end();
  });
}

/**
 * A browser-like client of ingress-auth: keeps host-only cookies per hostname (as browsers do),
 * sends raw headers in any spelling, never follows redirects by itself.
 */
export class Browser {
  readonly cookies = new Map<string, Map<string, string>>();

  constructor(private readonly ingressUrl: string) {}

  cookie(host: string, name: string): string | undefined {
    return this.cookies.get(hostnameOf(host))?.get(name);
  }

  setCookie(host: string, name: string, value: string): void {
    const h = hostnameOf(host);
    if (!this.cookies.has(h)) this.cookies.set(h, new Map());
    this.cookies.get(h)!.set(name, value);
  }

  request(
    host: string,
    path: string,
    opts: { method?: string; headers?: Array<[string, string]>; body?: string; cookies?: boolean } = {},
  ): Promise<Answer> {
    const u = new URL(this.ingressUrl);
    const headers: string[] = ['Host', host];
    for (const [k, v] of opts.headers ?? []) headers.push(k, v);
    const jar = this.cookies.get(hostnameOf(host));
    if (opts.cookies !== false && jar?.size) headers.push('Cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
    return new Promise<Answer>((resolve, reject) => {
      const req = httpRequest({ host: u.hostname, port: u.port, path, method: opts.method ?? 'GET', headers, timeout: 15_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          for (const sc of ([] as string[]).concat(res.headers['set-cookie'] ?? [])) {
            const [pair = '', ...attrs] = sc.split(';');
            const eq = pair.indexOf('=');
            const name = pair.slice(0, eq).trim();
            const value = pair.slice(eq + 1).trim();
            const h = hostnameOf(host);
            if (!this.cookies.has(h)) this.cookies.set(h, new Map());
            if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.get(h)!.delete(name);
            else this.cookies.get(h)!.set(name, value);
          }
          resolve({ status: res.statusCode!, headers: res.headers, body });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end(opts.body);
    });
  }

  /** What the sign-in page's script does with a `#token=`/`#handoff=` fragment: a same-origin POST. */
  redeem(host: string, token: string): Promise<Answer> {
    return this.request(host, '/_svc/auth/redeem', {
      method: 'POST',
      headers: [
        // A browser's Origin names the port it used (the ingress's), whatever Host a test sends.
        ['Origin', `http://${hostnameOf(host)}:${new URL(this.ingressUrl).port}`],
        ['Content-Type', 'application/json'],
        ['Sec-Fetch-Site', 'same-origin'],
        ['Sec-Fetch-Mode', 'cors'],
      ],
      body: JSON.stringify({ token }),
    });
  }
}

function hostnameOf(host: string): string {
  return host.toLowerCase().replace(/:\d+$/, '');
}

/** The secret in a sign-in URL's fragment (`#token=` or `#handoff=`). */
export function fragmentSecret(url: string): string {
  const m = /#(?:token|handoff)=([A-Za-z0-9_-]+)/.exec(url);
  if (!m) throw new Error(`no sign-in secret in ${url}`);
  return m[1]!;
}
