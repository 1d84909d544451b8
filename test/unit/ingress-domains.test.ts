// Custom domains in ingress-auth without a cluster (docs/decisions/0027-app-domains.md): which
// verified Domain a Host names (exact over wildcard, one label, the oldest of two), that only a
// Verified Domain routes and stops the moment it is not, that no address ever matches; the one
// host -> App function (app hostnames first, a Domain's App in the Domain's own namespace); and what
// follows the request's host on a custom domain: the origin of sign-in, the way back from a
// provider, and the proxy itself in front of a local upstream.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { finishFlow } from '../../ingress-auth/auth/providers/flow.js';
import type { SignIn } from '../../ingress-auth/auth/sign-in.js';
import { authRequest, type IngressContext, type SignInParts } from '../../ingress-auth/context.js';
import { DomainIndex } from '../../ingress-auth/domains.js';
import { appAtHost, hostnameOf, originOf, type HostRules } from '../../ingress-auth/host.js';
import { RouteTable, type Backend, type RouteSource } from '../../ingress-auth/routes.js';
import { startIngress, type Ingress } from '../../ingress-auth/server.js';
import { loadConfig } from '../../lib/config.js';
import { appUrl } from '../../lib/contract.js';
import type { Session } from '../../lib/auth/sessions.js';
import { offlineKubeConfig } from '../support/kube.js';
import { createLogger } from '../../lib/logger.js';
import type { App, Domain, DomainStatus } from '../../lib/resources/index.js';

const log = createLogger('ingress-auth', 'silent');
const rules: HostRules = { appsDomain: 'apps.localhost', auth: { host: 'login.apps.localhost' } };

let uids = 0;
const domainOf = (
  namespace: string,
  name: string,
  app: string,
  opts: { phase?: DomainStatus['phase'] | null; created?: string; uid?: string; deleting?: boolean } = {},
): Domain => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Domain',
  metadata: {
    namespace,
    name: `d-${++uids}`,
    uid: opts.uid ?? `uid-domain-${uids}`,
    creationTimestamp: (opts.created ?? '2026-01-01T00:00:00Z') as unknown as Date,
    ...(opts.deleting ? { deletionTimestamp: new Date() } : {}),
  },
  spec: { domain: name, app },
  ...(opts.phase === null ? {} : { status: { phase: opts.phase ?? 'Verified' } }),
});

const appOf = (namespace: string, name: string, uid: string, over: Partial<App['spec']> = {}, deleting = false): App => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: {
    namespace,
    name,
    uid,
    creationTimestamp: '2026-01-01T00:00:00Z' as unknown as Date,
    ...(deleting ? { deletionTimestamp: new Date() } : {}),
  },
  spec: { ...over },
});

/** A route table fed by hand (its informers never started: no cluster). */
function table(): RouteTable {
  return new RouteTable(offlineKubeConfig(), log);
}

const target = (idx: DomainIndex, host: string | undefined) => {
  const t = idx.target(host);
  return t && `${t.namespace}/${t.app}`;
};

