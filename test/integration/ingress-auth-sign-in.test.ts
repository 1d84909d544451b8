// Sign-in on app hostnames, end to end through ingress-auth to deployed apps: the gate's answers
// (303 for a person navigating, 401 for a script, 403 for someone not admitted), the owner's
// way in, identity headers and their assertion, header and cookie spoofing in every spelling,
// sessions scoped to one app and hostname, no-store answers, sign-out, and the app-user API.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { verifyAssertion } from '../../lib/identity/assertion.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { appsDomain, Browser, fragmentSecret, startTestIngress, type Answer, type TestIngress } from '../support/ingress.js';
import { uniqueName } from '../support/kube.js';
import { eventually } from '../support/wait.js';

const echoHandler = 'export default (req) => Object.fromEntries(req.headers)\n';
const cookieHandler = `export default () => {
  const h = new Headers({ 'content-type': 'text/plain' });
  h.append('set-cookie', 'svc-session=planted; Path=/');
  h.append('set-cookie', '__Host-svc-session=planted; Path=/; Secure');
  h.append('set-cookie', 'SVC_flow=x');
  h.append('set-cookie', 'theme=dark; Path=/');
  return new Response('cookies', { headers: h });
}
`;

// A per-request process handler: identity arrives as SVC_AUTH_* variables.
const envHandler = `printf 'Content-Type: text/plain\\r\\n\\r\\n'
printf '%s|%s|%s|%s|%s' "$SVC_AUTH_SUBJECT" "$SVC_AUTH_EMAIL" "$SVC_AUTH_PROVIDER" "$(printf %s "$SVC_AUTH_ASSERTION" | cut -d. -f1)" "$HTTP_X_SVC_AUTH_EMAIL"
`;

