// Sign-in providers end to end through ingress-auth to deployed apps: OpenID Connect against the
// real oidc-provider and the code host's double (GitHub's interface), through the platform's
// sign-in host and a browser-bound handoff; passkeys of app users with a software authenticator.
// Each row of the policy table for idp and codehost gets a positive and a negative case.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestApi } from '../support/api.js';
import { appsDomain, Browser, fragmentSecret, type Answer, type TestIngress } from '../support/ingress.js';
import { uniqueName } from '../support/kube.js';
import { startProviderPlatform, type ProviderPlatform } from '../support/providers.js';
import { eventually } from '../support/wait.js';
import { SoftwareAuthenticator } from '../support/webauthn-authenticator.js';

describe('ingress-auth sign-in providers', () => {
  let platform: ProviderPlatform;
  let api: TestApi;
  let ia: TestIngress;
  const apps = {
    idpAny: uniqueName('idp-any'),
    idpList: uniqueName('idp-list'),
    chAny: uniqueName('ch-any'),
    chList: uniqueName('ch-list'),
    listed: uniqueName('listed'),
    required: uniqueName('required'),
  };
  const policies: Record<keyof typeof apps, string> = {
    idpAny: 'idp: true',
    idpList: 'idp: [ada@other.test, "@corp.test"]',
    chAny: 'codehost: true',
    chList: 'codehost: [Octo, acme]',
    listed: 'emails: [ada@other.test]',
    required: 'required: true',
  };
  const host = (app: string) => platform.host(app);
  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  const fetchJson = (b: Browser, app: string, path: string) => platform.fetchJson(b, app, path);
  const providerSignIn = (b: Browser, app: string, provider: 'idp' | 'codehost', who: string) =>
    platform.providerSignIn(b, app, provider, who);
  const loginHost = () => `login.${appsDomain}:${platform.port}`;
  const location = (r: Answer) => {
    assert.equal(r.status, 303, r.body);
    return String(r.headers.location);
  };

  before(async () => {
    platform = await startProviderPlatform({
      apps: Object.fromEntries(Object.entries(apps).map(([key, app]) => [app, policies[key as keyof typeof apps]])),
      idpAccounts: [
        { sub: 'ada', email: 'ada@other.test', emailVerified: true, name: 'Ada' },
        { sub: 'ada-unverified', email: 'ada@other.test', emailVerified: false },
        { sub: 'bob', email: 'bob@corp.test', emailVerified: true, hd: 'corp.test' },
        { sub: 'eve', email: 'eve@corp.test', emailVerified: true },
      ],
      codehostUsers: [
        { login: 'octo', emails: [{ email: 'octo@users.test', verified: true, primary: true }] },
        { login: 'member', orgs: { acme: 'active' } },
        { login: 'pending', orgs: { acme: 'pending' } },
        { login: 'hidden', orgs: { secretorg: 'active' } },
        { login: 'stranger' },
      ],
    });
    ({ api, ia } = platform);
  });
  after(async () => {
    await platform?.close();
  });

  it('idp: true admits any identity of the OpenID provider, not a code-host one', async () => {
    const b = new Browser(ia.url);
    assert.equal((await providerSignIn(b, apps.idpAny, 'idp', 'eve')).status, 200);
    const seen = JSON.parse((await fetchJson(b, apps.idpAny, '/api/echo')).body) as Record<string, string>;
    assert.equal(seen['x-svc-auth-provider'], 'idp');
    assert.equal(seen['x-svc-auth-subject'], 'idp:eve');
    assert.equal(seen['x-svc-auth-email'], 'eve@corp.test');
    const c = new Browser(ia.url);
    const start = await c.request(host(apps.idpAny), '/_svc/auth/codehost/start', { headers: [['Sec-Fetch-Mode', 'navigate']] });
    assert.equal(start.status, 404, 'no code-host sign-in on an idp app');
    const page = await c.request(host(apps.idpAny), '/_svc/auth/login', { headers: [['Accept', 'text/html']] });
    assert.match(page.body, /href="\/_svc\/auth\/idp\/start\?next=%2F"/);
    assert.doesNotMatch(page.body, /codehost/);
  });

  it('idp: [mailbox] admits that verified account only; idp: [@domain] admits the signed hd claim, not an address suffix', async () => {
    const ada = new Browser(ia.url);
    await providerSignIn(ada, apps.idpList, 'idp', 'ada');
    assert.equal((await fetchJson(ada, apps.idpList, '/api/echo')).status, 200);
    const unverified = new Browser(ia.url);
    await providerSignIn(unverified, apps.idpList, 'idp', 'ada-unverified');
    assert.equal((await fetchJson(unverified, apps.idpList, '/api/echo')).status, 403, 'an unverified address is no account match');
    const bob = new Browser(ia.url);
    await providerSignIn(bob, apps.idpList, 'idp', 'bob');
    assert.equal((await fetchJson(bob, apps.idpList, '/api/echo')).status, 200);
    const eve = new Browser(ia.url);
    await providerSignIn(eve, apps.idpList, 'idp', 'eve');
    assert.equal((await fetchJson(eve, apps.idpList, '/api/echo')).status, 403, 'an email suffix is not sufficient');
  });

  it('codehost: true admits any code-host identity; codehost: [login, org] admits the login or an active member only', async () => {
    const octo = new Browser(ia.url);
    await providerSignIn(octo, apps.chAny, 'codehost', 'octo');
    const seen = JSON.parse((await fetchJson(octo, apps.chAny, '/api/echo')).body) as Record<string, string>;
    assert.equal(seen['x-svc-auth-provider'], 'codehost');
    assert.equal(seen['x-svc-auth-email'], 'octo@users.test');
    const expected: Array<[string, number]> = [
      ['octo', 200],
      ['member', 200],
      ['pending', 403],
      ['stranger', 403],
    ];
    for (const [login, status] of expected) {
      const b = new Browser(ia.url);
      assert.equal((await providerSignIn(b, apps.chList, 'codehost', login)).status, 200);
      assert.equal((await fetchJson(b, apps.chList, '/api/echo')).status, status, login);
    }
    // Membership the organization did not grant the platform access to is not seen (rule 6).
    platform.gh.setOrgAccess('acme', false);
    try {
      const b = new Browser(ia.url);
      await providerSignIn(b, apps.chList, 'codehost', 'member');
      assert.equal((await fetchJson(b, apps.chList, '/api/echo')).status, 403);
    } finally {
      platform.gh.setOrgAccess('acme', true);
    }
  });

  it('answers /_svc/auth/me with id, name, email and provider as strings for provider identities, whatever the provider gave', async () => {
    const me = async (b: Browser, app: string) =>
      (JSON.parse((await b.request(host(app), '/_svc/auth/me')).body) as { user: Record<string, unknown> }).user;
    const ada = new Browser(ia.url);
    await providerSignIn(ada, apps.idpAny, 'idp', 'ada');
    assert.deepEqual(await me(ada, apps.idpAny), {
      id: 'idp:ada',
      name: 'Ada',
      email: 'ada@other.test',
      email_verified: true,
      provider: 'idp',
    });
    const unverified = new Browser(ia.url);
    await providerSignIn(unverified, apps.idpAny, 'idp', 'ada-unverified');
    assert.deepEqual(await me(unverified, apps.idpAny), {
      id: 'idp:ada-unverified',
      name: 'idp:ada-unverified',
      email: 'idp-ada-unverified@idp.invalid',
      email_verified: false,
      provider: 'idp',
    });
    const member = new Browser(ia.url);
    await providerSignIn(member, apps.chAny, 'codehost', 'member');
    const user = await me(member, apps.chAny);
    assert.deepEqual([user.name, user.email, user.email_verified, user.provider], ['member', 'member@codehost.invalid', false, 'codehost']);
    assert.match(String(user.id), /^codehost:\d+$/);
  });

  it('binds a provider handoff to the browser that started it', async () => {
    const b = new Browser(ia.url);
    const start = await b.request(host(apps.idpAny), '/_svc/auth/idp/start', { headers: [['Sec-Fetch-Mode', 'navigate']] });
    const callback = await platform.op.signIn(location(start), 'eve');
    const back = location(await new Browser(ia.url).request(loginHost(), callback.pathname + callback.search));
    const victim = new Browser(ia.url);
    assert.equal(
      (await victim.redeem(host(apps.idpAny), fragmentSecret(back))).status,
      403,
      'someone else opening the callback link is not signed in',
    );
    assert.equal((await b.redeem(host(apps.idpAny), fragmentSecret(back))).status, 200, 'the browser that started it is');
    const replay = await new Browser(ia.url).request(loginHost(), callback.pathname + callback.search);
    assert.equal(replay.status, 400, 'a callback works once');
  });

  it('emails: [address] admits the same verified address from a provider and makes an app user of it (rule 3)', async () => {
    const b = new Browser(ia.url);
    await providerSignIn(b, apps.listed, 'idp', 'ada');
    const seen = JSON.parse((await fetchJson(b, apps.listed, '/api/echo')).body) as Record<string, string>;
    assert.equal(seen['x-svc-auth-provider'], 'idp');
    const users = await json<{ users: Array<{ email: string; last_provider: string }> }>(
      await api.request('GET', `/api/apps/${apps.listed}/auth/users`),
      200,
    );
    assert.deepEqual(
      users.users.map((u) => [u.email, u.last_provider]),
      [['ada@other.test', 'idp']],
    );
    const bob = new Browser(ia.url);
    await providerSignIn(bob, apps.listed, 'idp', 'bob');
    assert.equal((await fetchJson(bob, apps.listed, '/api/echo')).status, 403);
    const after = await json<{ users: unknown[] }>(await api.request('GET', `/api/apps/${apps.listed}/auth/users`), 200);
    assert.equal(after.users.length, 1, 'a workforce identity not on the list creates no app user');
  });

  it('required admits an active app user (any verified address becomes one), not an identity without a verified address, nor a disabled user', async () => {
    const bob = new Browser(ia.url);
    await providerSignIn(bob, apps.required, 'idp', 'bob');
    const seen = JSON.parse((await fetchJson(bob, apps.required, '/api/echo')).body) as Record<string, string>;
    assert.equal(seen['x-svc-auth-email'], 'bob@corp.test');
    const unverified = new Browser(ia.url);
    await providerSignIn(unverified, apps.required, 'idp', 'ada-unverified');
    assert.equal((await fetchJson(unverified, apps.required, '/api/echo')).status, 403);
    const users = await json<{ users: Array<{ id: string; email: string }> }>(
      await api.request('GET', `/api/apps/${apps.required}/auth/users`),
      200,
    );
    assert.deepEqual(
      users.users.map((u) => u.email),
      ['bob@corp.test'],
    );
    await json(await api.request('POST', `/api/apps/${apps.required}/auth/users/${users.users[0]!.id}/disable`), 200);
    // At once: as soon as ingress-auth hears the revocation (NOTIFY, delivered apart from the API's
    // answer), not when its 10 s session cache would have expired.
    await eventually('disabling to end bob’s session', async () => (await fetchJson(bob, apps.required, '/api/echo')).status === 401, {
      timeoutMs: 1_000,
      intervalMs: 20,
    });
    const again = new Browser(ia.url);
    await providerSignIn(again, apps.required, 'idp', 'bob');
    assert.equal(
      (await fetchJson(again, apps.required, '/api/echo')).status,
      401,
      'a disabled user cannot sign in again, through any provider',
    );
  });

  it('lets an app user add a passkey and sign in with it on that hostname only; disabling the user stops it', async () => {
    // ada is an app user of `listed` (previous test); she signs in by idp and adds a passkey.
    const b = new Browser(ia.url);
    await providerSignIn(b, apps.listed, 'idp', 'ada');
    const origin = `http://${host(apps.listed)}`;
    const post = (br: Browser, path: string, body: unknown, o = origin) =>
      br.request(host(apps.listed), path, {
        method: 'POST',
        headers: [
          ['Origin', o],
          ['Content-Type', 'application/json'],
        ],
        body: JSON.stringify(body),
      });
    const key = new SoftwareAuthenticator();
    const ro = JSON.parse((await post(b, '/_svc/auth/passkey/register/options', {})).body) as { challengeId: string; options: never };
    const reg = await post(b, '/_svc/auth/passkey/register/verify', {
      challengeId: ro.challengeId,
      response: key.create(ro.options, origin),
    });
    assert.equal(reg.status, 200, reg.body);
    assert.equal(
      (await post(new Browser(ia.url), '/_svc/auth/passkey/register/options', {})).status,
      400,
      'only a signed-in app user adds one',
    );

    const fresh = new Browser(ia.url);
    const lo = JSON.parse((await post(fresh, '/_svc/auth/passkey/login/options', {})).body) as { challengeId: string; options: never };
    const signedIn = await post(fresh, '/_svc/auth/passkey/login/verify', {
      challengeId: lo.challengeId,
      response: key.get(lo.options, origin),
    });
    assert.equal(signedIn.status, 200, signedIn.body);
    assert.match(String(signedIn.headers['set-cookie']), /Max-Age=2592000/, 'an app-user session: 30 days');
    const seen = JSON.parse((await fetchJson(fresh, apps.listed, '/api/echo')).body) as Record<string, string>;
    assert.equal(seen['x-svc-auth-provider'], 'passkey');
    assert.match(seen['x-svc-auth-subject']!, /^au_/);

    const other = `http://${host(apps.idpAny)}`;
    const lo2 = JSON.parse((await post(fresh, '/_svc/auth/passkey/login/options', {})).body) as { challengeId: string; options: never };
    assert.equal(
      (
        await post(
          fresh,
          '/_svc/auth/passkey/login/verify',
          { challengeId: lo2.challengeId, response: key.get(lo2.options, origin) },
          other,
        )
      ).status,
      403,
      'cross-origin',
    );

    const users = await json<{ users: Array<{ id: string }> }>(await api.request('GET', `/api/apps/${apps.listed}/auth/users`), 200);
    await json(await api.request('POST', `/api/apps/${apps.listed}/auth/users/${users.users[0]!.id}/disable`), 200);
    // At once: as soon as ingress-auth hears the revocation (NOTIFY, delivered apart from the API's
    // answer), not when its 10 s session cache would have expired.
    await eventually(
      'disabling to end the passkey session',
      async () => (await fetchJson(fresh, apps.listed, '/api/echo')).status === 401,
      { timeoutMs: 1_000, intervalMs: 20 },
    );
    const lo3 = JSON.parse((await post(fresh, '/_svc/auth/passkey/login/options', {})).body) as { challengeId: string; options: never };
    assert.equal(
      (await post(fresh, '/_svc/auth/passkey/login/verify', { challengeId: lo3.challengeId, response: key.get(lo3.options, origin) }))
        .status,
      403,
    );
    await json(await api.request('POST', `/api/apps/${apps.listed}/auth/users/${users.users[0]!.id}/enable`), 200);
  });
});
