// The console's session cookie at the API's door (api/middleware/authenticate.ts, api/console/session.ts,
// api/operations/console.ts): accepted only with X-Svc-Console: 1 and, on writes, the API's own Origin
// (403 naming the defence otherwise), a bearer header always winning, expired and revoked tokens
// refused (401), sign-out revoking the session and clearing its cookie, and sign-in answering the same
// for every address. Through the real router, with fake tokens (test/support/fake-api.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '../../api/errors.js';
import { Authenticator } from '../../api/middleware/authenticate.js';
import { op, type Operation } from '../../api/operation.js';
import { consoleOperations } from '../../api/operations/console.js';
import type { BrowserRequest } from '../../api/console/session.js';
import { createLogger } from '../../lib/logger.js';
import { TokenRejected, type Principal } from '../../lib/tokens/store.js';
import { account, fakeAccounts, fakes, startFakeApi, type FakeApi, type Fakes } from '../support/fake-api.js';

/** The addresses sign-in was asked to mail a link to, with the browser value each is bound to (ConsoleSignIn's own part is console-codes'). */
const linksAsked: string[] = [];
const browsersAsked: string[] = [];
/** What POST /console/auth presented to ConsoleSignIn.redeem, and what the fake answers. */
const presented: Array<{ code: string; value: string | undefined; confirmed: boolean }> = [];
const fakeRedeem = async (code: string, browser: { value: string | undefined; confirmed: boolean }) => {
  presented.push({ code, ...browser });
  if (code === 'good' && (browser.confirmed || browser.value === browsersAsked[0]))
    return { token: 'svc_new_session', maxAgeSeconds: 43200 };
  if (code === 'good') return { confirm: 'owner@example.test' };
  return undefined;
};

