// The web console end to end in headless Chromium against the API in-process and a real SMTP
// server (docs/console.md, decision 0031): sign-in by the mailed one-time link, the apps list with
// an app this test made, searching it, its overview, sign-out (after which the cookie is refused);
// axe-core on every page with no serious or critical violation; screenshots of each page, light
// and dark, into docs/console/; and a CSRF attack from a page of another origin (fetch with
// credentials, a preflighted fetch and form posts) refused with 403, changing nothing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import { createLogger } from '../../lib/logger.js';
import { MailSender } from '../../lib/mail/sender.js';
import { repoRoot } from '../../lib/paths.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { kubeConfig, uniqueName } from '../support/kube.js';
import { freePort } from '../support/ports.js';
import { startTestSmtp, type ReceivedMail, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

const shots = path.join(repoRoot, 'docs', 'console');
const axeSource = readFileSync(path.join(repoRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/** The console's sign-in link in a received message (text part; quoted-printable undone). */
function consoleLink(mail: ReceivedMail): string {
  const text = mail.raw.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
  const m = /https?:\/\/\S+?\/console\/auth\?code=[A-Za-z0-9_-]{43}/.exec(text);
  if (!m) throw new Error(`no console sign-in link in:\n${mail.raw.slice(0, 2000)}`);
  return m[0];
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/**
 * axe-core's serious and critical findings on the page as it is. Evaluated through the DevTools
 * protocol, which the page's Content-Security-Policy (no inline script) does not apply to.
 */
async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate<AxeViolation[]>('axe.run(document).then((result) => result.violations)');
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

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
  const look = async (page: Page, name: string, scheme: 'light' | 'dark') => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name} (${scheme})`);
    await page.screenshot({ path: path.join(shots, `${name}-${scheme}.png`) });
  };
  const statusesOf = (p: string, method = 'POST') =>
    api.logLines.filter((l) => l.msg === 'Handled request' && l.path === p && l.method === method).map((l) => l.status);

  before(async () => {
    await mkdir(shots, { recursive: true });
    smtp = await startTestSmtp();
    api = await startTestApi({ env: { SVC_SMTP_URL: smtp.url } });
    sender = new MailSender({
      db: api.db,
      databaseUrl: api.deps.config.databaseUrl,
      kc: kubeConfig(),
      mail: api.deps.config.mail,
      log: createLogger('mail', 'silent'),
      // A Lease of its own: the test's sender must not wait for a running `make dev` API's.
      lease: { name: uniqueName('svc-mailer-test') },
      pollMs: 500,
    });
    sender.start();
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

    // Used once: the same link again, in another browser, signs nobody in.
    const other = await chromium.newContext();
    const again = await other.newPage();
    await again.goto(link);
    await again.waitForURL(`${api.url}/console/sign-in?link=invalid`);
    await again.getByText('That sign-in link no longer works').waitFor();
    await other.close();
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
