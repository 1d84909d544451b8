// Attacks on the gate itself (issue 11 items 1, 2, 3 and 7): requests that try to reach a gated page
// or handler of an app around ingress-auth, identity headers an app must not believe, and cookies an
// app must not be able to plant. Real parts: ingress-auth in-process with the App's policy, in front
// of the platform's runtime as a process (the same dist/runtime/main.js machines run), serving a
// handler tree. Requests are written as raw bytes, so every spelling reaches the server as sent.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { startIngress, type Ingress } from '../../ingress-auth/server.js';
import type { RouteSource } from '../../ingress-auth/routes.js';
import { loadConfig } from '../../lib/config.js';
import { signAssertion, type AssertedIdentity, type SigningKey } from '../../lib/identity/assertion.js';
import { createLogger } from '../../lib/logger.js';
import { repoRoot } from '../../lib/paths.js';
import { apiVersion, type App } from '../../lib/resources/index.js';
import { freePort } from '../support/ingress.js';

const domain = 'apps.localhost';
const host = `shop.${domain}`;
const issuer = 'http://apps.localhost/_svc/auth';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Writes each of `parts` on one fresh connection, a moment apart (so a later part arrives after the
 * server answered the earlier one, as a second request on a kept-alive connection does), and reads
 * until the server closes it (or `ms` pass).
 */
async function exchange(port: number, raw: string | string[], ms = 1_500): Promise<string> {
  const sock = net.connect(port, '127.0.0.1');
  await once(sock, 'connect');
  let got = '';
  sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
  sock.on('error', () => undefined);
  const closed = once(sock, 'close');
  for (const part of Array.isArray(raw) ? raw : [raw]) {
    if (!sock.writable) break;
    sock.write(part);
    await Promise.race([closed, sleep(200)]);
  }
  await Promise.race([closed, sleep(ms)]);
  sock.destroy();
  return got;
}

const get = (target: string, headers = '') =>
  `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nAccept: application/json\r\n${headers}Connection: close\r\n\r\n`;
const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
const responsesIn = (answer: string) => answer.match(/HTTP\/1\.1 \d{3}/g)?.length ?? 0;

/** The handler tree: public and gated pages and handlers, each saying which it is. */
function siteTree(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-gate-'));
  const put = (rel: string, body: string) => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), body);
  };
  put('index.html', '<p>PUBLIC-PAGE</p>');
  put('admin/index.html', '<p>SECRET-PAGE</p>');
  put('api/secret.js', "export default () => 'SECRET-HANDLER';\n");
  put('api/public.js', "export default () => 'PUBLIC-HANDLER';\n");
  put(
    'api/whoami.js',
    "export default (req) => Object.fromEntries([...req.headers].filter(([k]) => k.startsWith('x-svc') || k.startsWith('x_svc')));\n",
  );
  put('api/env.sh', '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nenv | grep -i "svc_auth\\|x_svc" | sort\n');
  put('viewer.html', '<!doctype html><p data-svc-viewer>email={{$viewer.email}} owner={{$viewer.owner}}</p>');
  put(
    'api/cookies.js',
    `export default () => {
  const h = new Headers({ 'content-type': 'text/plain' });
  for (const c of ['=svc-session=planted; Domain=${domain}; Path=/', 'svc-session', 'SVC-Session=x', ' __Host-svc-session=x; Path=/', '__Secure-SVC_flow=x',
                   'a=b, svc-session=x', 'theme=dark; Domain=${domain}; Path=/', 'lang=en; path=/; DOMAIN=.${domain}; HttpOnly', 'plain=1']) h.append('set-cookie', c);
  return new Response('cookies', { headers: h });
};\n`,
  );
  return root;
}