describe('console session cookie and CSRF defences (router, fake tokens)', () => {
  let api: FakeApi;
  let f: Fakes;
  let session: string;
  const changes: string[] = [];
  const table = (x: Fakes): Operation[] => [
    op({
      method: 'GET',
      path: '/whoami',
      operationId: 'whoami',
      tag: 'account',
      summary: 'who',
      action: 'read',
      handler: async ({ caller }) => ({ body: { nonce: caller.principal.nonce } }),
    }),
    op({
      method: 'POST',
      path: '/poke',
      operationId: 'poke',
      tag: 'account',
      summary: 'a change',
      action: 'write',
      handler: async ({ caller }) => {
        changes.push(caller.principal.nonce);
        return { body: { ok: true } };
      },
    }),
    ...consoleOperations({
      tokens: x.tokens,
      console: {
        sendLink: async (email, browserValue) => {
          linksAsked.push(email);
          browsersAsked.push(browserValue);
        },
        redeem: fakeRedeem,
      },
      log: createLogger('test', 'silent'),
    }),
  ];
  const cookie = (value = session) => `svc-console=${value}`;
  const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    api.request(method, path, body, { token: null, headers });
  const own = () => api.url;

  before(async () => {
    f = fakes();
    api = await startFakeApi(table, f);
    session = (await f.tokens.issue(account.id, { name: 'console', expiresAt: new Date(Date.now() + 12 * 3600e3) })).token;
  });
  after(async () => {
    await api?.close();
  });

  it('refuses the cookie without X-Svc-Console: 1, naming the header', async () => {
    const res = await call('GET', '/api/whoami', { cookie: cookie() });
    assert.equal(res.status, 403);
    assert.match(JSON.stringify(res.body), /X-Svc-Console: 1/);
    const wrong = await call('GET', '/api/whoami', { cookie: cookie(), 'x-svc-console': 'yes' });
    assert.equal(wrong.status, 403);
  });

  it('accepts the cookie on a GET with the header (no Origin needed)', async () => {
    const res = await call('GET', '/api/whoami', { cookie: cookie(), 'x-svc-console': '1' });
    assert.equal(res.status, 200, res.text);
  });

  it('refuses a write with the cookie and a foreign or missing Origin, naming Origin, and changes nothing', async () => {
    for (const origin of ['http://evil.example', 'null', undefined]) {
      const res = await call('POST', '/api/poke', { cookie: cookie(), 'x-svc-console': '1', ...(origin ? { origin } : {}) }, {});
      assert.equal(res.status, 403, res.text);
      assert.match(res.text, /Origin/);
    }
    assert.deepEqual(changes, []);
    const ok = await call('POST', '/api/poke', { cookie: cookie(), 'x-svc-console': '1', origin: own() }, {});
    assert.equal(ok.status, 200, ok.text);
    assert.equal(changes.length, 1);
  });

  it('lets a bearer header win over the cookie (the CLI is unchanged)', async () => {
    const res = await api.request('GET', '/api/whoami', undefined, { headers: { cookie: cookie('svc_garbage') } });
    assert.equal(res.status, 200, res.text);
    const bad = await api.request('GET', '/api/whoami', undefined, {
      token: 'svc_not_a_token',
      headers: { cookie: cookie(), 'x-svc-console': '1' },
    });
    assert.equal(bad.status, 401, 'a bad bearer token is refused even with a good cookie');
  });

  it('refuses an unknown cookie token with 401', async () => {
    const res = await call('GET', '/api/whoami', { cookie: cookie('svc_unknown'), 'x-svc-console': '1' });
    assert.equal(res.status, 401);
  });

  it('sign-out refuses a bearer caller, and with the cookie revokes the session and clears the cookie', async () => {
    const byBearer = await api.request('POST', '/api/console/sign-out', undefined, {});
    assert.equal(byBearer.status, 400, byBearer.text);
    const foreign = await call('POST', '/api/console/sign-out', { cookie: cookie(), 'x-svc-console': '1', origin: 'http://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(
      (await call('GET', '/api/whoami', { cookie: cookie(), 'x-svc-console': '1' })).status,
      200,
      'still signed in after the refused sign-out',
    );
    const res = await call('POST', '/api/console/sign-out', { cookie: cookie(), 'x-svc-console': '1', origin: own() });
    assert.equal(res.status, 204, res.text);
    // Both names cleared, whichever this browser holds.
    assert.deepEqual(res.headers.getSetCookie(), [
      'svc-console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
      '__Host-svc-console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure',
    ]);
    const after = await call('GET', '/api/whoami', { cookie: cookie(), 'x-svc-console': '1' });
    assert.equal(after.status, 401, 'the revoked session no longer works');
  });

  it('sign-in answers 202 with the same body for any address, only from the console', async () => {
    const headers = { 'x-svc-console': '1', origin: own() };
    const a = await call('POST', '/api/console/sign-in', headers, { email: 'owner@example.test' });
    const b = await call('POST', '/api/console/sign-in', headers, { email: 'nobody@localhost' });
    assert.equal(a.status, 202, a.text);
    assert.equal(b.status, 202, b.text);
    assert.equal(a.text.replace('owner@example.test', 'X'), b.text.replace('nobody@localhost', 'X'));
    assert.equal((await call('POST', '/api/console/sign-in', { origin: own() }, { email: 'a@example.test' })).status, 403);
    assert.equal(
      (await call('POST', '/api/console/sign-in', { 'x-svc-console': '1', origin: 'http://evil.example' }, { email: 'a@example.test' }))
        .status,
      403,
    );
    assert.equal((await call('POST', '/api/console/sign-in', headers, { email: 'not an address' })).status, 400);
    assert.deepEqual(
      linksAsked,
      ['owner@example.test', 'nobody@localhost'],
      'only those from the console reached the mailer (a domain without a dot too, as the local platform has)',
    );
    // Each answer binds the browser with an HttpOnly cookie holding the value the link was made for.
    const set = a.headers.get('set-cookie') ?? '';
    assert.match(set, /^svc-console-sign-in=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=600$/);
    assert.equal(set.split(';')[0]!.split('=')[1], browsersAsked[0]);
    // A browser that holds one keeps it: a second link does not orphan the first.
    const again = await call(
      'POST',
      '/api/console/sign-in',
      { ...headers, cookie: `svc-console-sign-in=${browsersAsked[0]}` },
      {
        email: 'owner@example.test',
      },
    );
    assert.equal(again.status, 202);
    assert.equal(browsersAsked[2], browsersAsked[0]);
    // Anything else in that cookie is not kept.
    await call('POST', '/api/console/sign-in', { ...headers, cookie: 'svc-console-sign-in=forged' }, { email: 'owner@example.test' });
    assert.notEqual(browsersAsked[3], 'forged');
  });

  it('takes a code only from the console: without the header or from another origin nothing is presented', async () => {
    presented.length = 0;
    const refused = [
      await call('POST', '/api/console/auth', { origin: own() }, { code: 'good', confirm: true }),
      await call('POST', '/api/console/auth', { 'x-svc-console': '1', origin: 'http://evil.example' }, { code: 'good', confirm: true }),
      await call('POST', '/api/console/auth', { 'x-svc-console': '1' }, { code: 'good', confirm: true }),
    ];
    assert.deepEqual(
      refused.map((r) => r.status),
      [403, 403, 403],
    );
    assert.deepEqual(presented, [], 'a login CSRF never reaches the codes');
  });

  it('signs in the browser that asked at once, asks another to confirm, refuses a dead code with 410', async () => {
    presented.length = 0;
    const headers = { 'x-svc-console': '1', origin: own() };
    const elsewhere = await call('POST', '/api/console/auth', headers, { code: 'good' });
    assert.equal(elsewhere.status, 200, elsewhere.text);
    assert.deepEqual(elsewhere.body, { status: 'confirm', email: 'owner@example.test' });
    assert.equal(elsewhere.headers.get('set-cookie'), null, 'no session before the person confirms');
    const here = await call(
      'POST',
      '/api/console/auth',
      { ...headers, cookie: `svc-console-sign-in=${browsersAsked[0]}` },
      { code: 'good' },
    );
    assert.deepEqual(here.body, { status: 'signed_in' });
    assert.deepEqual(here.headers.getSetCookie(), [
      'svc-console=svc_new_session; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200',
      'svc-console-sign-in=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
    ]);
    assert.equal(here.headers.get('cache-control'), 'no-store');
    const confirmed = await call('POST', '/api/console/auth', headers, { code: 'good', confirm: true });
    assert.deepEqual(confirmed.body, { status: 'signed_in' });
    const dead = await call('POST', '/api/console/auth', headers, { code: 'used-or-unknown' });
    assert.equal(dead.status, 410);
    assert.match(dead.text, /no longer works/);
    assert.equal((await call('POST', '/api/console/auth', headers, { code: 'good', extra: 1 })).status, 400);
    assert.deepEqual(
      presented.map((p) => [p.value === browsersAsked[0], p.confirmed]),
      [
        [false, false],
        [true, false],
        [false, true],
        [false, false],
      ],
    );
  });
});

describe('Authenticator with the console cookie', () => {
  const principal = (nonce: string): Principal => ({
    accountId: 'acct_1',
    nonce,
    authority: { apps: undefined, actions: undefined, expiresAt: new Date(Date.now() + 3600e3) },
    restrictions: [],
    lineage: [nonce],
    id: `tok_${nonce}`,
    derived: false,
    asMinted: true,
  });
  const tokens = {
    authenticate: async (token: string): Promise<Principal> => {
      if (token === 'svc_expired') throw new TokenRejected('expired', 'token expired at 2026-01-01T00:00:00.000Z');
      if (token === 'svc_revoked') throw new TokenRejected('revoked', 'token revoked');
      return principal(token);
    },
  };
  const auth = new Authenticator({ tokens, accounts: fakeAccounts });
  const browser = (o: Partial<BrowserRequest>): BrowserRequest => ({
    method: 'GET',
    cookie: undefined,
    consoleHeader: '1',
    origin: undefined,
    secure: false,
    host: 'api.test',
    publicOrigin: 'https://console.example.test',
    ...o,
  });
  const refusal = async (p: Promise<unknown>): Promise<ApiError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
    return err;
  };

  it('refuses an expired or revoked session token with 401 invalid_token', async () => {
    for (const token of ['svc_expired', 'svc_revoked']) {
      const err = await refusal(auth.authenticate(undefined, browser({ cookie: `svc-console=${token}` })));
      assert.equal(err.status, 401);
      assert.equal(err.code, 'invalid_token');
    }
  });

  it('over https reads only the __Host- cookie, and wants an https Origin on writes', async () => {
    const plain = await refusal(auth.authenticate(undefined, browser({ secure: true, cookie: 'svc-console=svc_a' })));
    assert.equal(plain.code, 'authentication_required');
    assert.equal(
      (await auth.authenticate(undefined, browser({ secure: true, cookie: 'other=1; __Host-svc-console=svc_a' }))).nonce,
      'svc_a',
    );
    const post = { method: 'POST', secure: true, cookie: '__Host-svc-console=svc_a' };
    assert.equal((await refusal(auth.authenticate(undefined, browser({ ...post, origin: 'http://api.test' })))).status, 403);
    assert.equal((await auth.authenticate(undefined, browser({ ...post, origin: 'https://api.test' }))).nonce, 'svc_a');
  });

  it('HEAD needs the header but no Origin; PUT, PATCH and DELETE need the Origin', async () => {
    assert.equal((await auth.authenticate(undefined, browser({ method: 'HEAD', cookie: 'svc-console=svc_a' }))).nonce, 'svc_a');
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      assert.equal((await refusal(auth.authenticate(undefined, browser({ method, cookie: 'svc-console=svc_a' })))).status, 403);
    }
  });

  it('without a cookie or a bearer asks for authentication (401), as before', async () => {
    assert.equal((await refusal(auth.authenticate(undefined, browser({})))).code, 'authentication_required');
    assert.equal((await refusal(auth.authenticate(undefined))).code, 'authentication_required');
    // What a stream re-checks while it lasts: the token presented, bearer first, else the cookie.
    assert.deepEqual(auth.presented(undefined, browser({ cookie: 'svc-console=svc_a' })), { token: 'svc_a', viaCookie: true });
    assert.deepEqual(auth.presented('Bearer svc_b', browser({ cookie: 'svc-console=svc_a' })), { token: 'svc_b', viaCookie: false });
    assert.equal(auth.presented(undefined, browser({})), undefined);
  });
});