describe('ingress-auth: the domain index', () => {
  it('routes a Domain only while it is Verified and not being deleted', () => {
    const idx = new DomainIndex();
    for (const phase of ['Pending', 'Misconfigured', 'Failed', null] as const) {
      idx.upsert(domainOf('acct-a', `${phase ?? 'none'}.example`, 'shop', { phase }));
      assert.equal(target(idx, `${phase ?? 'none'}.example`), undefined, String(phase));
    }
    idx.upsert(domainOf('acct-a', 'gone.example', 'shop', { deleting: true }));
    assert.equal(target(idx, 'gone.example'), undefined, 'a Domain being deleted');
    idx.upsert(domainOf('acct-a', 'shop.example', 'shop'));
    assert.equal(target(idx, 'shop.example'), 'acct-a/shop');
  });

  it('stops routing at the event that says so: a phase change, a deletion timestamp, the deletion', () => {
    const idx = new DomainIndex();
    const d = domainOf('acct-a', 'shop.example', 'shop');
    idx.upsert(d);
    assert.equal(target(idx, 'shop.example'), 'acct-a/shop');
    idx.upsert({ ...d, status: { phase: 'Misconfigured' } });
    assert.equal(target(idx, 'shop.example'), undefined, 'Misconfigured');
    idx.upsert(d);
    assert.equal(target(idx, 'shop.example'), 'acct-a/shop', 'Verified again');
    idx.upsert({ ...d, metadata: { ...d.metadata, deletionTimestamp: new Date() } });
    assert.equal(target(idx, 'shop.example'), undefined, 'being deleted');
    idx.upsert(d);
    idx.remove(d);
    assert.equal(target(idx, 'shop.example'), undefined, 'deleted');
    idx.remove(d);
    idx.remove(domainOf('acct-a', 'never.example', 'shop'));
    const w = domainOf('acct-a', '*.shop.example', 'shop');
    idx.upsert(w);
    assert.equal(target(idx, 'a.shop.example'), 'acct-a/shop');
    idx.upsert({ ...w, status: { phase: 'Failed' } });
    assert.equal(target(idx, 'a.shop.example'), undefined, 'a wildcard too');
  });

  it('prefers the exact name to a wildcard; a wildcard matches exactly one more label', () => {
    const idx = new DomainIndex();
    idx.upsert(domainOf('acct-a', '*.shop.example', 'any'));
    idx.upsert(domainOf('acct-a', 'www.shop.example', 'www'));
    assert.equal(target(idx, 'www.shop.example'), 'acct-a/www');
    assert.equal(target(idx, 'a.shop.example'), 'acct-a/any');
    assert.equal(target(idx, 'shop.example'), undefined, 'not the name under the wildcard');
    assert.equal(target(idx, 'a.b.shop.example'), undefined, 'not two labels');
    assert.equal(target(idx, 'ashop.example'), undefined);
    assert.equal(target(idx, '*.shop.example'), undefined, 'a host is never the wildcard itself');
    // The exact name wins even when it is the younger one, or of another namespace.
    idx.upsert(domainOf('acct-b', 'new.shop.example', 'other', { created: '2027-01-01T00:00:00Z' }));
    assert.equal(target(idx, 'new.shop.example'), 'acct-b/other');
  });

  it('gives a name two namespaces verified to the oldest Domain (creation time, then uid)', () => {
    const idx = new DomainIndex();
    const young = domainOf('acct-b', 'shop.example', 'b', { created: '2026-02-01T00:00:00Z' });
    const old = domainOf('acct-a', 'shop.example', 'a', { created: '2026-01-01T00:00:00Z' });
    idx.upsert(young);
    idx.upsert(old);
    assert.equal(target(idx, 'shop.example'), 'acct-a/a');
    idx.remove(old);
    assert.equal(target(idx, 'shop.example'), 'acct-b/b', 'the next takes over when the holder goes');
    const x = domainOf('acct-x', '*.same.example', 'x', { uid: 'uid-2' });
    const y = domainOf('acct-y', '*.same.example', 'y', { uid: 'uid-1' });
    idx.upsert(x);
    idx.upsert(y);
    assert.equal(target(idx, 'a.same.example'), 'acct-y/y', 'the same second: the smaller uid');
  });

  it('normalizes the Host: case, port, one trailing dot', () => {
    const idx = new DomainIndex();
    idx.upsert(domainOf('acct-a', 'shop.example', 'shop'));
    idx.upsert(domainOf('acct-a', '*.wild.example', 'wild'));
    for (const h of ['shop.example', 'SHOP.Example', 'shop.example:8081', 'shop.example.', 'Shop.Example.:443', ' shop.example '])
      assert.equal(target(idx, h), 'acct-a/shop', h);
    assert.equal(target(idx, 'A.Wild.Example.:80'), 'acct-a/wild');
    for (const h of [
      undefined,
      '',
      'shop.example..',
      'shop.example:x',
      'shop.example:',
      'shop.example:123456',
      'shop..example',
      '.shop.example',
    ])
      assert.equal(target(idx, h), undefined, String(h));
    assert.equal(hostnameOf('Shop.Example.:8081'), 'shop.example');
    assert.equal(hostnameOf('[::1]:8081'), undefined);
  });

  it('never matches an IP literal, whatever a Domain names', () => {
    const idx = new DomainIndex();
    // The API refuses these names; the index must not need it to.
    for (const name of ['1.2.3.4', '*.2.3.4', '*.0.0.1', 'a.123', '127.1', '0x7f.1', '::1', '[::1]', '*.*.example'])
      idx.upsert(domainOf('acct-a', name, 'shop'));
    for (const h of [
      '1.2.3.4',
      '1.2.3.4:8081',
      '9.2.3.4',
      '127.0.0.1',
      'b.123',
      '127.1',
      '0x7f.1',
      '[::1]',
      '[::1]:8081',
      '::1',
      'a.b.example',
    ])
      assert.equal(target(idx, h), undefined, h);
  });
});

