// Email invitations and sign-in links end to end, in headless Chromium against a real SMTP
// server: every numbered rule of "Email invitations" (positive and negative), the login page's
// identical answer and its rate limits, app-user session limits with an injectable clock, the
// app-user API, and a passkey added and used in the browser.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext } from 'playwright-core';
import { MailOutbox } from '../../lib/mail/outbox.js';
import { group, pluralOf, version, type App } from '../../lib/contract.js';
import type { MailSender } from '../../lib/mail/sender.js';
import { startTestMailSender } from '../support/console.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { addVirtualAuthenticator, launchChromium, signInLink } from '../support/browser.js';
import { appsDomain, Browser, fragmentSecret, freePort, startTestIngress, type TestIngress } from '../support/ingress.js';
import { kubeConfig, uniqueName } from '../support/kube.js';
import { startTestSmtp, type ReceivedMail, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

describe('ingress-auth email sign-in (Chromium, SMTP)', () => {
  let api: TestApi;
  let ia: TestIngress;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let port: number;
  const team = uniqueName('team');
  const host = (app = team) => `${app}.${appsDomain}:${port}`;
  const origin = (app = team) => `http://${host(app)}`;
  const files = {
    'index.html': '<h1>Team home</h1><p>{{$viewer.email}}</p>',
    'private/index.html': '<h1 id="private">Private</h1><p id="who">{{$viewer.email}} via {{$viewer.provider}}</p>',
  };
  const policy = (emails: string[]) => `x-svc:\n  auth:\n    emails: [${emails.join(', ')}]\n    paths: [/private/**]\n`;

  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  const deployLive = async (emails: string[]) => {
    const { id } = await json<{ id: string }>(
      await api.request('POST', `/api/apps/${team}/deploy`, { body: { compose: policy(emails), files } }),
      202,
    );
    await eventually(
      `deploy ${id} live`,
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${id}`), 200)).status === 'live',
      { timeoutMs: 90_000 },
    );
  };
  const mailsTo = (address: string) => smtp.received.filter((m) => m.to.includes(address));
  /** Mail queued to `address` in the outbox, sent or not. */
  const queuedTo = async (address: string) =>
    Number((await api.db('mail_outbox').where({ to: address }).count<Array<{ n: string }>>({ n: '*' }))[0]!.n);
  const nth = async (address: string, n: number): Promise<ReceivedMail> => {
    await eventually(`mail #${n} to ${address}`, () => mailsTo(address).length >= n, { timeoutMs: 20_000, intervalMs: 50 });
    return mailsTo(address)[n - 1]!;
  };
  const person = async (): Promise<BrowserContext> => chromium.newContext();

  before(async () => {
    port = await freePort();
    smtp = await startTestSmtp();
    const env = { SVC_APPS_URL_SUFFIX: `:${port}`, SVC_SMTP_URL: smtp.url, SVC_ROLLOUT_DEADLINE_SECONDS: '30' };
    api = await startTestApi({ env });
    sender = startTestMailSender(api);
    ia = await startTestIngress(api, {
      port,
      mail: new MailOutbox(api.db),
      env: { ...env, SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY: '3', SVC_AUTH_EMAIL_PER_SOURCE_HOURLY: '12' },
    });
    chromium = await launchChromium();
    await json(await api.request('POST', '/api/apps', { body: { name: team } }), 201);
  });
  after(async () => {
    await chromium?.close();
    await sender?.stop();
    await ia?.close();
    await api?.close();
    await smtp?.close();
  });

  it('invites each newly added address once after a live deploy, and the link signs in through the app’s own page (rules 1, 4)', async () => {
    await deployLive(['ada@example.test']);
    const invitation = await nth('ada@example.test', 1);
    assert.match(invitation.headers.subject ?? '', new RegExp(`invited to ${team}`));
    const link = signInLink(invitation.raw);
    assert.ok(link.startsWith(`${origin()}/_svc/auth/login?next=%2F#token=`), link);

    const ada = await person();
    const page = await ada.newPage();
    await page.goto(link);
    await page.waitForURL(`${origin()}/`);
    assert.equal(new URL(page.url()).hash, '', 'the fragment is gone from the address bar');
    await page.goto(`${origin()}/private/`);
    assert.equal(await page.textContent('#who'), 'ada@example.test via email');
    const cookies = await ada.cookies(origin());
    const session = cookies.find((c) => c.name === 'svc-session');
    assert.ok(session?.httpOnly && session.domain === `${team}.${appsDomain}`, 'a host-only HttpOnly session cookie');
    // The same deploy again, and one more: ada is not invited a second time; bob is, once.
    await deployLive(['ada@example.test', 'bob@example.test']);
    await nth('bob@example.test', 1);
    // A third address in the last deploy marks when its invitations were decided: the pass that
    // mails cy has already passed over ada and bob, and mail leaves in the order it was queued.
    await deployLive(['ada@example.test', 'bob@example.test', 'cy@example.test']);
    await nth('cy@example.test', 1);
    assert.equal(mailsTo('ada@example.test').length, 1);
    assert.equal(mailsTo('bob@example.test').length, 1);
    assert.equal(await queuedTo('ada@example.test'), 1, 'nothing more is queued for ada either');
    await ada.close();
  });

  it('sends a person to the login page, mails another link to an allowed address with the same answer as for any other; older links keep working (rules 2, 3)', async () => {
    const visitor = await person();
    const page = await visitor.newPage();
    await page.goto(`${origin()}/private/`);
    assert.equal(new URL(page.url()).pathname, '/_svc/auth/login');
    assert.equal(new URL(page.url()).searchParams.get('next'), '/private/');
    await page.fill('input[name=email]', 'mallory@example.test');
    await page.click('button[type=submit]');
    const refused = (await page.textContent('#sent'))!.replace('mallory@example.test', 'X');
    await page.goto(`${origin()}/_svc/auth/login?next=%2Fprivate%2F`);
    await page.fill('input[name=email]', 'Ada@Example.test');
    await page.click('button[type=submit]');
    const accepted = (await page.textContent('#sent'))!.replace('ada@example.test', 'X');
    assert.equal(accepted, refused, 'identical for allowed and other addresses');
    const second = await nth('ada@example.test', 2);
    assert.deepEqual(mailsTo('mallory@example.test'), [], 'nothing for an address the policy does not list');
    const link = signInLink(second.raw);
    assert.ok(link.includes('next=%2Fprivate%2F'), link);
    await page.goto(link);
    await page.waitForURL(`${origin()}/private/`);
    assert.equal(await page.textContent('#who'), 'ada@example.test via email');
    // The invitation from the first test still signs in (reusable; a new link did not replace it).
    const other = await (await person()).newPage();
    await other.goto(signInLink(mailsTo('ada@example.test')[0]!.raw));
    await other.waitForURL(`${origin()}/`);
    await other.goto(`${origin()}/private/`);
    assert.equal(await other.textContent('#who'), 'ada@example.test via email');
    await other.context().close();
    await visitor.close();
  });

  it('never redeems a token without the page’s same-origin request (rule 4)', async () => {
    const token = fragmentSecret(signInLink(mailsTo('bob@example.test')[0]!.raw));
    const ctx = await person();
    const page = await ctx.newPage();
    await page.goto(`${origin()}/_svc/auth/login?token=${token}&next=%2F`);
    await page.goto(`${origin()}/_svc/auth/me`);
    assert.deepEqual(JSON.parse((await page.textContent('body'))!), { user: null });
    // Another site's page cannot post it either (CORS keeps JSON out; the Origin check refuses the rest).
    const status = await page.evaluate(
      async ([url, t]) => {
        const r = await fetch(url!, {
          method: 'POST',
          mode: 'no-cors',
          credentials: 'include',
          headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ token: t }),
        });
        return r.type;
      },
      [`${origin()}/_svc/auth/redeem`, token],
    );
    assert.ok(status === 'opaque' || status === 'basic');
    await page.goto(`${origin()}/_svc/auth/me`);
    assert.deepEqual(JSON.parse((await page.textContent('body'))!), { user: null });
    await ctx.close();
  });

  it('limits link requests per address (silently) and per source (429 for any address)', async () => {
    const b = new Browser(ia.url);
    const ask = (email: string) =>
      b.request(host(), '/_svc/auth/email', {
        method: 'POST',
        headers: [
          ['Origin', origin()],
          ['Content-Type', 'application/json'],
          ['Accept', 'application/json'],
        ],
        body: JSON.stringify({ email }),
      });
    const before = mailsTo('bob@example.test').length;
    const queuedBefore = await queuedTo('bob@example.test');
    for (let i = 0; i < 4; i++) assert.equal((await ask('bob@example.test')).status, 202);
    await nth('bob@example.test', before + 3);
    // A link is queued before the request is answered, so the queue already says all there is.
    assert.equal(
      await queuedTo('bob@example.test'),
      queuedBefore + 3,
      'the fourth request in the hour queued nothing (limit 3 per address)',
    );
    assert.equal(mailsTo('bob@example.test').length, before + 3);
    let status = 202;
    for (let i = 0; i < 12 && status === 202; i++) status = (await ask(`someone${i}@example.test`)).status;
    assert.equal(status, 429, 'the source limit (12 per hour) answers 429');
    assert.equal((await ask('ada@example.test')).status, 429, 'the same for an allowed address');
  });

  it('ends app-user sessions after 7 days unused or 30 days in all (injectable clock)', async () => {
    const signIn = async () => {
      const b = new Browser(ia.url);
      const r = await b.redeem(host(), fragmentSecret(signInLink(mailsTo('ada@example.test')[0]!.raw)));
      assert.equal(r.status, 200, r.body);
      assert.match(String(r.headers['set-cookie']), /Max-Age=2592000/);
      return b;
    };
    const ok = async (b: Browser) => (await b.request(host(), '/private/', { headers: [['Accept', 'application/json']] })).status;
    try {
      const idle = await signIn();
      ia.clock.advance(7 * 86400e3 - 60e3);
      assert.equal(await ok(idle), 200);
      ia.clock.advance(7 * 86400e3 - 60e3);
      assert.equal(await ok(idle), 200, 'used within 7 days, so still alive');
      ia.clock.advance(7 * 86400e3 + 60e3);
      assert.equal(await ok(idle), 401, 'unused for more than 7 days');

      ia.clock.now = new Date();
      const busy = await signIn();
      for (let day = 6; day < 30; day += 6) {
        ia.clock.advance(6 * 86400e3);
        assert.equal(await ok(busy), 200, `day ${day}`);
      }
      ia.clock.advance(6 * 86400e3);
      assert.equal(await ok(busy), 401, 'past 30 days, however active');
    } finally {
      ia.clock.now = new Date();
    }
  });

  it('adds a passkey in the browser and signs in with it, no email needed', async () => {
    const ctx = await person();
    const page = await ctx.newPage();
    await addVirtualAuthenticator(ctx, page);
    await page.goto(signInLink(mailsTo('bob@example.test')[0]!.raw));
    await page.waitForURL(`${origin()}/`);
    await page.goto(`${origin()}/_svc/auth/login`);
    await page.click('#passkey-add');
    await page.locator('#passkey-add', { hasText: 'Passkey added' }).waitFor({ timeout: 10_000 });
    await page.click('form[action="/_svc/auth/logout"] button');
    await page.goto(`${origin()}/_svc/auth/me`);
    assert.deepEqual(JSON.parse((await page.textContent('body'))!), { user: null });
    await page.goto(`${origin()}/_svc/auth/login?next=%2Fprivate%2F`);
    await page.click('#passkey-sign-in');
    // A failed sign-in shows its reason on the page: say it rather than only time out.
    await page.waitForURL(`${origin()}/private/`).catch(async (err: Error) => {
      throw new Error(`${err.message}; the page says: ${await page.textContent('#notice').catch(() => '?')}`);
    });
    assert.match((await page.textContent('#who'))!, /^bob@example\.test via passkey$/);
    await page.goto(`${origin()}/_svc/auth/me`);
    const passkeyUser = (JSON.parse((await page.textContent('body'))!) as { user: Record<string, unknown> }).user;
    assert.deepEqual(
      [passkeyUser.name, passkeyUser.email, passkeyUser.email_verified, passkeyUser.provider],
      ['bob@example.test', 'bob@example.test', true, 'passkey'],
      'a user without a name is named by the address',
    );
    assert.match(String(passkeyUser.id), /^au_/);
    await ctx.close();
  });

  it('lists app users, disables one (its sessions end at once), and removing an address from the policy revokes its links and sessions (rule 5)', async () => {
    const users = await json<{ users: Array<{ id: string; email: string; active_sessions: number }> }>(
      await api.request('GET', `/api/apps/${team}/auth/users`),
      200,
    );
    assert.deepEqual(users.users.map((u) => u.email).sort(), ['ada@example.test', 'bob@example.test']);
    const bob = users.users.find((u) => u.email === 'bob@example.test')!;
    const b = new Browser(ia.url);
    const redeemed = await b.redeem(host(), fragmentSecret(signInLink(mailsTo('bob@example.test')[0]!.raw)));
    assert.equal(redeemed.status, 200);
    const emailUser = (JSON.parse(redeemed.body) as { user: Record<string, unknown> }).user;
    assert.deepEqual(
      { ...emailUser, id: typeof emailUser.id },
      { id: 'string', name: 'bob@example.test', email: 'bob@example.test', email_verified: true, provider: 'email' },
      "the email provider's record, every field a string",
    );
    assert.deepEqual(JSON.parse((await b.request(host(), '/_svc/auth/me')).body), { user: emailUser });
    assert.equal((await b.request(host(), '/private/', { headers: [['Accept', 'application/json']] })).status, 200);
    const disabled = await json<{ user: { disabled: boolean } }>(
      await api.request('POST', `/api/apps/${team}/auth/users/${bob.id}/disable`),
      200,
    );
    assert.equal(disabled.user.disabled, true);
    // At once: as soon as ingress-auth hears the revocation (NOTIFY, delivered apart from the API's
    // answer), not when its 10 s session cache would have expired.
    await eventually(
      'disabling to end bob’s session',
      async () => (await b.request(host(), '/private/', { headers: [['Accept', 'application/json']] })).status === 401,
      { timeoutMs: 1_000, intervalMs: 20 },
    );
    assert.equal(
      (await b.redeem(host(), fragmentSecret(signInLink(mailsTo('bob@example.test')[0]!.raw)))).status,
      403,
      'a disabled user’s link signs nobody in',
    );
    await json(await api.request('POST', `/api/apps/${team}/auth/users/${bob.id}/enable`), 200);
    assert.equal((await b.redeem(host(), fragmentSecret(signInLink(mailsTo('bob@example.test')[0]!.raw)))).status, 200, 'enabled again');
    await json(await api.request('POST', `/api/apps/${team}/auth/users/au_nobody/disable`), 404);

    const ada = new Browser(ia.url);
    const adaLink = fragmentSecret(signInLink(mailsTo('ada@example.test')[0]!.raw));
    assert.equal((await ada.redeem(host(), adaLink)).status, 200);
    await deployLive(['bob@example.test']);
    await eventually(
      'ada’s session revoked',
      async () => (await ada.request(host(), '/private/', { headers: [['Accept', 'application/json']] })).status === 401,
      { timeoutMs: 10_000 },
    );
    assert.equal((await new Browser(ia.url).redeem(host(), adaLink)).status, 403, 'her links are revoked');
    assert.equal((await b.request(host(), '/private/', { headers: [['Accept', 'application/json']] })).status, 200, 'bob stays');
    // Added back later: a new invitation, and the old link stays revoked.
    await deployLive(['bob@example.test', 'ada@example.test']);
    await nth('ada@example.test', 3);
    assert.equal((await new Browser(ia.url).redeem(host(), adaLink)).status, 403);

    // The same when the policy changes with no deploy at all (kubectl edits the App): the App
    // controller reports the addresses in force, and what it no longer reports is revoked.
    const bobLink = fragmentSecret(signInLink(mailsTo('bob@example.test')[0]!.raw));
    assert.equal((await b.request(host(), '/private/', { headers: [['Accept', 'application/json']] })).status, 200);
    const custom = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
    const target = { group, version, plural: pluralOf('App'), namespace: api.account.namespace, name: team };
    const cr = (await custom.getNamespacedCustomObject(target)) as App;
    const rules = cr.spec.auth!.rules.map((r) => ({
      ...r,
      admit: { ...r.admit, emails: r.admit.emails!.filter((e) => e !== 'bob@example.test') },
    }));
    await custom.patchNamespacedCustomObject(
      { ...target, body: { spec: { auth: { rules } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await eventually(
      'bob’s session revoked after the edit',
      async () => (await b.request(host(), '/private/', { headers: [['Accept', 'application/json']] })).status === 401,
      { timeoutMs: 10_000 },
    );
    assert.equal((await new Browser(ia.url).redeem(host(), bobLink)).status, 403, 'his links are revoked');
  });
});
