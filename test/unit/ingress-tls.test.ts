// HTTPS in ingress-auth without a cluster (docs/decisions/0028-https.md): which certificate an SNI
// name gets (a custom domain's only while it routes, its wildcard one label up, the platform's for
// app hostnames, nothing for anything else); a real HTTPS listener built by startIngress, fed by
// hand, that shows that certificate, ends the handshake for another name or none, and answers 421
// to a request for another host than the connection's; HTTP-01 answers on plain HTTP; the 308 to
// https; and sign-in over TLS (`__Host-` cookies, https origins). Certificates are made in-test.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import type { Knex } from 'knex';
import type * as k8s from '@kubernetes/client-node';
import { finishFlow } from '../../ingress-auth/auth/providers/flow.js';
import { SignIn } from '../../ingress-auth/auth/sign-in.js';
import { authRequest, type IngressContext } from '../../ingress-auth/context.js';
import { appAtHost, heldHostname, type HostRules } from '../../ingress-auth/host.js';
import { RouteTable, type Backend, type RouteSource } from '../../ingress-auth/routes.js';
import { startIngress, type Ingress } from '../../ingress-auth/server.js';
import { CertificateIndex } from '../../ingress-auth/tls/certificates.js';
import { ChallengeIndex } from '../../ingress-auth/tls/challenges.js';
import { httpsOrigin } from '../../ingress-auth/tls/connection.js';
import { certificateAnnotations, certificateLabel, challengeLabel } from '../../lib/certificates/contract.js';
import { loadConfig } from '../../lib/config.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import type { App, Domain } from '../../lib/resources/index.js';
import { certificateFor, type Pem } from '../support/certificates.js';
import { offlineKubeConfig } from '../support/kube.js';

const log = createLogger('ingress-auth', 'silent');
const appsDomain = 'apps.localhost';
const rules: HostRules = { appsDomain, auth: { host: `login.${appsDomain}` } };

let secrets = 0;
function secretOf(
  pem: Pem,
  opts: { domain?: string; name?: string; label?: boolean; crt?: string; namespace?: string } = {},
): k8s.V1Secret {
  const name = opts.name ?? `tls-${++secrets}`;
  return {
    metadata: {
      namespace: 'svc-certificates',
      name,
      uid: `uid-${name}`,
      resourceVersion: '1',
      ...(opts.label === false ? {} : { labels: { [certificateLabel]: 'acme' } }),
      ...(opts.domain
        ? { annotations: { [certificateAnnotations.domain]: opts.domain, [certificateAnnotations.namespace]: opts.namespace ?? 'acct-a' } }
        : {}),
    },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(opts.crt ?? pem.cert).toString('base64'),
      'tls.key': Buffer.from(pem.key).toString('base64'),
    },
  };
}

const appOf = (namespace: string, name: string, uid: string, over: Partial<App['spec']> = {}): App => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: { namespace, name, uid, creationTimestamp: '2026-01-01T00:00:00Z' as unknown as Date },
  spec: { ...over },
});

let domains = 0;
const domainOf = (namespace: string, name: string, app: string, phase: 'Verified' | 'Pending' = 'Verified'): Domain => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Domain',
  metadata: {
    namespace,
    name: `d-${++domains}`,
    uid: `uid-domain-${domains}`,
    creationTimestamp: '2026-01-01T00:00:00Z' as unknown as Date,
  },
  spec: { domain: name, app },
  status: { phase },
});

/** A logger that keeps its warnings. */
function warnings(): { log: Logger; seen: string[] } {
  const seen: string[] = [];
  const fake = {
    warn: (_o: object, msg: string) => seen.push(msg),
    info: () => undefined,
    debug: () => undefined,
    error: () => undefined,
    isLevelEnabled: () => false,
  };
  return { log: fake as unknown as Logger, seen };
}

let certs: {
  shop: Pem;
  wild: Pem;
  platform: Pem;
  other: Pem;
};

before(async () => {
  certs = {
    shop: await certificateFor('shop.example'),
    wild: await certificateFor('*.wild.example'),
    platform: await certificateFor(`*.${appsDomain}`),
    other: await certificateFor('other.example'),
  };
});