describe('ingress-auth: the App a Host is served by (appAtHost)', () => {
  it('serves an app hostname first, as before: the oldest App of the name', () => {
    const t = table();
    const shop = appOf('acct-a', 'shop', 'uid-a');
    t.hosts.upsert(appOf('acct-b', 'shop', 'uid-b', {}, false));
    t.hosts.upsert({ ...shop, metadata: { ...shop.metadata, creationTimestamp: '2025-01-01T00:00:00Z' as unknown as Date } });
    // A Domain naming an app hostname (the API refuses it) changes nothing.
    t.domains.upsert(domainOf('acct-b', 'shop.apps.localhost', 'shop'));
    assert.equal(appAtHost('shop.apps.localhost:8081', t, rules)?.metadata.uid, 'uid-a');
    assert.equal(appAtHost('SHOP.apps.localhost.', t, rules)?.metadata.uid, 'uid-a');
  });

  it('serves a verified Domain with the App of its own namespace, never another namespace’s', () => {
    const t = table();
    const shop = appOf('acct-a', 'shop', 'uid-shop');
    t.hosts.upsert(shop);
    t.domains.upsert(domainOf('acct-a', 'shop.example', 'shop'));
    assert.equal(appAtHost('shop.example', t, rules), shop);
    assert.equal(appAtHost('Shop.Example.:8081', t, rules), shop);
    // acct-b names `shop`, which exists only in acct-a: nothing is served.
    t.domains.upsert(domainOf('acct-b', 'evil.example', 'shop'));
    t.domains.upsert(domainOf('acct-b', '*.evil.example', 'shop'));
    assert.equal(appAtHost('evil.example', t, rules), undefined);
    assert.equal(appAtHost('a.evil.example', t, rules), undefined);
    // Once acct-b has an App of that name, it is acct-b's that serves.
    const theirs = appOf('acct-b', 'shop', 'uid-theirs');
    t.hosts.upsert(theirs);
    assert.equal(appAtHost('evil.example', t, rules), theirs);
    assert.equal(appAtHost('shop.example', t, rules), shop, 'and still acct-a’s on acct-a’s domain');
  });

  it('serves nothing for a Domain whose App does not exist (yet), or is being deleted', () => {
    const t = table();
    t.domains.upsert(domainOf('acct-a', 'early.example', 'later'));
    assert.equal(appAtHost('early.example', t, rules), undefined);
    const later = appOf('acct-a', 'later', 'uid-later');
    t.hosts.upsert(later);
    assert.equal(appAtHost('early.example', t, rules), later, 'served once the App is there');
    t.hosts.upsert(appOf('acct-a', 'later', 'uid-later', {}, true));
    assert.equal(appAtHost('early.example', t, rules), undefined, 'being deleted');
    t.hosts.remove(later);
    assert.equal(appAtHost('early.example', t, rules), undefined);
    // A new App of the name (a new uid) serves the domain again.
    const again = appOf('acct-a', 'later', 'uid-again');
    t.hosts.upsert(again);
    assert.equal(appAtHost('early.example', t, rules), again);
  });

  it('never lets a Domain take the apps domain, a name under it, or the sign-in host', () => {
    const t = table();
    t.hosts.upsert(appOf('acct-a', 'shop', 'uid-shop'));
    for (const name of ['apps.localhost', 'free.apps.localhost', '*.apps.localhost', 'a.b.apps.localhost', 'login.platform.example'])
      t.domains.upsert(domainOf('acct-a', name, 'shop'));
    const custom = { ...rules, auth: { host: 'login.platform.example' } };
    for (const h of [
      'apps.localhost',
      'free.apps.localhost',
      'a.b.apps.localhost',
      'login.platform.example',
      'login.platform.example:8081',
    ])
      assert.equal(appAtHost(h, t, custom), undefined, h);
  });

  it('works with a route source that knows no custom domains (a fixed table)', () => {
    const shop = appOf('acct-a', 'shop', 'uid-shop');
    const fixed = { app: (name: string) => (name === 'shop' ? shop : undefined) };
    assert.equal(appAtHost('shop.apps.localhost', fixed, rules), shop);
    assert.equal(appAtHost('shop.example', fixed, rules), undefined);
    assert.equal(appAtHost(undefined, fixed, rules), undefined);
  });
});

