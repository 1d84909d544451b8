// What the console's Chromium tests share (test/integration/console*.test.ts): the mail sender that
// delivers sign-in links to the test's SMTP server, the link in a received message, signing a
// browser in through the sign-in page and that link, waiting for a thing to leave the page, and
// axe-core's serious and critical findings.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { createLogger } from '../../lib/logger.js';
import { MailSender } from '../../lib/mail/sender.js';
import { repoRoot } from '../../lib/paths.js';
import type { TestApi } from './api.js';
import { kubeConfig, uniqueName } from './kube.js';
import type { ReceivedMail, TestSmtp } from './smtp.js';

/** Where the tests write the screenshots docs/console.md shows. */
export const consoleShots = path.join(repoRoot, 'docs', 'console');

/** The API's outbox sent to the test's SMTP server (the API started with SVC_SMTP_URL), started. */
export function startTestMailSender(api: Pick<TestApi, 'db' | 'deps'>): MailSender {
  const sender = new MailSender({
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
  return sender;
}

/** The console's sign-in link in a received message (text part; quoted-printable undone). */
export function consoleLink(mail: ReceivedMail): string {
  const text = mail.raw.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
  const m = /https?:\/\/\S+?\/console\/auth\?code=[A-Za-z0-9_-]{43}/.exec(text);
  if (!m) throw new Error(`no console sign-in link in:\n${mail.raw.slice(0, 2000)}`);
  return m[0];
}

/** Signs `context` in as the API's account: the sign-in page, then the mailed link in the same browser. */
export async function signInToConsole(context: BrowserContext, api: Pick<TestApi, 'publicUrl' | 'account'>, smtp: TestSmtp): Promise<void> {
  const page = await context.newPage();
  const mailsBefore = smtp.received.length;
  await page.goto(`${api.publicUrl}/console/`);
  await page.waitForURL(`${api.publicUrl}/console/sign-in`);
  await page.getByLabel('Email address').fill(api.account.email);
  await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
  await page.locator('#sent').waitFor();
  const mail = await smtp.waitFor((m) => smtp.received.indexOf(m) >= mailsBefore && m.to.includes(api.account.email), 20_000);
  await page.goto(consoleLink(mail));
  await page.waitForURL(`${api.publicUrl}/console/`);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.close();
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

let axeSource: string | undefined;

/**
 * axe-core's serious and critical findings on the page as it is. Evaluated through the DevTools
 * protocol, which the page's Content-Security-Policy (no inline script) does not apply to.
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(path.join(repoRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const violations = await page.evaluate<AxeViolation[]>('axe.run(document).then((result) => result.violations)');
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

/**
 * Waits until nothing on the page matches: a count read at once races the page's own update (a
 * list read again after a notice), which a loaded machine loses.
 */
export async function gone(locator: Locator, what: string, timeoutMs = 10_000): Promise<void> {
  try {
    await locator.last().waitFor({ state: 'detached', timeout: timeoutMs });
  } catch {
    throw new Error(`${what}: still on the page after ${timeoutMs} ms (${await locator.count()} matching)`);
  }
}
