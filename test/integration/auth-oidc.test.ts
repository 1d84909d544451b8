// OpenID Connect sign-in (lib/auth/oidc.ts) against the real oidc-provider: the code flow with
// PKCE, state and nonce; the claims an `idp` policy reads (verified address, signed `hd`); the
// callbacks it must refuse (tampered state, replayed code, wrong nonce, wrong PKCE verifier,
// declined); discovery that fails and is retried; and idpAdmits, the policy check over the claims.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { idpAdmits, isLoopbackIssuer, OidcClient, OidcError, oidcScope, type OidcFailure } from '../../lib/auth/oidc.js';
import { startTestOidcProvider, type TestOidcAccount, type TestOidcProvider } from '../support/oidc-provider.js';

const redirectUri = 'http://login.apps.localhost:8081/_svc/auth/idp/callback';
const accounts: TestOidcAccount[] = [
  { sub: 'alice', email: 'Alice@Corp.example', emailVerified: true, hd: 'corp.example', name: 'Alice Liddell' },
  { sub: 'bob', email: 'bob@mail.example', emailVerified: false },
  // An address at corp.example, but no signed hosted domain: a personal account.
  { sub: 'carol', email: 'carol@corp.example', emailVerified: true },
];

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

const refused = async (p: Promise<unknown>, reason: OidcFailure, message: RegExp) =>
  assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof OidcError, `not an OidcError: ${String(err)}`);
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, message);
    return true;
  });