describe('ingress-auth TLS: the certificate of an SNI name', () => {
  /** An index where the names `served` accepts route to an App of namespace acct-a. */
  const indexOf = (served: (h: string) => boolean, logger: Logger = log) =>
    new CertificateIndex({ appsDomain, platformSecret: 'platform-tls', routedIn: (h) => (served(h) ? 'acct-a' : undefined), log: logger });

  it('serves a custom domain its own certificate, else the wildcard one label up, only while the name routes', () => {
    const routed = new Set(['shop.example', 'a.wild.example', 'a.b.wild.example', 'wild.example']);
    const idx = indexOf((h) => routed.has(h));
    idx.upsert(secretOf(certs.shop, { domain: 'shop.example' }));
    idx.upsert(secretOf(certs.wild, { domain: '*.wild.example' }));
    const shop = idx.contextFor('shop.example');
    const wild = idx.contextFor('a.wild.example');
    assert.ok(shop && wild && shop !== wild);
    assert.equal(idx.contextFor('SHOP.Example.'), shop, 'case and a trailing dot');
    assert.equal(idx.contextFor('a.b.wild.example'), undefined, 'a wildcard covers one label, not two');
    assert.equal(idx.contextFor('wild.example'), undefined, 'nor the name under it');
    routed.delete('shop.example');
    assert.equal(idx.contextFor('shop.example'), undefined, 'a name that no longer routes gets no certificate');
    assert.equal(idx.contextFor('unknown.example'), undefined);
    assert.equal(idx.contextFor(undefined), undefined, 'no SNI');
    assert.equal(idx.contextFor('127.0.0.1'), undefined);
  });

  it('serves app hostnames (one label) the platform Secret, labelled or not, and no tenant certificate there', () => {
    const idx = indexOf(() => true);
    assert.equal(idx.contextFor(`shop.${appsDomain}`), undefined, 'no platform Secret yet');
    // A tenant Secret claiming the apps domain serves nothing there.
    idx.upsert(secretOf(certs.platform, { domain: `*.${appsDomain}` }));
    assert.equal(idx.contextFor(`shop.${appsDomain}`), undefined);
    idx.upsert(secretOf(certs.platform, { name: 'platform-tls', label: false }));
    const platform = idx.contextFor(`shop.${appsDomain}`);
    assert.ok(platform);
    assert.equal(idx.contextFor(`login.${appsDomain}`), platform, 'the sign-in host under the apps domain too');
    assert.equal(idx.contextFor(`a.b.${appsDomain}`), undefined, 'two labels');
    assert.equal(idx.contextFor(appsDomain), undefined, 'the apps domain itself');
    idx.remove(secretOf(certs.platform, { name: 'platform-tls' }));
    assert.equal(idx.contextFor(`shop.${appsDomain}`), undefined, 'deleted');
  });

  it('serves a tenant certificate only while a verified Domain routes the name to a live App (the route table)', () => {
    const t = new RouteTable(offlineKubeConfig(), log);
    const idx = new CertificateIndex({
      appsDomain,
      platformSecret: 'platform-tls',
      routedIn: (h) => appAtHost(h, t, rules)?.metadata.namespace,
      log,
    });
    idx.upsert(secretOf(certs.shop, { domain: 'shop.example' }));
    assert.equal(idx.contextFor('shop.example'), undefined, 'a Secret alone serves nobody');
    const pending = domainOf('acct-a', 'shop.example', 'shop', 'Pending');
    t.domains.upsert(pending);
    t.hosts.upsert(appOf('acct-a', 'shop', 'uid-shop'));
    assert.equal(idx.contextFor('shop.example'), undefined, 'not verified');
    t.domains.upsert({ ...pending, status: { phase: 'Verified' } });
    assert.ok(idx.contextFor('shop.example'), 'verified and routing');
    t.domains.remove(pending);
    assert.equal(idx.contextFor('shop.example'), undefined, 'the Domain deleted');
  });

  it('serves a certificate only for names routed to its own namespace: another account’s wildcard or leftover never shows', () => {
    const routes = new Map([
      ['a.wild.example', 'acct-b'],
      ['shop.example', 'acct-b'],
    ]);
    const idx = new CertificateIndex({ appsDomain, platformSecret: 'platform-tls', routedIn: (h) => routes.get(h), log });
    // acct-a holds *.wild.example; acct-b verified a.wild.example exactly and has no certificate yet.
    idx.upsert(secretOf(certs.wild, { domain: '*.wild.example', namespace: 'acct-a' }));
    assert.equal(idx.contextFor('a.wild.example'), undefined, 'acct-a’s wildcard is not shown for acct-b’s name');
    // A name removed from acct-a and claimed by acct-b before the sweep deleted acct-a’s Secret.
    idx.upsert(secretOf(certs.shop, { domain: 'shop.example', namespace: 'acct-a' }));
    assert.equal(idx.contextFor('shop.example'), undefined);
    idx.upsert(secretOf(certs.shop, { domain: 'shop.example', namespace: 'acct-b' }));
    assert.ok(idx.contextFor('shop.example'), 'its own account’s certificate');
  });

  it('never serves a certificate for a name it does not cover, and skips (logging once) a Secret it cannot use', () => {
    const { log: logger, seen } = warnings();
    const idx = indexOf(() => true, logger);
    // Annotated with a name its certificate does not cover.
    idx.upsert(secretOf(certs.other, { domain: 'liar.example' }));
    assert.equal(idx.contextFor('liar.example'), undefined);
    const broken = secretOf(certs.shop, { domain: 'shop.example', crt: 'not a certificate' });
    idx.upsert(broken);
    idx.upsert(broken);
    assert.equal(idx.contextFor('shop.example'), undefined);
    assert.equal(seen.length, 1, 'logged once per version');
    const mismatched = secretOf({ cert: certs.shop.cert, key: certs.other.key }, { domain: 'shop.example' });
    idx.upsert(mismatched);
    assert.equal(seen.length, 2, 'a key that is not the certificate’s');
    idx.upsert(secretOf(certs.shop, { domain: 'no annotation' }));
    assert.equal(seen.length, 3);
    // A good version, then a broken one of the same Secret: the good one stays.
    const good = secretOf(certs.shop, { domain: 'shop.example', name: 'tls-keep' });
    idx.upsert(good);
    const before = idx.contextFor('shop.example');
    assert.ok(before);
    idx.upsert({ ...good, metadata: { ...good.metadata, resourceVersion: '2' }, data: { 'tls.crt': 'eA==', 'tls.key': 'eA==' } });
    assert.equal(idx.contextFor('shop.example'), before);
    // A Secret whose label goes is no longer served.
    idx.upsert({ ...good, metadata: { ...good.metadata, labels: {} } });
    assert.equal(idx.contextFor('shop.example'), undefined);
  });
});

