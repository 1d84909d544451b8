// `svc login` end to end (cli/login.ts, api/operations/cli-login.ts, console/src/pages/cli-login.tsx):
// the built CLI starts a login and prints the console's link and a code; a browser signed in to the
// console opens the link, sees the device and the same code, approves; the CLI stores the token in
// its config directory (0600 in 0700) and the next command uses it without $SVC_TOKEN; `svc logout`
// revokes it (refused at once) and removes the file. A denied login ends the CLI with exit 1 and
// stores nothing. axe-core on the approval page, and its screenshot into docs/console/.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext } from 'playwright-core';
import type { MailSender } from '../../lib/mail/sender.js';
import { repoRoot } from '../../lib/paths.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { accessibilityProblems, consoleShots, signInToConsole, startTestMailSender } from '../support/console.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

interface Running {
  /** The link and code the CLI printed, once it has. */
  prompt: Promise<{ url: string; code: string }>;
  exit: Promise<{ code: number; stdout: string; stderr: string }>;
}

describe('svc login approved in the console, and svc logout (Chromium, SMTP)', () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let signedIn: BrowserContext;
  let configDir: string;
  // The API's clock is the test's (frozen): moved on while the CLI polls, so its polls are not "too fast".
  let ticking: NodeJS.Timeout | undefined;

  const env = () => {
    const e: NodeJS.ProcessEnv = { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_CONFIG_DIR: configDir };
    delete e.SVC_TOKEN;
    return e;
  };
  /** The built CLI, as a person runs it, without $SVC_TOKEN. */
  const svc = (args: string[]): Running => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'bin/svc.js'), ...args], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let seen: (v: { url: string; code: string }) => void;
    const prompt = new Promise<{ url: string; code: string }>((resolve) => (seen = resolve));
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      const m = /Open (\S+) and check that it shows the code (\S+)/.exec(stderr);
      if (m) seen({ url: m[1]!, code: m[2]! });
    });
    const exit = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })),
    );
    return { prompt, exit };
  };

  before(async () => {
    smtp = await startTestSmtp();
    // One proxy hop trusted: a login can be started as from another address (X-Forwarded-For).
    api = await startTestApi({ env: { SVC_SMTP_URL: smtp.url, SVC_API_PROXY_HOPS: '1' } });
    sender = startTestMailSender(api);
    chromium = await launchChromium();
    signedIn = await chromium.newContext({ colorScheme: 'light' });
    await signInToConsole(signedIn, api, smtp);
    configDir = await mkdtemp(path.join(tmpdir(), 'svc-login-'));
    ticking = setInterval(() => api.clock.advance(3000), 1000);
  });
  after(async () => {
    clearInterval(ticking);
    await signedIn?.close();
    await chromium?.close();
    await sender?.stop();
    await api?.close();
    await smtp?.close();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  it('signs the CLI in once the console approves; the token is stored 0600 and used; logout revokes it', async () => {
    const login = svc(['login', '--no-browser', '--json', '--name', 'ci laptop']);
    const { url, code } = await login.prompt;
    assert.ok(url.startsWith(`${api.url}/console/cli-login?code=`), url);
    const page = await signedIn.newPage();
    await page.goto(url);
    await page.getByText('ci laptop').first().waitFor();
    await page.getByText(code).first().waitFor();
    assert.deepEqual(await accessibilityProblems(page), [], 'accessibility of the approval page');
    await page.screenshot({ path: path.join(consoleShots, 'cli-login-light.png') });
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText(/return to your terminal/).waitFor();

    const done = await login.exit;
    assert.equal(done.code, 0, done.stderr);
    assert.equal((JSON.parse(done.stdout) as { email: string }).email, api.account.email);
    assert.match(done.stderr, /Signed in as /);
    const file = path.join(configDir, 'credentials.json');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(configDir)).mode & 0o777, 0o700);
    const { token } = JSON.parse(await readFile(file, 'utf8')) as { token: string };
    assert.doesNotMatch(done.stderr + done.stdout, new RegExp(token), 'the token is never printed');

    // The next command finds it, with no $SVC_TOKEN.
    const apps = await svc(['apps', 'ls', '--json']).exit;
    assert.equal(apps.code, 0, apps.stderr);
    assert.equal((await api.request('GET', '/api/apps', { token })).status, 200);
    // Approved as the page proposes: everything but admin (a phished approval manages no tokens).
    assert.equal((await api.request('GET', '/api/account/tokens', { token })).status, 403);
    // The owner is told by mail, with the device as it named itself and where to revoke it.
    const notice = await smtp.waitFor(
      (m) => m.to.includes(api.account.email) && /A terminal signed in/.test(m.headers.subject ?? ''),
      20_000,
    );
    const text = notice.raw.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
    assert.match(text, /Device \(as it named itself\): ci laptop/);
    assert.ok(text.includes(`${api.url}/console/tokens`), text);
    // The login's token is one of the account's, named after the device.
    await page.goto(`${api.url}/console/tokens`);
    await page.getByText('ci laptop').first().waitFor();
    await page.close();

    const out = await svc(['logout']).exit;
    assert.equal(out.code, 0, out.stderr);
    await assert.rejects(stat(file), 'the file is gone');
    await eventually('the token refused', async () => (await api.request('GET', '/api/apps', { token })).status === 401, {
      timeoutMs: 10_000,
    });
  });

  it('warns when the login was asked from another address than the approving browser', async () => {
    const res = await fetch(`${api.url}/api/cli/logins`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9' },
      body: JSON.stringify({ name: 'far away' }),
    });
    assert.equal(res.status, 201);
    const { verification_url } = (await res.json()) as { verification_url: string };
    const page = await signedIn.newPage();
    await page.goto(verification_url);
    const warning = page.locator('#cli-login-elsewhere');
    await warning.waitFor();
    assert.match((await warning.textContent()) ?? '', /asked from 203\.0\.113\.9, and this browser is at 127\.0\.0\.1: deny it/);
    // What is proposed: every action but admin.
    assert.equal(await page.getByRole('checkbox', { name: /^admin\b/ }).isChecked(), false);
    assert.equal(await page.getByRole('checkbox', { name: /^read\b/ }).isChecked(), true);
    await page.getByRole('button', { name: 'Deny', exact: true }).click();
    await page
      .getByText(/Denied/)
      .first()
      .waitFor();
    await page.close();
  });

  it('a denied login ends the CLI with exit 1 and stores nothing', async () => {
    const login = svc(['login', '--no-browser', '--name', 'not mine']);
    const { url } = await login.prompt;
    const page = await signedIn.newPage();
    await page.goto(url);
    await page.getByText('not mine').first().waitFor();
    await page.getByRole('button', { name: 'Deny', exact: true }).click();
    await page
      .getByText(/Denied/)
      .first()
      .waitFor();
    const done = await login.exit;
    assert.equal(done.code, 1);
    assert.match(done.stderr, /denied/);
    await assert.rejects(stat(path.join(configDir, 'credentials.json')));
    await page.close();
  });
});