describe('OpenID Connect sign-in against oidc-provider', () => {
  let op: TestOidcProvider;
  let client: OidcClient;
  const settings = () => ({ issuer: op.issuer, clientId: op.clientId, clientSecret: op.clientSecret });
  /** start() and the person signing in at the provider: what the callback request carries. */
  const authorize = async (account: string, c = client) => {
    const { url, state } = await c.start({ redirectUri });
    return { callback: await op.signIn(url, account), saved: state };
  };

  before(async () => {
    op = await startTestOidcProvider({ redirectUris: [redirectUri], accounts });
    client = new OidcClient(settings());
  });
  after(() => op.close());

  it('builds an authorization request with PKCE S256, state, nonce and the openid email profile scope', async () => {
    const a = await client.start({ redirectUri });
    const b = await client.start({ redirectUri });
    const q = a.url.searchParams;
    assert.equal(a.url.origin, op.issuer);
    assert.equal(q.get('client_id'), op.clientId);
    assert.equal(q.get('redirect_uri'), redirectUri);
    assert.equal(q.get('response_type'), 'code');
    assert.equal(q.get('scope'), oidcScope);
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.equal(q.get('state'), a.state.state);
    assert.equal(q.get('nonce'), a.state.nonce);
    assert.match(q.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(q.get('code_challenge'), a.state.codeVerifier, 'the verifier itself never leaves');
    for (const k of ['state', 'nonce', 'codeVerifier'] as const) assert.notEqual(a.state[k], b.state[k], `a fresh ${k} per sign-in`);
  });

  it('signs in with a verified address, the signed hd claim and the name', async () => {
    const { callback, saved } = await authorize('alice');
    assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
    const who = await client.finish(callback, saved, redirectUri);
    assert.deepEqual(who, {
      subject: 'alice',
      email: 'Alice@Corp.example',
      emailVerified: true,
      hostedDomain: 'corp.example',
      name: 'Alice Liddell',
    });
    assert.equal(idpAdmits(['corp.example'], who), true);
    assert.equal(idpAdmits(['alice@corp.example'], who), true);
    assert.equal(idpAdmits(['other.example', 'bob@mail.example'], who), false);
  });

  it('reports an unverified address as unverified, which admits by address nothing', async () => {
    const { callback, saved } = await authorize('bob');
    const who = await client.finish(callback, saved, redirectUri);
    assert.deepEqual(who, { subject: 'bob', email: 'bob@mail.example', emailVerified: false });
    assert.equal(idpAdmits(['bob@mail.example'], who), false);
    assert.equal(idpAdmits(['mail.example'], who), false);
    assert.equal(idpAdmits('any', who), true);
  });

  it('gives no hosted domain for an address at the domain: its suffix does not admit the domain', async () => {
    const { callback, saved } = await authorize('carol');
    const who = await client.finish(callback, saved, redirectUri);
    assert.equal(who.hostedDomain, undefined);
    assert.equal(who.emailVerified, true);
    assert.equal(idpAdmits(['corp.example'], who), false);
    assert.equal(idpAdmits(['carol@corp.example'], who), true);
  });

  it('uses only the query of the callback request: a proxy in front of the sign-in host changes nothing', async () => {
    const { callback, saved } = await authorize('alice');
    const seenBehindProxy = new URL(`http://127.0.0.1:9/_svc/auth/idp/callback${callback.search}`);
    assert.equal((await client.finish(seenBehindProxy, saved, redirectUri)).subject, 'alice');
  });

  it('refuses a tampered state before the code is spent', async () => {
    const { callback, saved } = await authorize('alice');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${saved.state}x`);
    await refused(client.finish(tampered, saved, redirectUri), 'invalid', /state/i);
    await refused(client.finish(callback, { ...saved, state: 'another-sign-in' }, redirectUri), 'invalid', /state/i);
    assert.equal((await client.finish(callback, saved, redirectUri)).subject, 'alice');
  });

  it('refuses a replayed code', async () => {
    const { callback, saved } = await authorize('alice');
    await client.finish(callback, saved, redirectUri);
    await refused(client.finish(callback, saved, redirectUri), 'invalid', /invalid_grant/);
  });

  it('refuses an ID token whose nonce is not this sign-in’s', async () => {
    const { callback, saved } = await authorize('alice');
    await refused(client.finish(callback, { ...saved, nonce: 'nonce-of-another-sign-in' }, redirectUri), 'invalid', /nonce/);
  });

  it('refuses a code redeemed without its PKCE verifier', async () => {
    const other = await client.start({ redirectUri });
    const { callback, saved } = await authorize('alice');
    await refused(client.finish(callback, { ...saved, codeVerifier: other.state.codeVerifier }, redirectUri), 'invalid', /invalid_grant/);
  });

  it('reports a declined authorization as denied', async () => {
    const { url, state } = await client.start({ redirectUri });
    const callback = await op.signIn(url, 'alice', { decline: true });
    assert.equal(callback.searchParams.get('error'), 'access_denied');
    await refused(client.finish(callback, state, redirectUri), 'denied', /access_denied/);
  });

  it('asks userinfo for the address when the ID token has none (claims released at userinfo)', async () => {
    const thin = await startTestOidcProvider({ redirectUris: [redirectUri], accounts, claimsIn: 'userinfo' });
    try {
      const c = new OidcClient({ issuer: thin.issuer, clientId: thin.clientId, clientSecret: thin.clientSecret });
      const { url, state } = await c.start({ redirectUri });
      const who = await c.finish(await thin.signIn(url, 'alice'), state, redirectUri);
      assert.deepEqual(who, {
        subject: 'alice',
        email: 'Alice@Corp.example',
        emailVerified: true,
        hostedDomain: 'corp.example',
        name: 'Alice Liddell',
      });
    } finally {
      await thin.close();
    }
  });
});

describe('OpenID provider discovery', () => {
  it('fails with a clear error while the provider is down, and is retried on the next sign-in', async () => {
    const port = await freePort();
    const c = new OidcClient({ issuer: `http://127.0.0.1:${port}`, clientId: 'svc-platform', clientSecret: 's3cret' }, { timeoutMs: 2000 });
    await refused(c.start({ redirectUri }), 'unavailable', new RegExp(`OpenID provider http://127\\.0\\.0\\.1:${port}: discovery failed`));
    const op = await startTestOidcProvider({
      redirectUris: [redirectUri],
      accounts,
      port,
      clientId: 'svc-platform',
      clientSecret: 's3cret',
    });
    try {
      const { url, state } = await c.start({ redirectUri });
      assert.equal((await c.finish(await op.signIn(url, 'carol'), state, redirectUri)).subject, 'carol');
    } finally {
      await op.close();
    }
  });

  it('refuses an http issuer that is not on loopback', async () => {
    const c = new OidcClient({ issuer: 'http://idp.example.test', clientId: 'x', clientSecret: 'y' });
    await refused(c.start({ redirectUri }), 'unavailable', /discovery failed: .*HTTPS/i);
  });

  it('counts only loopback hosts as loopback', () => {
    for (const u of ['http://127.0.0.1:5556', 'http://127.9.8.7', 'http://localhost:3000/x', 'http://[::1]:80'])
      assert.equal(isLoopbackIssuer(new URL(u)), true, u);
    for (const u of ['http://idp.example.test', 'http://127.0.0.1.example.test', 'http://10.0.0.1', 'http://localhost.example.test'])
      assert.equal(isLoopbackIssuer(new URL(u)), false, u);
  });
});

describe('idpAdmits', () => {
  const alice = { email: 'Alice@Corp.example', emailVerified: true, hostedDomain: 'corp.example' };
  it('admits any identity of the provider for idp: true', () => {
    assert.equal(idpAdmits('any', { emailVerified: false }), true);
  });
  it('admits an exact verified mailbox, compared without case', () => {
    assert.equal(idpAdmits(['alice@corp.example'], alice), true);
    assert.equal(idpAdmits(['ALICE@corp.example'], alice), true);
    assert.equal(idpAdmits(['alice@corp.example.evil'], alice), false);
    assert.equal(idpAdmits(['alice@corp.example'], { ...alice, emailVerified: false }), false);
  });
  it('admits a domain only by the hosted-domain claim, in either spelling', () => {
    assert.equal(idpAdmits(['corp.example'], alice), true);
    assert.equal(idpAdmits(['@corp.example'], alice), true);
    assert.equal(idpAdmits(['corp.example'], { email: 'alice@corp.example', emailVerified: true }), false);
    assert.equal(idpAdmits(['example'], alice), false);
    assert.equal(idpAdmits(['sub.corp.example'], alice), false);
  });
  it('admits nobody with an empty list', () => {
    assert.equal(idpAdmits([], alice), false);
  });
});