describe('ingress-auth sign-in', () => {
  let api: TestApi;
  let ia: TestIngress;
  const guard = uniqueName('guard');
  const other = uniqueName('other');
  const host = (app: string) => `${app}.${appsDomain}`;

  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  const deploy = async (app: string, compose: string) => {
    const files = {
      'handlers/index.js': `export default () => new Response('<h1>${app} home</h1>', { headers: { 'content-type': 'text/html' } })\n`,
      'api/echo.js': echoHandler,
      'api/public.js': echoHandler,
      'api/cookies.js': cookieHandler,
      'api/env.sh': envHandler,
    };
    return (await json<{ id: string }>(await api.request('POST', `/api/apps/${app}/deploy`, { body: { compose, files } }), 202)).id;
  };
  const live = (app: string, id: string) =>
    eventually(
      `${app} deploy ${id} live`,
      async () => {
        const d = await json<{ status: string }>(await api.request('GET', `/api/deploys/${id}`), 200);
        return d.status === 'live'
          ? d
          : d.status === 'failed'
            ? Promise.reject(new Error(`deploy failed: ${JSON.stringify(d)}`))
            : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
  const ownerLink = async (app: string, next = '/') =>
    (await json<{ url: string }>(await api.request('POST', `/api/apps/${app}/auth/owner-link`, { body: { next } }), 201)).url;
  const signInAsOwner = async (b: Browser, app: string) => {
    const r = await b.redeem(host(app), fragmentSecret(await ownerLink(app)));
    assert.equal(r.status, 200, r.body);
    return r;
  };
  const navigate = (b: Browser, app: string, path: string) =>
    b.request(host(app), path, {
      headers: [
        ['Sec-Fetch-Mode', 'navigate'],
        ['Sec-Fetch-Dest', 'document'],
        ['Accept', 'text/html'],
      ],
    });
  const fetchJson = (b: Browser, app: string, path: string, headers: Array<[string, string]> = []) =>
    b.request(host(app), path, {
      headers: [['Sec-Fetch-Mode', 'cors'], ['Sec-Fetch-Dest', 'empty'], ['Accept', 'application/json'], ...headers],
    });
  const seen = (r: Answer) => {
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body) as Record<string, string>;
  };

  const policy = 'x-svc:\n  auth:\n    owner: true\n    emails: [ada@example.test]\n    paths: [/api/**]\n    except: [/api/public]\n';

  before(async () => {
    api = await startTestApi({ env: { SVC_ROLLOUT_DEADLINE_SECONDS: '30' } });
    ia = await startTestIngress(api);
    for (const app of [guard, other]) await json(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    const ids = await Promise.all([deploy(guard, policy), deploy(other, policy)]);
    await Promise.all([live(guard, ids[0]), live(other, ids[1])]);
    // The ingress's caches see the App and its endpoints a moment after the deploy is live.
    for (const app of [guard, other]) {
      let last = '';
      await eventually(
        `${app} served through ingress-auth`,
        async () => {
          const r = await new Browser(ia.url).request(host(app), '/');
          last = `${r.status} ${r.body.slice(0, 300)}`;
          return r.status === 200;
        },
        { timeoutMs: 30_000 },
      ).catch((err: Error) => Promise.reject(new Error(`${err.message}; last answer ${last}`)));
    }
  });
  after(async () => {
    await ia?.close();
    await api?.close();
  });

  it('serves public paths to anyone, without identity; `except` wins over `paths`', async () => {
    const b = new Browser(ia.url);
    const home = await b.request(host(guard), '/');
    assert.match(home.body, /home/);
    const pub = seen(await fetchJson(b, guard, '/api/public'));
    assert.equal(pub['x-svc-auth-subject'], undefined);
  });

  it('sends a navigating person to the login page (303) and a script a 401 with login_url, never cached', async () => {
    const b = new Browser(ia.url);
    const nav = await navigate(b, guard, '/api/echo?x=1&y=%2F');
    assert.equal(nav.status, 303);
    assert.equal(nav.headers.location, `/_svc/auth/login?next=${encodeURIComponent('/api/echo?x=1&y=%2F')}`);
    assert.equal(nav.headers['cache-control'], 'private, no-store');
    const f = await fetchJson(b, guard, '/api/echo');
    assert.equal(f.status, 401);
    assert.deepEqual(JSON.parse(f.body), { error: 'authentication_required', login_url: '/_svc/auth/login?next=%2Fapi%2Fecho' });
    assert.equal(f.headers['cache-control'], 'private, no-store');
    // Case, dot segments and encodings of a gated path are gated too.
    for (const p of ['/API/echo', '/x/../api/echo', '/api/%65cho', '/api//echo'])
      assert.equal((await fetchJson(b, guard, p)).status, 401, p);
  });

  it('decides navigation by Sec-Fetch-Mode, then Sec-Fetch-Dest, then Accept (the documented table)', async () => {
    const b = new Browser(ia.url);
    const cases: Array<[string, Array<[string, string]>, number]> = [
      [
        'navigate mode, even accepting JSON',
        [
          ['Sec-Fetch-Mode', 'navigate'],
          ['Accept', 'application/json'],
        ],
        303,
      ],
      [
        'cors mode, even accepting HTML',
        [
          ['Sec-Fetch-Mode', 'cors'],
          ['Accept', 'text/html'],
        ],
        401,
      ],
      [
        'no-cors mode (an <img>)',
        [
          ['Sec-Fetch-Mode', 'no-cors'],
          ['Sec-Fetch-Dest', 'image'],
        ],
        401,
      ],
      ['iframe destination without a mode', [['Sec-Fetch-Dest', 'iframe']], 303],
      [
        'empty destination without a mode',
        [
          ['Sec-Fetch-Dest', 'empty'],
          ['Accept', 'text/html'],
        ],
        401,
      ],
      ['a browser without Sec-Fetch-*', [['Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8']], 303],
      ['axios without Sec-Fetch-*', [['Accept', 'application/json, text/plain, */*']], 401],
      ['curl', [['Accept', '*/*']], 401],
      ['no Accept at all', [], 401],
    ];
    for (const [what, headers, status] of cases)
      assert.equal((await b.request(host(guard), '/api/echo', { headers })).status, status, what);
    const post = await b.request(host(guard), '/api/echo', {
      method: 'POST',
      headers: [
        ['Sec-Fetch-Mode', 'navigate'],
        ['Content-Type', 'application/x-www-form-urlencoded'],
      ],
      body: 'a=1',
    });
    assert.equal(post.status, 401, 'a form POST is never redirected (the body would be lost)');
  });

  it('signs the owner in with a one-time link from the API and hands the app a verifiable identity', async () => {
    const b = new Browser(ia.url);
    const url = await ownerLink(guard, '/api/echo?from=link');
    assert.match(url, new RegExp(`^http://${guard}\\.${appsDomain}:8081/_svc/auth/login\\?next=%2Fapi%2Fecho%3Ffrom%3Dlink#handoff=`));
    const first = await b.redeem(host(guard), fragmentSecret(url));
    assert.equal(first.status, 200, first.body);
    assert.equal((JSON.parse(first.body) as { next: string }).next, '/api/echo?from=link');
    assert.equal(first.headers['cache-control'], 'private, no-store');
    const cookie = String(first.headers['set-cookie']);
    assert.match(
      cookie,
      /^svc-session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=28800$/,
      'host-only (no Domain), 8 hours for the owner',
    );
    assert.equal((await new Browser(ia.url).redeem(host(guard), fragmentSecret(url))).status, 403, 'a handoff works once');

    const r = await fetchJson(b, guard, '/api/echo');
    const h = seen(r);
    assert.equal(r.headers['cache-control'], 'private, no-store');
    assert.equal(h['x-svc-auth-subject'], api.account.id);
    assert.equal(h['x-svc-auth-email'], api.account.email);
    assert.equal(h['x-svc-auth-provider'], 'svc');
    const jwks = JSON.parse((await b.request(host(guard), '/_svc/auth/jwks.json')).body) as { keys: object[] };
    const claims = await verifyAssertion(h['x-svc-auth-assertion']!, jwks, { audience: host(guard), issuer: ia.config.assertion.issuer });
    assert.equal(claims.sub, api.account.id);
    assert.equal(claims.aud, host(guard));
    assert.equal(claims.provider, 'svc');
    assert.ok(claims.exp - claims.iat <= 900 && claims.exp > claims.iat);
    const [head, payload, sig] = h['x-svc-auth-assertion']!.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: 'someone-else' }),
    ).toString('base64url');
    await assert.rejects(
      verifyAssertion(`${head}.${forged}.${sig}`, jwks, { audience: host(guard), issuer: ia.config.assertion.issuer }),
      /signature/,
    );
    await assert.rejects(
      verifyAssertion(h['x-svc-auth-assertion']!, jwks, { audience: host(other), issuer: ia.config.assertion.issuer }),
      /aud/,
    );

    // Handlers in other languages get the same identity as SVC_AUTH_* (and the header as HTTP_X_SVC_AUTH_*).
    const env = await b.request(host(guard), '/api/env', {
      headers: [
        ['Accept', '*/*'],
        ['X-Svc-Auth-Email', 'forged@evil.test'],
      ],
    });
    assert.equal(env.status, 200, env.body);
    const [subject, email, provider, jwsHeader, headerEmail] = env.body.split('|');
    assert.deepEqual([subject, email, provider, headerEmail], [api.account.id, api.account.email, 'svc', api.account.email]);
    assert.equal((JSON.parse(Buffer.from(jwsHeader!, 'base64url').toString()) as { alg: string }).alg, 'EdDSA');

    const me = await b.request(host(guard), '/_svc/auth/me');
    assert.deepEqual(JSON.parse(me.body), {
      user: { id: api.account.id, name: api.account.name, email: api.account.email, email_verified: true, provider: 'svc' },
    });
    assert.equal(me.headers['cache-control'], 'private, no-store');
    assert.deepEqual(JSON.parse((await new Browser(ia.url).request(host(guard), '/_svc/auth/me')).body), { user: null });
  });

  it('strips client X-Svc-* headers in every spelling and the platform cookies before the app, and keeps the app from setting them', async () => {
    const b = new Browser(ia.url);
    await signInAsOwner(b, guard);
    const spoof: Array<[string, string]> = [
      ['X-Svc-Auth-Subject', 'admin'],
      ['x-svc-auth-subject', 'admin-again'],
      ['X_SVC_AUTH_EMAIL', 'boss@example.com'],
      ['x_svc-auth_provider', 'idp'],
      ['X-Svc-Auth-Assertion', 'forged'],
      ['X-SVC-anything', 'x'],
    ];
    const session = b.cookie(host(guard), 'svc-session')!;
    // The session cookie is sent along with lookalikes in other spellings and an app cookie.
    const h = seen(
      await b.request(host(guard), '/api/echo', {
        cookies: false,
        headers: [
          ...spoof,
          ['Accept', 'application/json'],
          ['Cookie', `theme=dark; svc-session=${session}; SVC_flow=1; __Host-svc-session=zzz`],
          ['Cookie', 'Svc-Other=2; lang=en'],
        ],
      }),
    );
    assert.equal(h['x-svc-auth-subject'], api.account.id, 'only the real identity, once');
    assert.equal(h['x-svc-auth-email'], api.account.email);
    assert.equal(h['x-svc-auth-provider'], 'svc');
    assert.ok(!JSON.stringify(h).includes('boss@example.com') && !JSON.stringify(h).includes('admin'));
    assert.equal(h['x-svc-anything'], undefined);
    assert.equal(h.cookie, 'theme=dark; lang=en', `the app saw cookies ${h.cookie}`);
    assert.ok(!JSON.stringify(h).includes(session), 'the session secret never reaches the app');

    const anon = seen(await fetchJson(new Browser(ia.url), guard, '/api/public', spoof));
    assert.deepEqual(
      Object.keys(anon).filter((k) => /^x[-_]svc/i.test(k)),
      [],
      'no identity on a public path, spoofed or not',
    );

    const c = await b.request(host(guard), '/api/public/../cookies', { headers: [['Accept', '*/*']] });
    const set = ([] as string[]).concat(c.headers['set-cookie'] ?? []);
    assert.deepEqual(set, ['theme=dark; Path=/'], `the app set ${set.join(' | ')}`);
  });

  it('scopes a session to one app and one hostname', async () => {
    const b = new Browser(ia.url);
    await signInAsOwner(b, guard);
    assert.equal(seen(await fetchJson(b, guard, '/api/echo'))['x-svc-auth-provider'], 'svc');
    assert.equal((await fetchJson(b, other, '/api/echo')).status, 401, 'the browser keeps the cookie to its host');
    // Even a cookie carried over by hand finds no session on the other app.
    b.setCookie(host(other), 'svc-session', b.cookie(host(guard), 'svc-session')!);
    assert.equal((await fetchJson(b, other, '/api/echo')).status, 401);
    // A handoff minted for one app cannot be redeemed on another.
    const url = await ownerLink(guard);
    assert.equal((await new Browser(ia.url).redeem(host(other), fragmentSecret(url))).status, 403);
  });

  it('redeems sign-in secrets only by a same-origin POST, and `next` never leaves the app', async () => {
    const url = await ownerLink(guard);
    const token = fragmentSecret(url);
    const b = new Browser(ia.url);
    const get = await b.request(host(guard), `/_svc/auth/login?next=%2F&token=${token}&handoff=${token}`, {
      headers: [['Accept', 'text/html']],
    });
    assert.equal(get.status, 200);
    assert.equal(b.cookie(host(guard), 'svc-session'), undefined, 'a fragment-free GET signs nobody in');
    assert.equal((await b.request(host(guard), '/_svc/auth/redeem', { headers: [['Accept', 'application/json']] })).status, 404);
    const cross = await b.request(host(guard), '/_svc/auth/redeem', {
      method: 'POST',
      headers: [
        ['Origin', 'http://evil.test'],
        ['Content-Type', 'application/json'],
      ],
      body: JSON.stringify({ token }),
    });
    assert.equal(cross.status, 403);
    const form = await b.request(host(guard), '/_svc/auth/redeem', {
      method: 'POST',
      headers: [['Content-Type', 'application/x-www-form-urlencoded']],
      body: `token=${token}`,
    });
    assert.equal(form.status, 415, 'a cross-site form cannot post JSON');
    assert.equal((await b.redeem(host(guard), token)).status, 200, 'the link still works after refused attempts');

    for (const next of [
      '//evil.test/x',
      'https://evil.test/',
      '/\\evil.test',
      'javascript:alert(1)',
      `http://${host(other)}/`,
      '/_svc/auth/logout',
      '/.//evil.test',
      '/..//evil.test',
      '/%2f%2fevil.test',
      '/%5cevil.test',
    ]) {
      const page = await b.request(host(guard), `/_svc/auth/login?next=${encodeURIComponent(next)}`, {
        headers: [['Accept', 'text/html']],
      });
      assert.match(page.body, /var next="\/";/, `next=${next}`);
    }
    const ok = await b.request(host(guard), `/_svc/auth/login?next=${encodeURIComponent('/api/echo?a=1')}`, {
      headers: [['Accept', 'text/html']],
    });
    assert.match(ok.body, /var next="\/api\/echo\?a=1";/);
    assert.equal(ok.headers['cache-control'], 'private, no-store');
    assert.match(String(ok.headers['content-security-policy']), /script-src 'nonce-/);
    await json(await api.request('POST', `/api/apps/${guard}/auth/owner-link`, { body: { next: '//evil.test' } }), 400);
  });

  it('shows the methods of the app’s policy on the login page, and signs out', async () => {
    const b = new Browser(ia.url);
    const page = await b.request(host(guard), '/_svc/auth/login', { headers: [['Accept', 'text/html']] });
    assert.match(page.body, /id="owner"/);
    assert.match(page.body, /svc open /);
    assert.match(page.body, /id="email"/, 'emails policy: the email method is shown (here: not set up, no mail configured)');
    assert.doesNotMatch(page.body, /id="idp"|id="codehost"/);
    await signInAsOwner(b, guard);
    assert.match((await b.request(host(guard), '/_svc/auth/login')).body, /Signed in as/);
    const cross = await b.request(host(guard), '/_svc/auth/logout', { method: 'POST', headers: [['Origin', 'http://evil.test']] });
    assert.equal(cross.status, 403);
    const session = b.cookie(host(guard), 'svc-session')!;
    const out = await b.request(host(guard), '/_svc/auth/logout', {
      method: 'POST',
      headers: [
        ['Origin', `http://${host(guard)}:${ia.port}`],
        ['Accept', 'application/json'],
      ],
    });
    assert.equal(out.status, 200);
    assert.equal(b.cookie(host(guard), 'svc-session'), undefined, 'cookie cleared');
    b.setCookie(host(guard), 'svc-session', session);
    assert.equal((await fetchJson(b, guard, '/api/echo')).status, 401, 'the session itself is over, not only the cookie');
  });

  it('ends owner (workforce) sessions after 8 hours', async () => {
    const b = new Browser(ia.url);
    await signInAsOwner(b, guard);
    ia.clock.advance(8 * 3600_000 - 60_000);
    assert.equal((await fetchJson(b, guard, '/api/echo')).status, 200);
    ia.clock.advance(61_000);
    assert.equal((await fetchJson(b, guard, '/api/echo')).status, 401);
    ia.clock.now = new Date();
  });

  it('answers 403 to a signed-in visitor the policy no longer admits, and the owner API refuses a policy without owner', async () => {
    const b = new Browser(ia.url);
    await signInAsOwner(b, other);
    assert.equal((await fetchJson(b, other, '/api/echo')).status, 200);
    await live(other, await deploy(other, 'x-svc:\n  auth:\n    emails: [ada@example.test]\n    paths: [/api/**]\n'));
    await eventually('the new policy in the ingress cache', async () => (await fetchJson(b, other, '/api/echo')).status === 403);
    const denied = await fetchJson(b, other, '/api/echo');
    assert.equal((JSON.parse(denied.body) as { error: string }).error, 'forbidden');
    assert.equal(denied.headers['cache-control'], 'private, no-store');
    const page = await navigate(b, other, '/api/echo');
    assert.equal(page.status, 403);
    assert.match(page.body, /id="denied"/);
    await json(await api.request('POST', `/api/apps/${other}/auth/owner-link`, { body: {} }), 409);
  });

  it('resolves identity without a gate on `identity` pages, and gates a page declared with svc-auth (HTML app)', async () => {
    const page = uniqueName('page');
    await json(await api.request('POST', '/api/apps', { body: { name: page } }), 201);
    const files = {
      'index.html':
        '<html><head><meta name="svc-identity" content="owner"></head><body><p id="hello">Hello [{{$viewer.name}}] owner=[{{$viewer.owner}}] via [{{$viewer.provider}}]</p></body></html>',
      'admin.html': '<html><head><meta name="svc-auth" content="owner"></head><body><p>admin of {{$viewer.email}}</p></body></html>',
    };
    const id = (await json<{ id: string }>(await api.request('POST', `/api/apps/${page}/deploy`, { body: { files } }), 202)).id;
    await live(page, id);
    const anon = new Browser(ia.url);
    const hello = await eventually('the HTML app through ingress-auth', async () => {
      const r = await navigate(anon, page, '/');
      return r.status === 200 ? r : undefined;
    });
    assert.match(hello.body, /Hello \[\] owner=\[\] via \[\]/, 'public, anonymous');
    assert.equal((await navigate(anon, page, '/admin')).status, 303);
    assert.equal((await navigate(anon, page, '/admin.html')).status, 303, 'every route of the page');

    const b = new Browser(ia.url);
    await signInAsOwner(b, page);
    const mine = await navigate(b, page, '/');
    assert.match(mine.body, new RegExp(`Hello \\[${api.account.name}\\] owner=\\[true\\] via \\[svc\\]`));
    assert.equal(mine.headers['cache-control'], 'private, no-store');
    const admin = await navigate(b, page, '/admin');
    assert.equal(admin.status, 200);
    assert.match(admin.body, new RegExp(`admin of ${api.account.email.replace(/[.]/g, '\\.')}`));
  });

  it('`svc open APP PATH` prints an owner link that opens the app signed in', async () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(root, 'bin/svc.js'), 'open', guard, '/api/echo'], {
      env: { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token },
    });
    const url = stdout.trim();
    assert.match(url, /#handoff=/);
    const b = new Browser(ia.url);
    const r = await b.redeem(host(guard), fragmentSecret(url));
    assert.equal((JSON.parse(r.body) as { next: string }).next, '/api/echo');
    assert.equal(seen(await fetchJson(b, guard, '/api/echo'))['x-svc-auth-provider'], 'svc');
  });

  it('revokes sessions through the API at once on every ingress-auth replica (cached sessions included)', async () => {
    const replica = await startTestIngress(api);
    try {
      const b = new Browser(ia.url);
      const c = new Browser(replica.url);
      await signInAsOwner(b, guard);
      c.setCookie(host(guard), 'svc-session', b.cookie(host(guard), 'svc-session')!);
      // Both replicas now hold the session in their caches.
      assert.equal((await fetchJson(b, guard, '/api/echo')).status, 200);
      assert.equal((await fetchJson(c, guard, '/api/echo')).status, 200);
      const { revoked } = await json<{ revoked: number }>(
        await api.request('POST', `/api/apps/${guard}/auth/sessions/revoke`, { body: {} }),
        200,
      );
      assert.ok(revoked >= 1);
      await eventually(
        'the revocation on both replicas',
        async () => (await fetchJson(b, guard, '/api/echo')).status === 401 && (await fetchJson(c, guard, '/api/echo')).status === 401,
        {
          timeoutMs: 2_000,
          intervalMs: 50,
        },
      );
      await json(await api.request('POST', `/api/apps/${guard}/auth/sessions/revoke`, { body: { user_id: 'au_0000000000000000' } }), 404);
      await json(
        await api.request('POST', `/api/apps/${guard}/auth/sessions/revoke`, { body: { user_id: 'au_1', email: 'a@b.test' } }),
        400,
      );
    } finally {
      await replica.close();
    }
  });

  it('a revocation heard while a session was being read is not lost to the 10 s cache', async () => {
    const b = new Browser(ia.url);
    await signInAsOwner(b, guard);
    const token = b.cookie(host(guard), 'svc-session')!;
    const app = ia.ingress.routes.app(guard)!;
    const store = ia.signIn.sessions;
    const find = store.find.bind(store);
    let revokedMidway = false;
    // The first reading returns the live session; only then is the revocation made and heard.
    store.find = async (...args: Parameters<typeof find>) => {
      const read = await find(...args);
      if (!revokedMidway) {
        revokedMidway = true;
        const heard = new Promise<void>((resolve) => ia.signIn.onRevocation(resolve));
        await store.revokeToken(token);
        await heard;
      }
      return read;
    };
    try {
      assert.equal(await ia.signIn.session(token, app, host(guard)), undefined, 'the revoked session is not handed out');
      assert.equal(ia.signIn.cachedSession(token, app, host(guard)), null, 'the cache holds the revocation, not the reading it overtook');
    } finally {
      store.find = find;
    }
  });

  it('lists the providers of an app’s policy with whether this platform has them set up', async () => {
    const body = await json<{ providers: Array<{ name: string; in_policy: boolean; configured: boolean }> }>(
      await api.request('GET', `/api/apps/${guard}/auth/providers`),
      200,
    );
    const byName = Object.fromEntries(body.providers.map((p) => [p.name, p]));
    assert.equal(byName.svc?.in_policy, true);
    assert.equal(byName.email?.in_policy, true);
    assert.equal(byName.email?.configured, false, 'no SMTP configured in this API');
    assert.equal(byName.idp?.in_policy, false);
    assert.equal(byName.codehost?.in_policy, false);
  });
});