describe('ingress-auth: host-scoped sign-in on a custom domain', () => {
  const config = loadConfig(
    { SVC_APPS_DOMAIN: 'apps.localhost', SVC_APPS_URL_SUFFIX: ':8081', SVC_LOG_LEVEL: 'silent' },
    { exists: () => false },
  );
  const shop = appOf('acct-a', 'shop', 'uid-shop');

  it("scopes a request's sign-in to its hostname, and builds its origin from that hostname and the configuration", () => {
    const ctx = { config } as unknown as IngressContext;
    const reqOf = (host: string) => ({ headers: { host }, socket: { remoteAddress: '10.0.0.1' } }) as unknown as IncomingMessage;
    const res = {} as ServerResponse;
    const custom = authRequest(ctx, reqOf('Shop.Example.:9999'), res, shop, 'rid');
    assert.equal(custom.host, 'shop.example');
    assert.equal(custom.origin, 'http://shop.example:8081', 'the configured port, never the Host header’s');
    const own = authRequest(ctx, reqOf('shop.apps.localhost'), res, shop, 'rid');
    assert.equal(own.host, 'shop.apps.localhost');
    assert.equal(own.origin, appUrl(config.site, 'shop'), 'on the app hostname: its URL, as before');
    assert.equal(originOf({ ...config.site, secure: true, appsUrlSuffix: '' }, 'a.shop.example'), 'https://a.shop.example');
  });

  it('sends a provider sign-in back to the hostname it started on, only while that hostname serves the same App', async () => {
    const flow = { id: 'f', appUid: 'uid-shop', host: 'shop.example', provider: 'idp', secrets: {}, binding: 'b', next: '/after' };
    const signIn = {
      links: { finishFlow: async () => flow, handoff: async () => 'HANDOFF' },
    } as unknown as SignIn;
    const answer = async (served: App | undefined) => {
      let status = 0;
      let headers: Record<string, unknown> = {};
      const res = {
        writeHead(s: number, h: Record<string, unknown>) {
          status = s;
          headers = h;
          return this;
        },
        end() {
          return this;
        },
      } as unknown as ServerResponse;
      const seen: string[] = [];
      await finishFlow(
        {
          config,
          log,
          signIn,
          appOfHost: (h) => {
            seen.push(h);
            return served;
          },
        },
        res,
        new URL('http://login.apps.localhost/_svc/auth/idp/callback?state=s'),
        'rid',
        'idp',
        async () => ({ provider: 'idp', subject: 'idp:1', email: 'ada@example.test' }),
        () => undefined,
      );
      return { status, location: headers.location, seen };
    };
    const back = await answer(shop);
    assert.deepEqual(back.seen, ['shop.example']);
    assert.equal(back.status, 303);
    assert.equal(back.location, 'http://shop.example:8081/_svc/auth/login?next=%2Fafter#handoff=HANDOFF');
    assert.equal((await answer(undefined)).status, 404, 'the domain stopped routing meanwhile');
    assert.equal((await answer(appOf('acct-b', 'shop', 'uid-other'))).status, 404, 'it serves another App now');
  });
});