describe('identity assertions on a custom domain: the app hostname named too', () => {
  it('only when the App holds it: never a hostname an older App of the same name in another namespace holds', () => {
    const t = new RouteTable(offlineKubeConfig(), log);
    const older = { ...appOf('acct-a', 'shop', 'uid-a'), metadata: { ...appOf('acct-a', 'shop', 'uid-a').metadata } };
    const younger = appOf('acct-b', 'shop', 'uid-b');
    younger.metadata.creationTimestamp = '2026-06-01T00:00:00Z' as unknown as Date;
    t.hosts.upsert(older);
    t.hosts.upsert(younger);
    assert.equal(heldHostname(older, t, appsDomain), `shop.${appsDomain}`);
    assert.equal(heldHostname(younger, t, appsDomain), undefined, 'acct-b’s shop holds no hostname: its assertions name its domain only');
  });
});

describe('ingress-auth TLS: HTTP-01 answers (the index)', () => {
  it('answers a token on its domain only, and only a token of the right shape', () => {
    const idx = new ChallengeIndex();
    const token = 'A'.repeat(43);
    const cm: k8s.V1ConfigMap = {
      metadata: { namespace: 'svc-certificates', name: 'acme-http01-1', labels: { [challengeLabel]: 'http-01' } },
      data: { domain: 'Shop.Example', token, keyAuthorization: `${token}.thumb` },
    };
    idx.upsert(cm);
    assert.equal(idx.answer('shop.example', token), `${token}.thumb`);
    assert.equal(idx.answer('other.example', token), undefined);
    assert.equal(idx.answer('shop.example', 'B'.repeat(43)), undefined);
    idx.upsert({ ...cm, data: { ...cm.data, token: 'short' } });
    assert.equal(idx.answer('shop.example', 'short'), undefined);
    assert.equal(idx.answer('shop.example', token), undefined, 'the update replaced the token');
    idx.upsert(cm);
    idx.remove(cm);
    assert.equal(idx.answer('shop.example', token), undefined, 'deleted');
  });
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('ingress-auth TLS: the HTTPS listener', () => {
  let upstream: Server;
  let ingress: Ingress;
  let tlsPort: number;
  const seen: Array<{ host?: string; url?: string; proto?: string }> = [];
  const token = 'tok_'.padEnd(43, 'x');
  const publicPort = 8443;

  before(async () => {
    upstream = createServer((req, res) => {
      seen.push({ host: req.headers.host, url: req.url, proto: req.headers['x-forwarded-proto'] as string | undefined });
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`app saw ${req.headers.host}`);
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const port = (upstream.address() as AddressInfo).port;
    const backend: Backend = { address: '127.0.0.1', port, origin: `http://127.0.0.1:${port}` };
    const t = new RouteTable(offlineKubeConfig(), log);
    t.hosts.upsert(appOf('acct-a', 'shop', 'uid-shop', { kind: 'static' }));
    t.domains.upsert(domainOf('acct-a', 'shop.example', 'shop'));
    t.domains.upsert(domainOf('acct-a', 'plain.example', 'shop'));
    t.domains.upsert(domainOf('acct-a', '*.wild.example', 'shop'));
    const routes: RouteSource = {
      start: async () => undefined,
      stop: async () => undefined,
      app: (name) => t.app(name),
      domainApp: (h) => t.domainApp(h),
      backends: () => [backend],
      whenBackends: async () => [backend],
      origins: () => new Set([backend.origin]),
    };
    const config = loadConfig(
      { SVC_APPS_DOMAIN: appsDomain, SVC_LOG_LEVEL: 'silent', SVC_PROXY_TLS_PUBLIC_PORT: String(publicPort) },
      { exists: () => false },
    );
    const index = new CertificateIndex({
      appsDomain,
      platformSecret: 'platform-tls',
      routedIn: (h) => appAtHost(h, routes, config)?.metadata.namespace,
      log,
    });
    index.upsert(secretOf(certs.shop, { domain: 'shop.example' }));
    index.upsert(secretOf(certs.wild, { domain: '*.wild.example' }));
    index.upsert(secretOf(certs.platform, { name: 'platform-tls' }));
    const challenges = new ChallengeIndex();
    challenges.upsert({
      metadata: { namespace: 'svc-certificates', name: 'acme-http01-1', labels: { [challengeLabel]: 'http-01' } },
      data: { domain: 'shop.example', token, keyAuthorization: `${token}.thumb` },
    });
    ingress = await startIngress({
      config,
      kc: undefined as never,
      log,
      routes,
      host: '127.0.0.1',
      port: 0,
      tlsPort: 0,
      certificates: { start: async () => undefined, stop: async () => undefined, contextFor: (s) => index.contextFor(s) },
      challenges,
    });
    assert.ok(ingress.tlsUrl?.startsWith('https://127.0.0.1:'));
    tlsPort = Number(new URL(ingress.tlsUrl!).port);
  });

  after(async () => {
    await ingress?.close();
    upstream?.closeAllConnections();
    upstream?.close();
  });

  /** A TLS handshake with this SNI name (none: undefined); the peer certificate, or the error. */
  const handshake = (servername: string | undefined) =>
    new Promise<PeerCertificate | Error>((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: tlsPort, rejectUnauthorized: false, ...(servername ? { servername } : {}) });
      socket.once('secureConnect', () => {
        const cert = socket.getPeerCertificate();
        socket.destroy();
        resolve(cert);
      });
      socket.once('error', (err: Error) => resolve(err));
    });

  const https = (servername: string, host: string, path = '/', headers: Record<string, string> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port: tlsPort, servername, path, headers: { host, ...headers }, rejectUnauthorized: false, agent: false },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        },
      );
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode!, headers: res.headers, body: '' });
      });
      req.on('error', reject);
      req.end();
    });

  const http = (host: string, path = '/', method = 'GET') =>
    new Promise<Answer>((resolve, reject) => {
      const u = new URL(ingress.url);
      const req = httpRequest({ host: u.hostname, port: u.port, path, method, headers: { host }, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });

  it('shows the certificate of the SNI name: a custom domain’s, its wildcard’s, the platform’s', async () => {
    const shop = await handshake('shop.example');
    assert.ok(!(shop instanceof Error), shop instanceof Error ? shop.message : '');
    assert.equal(shop.subject.CN, 'shop.example');
    assert.equal(shop.subjectaltname, 'DNS:shop.example');
    const wild = await handshake('a.wild.example');
    assert.ok(!(wild instanceof Error), wild instanceof Error ? wild.message : '');
    assert.equal(wild.subjectaltname, 'DNS:*.wild.example');
    const app = await handshake(`shop.${appsDomain}`);
    assert.ok(!(app instanceof Error), app instanceof Error ? app.message : '');
    assert.equal(app.subjectaltname, `DNS:*.${appsDomain}`);
  });

  it('ends the handshake for a name it serves nothing for, and without SNI', async () => {
    assert.ok((await handshake('unknown.example')) instanceof Error);
    assert.ok((await handshake('plain.example')) instanceof Error, 'routes, but has no certificate');
    assert.ok((await handshake('a.b.wild.example')) instanceof Error);
    assert.ok((await handshake(undefined)) instanceof Error, 'no SNI');
  });

  it('proxies a request for the connection’s name (X-Forwarded-Proto https), and answers 421 to one for another host', async () => {
    const ok = await https('shop.example', 'shop.example', '/page');
    assert.equal(ok.status, 200);
    assert.equal(ok.body, 'app saw shop.example');
    assert.equal(seen.at(-1)?.proto, 'https');
    assert.equal((await https('shop.example', 'Shop.Example:443', '/')).status, 200, 'the Host’s hostname, any case or port');
    const before = seen.length;
    const other = await https('shop.example', `shop.${appsDomain}`, '/');
    assert.equal(other.status, 421);
    assert.match(other.body, /another name/);
    assert.equal((await https(`shop.${appsDomain}`, 'shop.example', '/')).status, 421);
    assert.equal((await https('a.wild.example', 'b.wild.example', '/')).status, 421, 'the same certificate, another name');
    const ws = await https('shop.example', 'plain.example', '/socket', {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    });
    assert.equal(ws.status, 421, 'a WebSocket too');
    assert.equal(seen.length, before, 'none of them reached the app');
  });

  it('redirects plain HTTP to https for a name with a certificate (308, the public port), and proxies the others', async () => {
    const r = await http('Shop.Example', '/a/b?c=d');
    assert.equal(r.status, 308);
    assert.equal(r.headers.location, `https://shop.example:${publicPort}/a/b?c=d`);
    assert.equal((await http('shop.example', '/form', 'POST')).status, 308);
    assert.equal((await http(`shop.${appsDomain}`, '/')).headers.location, `https://shop.${appsDomain}:${publicPort}/`);
    const plain = await http('plain.example', '/');
    assert.equal(plain.status, 200, 'no certificate: served over plain HTTP');
    assert.equal(seen.at(-1)?.proto, 'http');
    assert.equal(httpsOrigin('shop.example', 443), 'https://shop.example', 'no port for 443');
  });

  it('answers an HTTP-01 challenge on its domain only, before anything else, and never passes the path to the app', async () => {
    const before = seen.length;
    const ok = await http('shop.example', `/.well-known/acme-challenge/${token}`);
    assert.equal(ok.status, 200, 'not redirected either');
    assert.equal(ok.body, `${token}.thumb`);
    assert.match(String(ok.headers['content-type']), /^text\/plain/);
    const head = await http('shop.example', `/.well-known/acme-challenge/${token}`, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal((await http('plain.example', `/.well-known/acme-challenge/${token}`)).status, 404, 'another host');
    assert.equal((await http('shop.example', '/.well-known/acme-challenge/short')).status, 404, 'a token of the wrong shape');
    assert.equal((await http('shop.example', `/.well-known/acme-challenge/${token}`, 'POST')).status, 404);
    assert.equal((await http('plain.example', '/.well-known/acme-challenge/')).status, 404);
    assert.equal(seen.length, before);
  });
});

describe('ingress-auth TLS: sign-in over https', () => {
  const config = loadConfig(
    { SVC_APPS_DOMAIN: appsDomain, SVC_APPS_URL_SUFFIX: ':8081', SVC_LOG_LEVEL: 'silent', SVC_PROXY_TLS_PUBLIC_PORT: '8443' },
    { exists: () => false },
  );
  const reqOf = (host: string, encrypted: boolean) =>
    ({ headers: { host }, socket: { remoteAddress: '10.0.0.1', ...(encrypted ? { encrypted: true } : {}) } }) as unknown as IncomingMessage;

  it('uses __Host- cookies with Secure over TLS, and the configured ones on plain HTTP', () => {
    const signIn = new SignIn({ db: {} as Knex, config, log, signer: { sign: async () => '' }, assertionLifetimeSeconds: 300 });
    assert.deepEqual(signIn.cookiesFor(reqOf('shop.example', true)), {
      names: { session: '__Host-svc-session', flow: '__Host-svc-flow' },
      secure: true,
    });
    assert.deepEqual(signIn.cookiesFor(reqOf('shop.example', false)), {
      names: { session: 'svc-session', flow: 'svc-flow' },
      secure: false,
    });
    assert.deepEqual(signIn.cookiesFor(undefined), { names: signIn.cookies, secure: false });
  });

  it('builds the origin of links and passkeys from the request’s scheme: https on the public port over TLS', () => {
    const ctx = { config } as unknown as IngressContext;
    const shop = appOf('acct-a', 'shop', 'uid-shop');
    const res = {} as ServerResponse;
    assert.equal(authRequest(ctx, reqOf('Shop.Example:9999', true), res, shop, 'rid').origin, 'https://shop.example:8443');
    assert.equal(authRequest(ctx, reqOf('shop.example', false), res, shop, 'rid').origin, 'http://shop.example:8081', 'as before');
  });

  it('sends a provider sign-in back over https to a hostname that has a certificate', async () => {
    const shop = appOf('acct-a', 'shop', 'uid-shop');
    const flow = { id: 'f', appUid: 'uid-shop', host: 'shop.example', provider: 'idp', secrets: {}, binding: 'b', next: '/after' };
    const signIn = { links: { finishFlow: async () => flow, handoff: async () => 'HANDOFF' } } as unknown as SignIn;
    const back = async (servedOverTls: boolean) => {
      let location: unknown;
      const res = {
        writeHead(_s: number, h: Record<string, unknown>) {
          location = h.location;
          return this;
        },
        end() {
          return this;
        },
      } as unknown as ServerResponse;
      await finishFlow(
        { config, log, signIn, appOfHost: () => shop, servedOverTls: () => servedOverTls },
        res,
        new URL(`http://login.${appsDomain}/_svc/auth/idp/callback?state=s`),
        'rid',
        'idp',
        async () => ({ provider: 'idp', subject: 'idp:1', email: 'ada@example.test' }),
        () => undefined,
      );
      return location;
    };
    assert.equal(await back(true), 'https://shop.example:8443/_svc/auth/login?next=%2Fafter#handoff=HANDOFF');
    assert.equal(await back(false), 'http://shop.example:8081/_svc/auth/login?next=%2Fafter#handoff=HANDOFF');
  });
});
