// Attacks on the console's sign-in by passkey and at the identity provider (decision 0033,
// docs/security.md), on the real API and PostgreSQL with a software authenticator
// (test/support/webauthn-authenticator.ts) and a real OpenID provider (oidc-provider):
// - every public step refuses a call without the console's header or from another Origin; an API at
//   an IP address offers no passkeys, one without a provider no provider sign-in (404, in words);
// - adding a passkey needs the owner's full authority: a read-only or app-restricted token is refused;
// - a passkey answers one challenge once; one signed for another RP ID, claiming another origin,
//   or removed is refused; a passkey of one account signs in that account only;
// - an identity-provider flow finishes once, in the browser that started it (a login CSRF with the
//   attacker's own callback is refused), only for a verified address an account has, and only for
//   the provider's subject the account first signed in with (an address reassigned at the provider).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { createAccount } from '../../lib/accounts.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { kubeConfig } from '../support/kube.js';
import { startTestOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { freePort } from '../support/ports.js';
import { SoftwareAuthenticator } from '../support/webauthn-authenticator.js';
import * as k8s from '@kubernetes/client-node';

type Ceremony<O> = { challenge_id: string; options: O };

describe('security: console sign-in by passkey and at the identity provider', () => {
  let api: TestApi;
  let op: TestOidcProvider;

  /** A call as the console's page makes it (header, Origin), with a cookie when given. */
  const fromConsole = (method: string, path: string, o: { body?: unknown; cookie?: string; token?: string | null } = {}) =>
    api.request(method, `/api${path}`, {
      token: o.token ?? null,
      body: o.body ?? {},
      headers: { 'x-svc-console': '1', origin: api.publicUrl, ...(o.cookie ? { cookie: o.cookie } : {}) },
    });
  const cookieOf = (res: Response, name: string): string | undefined => {
    for (const c of res.headers.getSetCookie()) {
      const m = new RegExp(`^${name}=([^;]*)`).exec(c);
      if (m) return m[1];
    }
    return undefined;
  };
  /** Adds a passkey to the account of `token` with `authenticator`; its credential id. */
  const register = async (authenticator: SoftwareAuthenticator, token = api.token): Promise<string> => {
    const start = await expectJson<Ceremony<PublicKeyCredentialCreationOptionsJSON>>(
      await api.request('POST', '/api/console/passkeys/options', { token }),
      200,
    );
    const response = authenticator.create(start.options, api.publicUrl);
    const added = await expectJson<{ id: string }>(
      await api.request('POST', '/api/console/passkeys', { token, body: { challenge_id: start.challenge_id, response } }),
      201,
    );
    return added.id;
  };
  const signInOptions = async () =>
    expectJson<Ceremony<PublicKeyCredentialRequestOptionsJSON>>(await fromConsole('POST', '/console/passkeys/sign-in/options'), 200);
  const passkeySignIn = (challengeId: string, response: unknown) =>
    fromConsole('POST', '/console/passkeys/sign-in', { body: { challenge_id: challengeId, response } });
  /** Who a console session cookie's token is. */
  const whoIs = async (res: Response) => {
    const session = cookieOf(res, 'svc-console');
    assert.ok(session, 'a session cookie was set');
    return expectJson<{ email: string }>(await api.request('GET', '/api/account', { token: session }), 200);
  };
  /** Starts a provider sign-in; the provider's URL and the browser cookie bound to it. */
  const idpStart = async (cookie?: string) => {
    const res = await fromConsole('POST', '/console/idp/start', cookie ? { cookie } : {});
    const { url } = await expectJson<{ url: string }>(res, 200);
    return { url, cookie: `svc-console-sign-in=${cookieOf(res, 'svc-console-sign-in')}` };
  };

  before(async () => {
    const port = await freePort();
    op = await startTestOidcProvider({
      redirectUris: [`http://localhost:${port}/console/idp/callback`],
      accounts: [],
    });
    api = await startTestApi({
      port,
      publicHost: 'localhost',
      env: { SVC_IDP_ISSUER: op.issuer, SVC_IDP_CLIENT_ID: op.clientId, SVC_IDP_CLIENT_SECRET: op.clientSecret },
    });
  });
  after(async () => {
    await api?.close();
    await op?.close();
  });

  it('refuses every public step without the console header or from another origin', async () => {
    const paths = ['/console/passkeys/sign-in/options', '/console/passkeys/sign-in', '/console/idp/start', '/console/idp/finish'];
    for (const p of paths) {
      const bare = await api.request('POST', `/api${p}`, { token: null, body: {}, headers: { origin: api.publicUrl } });
      assert.equal(bare.status, 403, `${p} without the header`);
      const elsewhere = await api.request('POST', `/api${p}`, {
        token: null,
        body: {},
        headers: { 'x-svc-console': '1', origin: 'http://localhost.evil.test' },
      });
      assert.equal(elsewhere.status, 403, `${p} from another origin`);
      assert.match(((await elsewhere.json()) as { error: string }).error, /Origin/);
    }
    assert.deepEqual(await expectJson(await api.request('GET', '/api/console/providers', { token: null }), 200), {
      email: true,
      passkey: true,
      idp: true,
    });
  });

  it('adds a passkey only with the owner’s full authority, and mails the owner', async () => {
    const readOnly = await expectJson<{ token: string }>(
      await api.request('POST', '/api/account/tokens', { body: { name: 'ro', actions: ['read'] } }),
      201,
    );
    assert.equal((await api.request('POST', '/api/console/passkeys/options', { token: readOnly.token })).status, 403);
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'pk-app' } }), 201);
    const oneApp = await expectJson<{ token: string }>(
      await api.request('POST', '/api/account/tokens', { body: { name: 'one-app', apps: ['pk-app'] } }),
      201,
    );
    assert.equal((await api.request('POST', '/api/console/passkeys/options', { token: oneApp.token })).status, 403);
    assert.equal((await api.request('GET', '/api/console/passkeys', { token: oneApp.token })).status, 403);
    // Nobody signed in adds nothing.
    assert.equal((await fromConsole('POST', '/console/passkeys/options')).status, 401);

    const before = await api.db('mail_outbox').where({ purpose: 'console-passkey-added' }).count<Array<{ count: string }>>('* as count');
    const id = await register(new SoftwareAuthenticator());
    const listed = await expectJson<{ passkeys: Array<{ id: string }> }>(await api.request('GET', '/api/console/passkeys'), 200);
    assert.ok(listed.passkeys.some((p) => p.id === id));
    const mails = await api.db('mail_outbox').where({ purpose: 'console-passkey-added' }).orderBy('id').select<Array<{ to: string }>>('to');
    assert.equal(mails.length, Number(before[0]!.count) + 1);
    assert.equal(mails.at(-1)!.to, api.account.email);
  });

  it('signs in with a passkey once per challenge, and refuses a forged, misdirected or removed one', async () => {
    const authenticator = new SoftwareAuthenticator();
    const id = await register(authenticator);

    // Another RP ID (a look-alike host's passkey) and another origin in the client data.
    let o = await signInOptions();
    let res = await passkeySignIn(o.challenge_id, authenticator.get(o.options, api.publicUrl, { rpId: 'evil.test', credentialId: id }));
    assert.equal(res.status, 400, await res.text());
    o = await signInOptions();
    res = await passkeySignIn(o.challenge_id, authenticator.get(o.options, 'http://localhost:1'));
    assert.equal(res.status, 400, await res.text());

    // The real one: signed in as the owner, once.
    o = await signInOptions();
    const answer = authenticator.get(o.options, api.publicUrl);
    res = await passkeySignIn(o.challenge_id, answer);
    assert.equal(res.status, 200, await res.text());
    assert.equal((await whoIs(res)).email, api.account.email);
    assert.match(res.headers.getSetCookie().join('\n'), /svc-console=[^;]+;.*HttpOnly/i);
    const replay = await passkeySignIn(o.challenge_id, answer);
    assert.equal(replay.status, 400, 'a challenge answers once');

    // A malformed answer, and a body that is not the ceremony's.
    o = await signInOptions();
    assert.equal((await passkeySignIn(o.challenge_id, { id: 'x' })).status, 400);
    assert.equal((await fromConsole('POST', '/console/passkeys/sign-in', { body: { response: {} } })).status, 400);

    // Another account's passkey signs in that account, never this one.
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    const other = await createAccount(api.db, core, { email: `other-${Date.now()}@example.test` });
    const otherToken = (await api.deps.tokens.issue(other.id, { name: 'test' })).token;
    const theirs = new SoftwareAuthenticator();
    await register(theirs, otherToken);
    o = await signInOptions();
    res = await passkeySignIn(o.challenge_id, theirs.get(o.options, api.publicUrl));
    assert.equal((await whoIs(res)).email, other.email);
    // It cannot be removed by this account (not found), and this account's list does not show it.
    const mine = await expectJson<{ passkeys: Array<{ id: string }> }>(await api.request('GET', '/api/console/passkeys'), 200);
    const theirId = (
      await expectJson<{ passkeys: Array<{ id: string }> }>(await api.request('GET', '/api/console/passkeys', { token: otherToken }), 200)
    ).passkeys[0]!.id;
    assert.ok(!mine.passkeys.some((p) => p.id === theirId));
    assert.equal((await api.request('DELETE', `/api/console/passkeys/${encodeURIComponent(theirId)}`)).status, 404);

    // Removed: it signs nobody in.
    assert.equal((await api.request('DELETE', `/api/console/passkeys/${encodeURIComponent(id)}`)).status, 204);
    o = await signInOptions();
    res = await passkeySignIn(o.challenge_id, authenticator.get(o.options, api.publicUrl, { credentialId: id }));
    assert.equal(res.status, 403, await res.text());
  });

  it('finishes a provider sign-in once, in the browser that started it, for a verified address an account has', async () => {
    op.addAccount({ sub: 'owner-sub', email: api.account.email.toUpperCase(), emailVerified: true });
    // A login CSRF: the attacker starts a flow, signs in at the provider as themselves, and hands
    // the callback to a victim's browser, which holds another (or no) sign-in cookie.
    const attacker = await idpStart();
    const callback = await op.signIn(attacker.url, 'owner-sub');
    assert.equal(callback.origin + callback.pathname, `${api.publicUrl}/console/idp/callback`);
    const victim = await fromConsole('POST', '/console/idp/finish', { body: { search: callback.search } });
    assert.equal(victim.status, 403, await victim.text());
    // The flow is spent by that attempt: the attacker cannot finish it afterwards either.
    const late = await fromConsole('POST', '/console/idp/finish', { body: { search: callback.search }, cookie: attacker.cookie });
    assert.equal(late.status, 410);

    // The real one, and its replay.
    const mine = await idpStart();
    const back = await op.signIn(mine.url, 'owner-sub');
    const res = await fromConsole('POST', '/console/idp/finish', { body: { search: back.search }, cookie: mine.cookie });
    assert.equal(res.status, 200, await res.text());
    assert.equal((await whoIs(res)).email, api.account.email);
    assert.equal((await fromConsole('POST', '/console/idp/finish', { body: { search: back.search }, cookie: mine.cookie })).status, 410);
    assert.equal(
      (await fromConsole('POST', '/console/idp/finish', { body: { search: '?state=made-up&code=x' }, cookie: mine.cookie })).status,
      410,
    );
  });

  it('offers neither where they cannot work: no passkeys at an IP address, no provider sign-in when none is configured', async () => {
    // The default local API: published at http://127.0.0.1:<port>, no SVC_IDP_ISSUER.
    const plain = await startTestApi();
    try {
      const asConsole = (path: string, token: string | null = null) =>
        plain.request('POST', `/api${path}`, { token, body: {}, headers: { 'x-svc-console': '1', origin: plain.publicUrl } });
      assert.deepEqual(await expectJson(await plain.request('GET', '/api/console/providers', { token: null }), 200), {
        email: true,
        passkey: false,
        idp: false,
      });
      for (const [path, token, said] of [
        ['/console/passkeys/sign-in/options', null, /passkeys need the console at a host name/],
        ['/console/passkeys/options', plain.token, /passkeys need the console at a host name/],
        ['/console/idp/start', null, /no identity provider is configured/],
      ] as const) {
        const res = await asConsole(path, token);
        assert.equal(res.status, 404, path);
        assert.match(((await res.json()) as { error: string }).error, said, path);
      }
    } finally {
      await plain.close();
    }
  });

  it('refuses an unverified address, an address without an account, and a new subject for a bound account', async () => {
    op.addAccount({ sub: 'unverified', email: api.account.email, emailVerified: false });
    op.addAccount({ sub: 'stranger', email: 'nobody@elsewhere.test', emailVerified: true });
    // The address reassigned at the provider: the same mailbox, another subject.
    op.addAccount({ sub: 'next-holder', email: api.account.email, emailVerified: true });
    const words: Record<string, RegExp> = {
      unverified: /did not say it verified/,
      stranger: /no svc account has the address nobody@elsewhere\.test/,
      'next-holder': /another identity at the identity provider/,
    };
    for (const [sub, said] of Object.entries(words)) {
      const flow = await idpStart();
      const back = await op.signIn(flow.url, sub);
      const res = await fromConsole('POST', '/console/idp/finish', { body: { search: back.search }, cookie: flow.cookie });
      assert.equal(res.status, 403, `${sub}: ${await res.clone().text()}`);
      assert.match(((await res.json()) as { error: string }).error, said, sub);
      assert.equal(cookieOf(res, 'svc-console'), undefined, `${sub}: no session`);
    }
    // A declined consent at the provider is said as such.
    const flow = await idpStart();
    const declined = await op.signIn(flow.url, 'owner-sub', { decline: true });
    const res = await fromConsole('POST', '/console/idp/finish', { body: { search: declined.search }, cookie: flow.cookie });
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { error: string }).error, /identity provider/);
  });
});
