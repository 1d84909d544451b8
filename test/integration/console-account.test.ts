// The web console's webhooks, usage and access pages end to end in headless Chromium against the
// API in-process and a real SMTP server (docs/console.md), signed in by the mailed link as
// console.test.ts does. A webhook made in the page to a receiver on loopback (the API allows a
// private address with SVC_WEBHOOK_ALLOW_PRIVATE) shows its signing secret once; an event of its
// kinds is delivered and listed with its response code, "Redeliver" sends it again (the receiver
// sees the same webhook-id twice) and both attempts are listed; deleting it asks in the page first.
// The usage page charts recorded usage by day with a table of the numbers; an app's access page
// lists an app user made behind the API, revokes its session after a confirmation, disables and
// enables it. axe-core finds no serious or critical violation on any of them; screenshots go to
// docs/console/.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import type { MailSender } from '../../lib/mail/sender.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { accessibilityProblems, consoleShots, signInToConsole, startTestMailSender } from '../support/console.js';
import { uniqueName } from '../support/kube.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

/** A receiver on loopback that records each request and answers 200 "ok", as webhook-delivery.test.ts has it. */
async function receiver() {
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

describe('web console: webhooks, usage and app access (Chromium, SMTP)', () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let signedIn: BrowserContext;
  let rx: Awaited<ReturnType<typeof receiver>>;

  /** Each page, checked by axe and photographed (light). */
  const look = async (page: Page, name: string) => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name}`);
    await page.screenshot({ path: path.join(consoleShots, `${name}-light.png`), fullPage: true });
  };

  before(async () => {
    await mkdir(consoleShots, { recursive: true });
    smtp = await startTestSmtp();
    api = await startTestApi({ env: { SVC_SMTP_URL: smtp.url, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    sender = startTestMailSender(api);
    rx = await receiver();
    chromium = await launchChromium();
    signedIn = await chromium.newContext({ colorScheme: 'light' });
    await signInToConsole(signedIn, api, smtp);
  });
  after(async () => {
    await signedIn?.close();
    await chromium?.close();
    await rx?.close();
    await sender?.stop();
    await api?.close();
    await smtp?.close();
  });

  it('creates a webhook (its secret shown once), lists a delivery, redelivers it, and deletes the webhook after a confirmation', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.waitForURL(`${api.url}/console/webhooks`);
    await page.locator('#webhooks-empty').waitFor();
    assert.equal(await page.textContent('h1'), 'Webhooks');

    // An unknown kind is refused in the page, naming it; nothing is sent.
    await page.getByLabel('URL to send the events to').fill(rx.url);
    await page.getByLabel(/^Event kinds/).fill('token.*, deploy.done');
    await page.getByRole('button', { name: 'Create the webhook' }).click();
    assert.match((await page.locator('#webhook-form-problem').textContent()) ?? '', /Unknown event kind: deploy\.done/);
    const listed = async () =>
      (await expectJson<{ webhooks: Array<{ id: string; url: string }> }>(await api.request('GET', '/api/account/webhooks'), 200)).webhooks;
    assert.equal((await listed()).length, 0);

    await page.getByLabel(/^Event kinds/).fill('token.*');
    await page.getByRole('button', { name: 'Create the webhook' }).click();
    const secret = page.locator('#new-webhook-secret');
    await secret.waitFor();
    assert.match(await secret.inputValue(), /^whsec_/);
    const [hook] = await listed();
    assert.ok(hook, 'made');
    assert.equal(hook.url, rx.url);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await secret.count(), 0, 'shown once');
    const row = page.locator(`#webhooks tbody tr[data-webhook="${hook.id}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /token\.\*.*Active/s);

    // Its deliveries, at their own address.
    await page.getByRole('link', { name: `Deliveries of webhook ${hook.id}` }).click();
    await page.waitForURL(`${api.url}/console/webhooks/${hook.id}`);
    await page.locator('#deliveries-empty').waitFor();

    // An event of its kinds: a token made through the API.
    await expectJson(await api.request('POST', '/api/account/tokens', { body: { name: 'ci' } }), 201);
    await eventually('the delivery at the receiver', () => rx.received.length === 1);
    const delivered = page.locator('#deliveries tbody tr[data-delivery]').first();
    await eventually(
      'the delivery listed as delivered',
      async () => {
        await page.getByRole('button', { name: 'Refresh the deliveries' }).click();
        return /Delivered \(HTTP 200\)/.test((await delivered.textContent({ timeout: 1000 }).catch(() => '')) ?? '');
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    const deliveryId = (await delivered.getAttribute('data-delivery'))!;
    assert.equal(deliveryId, rx.received[0]!.headers['webhook-id']);
    assert.match((await delivered.textContent()) ?? '', /token\.created/);
    await look(page, 'webhooks');

    // Redeliver: the receiver gets the same delivery again, and the page lists both attempts.
    await page.getByRole('button', { name: `Redeliver ${deliveryId}` }).click();
    await page.getByText(`Delivery ${deliveryId} is being sent again.`).waitFor();
    await eventually('the redelivery at the receiver', () => rx.received.length === 2);
    assert.equal(rx.received[1]!.headers['webhook-id'], deliveryId);
    assert.equal(rx.received[1]!.body, rx.received[0]!.body);
    await eventually(
      'the redelivery listed as delivered',
      async () => {
        await page.getByRole('button', { name: 'Refresh the deliveries' }).click();
        return /Delivered \(HTTP 200\)/.test((await delivered.textContent({ timeout: 1000 }).catch(() => '')) ?? '');
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await page.getByRole('button', { name: `Show the attempts of delivery ${deliveryId}` }).click();
    const attempts = page.locator(`#attempts-${deliveryId} tbody tr`);
    await eventually('both attempts listed', async () => (await attempts.count()) === 2);
    assert.match((await attempts.nth(1).textContent()) ?? '', /HTTP 200/);

    // Deleting asks in the page first; Keep changes nothing.
    await row.getByRole('button', { name: `Delete webhook ${hook.id}` }).click();
    const confirm = page.getByRole('group', { name: `Confirm deleting webhook ${hook.id}` });
    await confirm.getByRole('button', { name: 'Keep' }).click();
    assert.equal(await confirm.count(), 0);
    assert.equal((await listed()).length, 1, 'not deleted');
    await row.getByRole('button', { name: `Delete webhook ${hook.id}` }).click();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.getByText(`Webhook ${hook.id} deleted.`).waitFor();
    await page.waitForURL(`${api.url}/console/webhooks`);
    await page.locator('#webhooks-empty').waitFor();
    assert.equal((await listed()).length, 0);
    await page.close();
  });

  it('charts usage by day, one chart per meter with its numbers, and the month’s totals', async () => {
    // Build and machine time on the last days, as the meters write it.
    const now = api.clock.now;
    const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
    const day = 86_400_000;
    await api.db('usage_records').insert(
      [1, 2, 3, 5].flatMap((back, i) => [
        {
          account_id: api.account.id,
          meter: 'build_seconds',
          subject: `bld_${back}`,
          quantity: 300 * (i + 1),
          started_at: new Date(today - back * day + 3_600_000),
          ended_at: new Date(today - back * day + 3_600_000 + 300_000 * (i + 1)),
        },
        {
          account_id: api.account.id,
          meter: 'machine_seconds',
          subject: `shop/pod-${back}`,
          quantity: 3600 * (i + 2),
          started_at: new Date(today - back * day + 7_200_000),
          ended_at: new Date(today - back * day + 7_200_000 + 3_600_000 * (i + 2)),
        },
      ]),
    );

    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage', exact: true }).click();
    await page.waitForURL(`${api.url}/console/usage`);
    await page.locator('#usage-month').waitFor();
    await page.locator('#usage-machine-seconds').waitFor();
    assert.equal(await page.textContent('h1'), 'Usage');
    for (const meter of ['machine-seconds', 'build-seconds', 'sandbox-seconds', 'stored-bytes'])
      assert.equal(await page.locator(`#usage-${meter} svg[role="img"]`).count(), 1, meter);
    assert.equal(await page.getByRole('img', { name: 'Machine time per day (hours)' }).count(), 1);
    assert.equal(await page.getByRole('img', { name: 'Build time per day (minutes)' }).count(), 1);
    // One row a day, with the numbers the API gives.
    const history = (
      await expectJson<{ history: Array<{ start: string; meters: { build_seconds: number } }> }>(
        await api.request('GET', '/api/account/usage/history?bucket=day&days=30'),
        200,
      )
    ).history;
    const rows = page.locator('#usage-build-seconds-table tbody tr');
    assert.equal(await rows.count(), history.length);
    const yesterday = new Date(today - day).toISOString().slice(0, 10);
    const minutes = (history.find((h) => h.start.startsWith(yesterday))?.meters.build_seconds ?? 0) / 60;
    assert.ok(minutes > 0, 'recorded yesterday');
    await page.locator('#usage-build-seconds summary').click();
    assert.match((await rows.filter({ hasText: yesterday }).textContent()) ?? '', new RegExp(`${yesterday}\\s*${minutes}`));
    assert.equal(await page.locator('#usage-machine-seconds rect.bar').count(), history.length);
    await page.locator('#usage-build-seconds summary').click();
    await look(page, 'usage');

    // Another period reads again.
    await page.getByLabel('Period').selectOption('7');
    await eventually('7 days charted', async () => (await page.locator('#usage-build-seconds-table tbody tr').count()) === 7);
    await page.close();
  });

  it('shows an app’s policy and users, revokes a user’s sessions after a confirmation, and disables and enables the user', async () => {
    const app = uniqueName('access');
    await expectJson(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    const { id: uid } = await eventually('the app known to the API', async () => {
      const res = await api.request('GET', `/api/apps/${app}`);
      return res.status === 200 ? ((await res.json()) as { id: string }) : undefined;
    });
    // An app user and a session, as ingress-auth makes them on a sign-in (the API has no call that makes one).
    const email = 'ada@example.test';
    const user = (await api.deps.auth.users.signIn({ uid, namespace: api.account.namespace, name: app }, email, 'email'))!;
    await api.deps.auth.sessions.create(uid, `${app}.apps.test`, { provider: 'email', subject: user.id, email, appUserId: user.id });

    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Access to ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/access`);
    const row = page.locator(`#app-users tbody tr[data-user="${user.id}"]`);
    await row.waitFor();
    await page.locator('#policy').waitFor();
    assert.equal(await page.textContent('h1'), `Access to ${app}`);
    // No policy deployed: public, said so, and the API's answer as JSON.
    assert.match((await page.textContent('#policy')) ?? '', /^Public/);
    assert.match((await page.textContent('#policy-json')) ?? '', /"in_policy": false/);
    assert.match((await row.textContent()) ?? '', new RegExp(`${email}.*Active, 1 session`, 's'));
    await look(page, 'access');

    // Revoking asks first; Keep changes nothing.
    await row.getByRole('button', { name: `Revoke sessions of ${email}` }).click();
    const confirm = page.getByRole('group', { name: `Confirm revoking the sessions of ${email}` });
    await confirm.getByRole('button', { name: 'Keep' }).click();
    assert.equal(await confirm.count(), 0);
    const listed = async () =>
      (
        await expectJson<{ users: Array<{ id: string; disabled: boolean; active_sessions: number }> }>(
          await api.request('GET', `/api/apps/${app}/auth/users`),
          200,
        )
      ).users.find((u) => u.id === user.id)!;
    assert.equal((await listed()).active_sessions, 1);
    await row.getByRole('button', { name: `Revoke sessions of ${email}` }).click();
    await confirm.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText(`1 session of ${email} revoked.`).waitFor();
    assert.equal((await listed()).active_sessions, 0);
    assert.match((await row.textContent()) ?? '', /Active, not signed in now/);

    await row.getByRole('button', { name: `Disable ${email}` }).click();
    await page.getByText(`${email} disabled: their sessions ended and they cannot sign in.`).waitFor();
    assert.match((await row.textContent()) ?? '', /Disabled: cannot sign in/);
    assert.equal((await listed()).disabled, true);
    await row.getByRole('button', { name: `Enable ${email}` }).click();
    await page.getByText(`${email} enabled: they can sign in again.`).waitFor();
    assert.equal((await listed()).disabled, false);
    await page.close();
    await api.request('DELETE', `/api/apps/${app}`);
  });
});