describe('security: the gate in front of a real runtime', () => {
  let root: string;
  const runtimes: ChildProcess[] = [];
  let runtimePort: number;
  /** The same tree served as an HTML app, for `{{$viewer.*}}`. */
  let htmlPort: number;
  let ingress: Ingress;
  let port: number;
  let jwksServer: Server;
  let key: SigningKey;
  let foreignKey: SigningKey;
  const app: App = {
    apiVersion,
    kind: 'App',
    metadata: { name: 'shop', namespace: 'svc-gate-test', uid: '00000000-0000-0000-0000-00000000gate' },
    spec: {
      kind: 'handlers',
      auth: { rules: [{ mode: 'auth', paths: ['/admin/**', '/api/secret'], admit: { owner: true } }] },
    },
  };

  before(async () => {
    root = siteTree();
    // The platform's assertion keys, published as the API publishes them; a foreign key signs forgeries.
    const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    key = { kid: 'k1', privateKey: pair.privateKey as unknown as SigningKey['privateKey'] };
    const other = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    foreignKey = { kid: 'k1', privateKey: other.privateKey as unknown as SigningKey['privateKey'] };
    const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'EdDSA', use: 'sig' };
    jwksServer = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })),
    );
    jwksServer.listen(0, '127.0.0.1');
    await once(jwksServer, 'listening');
    const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/_svc/auth/jwks.json`;

    const startRuntime = async (kind: string): Promise<number> => {
      const p = await freePort();
      const env = {
        PATH: process.env.PATH,
        SVC_SITE_ROOT: root,
        SVC_APP_KIND: kind,
        HOST: '127.0.0.1',
        PORT: String(p),
        SVC_LOG_LEVEL: 'silent',
      };
      runtimes.push(
        spawn(process.execPath, [path.join(repoRoot, 'dist/runtime/main.js')], {
          env: { ...env, SVC_AUTH_JWKS_URL: jwksUrl, SVC_AUTH_ISSUER: issuer, SVC_AUTH_AUDIENCE: host },
          stdio: 'ignore',
        }),
      );
      for (let i = 0; i < 100; i++) {
        if (
          await fetch(`http://127.0.0.1:${p}/`).then(
            (r) => r.ok,
            () => false,
          )
        )
          break;
        await sleep(50);
      }
      return p;
    };
    runtimePort = await startRuntime('handlers');
    htmlPort = await startRuntime('html');
    const backend = { address: '127.0.0.1', port: runtimePort, origin: `http://127.0.0.1:${runtimePort}` };
    const routes: RouteSource = {
      start: async () => undefined,
      stop: async () => undefined,
      app: (name) => (name === 'shop' ? app : undefined),
      backends: () => [backend],
      whenBackends: async () => [backend],
      origins: () => new Set([backend.origin]),
    };
    const config = loadConfig({ SVC_APPS_DOMAIN: domain, SVC_LOG_LEVEL: 'silent' }, { exists: () => false });
    // No sign-in: a gated path fails closed (503), so any 200 from one is a walk-around.
    ingress = await startIngress({
      config,
      kc: undefined as never,
      log: createLogger('ingress-auth', 'silent'),
      routes,
      host: '127.0.0.1',
      port: 0,
    });
    port = Number(new URL(ingress.url).port);
  });

  after(async () => {
    await ingress?.close();
    for (const r of runtimes) r.kill('SIGINT');
    jwksServer?.closeAllConnections();
    await new Promise((r) => jwksServer?.close(r));
    rmSync(root, { recursive: true, force: true });
  });

  it('serves the public page and handler through the gate (the setup works)', async () => {
    const page = await exchange(port, get('/'));
    assert.equal(statusOf(page), 200);
    assert.match(page, /PUBLIC-PAGE/);
    assert.match(await exchange(port, get('/api/public')), /PUBLIC-HANDLER/);
    assert.equal(statusOf(await exchange(port, get('/admin/'))), 503, 'the gated page is gated');
  });

  describe('item 2: every request-target spelling of a gated path is gated or refused (RFC 9112 3.2)', () => {
    const spellings = [
      '/admin/',
      '/admin',
      '//admin/',
      '///admin/',
      '//x/admin/',
      '//x/admin/index.html',
      '/./admin/',
      '/x/../admin/',
      '/%2e/admin/',
      '/%2e%2e/admin/',
      '/x/%2E%2E/admin/',
      '/%61dmin/',
      '/ADMIN/',
      '/admin/index.html',
      '/admin/.',
      '/admin;x=1/',
      '/admin%2findex.html',
      '/\\x/admin/',
      '/%5cx/admin/',
      '/%5Cadmin/',
      '\\admin/',
      'http://x/admin/',
      'http://x//admin/',
      `http://${host}/admin/`,
      `HTTP://${host.toUpperCase()}//admin/index.html`,
      'https://evil.example/admin/',
      'http://x/api/secret.js',
      '/api/secret',
      '//x/api/secret',
      '/api//secret',
      '/api/./secret',
      '/api/x/../secret',
      '/API/Secret',
      '/api/secret/',
      '/api%2fsecret',
      '/api/secret?x=1',
      '/api/secret.js',
      '/api/secret%2ejs',
      '/admin%00/',
      '/admin%',
      '*',
      'admin/',
      `${host}:80`,
    ];
    for (const target of spellings) {
      it(`GET ${target}`, async () => {
        const answer = await exchange(port, get(target));
        assert.doesNotMatch(answer, /SECRET/, `${target} reached gated content`);
        assert.ok([400, 404, 503].includes(statusOf(answer)), `${target}: ${answer.slice(0, 80)}`);
      });
    }

    it('the runtime itself reads a target only as a path: absolute-form and //host targets are never a host or source', async () => {
      for (const target of ['http://x/api/secret.js', '//x/api/secret.js', '/api/secret.js', 'http://x/admin/index.html']) {
        const answer = await exchange(runtimePort, get(target));
        assert.doesNotMatch(answer, /export default/, `${target} returned handler source`);
      }
      assert.equal(statusOf(await exchange(runtimePort, get('/\\x/admin/'))), 400);
      assert.equal(statusOf(await exchange(runtimePort, get('/admin%zz'))), 400);
    });
  });

  describe('item 1: an Upgrade request never carries a second, unchecked request to the app', () => {
    const smuggled = (first: string, upgrade: string) => [
      `GET ${first} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      `GET /admin/ HTTP/1.1\r\nHost: ${host}\r\nX-Svc-Auth-Subject: admin\r\n\r\n`,
      `GET /api/secret HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    ];

    for (const upgrade of ['websocket', 'WebSocket', 'h2c', 'foo', 'websocket, h2c']) {
      it(`Upgrade: ${upgrade} on a public path: one answer, then the connection closes`, async () => {
        const answer = await exchange(port, smuggled('/api/public', upgrade));
        assert.doesNotMatch(answer, /SECRET/);
        assert.equal(responsesIn(answer), 1, answer);
        assert.match(answer, /PUBLIC-HANDLER/);
      });
    }

    it('a POST with Upgrade and a body is refused, its body never parsed as requests', async () => {
      const body = `GET /admin/ HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
      const raw = `POST /api/public HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const answer = await exchange(port, raw);
      assert.doesNotMatch(answer, /SECRET/);
      assert.equal(statusOf(answer), 400);
    });

    it('CONNECT (authority-form) is never tunnelled', async () => {
      const answer = await exchange(port, [`CONNECT ${host}:80 HTTP/1.1\r\nHost: ${host}:80\r\n\r\n`, get('/admin/')]);
      assert.doesNotMatch(answer, /SECRET|HTTP\/1\.1 200/);
    });

    // The classic siblings: a body length two parsers could read differently hides a second request.
    for (const [what, headers] of [
      ['Content-Length with Transfer-Encoding', 'Content-Length: 4\r\nTransfer-Encoding: chunked\r\n'],
      ['two Content-Lengths', 'Content-Length: 0\r\nContent-Length: 44\r\n'],
      ['an obfuscated Transfer-Encoding', 'Transfer-Encoding: xchunked\r\n'],
    ] as const) {
      it(`a request with ${what} is refused, not split`, async () => {
        const hidden = `GET /admin/ HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
        const answer = await exchange(port, `POST /api/public HTTP/1.1\r\nHost: ${host}\r\n${headers}\r\n0\r\n\r\n${hidden}`);
        assert.doesNotMatch(answer, /SECRET/);
        assert.equal(statusOf(answer), 400, answer.slice(0, 100));
      });
    }

    it('an Upgrade on a gated path is gated', async () => {
      const answer = await exchange(port, smuggled('/admin/', 'websocket'));
      assert.doesNotMatch(answer, /SECRET/);
      assert.equal(statusOf(answer), 503);
    });
  });

  describe('item 3: the runtime believes identity headers only with a valid assertion', () => {
    const alice: AssertedIdentity = { sub: 'u-alice', email: 'alice@example.com', provider: 'email', name: 'Alice' };
    const headersOf = async (
      id: AssertedIdentity,
      assertion: string,
      extra: Record<string, string> = {},
    ): Promise<Record<string, string>> => {
      const h: Record<string, string> = {
        'X-Svc-Auth-Subject': id.sub,
        'X-Svc-Auth-Email': id.email,
        'X-Svc-Auth-Provider': id.provider,
        ...extra,
      };
      if (assertion) h['X-Svc-Auth-Assertion'] = assertion;
      if (id.name) h['X-Svc-Auth-Name'] = encodeURIComponent(id.name);
      return h;
    };
    /** What the handler saw, straight to the runtime (as a neighbour on the pod network would send it). */
    const seen = async (headers: Record<string, string>, target = '/api/whoami') =>
      (
        await fetch(`http://127.0.0.1:${target.endsWith('.html') ? htmlPort : runtimePort}${target}`, { headers: { ...headers, host } })
      ).text();
    const sign = (k: SigningKey, id: AssertedIdentity, aud = host, opts: { now?: Date; issuer?: string } = {}) =>
      signAssertion(k, id, aud, { issuer: opts.issuer ?? issuer, ...(opts.now ? { now: opts.now } : {}) });

    it('a valid assertion: the identity reaches handlers, CGI and HTML', async () => {
      const h = await headersOf(alice, await sign(key, alice));
      const who = JSON.parse(await seen(h)) as Record<string, string>;
      assert.equal(who['x-svc-auth-subject'], 'u-alice');
      assert.equal(who['x-svc-auth-email'], 'alice@example.com');
      assert.equal(who['x-svc-auth-verified'], 'true');
      assert.equal(who['x-svc-auth-owner'], undefined);
      assert.match(await seen(h, '/api/env'), /SVC_AUTH_EMAIL=alice@example.com/);
      assert.match(await seen(h, '/viewer.html'), /email=alice@example.com owner=/);
    });

    const forgeries: Array<[string, () => Promise<Record<string, string>>]> = [
      ['no assertion', () => headersOf(alice, '')],
      ['a garbage assertion', () => headersOf(alice, 'not.a.jws')],
      ['signed by another key', async () => headersOf(alice, await sign(foreignKey, alice))],
      ['made out to another app', async () => headersOf(alice, await sign(key, alice, `other.${domain}`))],
      ['from another issuer', async () => headersOf(alice, await sign(key, alice, host, { issuer: 'http://evil.example/_svc/auth' }))],
      ['expired', async () => headersOf(alice, await sign(key, alice, host, { now: new Date(Date.now() - 3_600_000) }))],
      [
        "headers for mallory with alice's assertion",
        async () => headersOf({ ...alice, sub: 'u-mallory', email: 'mallory@example.com' }, await sign(key, alice)),
      ],
      ['another email with the right subject', async () => headersOf({ ...alice, email: 'boss@example.com' }, await sign(key, alice))],
      ['another provider', async () => headersOf({ ...alice, provider: 'svc' }, await sign(key, alice))],
      ['another name', async () => headersOf({ ...alice, name: 'Admin' }, await sign(key, alice))],
      [
        'alg none',
        async () =>
          headersOf(
            alice,
            `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: alice.sub, email: alice.email, provider: 'email', iss: issuer, aud: host, iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 300 })).toString('base64url')}.`,
          ),
      ],
    ];
    for (const [what, make] of forgeries) {
      it(`${what}: no identity anywhere`, async () => {
        const h = await make();
        assert.deepEqual(JSON.parse(await seen(h)), {});
        assert.doesNotMatch(await seen(h, '/api/env'), /SVC_AUTH_|X_SVC/);
        assert.match(await seen(h, '/viewer.html'), /email= owner=/);
      });
    }

    it('owner and verified flags come from the assertion, not from headers; look-alike spellings are dropped', async () => {
      const h = await headersOf(alice, await sign(key, alice), {
        'X-Svc-Auth-Owner': 'true',
        X_Svc_Auth_Email: 'boss@example.com',
        'x-svc-auth-admin': 'true',
      });
      const who = JSON.parse(await seen(h)) as Record<string, string>;
      assert.equal(who['x-svc-auth-owner'], undefined, 'an owner header without an owner claim');
      assert.equal(who['x-svc-auth-email'], 'alice@example.com');
      assert.equal(who['x-svc-auth-admin'], undefined);
      assert.equal(
        Object.keys(who).some((k) => k.startsWith('x_svc')),
        false,
      );
      assert.doesNotMatch(await seen(h, '/api/env'), /boss@example.com|HTTP_X_SVC_AUTH_ADMIN/);
      const owner = { ...alice, provider: 'svc', owner: true as const };
      const asOwner = JSON.parse(await seen(await headersOf(owner, await sign(key, owner)))) as Record<string, string>;
      assert.equal(asOwner['x-svc-auth-owner'], 'true');
    });
  });

  describe('item 7: an app cannot plant or widen a cookie', () => {
    it('nameless and platform-named Set-Cookie are dropped, Domain is removed from the rest', async () => {
      const answer = await exchange(port, get('/api/cookies'));
      assert.equal(statusOf(answer), 200);
      const cookies = answer
        .split('\r\n')
        .filter((l) => /^set-cookie:/i.test(l))
        .map((l) => l.slice(l.indexOf(':') + 1).trim());
      assert.deepEqual(cookies, ['theme=dark; Path=/', 'lang=en; path=/; HttpOnly', 'plain=1']);
    });
  });
});