describe('ingress-auth: proxying a custom domain', () => {
  let upstream: Server;
  let ingress: Ingress;
  /** The same routes, with sign-in whose session and identity lookups say which hostname they were for. */
  let signedIn: Ingress;
  let t: RouteTable;
  const seen: Array<{ host?: string; forwardedHost?: string; url?: string; assertion?: string }> = [];
  const asked: string[] = [];

  /** A request through ingress-auth with the given Host; `upgrade` asks for a WebSocket. */
  const via = (host: string, path = '/', upgrade = false, through = () => ingress) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const u = new URL(through().url);
      const headers: Record<string, string> = { host, accept: 'application/json' };
      if (upgrade)
        Object.assign(headers, {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        });
      const req = httpRequest({ host: u.hostname, port: u.port, path, headers, timeout: 5_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode!, body: '' });
      });
      req.on('error', reject);
      req.end();
    });

  before(async () => {
    upstream = createServer((req, res) => {
      seen.push({
        host: req.headers.host,
        forwardedHost: req.headers['x-forwarded-host'] as string | undefined,
        url: req.url,
        assertion: req.headers['x-svc-auth-assertion'] as string | undefined,
      });
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`app saw ${req.headers.host}`);
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const port = (upstream.address() as AddressInfo).port;
    const backend: Backend = { address: '127.0.0.1', port, origin: `http://127.0.0.1:${port}` };
    t = table();
    t.hosts.upsert(
      appOf('acct-a', 'shop', 'uid-shop', {
        kind: 'static',
        auth: { rules: [{ mode: 'auth', paths: ['/private/**'], admit: { owner: true } }] },
      }),
    );
    const routes: RouteSource = {
      start: async () => undefined,
      stop: async () => undefined,
      app: (name) => t.app(name),
      domainApp: (h) => t.domainApp(h),
      backends: () => [backend],
      whenBackends: async () => [backend],
      origins: () => new Set([backend.origin]),
    };
    const config = loadConfig({ SVC_APPS_DOMAIN: 'apps.localhost', SVC_LOG_LEVEL: 'silent' }, { exists: () => false });
    ingress = await startIngress({ config, kc: undefined as never, log, routes, host: '127.0.0.1', port: 0 });
    const session = {
      identity: { provider: 'svc', subject: 'u1', email: 'o@example.test', facts: { namespace: 'acct-a' } },
    } as unknown as Session;
    const auth = {
      signIn: {
        cachedIdentityHeaders: (_s: Session, host: string) => {
          asked.push(`identity for ${host}`);
          return ['X-Svc-Auth-Assertion', `aud=${host}`];
        },
      },
      routes: {
        knownSession: (r: { host: string }) => {
          asked.push(`session on ${r.host}`);
          return { token: 't', session };
        },
      },
    } as unknown as SignInParts;
    signedIn = await startIngress({ config, kc: undefined as never, log, routes, auth, host: '127.0.0.1', port: 0 });
  });

  after(async () => {
    await ingress?.close();
    await signedIn?.close();
    upstream?.close();
  });

  it('serves a verified domain as the app hostname, and stops at once when it is not', async () => {
    assert.equal((await via('shop.example')).status, 404);
    const d = domainOf('acct-a', 'shop.example', 'shop');
    t.domains.upsert(d);
    const r = await via('shop.example:8081', '/hello');
    assert.equal(r.status, 200, r.body);
    assert.equal(r.body, 'app saw shop.example:8081', 'Host passed as received');
    assert.equal(seen.at(-1)?.forwardedHost, 'shop.example:8081');
    assert.equal((await via('www.shop.example')).status, 404, 'no wildcard yet');
    t.domains.upsert(domainOf('acct-a', '*.shop.example', 'shop'));
    assert.equal((await via('www.shop.example')).status, 200);
    t.domains.upsert({ ...d, status: { phase: 'Misconfigured' } });
    const gone = await via('shop.example');
    assert.equal(gone.status, 404);
    assert.match(gone.body, /no app is served at shop.example/);
    assert.equal((await via('www.shop.example')).status, 200, 'the wildcard still routes');
  });

  it("applies the app's policy on its custom domain, for plain requests and WebSockets", async () => {
    t.domains.upsert(domainOf('acct-a', 'policy.example', 'shop'));
    const gated = await via('policy.example', '/private/x');
    assert.equal(gated.status, 503, gated.body);
    assert.match(gated.body, /requires sign-in/);
    assert.equal((await via('policy.example', '/private/x', true)).status, 503);
    assert.equal((await via('unknown.example', '/', true)).status, 404);
  });

  it('looks the session up on the custom hostname and makes the identity out to it', async () => {
    t.domains.upsert(domainOf('acct-a', 'signed.example', 'shop'));
    asked.length = 0;
    const r = await via('Signed.Example:8081', '/private/x', false, () => signedIn);
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(asked, ['session on signed.example', 'identity for signed.example']);
    assert.equal(seen.at(-1)?.assertion, 'aud=signed.example');
  });
});
