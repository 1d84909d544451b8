// The console's other ways in, end to end in headless Chromium against the API in-process (published
// at http://localhost:<port>: WebAuthn refuses an IP address as a relying party), a real SMTP server
// and a real OpenID provider (oidc-provider): the owner, signed in by the mailed link, adds a passkey
// on the Passkeys page with Chromium's virtual authenticator (CTAP2, resident keys) and is told by
// mail; signs out; signs in again with that passkey from the sign-in page; and signs in at the
// identity provider, the provider's own pages played by test/support/oidc-provider.ts's signIn()
// (the browser is sent to the provider and comes back to /console/idp/callback, as it would).
// axe-core on the sign-in and passkeys pages; screenshots into docs/console/.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import type { MailSender } from '../../lib/mail/sender.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { addVirtualAuthenticator, launchChromium } from '../support/browser.js';
import { accessibilityProblems, consoleShots, gone, signInToConsole, startTestMailSender } from '../support/console.js';
import { startTestOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { freePort } from '../support/ports.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';

describe('web console: sign-in by passkey and at the identity provider (Chromium, SMTP, OpenID provider)', () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let op: TestOidcProvider;
  let sender: MailSender;
  let chromium: Chromium;
  const contexts: BrowserContext[] = [];

  const look = async (page: Page, name: string) => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name}`);
    await page.screenshot({ path: path.join(consoleShots, `${name}-light.png`), fullPage: true });
  };
  const context = async () => {
    const c = await chromium.newContext({ colorScheme: 'light' });
    contexts.push(c);
    return c;
  };
  /** A page that fails with what the page says when `url` does not come. */
  const landsOn = (page: Page, url: string) =>
    page.waitForURL(url, { timeout: 20_000 }).catch(async (err: Error) => {
      throw new Error(
        `${err.message}; the page says: ${
          (await page
            .locator('main')
            .textContent()
            .catch(() => '?')) ?? ''
        }`,
      );
    });

  before(async () => {
    await mkdir(consoleShots, { recursive: true });
    const port = await freePort();
    smtp = await startTestSmtp();
    op = await startTestOidcProvider({ redirectUris: [`http://localhost:${port}/console/idp/callback`], accounts: [] });
    api = await startTestApi({
      port,
      publicHost: 'localhost',
      env: { SVC_SMTP_URL: smtp.url, SVC_IDP_ISSUER: op.issuer, SVC_IDP_CLIENT_ID: op.clientId, SVC_IDP_CLIENT_SECRET: op.clientSecret },
    });
    op.addAccount({ sub: 'owner', email: api.account.email, emailVerified: true, name: 'The Owner' });
    sender = startTestMailSender(api);
    chromium = await launchChromium();
  });
  after(async () => {
    for (const c of contexts) await c.close();
    await chromium?.close();
    await sender?.stop();
    await api?.close();
    await smtp?.close();
    await op?.close();
  });

  it('adds a passkey on the Passkeys page, mails the owner, and signs in with it after signing out', async () => {
    const ctx = await context();
    await signInToConsole(ctx, api, smtp);
    const page = await ctx.newPage();
    await addVirtualAuthenticator(ctx, page);
    await page.goto(`${api.publicUrl}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Passkeys', exact: true }).click();
    await landsOn(page, `${api.publicUrl}/console/passkeys`);
    await page.locator('#no-passkeys').waitFor();
    const mailsBefore = smtp.received.length;
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.locator('#passkeys-done', { hasText: 'Passkey added' }).waitFor({ timeout: 15_000 });
    assert.equal(await page.locator('#passkeys tbody tr').count(), 1);
    const notice = await smtp.waitFor(
      (m) => smtp.received.indexOf(m) >= mailsBefore && m.to.includes(api.account.email) && /passkey was added/.test(m.raw),
      20_000,
    );
    assert.match(notice.raw, /console\/passkeys/);
    await look(page, 'passkeys');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await landsOn(page, `${api.publicUrl}/console/sign-in`);
    await page.locator('#passkey-sign-in').waitFor();
    await look(page, 'sign-in-options');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await landsOn(page, `${api.publicUrl}/console/`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // Used: the list says when.
    await page.goto(`${api.publicUrl}/console/passkeys`);
    const row = page.locator('#passkeys tbody tr');
    await row.waitFor();
    assert.doesNotMatch((await row.textContent()) ?? '', /never/);

    // Removed after a confirmation: the sign-in page's passkey then signs nobody in.
    await page.getByRole('button', { name: /^Remove passkey/ }).click();
    await page
      .getByRole('group', { name: /^Confirm removing/ })
      .getByRole('button', { name: 'Remove' })
      .click();
    await gone(row, 'the removed passkey');
    await page.locator('#no-passkeys').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await landsOn(page, `${api.publicUrl}/console/sign-in`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /no such passkey/ })
      .waitFor({ timeout: 15_000 });
  });

  it('signs in at the identity provider and comes back to the console signed in', async () => {
    const ctx = await context();
    const page = await ctx.newPage();
    // The provider's login and consent pages, played as a person would answer them.
    await page.route(`${op.issuer}/**`, async (route) => {
      const callback = await op.signIn(route.request().url(), 'owner');
      await route.fulfill({ status: 303, headers: { location: callback.href } });
    });
    await page.goto(`${api.publicUrl}/console/`);
    await landsOn(page, `${api.publicUrl}/console/sign-in`);
    await page.getByRole('button', { name: 'Sign in with your identity provider' }).click();
    await landsOn(page, `${api.publicUrl}/console/`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.match((await page.locator('header').textContent()) ?? '', new RegExp(api.account.email.replace(/[.]/g, '\\.')));

    // The callback's address opened again (history, a shared link): it signs nobody in.
    const other = await (await context()).newPage();
    await other.goto(`${api.publicUrl}/console/idp/callback?code=stolen&state=stolen`);
    await other
      .getByRole('alert')
      .filter({ hasText: /is over/ })
      .waitFor();
    assert.equal(new URL(other.url()).search, '', 'the query left the address bar');
  });
});
