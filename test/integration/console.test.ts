// The web console end to end in headless Chromium against the API in-process and a real SMTP
// server (docs/console.md, decision 0031): sign-in by the mailed one-time link, the apps list with
// an app this test made, searching it, its overview, sign-out (after which the cookie is refused); a
// link asked for in another browser opening only once the account is confirmed;
// axe-core on every page with no serious or critical violation; screenshots of each page, light
// and dark, into docs/console/; a CSRF attack from a page of another origin (fetch with
// credentials, a preflighted fetch and form posts) refused with 403, changing nothing; an app's env
// (a pasted .env refused for a bad line, then applied, a value revealed), tokens (one restricted to
// read created, shown once, working and refused a write, revoked) and the events feed following
// live across a dropped connection and a sleeping tab, each event once.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Locator, Page } from 'playwright-core';
import type { MailSender } from '../../lib/mail/sender.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { accessibilityProblems, consoleLink, consoleShots, gone, startTestMailSender } from '../support/console.js';
import { uniqueName } from '../support/kube.js';
import { freePort } from '../support/ports.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

describe('web console (Chromium, SMTP)', () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let evil: Server;
  let evilOrigin: string;
  let signedIn: BrowserContext;
  let sessionCookie: string;
  const app = uniqueName('console');

  /** Each page, checked by axe and photographed in `scheme`. */
  const look = async (page: Page, name: string, scheme: 'light' | 'dark', mask: Locator[] = []) => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name} (${scheme})`);
    await page.screenshot({ path: path.join(consoleShots, `${name}-${scheme}.png`), mask });
  };
  const statusesOf = (p: string, method = 'POST') =>
    api.logLines.filter((l) => l.msg === 'Handled request' && l.path === p && l.method === method).map((l) => l.status);

  before(async () => {
    await mkdir(consoleShots, { recursive: true });
    smtp = await startTestSmtp();
    api = await startTestApi({ env: { SVC_SMTP_URL: smtp.url } });
    sender = startTestMailSender(api);
    chromium = await launchChromium();
    await expectJson(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    // The attacker's page: another origin (another port of the same address, so even the
    // SameSite=Strict cookie rides along: only the header and Origin checks stand in the way).
    const port = await freePort();
    evilOrigin = `http://127.0.0.1:${port}`;
    evil = createServer((req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><title>prize</title>
<form id="create" method="POST" action="${api.url}/api/apps" enctype="text/plain"><input name='{"name":"evil-${app}","x":"' value='"}'></form>
<form id="signout" method="POST" action="${api.url}/api/console/sign-out"></form>
<script>
  window.attacks = Promise.all([
    fetch('${api.url}/api/console/sign-out', { method: 'POST', mode: 'no-cors', credentials: 'include' }).then(() => 'sent', (e) => String(e)),
    fetch('${api.url}/api/apps', { method: 'POST', credentials: 'include', headers: { 'X-Svc-Console': '1', 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'evil2-${app}' }) }).then(() => 'sent', (e) => 'blocked: ' + e),
  ]);
</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(port, '127.0.0.1', resolve));
  });
  after(async () => {
    await signedIn?.close();
    await chromium?.close();
    await sender?.stop();
    await api?.close();
    await smtp?.close();
    await new Promise((resolve) => (evil ? evil.close(resolve) : resolve(undefined)));
  });

  it('is served at /console/ with a strict CSP, no framing, an uncached page and long-cached hashed assets', async () => {
    const res = await fetch(`${api.url}/console/`);
    const html = await res.text();
    assert.equal(res.status, 200, `${html} (make build writes dist/console)`);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'.*frame-ancestors 'none'/);
    assert.doesNotMatch(res.headers.get('content-security-policy') ?? '', /unsafe-inline/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const script = /src="\/console\/(main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    assert.ok(script, html);
    const asset = await fetch(`${api.url}/console/${script}`);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('cache-control') ?? '', /max-age=31536000, immutable/);
    assert.doesNotMatch(html, /<script>(?!<)/, 'no inline script');
  });

  it('signs in by the mailed one-time link, and the link works once', async () => {
    signedIn = await chromium.newContext({ colorScheme: 'light' });
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.waitForURL(`${api.url}/console/sign-in`);
    await page.getByLabel('Email address').waitFor();
    await look(page, 'sign-in', 'light');
    await page.getByLabel('Email address').fill(api.account.email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.locator('#sent').waitFor();
    assert.match((await page.textContent('#sent')) ?? '', /Check your mail/);
    await look(page, 'sign-in-sent', 'light');

    const mail = await smtp.waitFor((m) => m.to.includes(api.account.email), 20_000);
    const link = consoleLink(mail);
    assert.ok(link.startsWith(`${api.url}/console/auth?code=`), link);
    await page.goto(link);
    await page.waitForURL(`${api.url}/console/`);
    const cookie = (await signedIn.cookies(api.url)).find((c) => c.name === 'svc-console');
    assert.ok(cookie, 'the session cookie is set');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(cookie.path, '/');
    assert.ok(cookie.expires > Date.now() / 1000 + 11 * 3600 && cookie.expires < Date.now() / 1000 + 13 * 3600, 'about 12 hours');
    sessionCookie = `svc-console=${cookie.value}`;
    assert.equal(await page.evaluate("document.cookie.includes('svc-console')"), false, 'no script can read it');

    assert.equal(
      (await signedIn.cookies(api.url)).find((c) => c.name === 'svc-console-sign-in'),
      undefined,
      'the browser binding is cleared once used',
    );

    // Used once: the same link again, in another browser, signs nobody in.
    const other = await chromium.newContext();
    const again = await other.newPage();
    await again.goto(link);
    await again.getByText('this sign-in link no longer works').waitFor();
    assert.equal(again.url(), `${api.url}/console/auth`, 'the code left the address bar');
    await other.close();
  });

  it('opens a link asked for in another browser only once the person confirms the account', async () => {
    // Asked for by a script (another browser, as an attacker's own link sent to a victim would be).
    const mailsBefore = smtp.received.length;
    const asked = await fetch(`${api.url}/api/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-console': '1', origin: api.url },
      body: JSON.stringify({ email: api.account.email }),
    });
    assert.equal(asked.status, 202);
    const link = consoleLink(
      await smtp.waitFor((m) => smtp.received.indexOf(m) >= mailsBefore && m.to.includes(api.account.email), 20_000),
    );
    const elsewhere = await chromium.newContext({ colorScheme: 'light' });
    const page = await elsewhere.newPage();
    await page.goto(link);
    const confirm = page.getByRole('button', { name: `Sign in as ${api.account.email}` });
    await confirm.waitFor();
    assert.equal(page.url(), `${api.url}/console/auth`, 'the code left the address bar');
    assert.equal(
      (await elsewhere.cookies(api.url)).find((c) => c.name === 'svc-console'),
      undefined,
      'not signed in before confirming',
    );
    await look(page, 'sign-in-confirm', 'light');
    // A mail scanner's visit (a GET of the link, scripts run or not) spends nothing: the code still works here.
    assert.equal((await fetch(link)).status, 200);
    await confirm.click();
    await page.waitForURL(`${api.url}/console/`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.ok(
      (await elsewhere.cookies(api.url)).find((c) => c.name === 'svc-console'),
      'signed in once confirmed',
    );
    // Ended, so the tokens page below sees one console session: the test's own.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${api.url}/console/sign-in`);
    await elsewhere.close();
  });

  it('lists the apps with the one this test made, searches it and opens its overview', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('link', { name: app, exact: true }).waitFor();
    await look(page, 'apps', 'light');
    // The page's heading has the focus; the keyboard goes on to the search box, with a visible ring.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement.id'), 'search');
    assert.notEqual(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle'), 'none');
    await page.getByLabel('Search apps by name').fill(app.slice(-6));
    await eventually('one matching row', async () => (await page.locator('table.apps tbody tr').count()) === 1);
    await page.getByLabel('Search apps by name').fill('no-such-app-at-all');
    await page.getByText('No app’s name contains').waitFor();
    await page.getByLabel('Search apps by name').fill(app);
    await page.getByRole('link', { name: app, exact: true }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}`);
    await page.locator('#app-domains').waitFor();
    assert.equal(await page.textContent('h1'), app);
    assert.match((await page.textContent('#app-status')) ?? '', /Not deployed yet|Pending|Starting/);
    assert.equal(await page.textContent('#app-domains'), 'none');
    assert.match((await page.textContent('#app-deploy')) ?? '', /none yet/);
    await look(page, 'app', 'light');
    await page.close();
  });

  it('looks right in dark mode too', async () => {
    const dark = await chromium.newContext({ colorScheme: 'dark' });
    const out = await dark.newPage();
    await out.goto(`${api.url}/console/sign-in`);
    await out.getByLabel('Email address').waitFor();
    await look(out, 'sign-in', 'dark');
    await dark.addCookies(await signedIn.cookies(api.url));
    const page = await dark.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('link', { name: app, exact: true }).waitFor();
    await look(page, 'apps', 'dark');
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.locator('#app-domains').waitFor();
    await look(page, 'app', 'dark');
    await dark.close();
  });

  it('refuses a page of another origin that posts with the cookie (403), and nothing changes', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${evilOrigin}/`);
    const outcomes = await page.evaluate<string[]>('window.attacks');
    // The no-cors POST went out with the cookie but without the console's header: refused.
    assert.equal(outcomes[0], 'sent');
    await eventually('the API refused the cross-origin sign-out', () => statusesOf('/api/console/sign-out').includes(403));
    // The preflighted one never left the browser: the API grants no CORS.
    assert.match(outcomes[1]!, /^blocked/);
    for (const form of ['#create', '#signout']) {
      await page.goto(`${evilOrigin}/`);
      const [response] = await Promise.all([page.waitForNavigation(), page.evaluate(`document.querySelector('${form}').submit()`)]);
      assert.equal(response?.status(), 403, form);
      assert.match((await page.textContent('body')) ?? '', /X-Svc-Console/);
    }
    assert.ok(statusesOf('/api/apps').includes(403), 'the cross-origin create was refused');
    const { apps } = await expectJson<{ apps: Array<{ name: string }> }>(await api.request('GET', '/api/apps'), 200);
    assert.deepEqual(
      apps.map((a) => a.name),
      [app],
      'no app was made',
    );
    // Still signed in: nothing was revoked.
    const still = await fetch(`${api.url}/api/account`, { headers: { cookie: sessionCookie, 'x-svc-console': '1' } });
    assert.equal(still.status, 200);
    await page.close();
  });

  it("edits an app's env: a pasted .env with a bad line is refused by its number, fixed it is applied, a value revealed", async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Environment variables of ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/env`);
    await page.locator('#own-empty').waitFor();
    const pasteBox = page.getByLabel('KEY=VALUE lines, as in a .env file');
    const apply = page.getByRole('button', { name: 'Apply the pasted variables' });
    await pasteBox.fill('FIRST=one\nthis is not a variable\nexport SECOND="two\\nlines"\n');
    await page.locator('#paste-errors').waitFor();
    assert.match((await page.textContent('#paste-errors')) ?? '', /line 2: expected KEY=VALUE/);
    assert.equal(await apply.isDisabled(), true, 'nothing can be sent while a line is bad');
    await apply.click({ force: true });
    await look(page, 'env-paste-error', 'light');
    const envOf = async () => expectJson<{ env: Record<string, string> }>(await api.request('GET', `/api/apps/${app}/env`), 200);
    assert.deepEqual((await envOf()).env, {}, 'nothing changed');
    assert.deepEqual(statusesOf(`/api/apps/${app}/env`, 'PATCH'), [], 'nothing sent');

    await pasteBox.fill('FIRST=one\n# the bad line is now a comment\nexport SECOND="two\\nlines"\nTHIRD=\'3\'\n');
    await page.locator('#paste-preview').waitFor();
    assert.match((await page.textContent('#paste-preview')) ?? '', /FIRST added.*SECOND added.*THIRD added/s);
    await apply.click();
    await page.locator('tr[data-name="THIRD"]').waitFor();
    assert.deepEqual((await envOf()).env, { FIRST: 'one', SECOND: 'two\nlines', THIRD: '3' });
    assert.deepEqual(statusesOf(`/api/apps/${app}/env`, 'PATCH'), [200], 'one PATCH');
    assert.equal(await page.textContent('#value-FIRST'), '••••••••', 'masked by default');

    // From the keyboard: the heading has the focus when the page opens, the first Reveal is next.
    await page.reload();
    await page.locator('tr[data-name="FIRST"]').waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate("document.activeElement.getAttribute('aria-label')"), 'Reveal the value of FIRST');
    assert.notEqual(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle'), 'none');
    await page.keyboard.press('Enter');
    assert.equal(await page.textContent('#value-FIRST'), 'one');
    assert.equal(await page.textContent('#value-SECOND'), '••••••••', 'only that one');

    // Edit one, remove one.
    await page.getByRole('button', { name: 'Edit THIRD' }).click();
    await page.getByLabel('New value of THIRD').fill('three');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('THIRD set.').waitFor();
    await page.getByRole('button', { name: 'Remove SECOND' }).click();
    await page.getByRole('group', { name: 'Confirm removing SECOND' }).getByRole('button', { name: 'Remove' }).click();
    await page.getByText('SECOND removed.').waitFor();
    assert.deepEqual((await envOf()).env, { FIRST: 'one', THIRD: 'three' });
    await look(page, 'env', 'light');
    await page.close();
  });

  it('creates a token restricted to read, shows it once, and revokes it', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tokens' }).click();
    await page.waitForURL(`${api.url}/console/tokens`);
    await page.locator('#tokens').waitFor();
    // The console's own session is the one live `console` token: marked, and its revoke says it signs out.
    const session = page.locator('#tokens tbody tr', { hasText: 'this session' });
    assert.equal(await session.count(), 1, 'this session is marked');
    await session.getByRole('button', { name: 'Revoke console' }).click();
    assert.match((await session.getByRole('group').textContent()) ?? '', /signs you out/);
    await session.getByRole('button', { name: 'Keep' }).click();

    const name = uniqueName('reader');
    await page.getByLabel('Token name').fill(name);
    await page.getByRole('checkbox', { name: /^read\b/ }).check();
    await page.getByRole('button', { name: 'Create the token' }).click();
    await page.locator('#new-token').waitFor();
    assert.match((await page.textContent('#new-token')) ?? '', /it will not be shown again/);
    await page.getByRole('button', { name: 'Copy the token' }).waitFor();
    const token = await page.inputValue('#new-token-value');
    assert.match(token, /^svc_/);
    await look(page, 'tokens-created', 'light', [page.locator('#new-token-value')]);

    // It works with a bearer header, for reading only.
    const bearer = { authorization: `Bearer ${token}` };
    assert.equal((await fetch(`${api.url}/api/apps`, { headers: bearer })).status, 200);
    const write = await fetch(`${api.url}/api/apps`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ name: uniqueName('refused') }),
    });
    assert.equal(write.status, 403);
    assert.match(((await write.json()) as { error: string }).error, /token lacks action "write"/);

    // Shown once: gone when dismissed, and not on the page again.
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await gone(page.locator('#new-token'), 'the new token, dismissed');
    await page.reload();
    await page.locator(`#tokens tbody tr`, { hasText: name }).waitFor();
    assert.equal((await page.content()).includes(token), false, 'the token is not shown again');
    await look(page, 'tokens', 'light');

    await page.getByRole('button', { name: `Revoke ${name}` }).click();
    await page
      .getByRole('group', { name: `Confirm revoking ${name}` })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await page.getByText(`Token ${name} revoked.`).waitFor();
    await gone(page.locator(`#tokens tbody tr`, { hasText: name }), 'the revoked token');
    await eventually('the revoked token refused', async () => (await fetch(`${api.url}/api/apps`, { headers: bearer })).status === 401);
    await page.close();
  });

  it('follows the events live, across a dropped connection and a sleeping tab, each event once', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Events' }).click();
    await page.waitForURL(`${api.url}/console/events`);
    await page.locator('tr[data-event-id]').first().waitFor();
    // A mark that a reload would erase.
    await page.evaluate('window.notReloaded = true');
    const rowsOf = (name: string) => page.locator('tr[data-event-id]', { hasText: 'app.created' }).filter({ hasText: name });
    const made: string[] = [];
    const create = async (prefix: string) => {
      const name = uniqueName(prefix);
      await expectJson(await api.request('POST', '/api/apps', { body: { name } }), 201);
      made.push(name);
      return name;
    };

    const first = await create('live');
    await rowsOf(first).waitFor();
    assert.equal(
      await page.locator('tr[data-event-id]').first().getAttribute('data-event-id'),
      await rowsOf(first).getAttribute('data-event-id'),
      'on top',
    );
    // The stream holds on the cookie session: the API re-checks the token it was opened with every
    // second (a bearer header would be none here), so it is still live seconds later.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(await page.getByText('Live: new events appear at the top.').count(), 1, 'still live, not reconnecting');

    // The connection drops: offline, the stream is gone; an app is made meanwhile; back online the
    // feed resumes after the last id it saw.
    await signedIn.setOffline(true);
    await page.getByText('Reconnecting').waitFor();
    const second = await create('offline');
    await signedIn.setOffline(false);
    await rowsOf(second).waitFor();

    // The tab sleeps (hidden: the stream is closed), an app is made, it wakes.
    const visibility = (state: string) =>
      page.evaluate(
        `Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${state}' }); document.dispatchEvent(new Event('visibilitychange'))`,
      );
    await visibility('hidden');
    await page.getByText('Paused while this tab is hidden').waitFor();
    const third = await create('asleep');
    await visibility('visible');
    await rowsOf(third).waitFor();

    // Exactly once each, newest first, and no reload happened.
    await new Promise((r) => setTimeout(r, 4000));
    for (const name of [first, second, third]) assert.equal(await rowsOf(name).count(), 1, name);
    const ids = await page.evaluate<number[]>(
      "[...document.querySelectorAll('tr[data-event-id]')].map((r) => Number(r.getAttribute('data-event-id')))",
    );
    assert.deepEqual(
      ids,
      [...new Set(ids)].sort((a, b) => b - a),
      'unique, newest first',
    );
    assert.equal(await page.evaluate('window.notReloaded'), true);
    await look(page, 'events', 'light');
    await page.close();
    for (const name of made) assert.ok([202, 204].includes((await api.request('DELETE', `/api/apps/${name}`)).status), `deleting ${name}`);
  });

  it('shows the env, tokens and events pages in dark mode too', async () => {
    const dark = await chromium.newContext({ colorScheme: 'dark' });
    await dark.addCookies(await signedIn.cookies(api.url));
    const page = await dark.newPage();
    await page.goto(`${api.url}/console/apps/${app}/env`);
    await page.locator('tr[data-name="FIRST"]').waitFor();
    await look(page, 'env', 'dark');
    await page.goto(`${api.url}/console/tokens`);
    await page.locator('#tokens').waitFor();
    await look(page, 'tokens', 'dark');
    await page.goto(`${api.url}/console/events`);
    await page.locator('tr[data-event-id]').first().waitFor();
    await look(page, 'events', 'dark');
    await dark.close();
  });

  it('signs out: the cookie is cleared and no longer works', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${api.url}/console/sign-in`);
    assert.equal(
      (await signedIn.cookies(api.url)).find((c) => c.name === 'svc-console'),
      undefined,
      'cleared',
    );
    const res = await fetch(`${api.url}/api/account`, { headers: { cookie: sessionCookie, 'x-svc-console': '1' } });
    assert.equal(res.status, 401, await res.text());
    await page.close();
  });
});
