// The registry's token service and what the controllers give pods to pull with (issue 30 finding 6,
// second half; docs/decisions/0025-registry-auth.md): which credential may pull and push what, how
// credentials are checked, the tokens' shape as distribution verifies it, the HTTP answers of the
// realm, and the pull Secret, pull policy and Secret references of the pods the controllers make.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { ApiException } from '@kubernetes/client-node';
import { decodeProtectedHeader, importX509, jwtVerify } from 'jose';
import { mintBuildCredential } from '../../lib/artifacts/credential.js';
import { loadComponentConfig, loadConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { parseBearerChallenge, repositoryScope } from '../../lib/registry/bearer.js';
import {
  accountUser,
  buildUser,
  isTenantImage,
  parseRegistryUser,
  pullCredentialAnnotation,
  pullSecretName,
} from '../../lib/registry/names.js';
import { credentialHash, credentialOf, dockerConfigJson, matchesHash, newPullPassword } from '../../lib/registry/pull-credential.js';
import type { App, Build } from '../../lib/resources/index.js';
import { allowedActions, grant, parseScopes, type Principal } from '../../registry-auth/grants.js';
import { ClientsFile, identify, type PrincipalSources } from '../../registry-auth/principals.js';
import { basicCredential, tokenHandler } from '../../registry-auth/server.js';
import { TokenSigner } from '../../registry-auth/token.js';
import { pullSecret, pullSecretCurrent } from '../../controllers/account/desired.js';
import { AccountReconciler } from '../../controllers/account/reconciler.js';
import { machinePod } from '../../controllers/app/desired.js';
import { plan as buildPlan, type BuildSettings } from '../../controllers/build/desired.js';

const operator: Principal = { kind: 'operator' };
const node: Principal = { kind: 'node' };
const acctA: Principal = { kind: 'account', namespace: 'acct-a' };
const buildA: Principal = { kind: 'build', namespace: 'acct-a', build: 'bld-0000000000000001', app: 'shop' };

describe('registry scopes and grants', () => {
  it('parses repository scopes, one or several per parameter, and leaves out anything else', () => {
    assert.deepEqual(parseScopes(['repository:builds/acct-a/shop:pull,push', 'repository:svc/builder:pull repository:python:pull']), [
      { type: 'repository', name: 'builds/acct-a/shop', actions: ['pull', 'push'] },
      { type: 'repository', name: 'svc/builder', actions: ['pull'] },
      { type: 'repository', name: 'python', actions: ['pull'] },
    ]);
    for (const bad of [
      'registry:catalog:*',
      'repository:x:delete',
      'repository:x:*',
      'repository:Upper/x:pull',
      'repository:../x:pull',
      'repository:x',
      'repository::pull',
      'repository(plugin):x:pull',
      `repository:${'a'.repeat(256)}:pull`,
    ]) {
      assert.deepEqual(parseScopes([bad]), [], bad);
    }
  });

  it('lets each credential do what the decision says, and nothing more', () => {
    const table: Array<[Principal, string, string[]]> = [
      [operator, 'svc/runtime', ['pull', 'push']],
      [operator, 'builds/acct-a/shop', ['pull', 'push']],
      [node, 'svc/pause', ['pull']],
      [node, 'builds/acct-a/shop', []],
      [acctA, 'python', ['pull']],
      [acctA, 'builds/acct-a/shop', ['pull']],
      [acctA, 'builds/acct-a/other/deeper', ['pull']],
      [acctA, 'builds/acct-b/shop', []],
      // A namespace whose name begins like another's is another account.
      [acctA, 'builds/acct-a-b/shop', []],
      [buildA, 'builds/acct-a/shop', ['pull', 'push']],
      [buildA, 'builds/acct-a/blog', []],
      [buildA, 'builds/acct-b/shop', []],
      [buildA, 'svc/builder', ['pull']],
    ];
    for (const [who, repo, actions] of table) assert.deepEqual(allowedActions(who, repo), actions, `${JSON.stringify(who)} on ${repo}`);
  });

  it('cuts what is asked to what is allowed, merging repeats, and answers nothing for what is refused', () => {
    const asked = parseScopes([
      'repository:builds/acct-a/blog:pull,push',
      'repository:builds/acct-a/shop:push',
      'repository:builds/acct-a/shop:pull',
      'repository:svc/builder:pull,push',
    ]);
    assert.deepEqual(grant(buildA, asked), [
      { type: 'repository', name: 'builds/acct-a/shop', actions: ['pull', 'push'] },
      { type: 'repository', name: 'svc/builder', actions: ['pull'] },
    ]);
    assert.deepEqual(grant(acctA, parseScopes(['repository:builds/acct-b/shop:pull'])), []);
  });

  it("knows user names apart, and tenants' images in the platform registry", () => {
    assert.deepEqual(parseRegistryUser('platform/operator'), { kind: 'operator' });
    assert.deepEqual(parseRegistryUser('platform/node'), { kind: 'node' });
    assert.deepEqual(parseRegistryUser(accountUser('acct-a')), { kind: 'account', namespace: 'acct-a' });
    assert.deepEqual(parseRegistryUser(buildUser('acct-a', 'bld-1')), { kind: 'build', namespace: 'acct-a', build: 'bld-1' });
    for (const bad of [
      '',
      'operator',
      'accounts/',
      'accounts/A',
      'accounts/a/b',
      'builds/a',
      'builds/a/b/c',
      'platform/other',
      'accounts/-a',
    ])
      assert.equal(parseRegistryUser(bad), undefined, bad);
    assert.equal(isTenantImage('127.0.0.1:5000/builds/acct-a/shop@sha256:00', '127.0.0.1:5000'), true);
    assert.equal(isTenantImage('127.0.0.1:5000/svc/runtime:1', '127.0.0.1:5000'), false);
    assert.equal(isTenantImage('ghcr.io/builds/x/y', '127.0.0.1:5000'), false);
    assert.equal(isTenantImage('127.0.0.1:5000/builds/a/b', undefined), false);
  });
});

describe('pull credentials', () => {
  it('are 256 random bits, stored as their SHA-256, compared in full', () => {
    const a = newPullPassword();
    assert.match(a, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, newPullPassword());
    assert.equal(matchesHash(a, credentialHash(a)), true);
    assert.equal(matchesHash(`${a}x`, credentialHash(a)), false);
    assert.equal(matchesHash(a, undefined), false);
    assert.equal(matchesHash(a, 'not-a-hash'), false);
  });

  it('go into a dockerconfigjson for one registry, read back only for that registry', () => {
    const json = dockerConfigJson('127.0.0.1:5000', 'accounts/acct-a', 'pw');
    assert.deepEqual(credentialOf(json, '127.0.0.1:5000'), { username: 'accounts/acct-a', password: 'pw' });
    assert.equal(
      (JSON.parse(json) as { auths: Record<string, { auth: string }> }).auths['127.0.0.1:5000']!.auth,
      Buffer.from('accounts/acct-a:pw').toString('base64'),
    );
    assert.equal(credentialOf(json, 'ghcr.io'), undefined);
    assert.equal(credentialOf('{', '127.0.0.1:5000'), undefined);
  });

  it("the account controller's Secret is current only with the account's name and the namespace's hash", () => {
    const password = newPullPassword();
    const ns = (hash?: string): k8s.V1Namespace => ({
      metadata: { name: 'acct-a', ...(hash ? { annotations: { [pullCredentialAnnotation]: hash } } : {}) },
    });
    const secret = pullSecret('acct-a', '127.0.0.1:5000', password);
    assert.equal(secret.metadata?.name, pullSecretName);
    assert.equal(secret.type, 'kubernetes.io/dockerconfigjson');
    assert.equal(pullSecretCurrent(ns(credentialHash(password)), secret, '127.0.0.1:5000'), true);
    assert.equal(pullSecretCurrent(ns(), secret, '127.0.0.1:5000'), false, 'the hash removed: rotate');
    assert.equal(pullSecretCurrent(ns(credentialHash('other')), secret, '127.0.0.1:5000'), false, 'edited');
    assert.equal(pullSecretCurrent(ns(credentialHash(password)), secret, '127.0.0.1:5001'), false, 'another registry');
    assert.equal(
      pullSecretCurrent(ns(credentialHash(password)), pullSecret('acct-b', '127.0.0.1:5000', password), '127.0.0.1:5000'),
      false,
      "another account's user name",
    );
    assert.equal(pullSecretCurrent(ns(credentialHash(password)), undefined, '127.0.0.1:5000'), false, 'missing');
  });
});

describe('credentials at the token service', () => {
  const key = Buffer.alloc(32, 7);
  const now = new Date('2026-11-27T10:00:00Z');
  const accountPassword = newPullPassword();
  const sources = (over: Partial<PrincipalSources> = {}): PrincipalSources => ({
    platformHash: (user) =>
      user === 'platform/operator' ? credentialHash('op-secret') : user === 'platform/node' ? credentialHash('node-secret') : undefined,
    accountHash: async (ns) => (ns === 'acct-a' ? credentialHash(accountPassword) : undefined),
    build: async (ns, b) =>
      ns === 'acct-a' && b === 'bld-0000000000000001'
        ? { app: 'shop', ended: false }
        : ns === 'acct-a' && b === 'bld-0000000000000002'
          ? { app: 'shop', ended: true }
          : undefined,
    artifactKey: key,
    clock: () => now,
    ...over,
  });
  const later = new Date(now.getTime() + 3600_000);

  it('knows the operator, the nodes, an account and a running build by what the platform stored', async () => {
    assert.deepEqual(await identify(sources(), 'platform/operator', 'op-secret'), { kind: 'operator' });
    assert.deepEqual(await identify(sources(), 'platform/node', 'node-secret'), { kind: 'node' });
    assert.deepEqual(await identify(sources(), 'accounts/acct-a', accountPassword), { kind: 'account', namespace: 'acct-a' });
    const cred = mintBuildCredential(key, 'acct-a', 'bld-0000000000000001', later);
    assert.deepEqual(await identify(sources(), 'builds/acct-a/bld-0000000000000001', cred), {
      kind: 'build',
      namespace: 'acct-a',
      build: 'bld-0000000000000001',
      app: 'shop',
    });
  });

  it('knows no one else', async () => {
    const cred = mintBuildCredential(key, 'acct-a', 'bld-0000000000000001', later);
    const cases: Array<[string, string, Partial<PrincipalSources>?]> = [
      ['platform/operator', 'node-secret'],
      ['platform/node', 'op-secret'],
      ['platform/operator', ''],
      ['accounts/acct-a', 'guess'],
      // Account A's password under B's name: B has its own hash (or none).
      ['accounts/acct-b', accountPassword],
      ['operator', 'op-secret'],
      // A build credential for one build names no other, and no account.
      ['builds/acct-a/bld-0000000000000003', cred],
      ['builds/acct-b/bld-0000000000000001', cred],
      ['accounts/acct-a', cred],
      // Expired, ended, or without the key.
      ['builds/acct-a/bld-0000000000000001', mintBuildCredential(key, 'acct-a', 'bld-0000000000000001', new Date(now.getTime() - 1000))],
      ['builds/acct-a/bld-0000000000000002', mintBuildCredential(key, 'acct-a', 'bld-0000000000000002', later)],
      ['builds/acct-a/bld-0000000000000001', cred, { artifactKey: undefined }],
      ['builds/acct-a/bld-0000000000000001', mintBuildCredential(Buffer.alloc(32, 8), 'acct-a', 'bld-0000000000000001', later)],
    ];
    for (const [user, password, over] of cases)
      assert.equal(await identify(sources(over), user, password), undefined, `${user} with ${password.slice(0, 12)}`);
  });

  it('reads the clients file again when it changes (a rotated operator or node credential)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-clients-'));
    try {
      const file = path.join(dir, 'clients');
      const clients = new ClientsFile(file);
      assert.equal(clients.hashOf('platform/node'), undefined, 'no file: no one');
      writeFileSync(file, `# comment\nplatform/node ${credentialHash('one')}\nbroken line\n`);
      assert.equal(clients.hashOf('platform/node'), credentialHash('one'));
      writeFileSync(file, `platform/node ${credentialHash('two')}\nplatform/operator ${credentialHash('x')}\n`);
      assert.equal(clients.hashOf('platform/node'), credentialHash('two'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A P-256 key and its self-signed certificate, made as hack/certs.sh makes them. */
function keyPair(dir: string, name: string): { key: string; cert: string } {
  const key = path.join(dir, `${name}.key`);
  const cert = path.join(dir, `${name}.crt`);
  execFileSync('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key], { stdio: 'ignore' });
  execFileSync('openssl', ['req', '-x509', '-new', '-key', key, '-subj', '/CN=svc-registry-auth', '-days', '1', '-out', cert], {
    stdio: 'ignore',
  });
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

describe('registry tokens and the realm', () => {
  let dir: string;
  let pair: { key: string; cert: string };
  let signer: TokenSigner;
  let server: http.Server;
  let realm: string;
  const opts = { issuer: 'svc-registry-auth', service: 'svc-registry', ttlSeconds: 300 };
  const sources: PrincipalSources = {
    platformHash: (u) => (u === 'platform/operator' ? credentialHash('op') : undefined),
    accountHash: async (ns) => (ns === 'acct-a' ? credentialHash('pull-a') : undefined),
    build: async () => undefined,
    artifactKey: undefined,
    clock: () => new Date(),
  };

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-registry-token-'));
    pair = keyPair(dir, 'token');
    signer = TokenSigner.fromPem(pair.key, pair.cert, opts);
    server = http.createServer(tokenHandler({ signer, service: 'svc-registry', sources, log: createLogger('test', 'silent') }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    realm = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  });
  after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs ES256 tokens with the certificate in x5c and the claims distribution 2.8 reads', async () => {
    const now = new Date('2026-11-27T10:00:00Z');
    const { token, expiresIn } = await signer.sign('accounts/acct-a', [{ type: 'repository', name: 'python', actions: ['pull'] }], now);
    const header = decodeProtectedHeader(token);
    assert.equal(header.alg, 'ES256');
    assert.deepEqual(header.x5c, [pair.cert.replace(/-----[A-Z ]+-----|\s/g, '')]);
    const { payload } = await jwtVerify(token, await importX509(pair.cert, 'ES256'), {
      currentDate: now,
      issuer: 'svc-registry-auth',
      audience: 'svc-registry',
    });
    assert.equal(payload.aud, 'svc-registry', 'a single string: distribution 2.8 reads no list');
    assert.equal(payload.sub, 'accounts/acct-a');
    assert.equal(payload.exp! - payload.iat!, 300);
    assert.equal(payload.nbf, payload.iat);
    assert.equal(expiresIn, 300);
    assert.ok(payload.jti);
    assert.deepEqual(payload.access, [{ type: 'repository', name: 'python', actions: ['pull'] }]);
  });

  it('refuses at start a certificate of another key', () => {
    const other = keyPair(dir, 'other');
    assert.throws(() => TokenSigner.fromPem(pair.key, other.cert, opts), /not of the token key/);
  });

  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  it('answers a request without a credential, or with a wrong one, with a 401 and no token', async () => {
    for (const headers of [
      {},
      { authorization: basic('accounts/acct-a', 'wrong') },
      { authorization: basic('accounts/acct-b', 'pull-a') },
      { authorization: 'Bearer x' },
    ]) {
      const res = await fetch(`${realm}?service=svc-registry&scope=repository:python:pull`, { headers });
      const body = (await res.json()) as Record<string, unknown>;
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.headers.get('www-authenticate'), 'Basic realm="svc-registry"');
      assert.equal(body.token, undefined);
    }
  });

  it('grants what the credential may, by GET with Basic (skopeo, docker) and by POST with a password grant (containerd)', async () => {
    const get = await fetch(
      `${realm}?service=svc-registry&scope=repository:builds/acct-a/shop:pull,push&scope=repository:builds/acct-b/shop:pull`,
      { headers: { authorization: basic('accounts/acct-a', 'pull-a') } },
    );
    assert.equal(get.status, 200);
    const token = ((await get.json()) as { token: string }).token;
    const { payload } = await jwtVerify(token, await importX509(pair.cert, 'ES256'));
    assert.deepEqual(payload.access, [{ type: 'repository', name: 'builds/acct-a/shop', actions: ['pull'] }]);

    const form = new URLSearchParams({
      grant_type: 'password',
      username: 'platform/operator',
      password: 'op',
      service: 'svc-registry',
      scope: 'repository:svc/runtime:pull,push',
      client_id: 'containerd-client',
    });
    const post = await fetch(realm, { method: 'POST', body: form });
    assert.equal(post.status, 200);
    const answer = (await post.json()) as { access_token: string; expires_in: number };
    assert.equal(answer.expires_in, 300);
    assert.deepEqual((await jwtVerify(answer.access_token, await importX509(pair.cert, 'ES256'))).payload.access, [
      { type: 'repository', name: 'svc/runtime', actions: ['pull', 'push'] },
    ]);

    const refresh = await fetch(realm, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x', service: 'svc-registry' }),
    });
    assert.equal(refresh.status, 400);
    const otherService = await fetch(`${realm}?service=elsewhere`, { headers: { authorization: basic('platform/operator', 'op') } });
    assert.equal(otherService.status, 400);
  });

  it('reads Basic credentials whose password holds colons, and nothing else', () => {
    assert.deepEqual(basicCredential(basic('builds/a/b', 'v1.1:x')), { username: 'builds/a/b', password: 'v1.1:x' });
    assert.equal(basicCredential('Basic !!!'), undefined);
    assert.equal(basicCredential(`Basic ${Buffer.from('nocolon').toString('base64')}`), undefined);
  });

  it("the client half reads the registry's challenge", () => {
    assert.deepEqual(parseBearerChallenge('Bearer realm="http://127.0.0.1:5001/token",service="svc-registry",scope="repository:x:pull"'), {
      realm: 'http://127.0.0.1:5001/token',
      service: 'svc-registry',
    });
    assert.equal(parseBearerChallenge('Basic realm="x"'), undefined);
    assert.equal(parseBearerChallenge('Bearer realm="file:///etc/passwd"'), undefined);
    assert.equal(repositoryScope('builds/a/b', ['pull', 'push']), 'repository:builds/a/b:pull,push');
  });
});

describe('the account controller keeps the pull credential', () => {
  /** An apiserver of one namespace and its Secrets, recording the writes. */
  function fakeCluster() {
    const ns: k8s.V1Namespace = {
      metadata: { name: 'acct-a', labels: { 'svc.dev/account': 'a1' }, annotations: {}, resourceVersion: '1' },
    };
    const secrets = new Map<string, k8s.V1Secret>();
    const writes: string[] = [];
    const core = {
      patchNamespace: async (o: {
        body: { metadata?: { resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> } };
      }) => {
        const precondition = o.body.metadata?.resourceVersion;
        if (precondition !== undefined && precondition !== ns.metadata!.resourceVersion)
          throw new ApiException(409, 'the object has been modified', {}, {});
        ns.metadata!.resourceVersion = String(Number(ns.metadata!.resourceVersion) + 1);
        writes.push('namespace');
        ns.metadata!.labels = { ...ns.metadata!.labels, ...o.body.metadata?.labels };
        ns.metadata!.annotations = { ...ns.metadata!.annotations, ...o.body.metadata?.annotations };
        return ns;
      },
      readNamespacedSecret: async (o: { name: string }) => {
        const got = secrets.get(o.name);
        if (!got) throw new ApiException(404, 'not found', {}, {});
        return structuredClone(got);
      },
      patchNamespacedSecret: async (o: { name: string; body: k8s.V1Secret }) => {
        writes.push('secret');
        secrets.set(o.name, structuredClone(o.body));
        return o.body;
      },
      deleteNamespacedSecret: async (o: { name: string }) => secrets.delete(o.name),
      patchNamespacedLimitRange: async () => ({}),
      patchNamespacedResourceQuota: async () => ({}),
    };
    const networking = { patchNamespacedNetworkPolicy: async () => ({}) };
    return { ns, secrets, writes, core: core as unknown as k8s.CoreV1Api, networking: networking as unknown as k8s.NetworkingV1Api };
  }
  const passwordIn = (s: k8s.V1Secret | undefined) =>
    credentialOf(Buffer.from(s!.data!['.dockerconfigjson']!, 'base64').toString('utf8'), '127.0.0.1:5000')!.password;

  it('never rotates on a namespace older than its own write (a cache behind looks like a removed hash)', async () => {
    const c = fakeCluster();
    const r = new AccountReconciler(c.core, c.networking, createLogger('test', 'silent'), '127.0.0.1:5000', () => 0, 60_000);
    await r.reconcile(c.ns);
    const first = passwordIn(c.secrets.get(pullSecretName));
    // The namespace as a cache a moment behind shows it: labelled, without the hash just written.
    const stale = structuredClone(c.ns);
    delete stale.metadata!.annotations![pullCredentialAnnotation];
    stale.metadata!.resourceVersion = String(Number(c.ns.metadata!.resourceVersion) - 1);
    c.writes.length = 0;
    await assert.rejects(r.reconcile(stale), (err: unknown) => err instanceof ApiException && err.code === 409);
    assert.deepEqual(c.writes, [], 'no new hash, no new Secret');
    assert.equal(passwordIn(c.secrets.get(pullSecretName)), first);
    await r.reconcile(c.ns);
    assert.equal(passwordIn(c.secrets.get(pullSecretName)), first, 'the current namespace keeps it');
  });

  it('makes one, leaves a current one alone, makes a new one when the hash is removed or the Secret edited', async () => {
    const c = fakeCluster();
    let now = 0;
    const r = new AccountReconciler(c.core, c.networking, createLogger('test', 'silent'), '127.0.0.1:5000', () => now, 60_000);
    await r.reconcile(c.ns);
    const first = passwordIn(c.secrets.get(pullSecretName));
    assert.equal(c.ns.metadata!.annotations![pullCredentialAnnotation], credentialHash(first), 'the namespace holds its hash');
    assert.deepEqual(c.writes.slice(-2), ['namespace', 'secret'], 'the hash first, then the Secret');

    c.writes.length = 0;
    await r.reconcile(c.ns);
    now += 120_000;
    await r.reconcile(c.ns);
    assert.deepEqual(c.writes, [], 'a current credential is kept');

    // Rotation: the hash removed from the namespace.
    delete c.ns.metadata!.annotations![pullCredentialAnnotation];
    await r.reconcile(c.ns);
    const second = passwordIn(c.secrets.get(pullSecretName));
    assert.notEqual(second, first);
    assert.equal(c.ns.metadata!.annotations![pullCredentialAnnotation], credentialHash(second));

    // A hand edit is found once the check has aged, and replaced.
    c.secrets.set(pullSecretName, pullSecret('acct-a', '127.0.0.1:5000', 'chosen-by-hand'));
    await r.reconcile(c.ns);
    assert.equal(passwordIn(c.secrets.get(pullSecretName)), 'chosen-by-hand', 'trusted within the recheck time');
    now += 120_000;
    await r.reconcile(c.ns);
    const third = passwordIn(c.secrets.get(pullSecretName));
    assert.notEqual(third, 'chosen-by-hand');
    assert.equal(c.ns.metadata!.annotations![pullCredentialAnnotation], credentialHash(third));
  });

  it('makes none without a registry of its own', async () => {
    const c = fakeCluster();
    await new AccountReconciler(c.core, c.networking, createLogger('test', 'silent')).reconcile(c.ns);
    assert.equal(c.secrets.size, 0);
  });
});

describe("pods the controllers make pull with the account's credential", () => {
  const registry = '127.0.0.1:5000';
  const settings = {
    site: { appsDomain: 'apps.localhost', appsUrlSuffix: ':8081', secure: false },
    runtimeImage: `${registry}/svc/runtime:1`,
    artifactBaseUrl: 'http://10.244.0.1:8079/artifacts',
    rolloutDeadlineMs: 60_000,
    assertionIssuer: 'http://apps.localhost:8081/_svc/auth',
    jwksUrl: 'http://10.244.0.1:8079/_svc/auth/jwks.json',
    images: { allowed: undefined, platformRegistry: registry },
  };
  const app = (image: string): App => ({
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'shop', namespace: 'acct-b', uid: 'u1', generation: 1 },
    spec: { kind: 'container', image, port: 8080, machines: 1 },
  });

  it("a machine names the pull Secret, and pulls a tenant's image of the platform registry every time", () => {
    const built = machinePod(app(`${registry}/builds/acct-a/shop@sha256:${'a'.repeat(64)}`), 0, settings);
    assert.deepEqual(built.spec?.imagePullSecrets, [{ name: pullSecretName }]);
    assert.equal(built.spec?.containers[0]?.imagePullPolicy, 'Always');
    const platform = machinePod(app(`${registry}/python:3`), 0, settings);
    assert.deepEqual(platform.spec?.imagePullSecrets, [{ name: pullSecretName }]);
    assert.equal(
      platform.spec?.containers[0]?.imagePullPolicy,
      undefined,
      "the platform's images are every account's: a cached copy is no one's secret",
    );
    assert.equal(
      machinePod(app('nginx'), 0, { ...settings, images: { allowed: undefined, platformRegistry: undefined } }).spec?.imagePullSecrets,
      undefined,
      'no registry of its own: no Secret',
    );
  });

  it("a build's pod names the pull Secret", () => {
    const s: BuildSettings = {
      builderImage: `${registry}/svc/builder:1`,
      runtimeImage: `${registry}/svc/runtime:1`,
      reportBaseUrl: 'http://10.244.0.1:8079/builds',
      artifactBaseUrl: 'http://10.244.0.1:8079/artifacts',
      key: Buffer.alloc(32, 3),
      cacheBytes: 1 << 30,
      storageClass: undefined,
      platformCidrs: ['10.244.0.1/32'],
      platformPorts: [{ port: 8079 }],
      privateCidrs: ['10.0.0.0/8'],
      resources: {},
      pullSecret: pullSecretName,
    };
    const b: Build = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Build',
      metadata: { name: 'bld-0000000000000001', namespace: 'acct-a', uid: 'u', creationTimestamp: new Date('2026-11-27T10:00:00Z') },
      spec: { app: 'shop', source: { artifact: { digest: `sha256:${'b'.repeat(64)}` } }, deploy: true },
    };
    const p = buildPlan(
      b,
      { job: undefined, pod: undefined, cacheClaim: undefined, policy: undefined, builds: [] },
      s,
      new Date('2026-11-27T10:00:00Z'),
    );
    assert.deepEqual(p.createJob?.spec?.template.spec?.imagePullSecrets, [{ name: pullSecretName }]);
  });
});

describe('configuration of the token service', () => {
  it('defaults beside the state, and reads only its own variables', () => {
    const none = { exists: () => false };
    const c = loadConfig({ SVC_STATE_DIR: '/state' }, none).registryAuth;
    assert.deepEqual(c, {
      host: '127.0.0.1',
      port: 5001,
      keyFile: '/state/pki/registry-token.key',
      certFile: '/state/pki/registry-token.crt',
      clientsFile: '/state/registry-auth/clients',
      service: 'svc-registry',
      issuer: 'svc-registry-auth',
      tokenSeconds: 300,
    });
    assert.throws(() => loadConfig({ SVC_REGISTRY_TOKEN_SECONDS: '5' }, none), /SVC_REGISTRY_TOKEN_SECONDS: must be 60-3600 seconds/);
    const own = loadComponentConfig('registry-auth', { SVC_STATE_DIR: '/state', SVC_PROXY_PORT: 'bad' }, none);
    assert.deepEqual(Object.keys(own).sort(), ['deploys', 'kubeconfig', 'logLevel', 'registryAuth']);
  });
});
