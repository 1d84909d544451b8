// The web console's domains, databases and volumes pages end to end in headless Chromium against
// the API in-process, a real SMTP server and the local DNS server (docs/console.md): signed in by
// the mailed link as console.test.ts does. A name that is not a domain is refused with the API's own
// message; a domain added from the page shows its status (pending) with its reason and the DNS
// records to publish, exactly the API's, whose copy buttons put them on the clipboard; the app's
// overview links to it and counts it; removing it asks in the page first (Keep changes nothing).
// A database created from the page is listed with its state, size and, once attached to the app
// from the page, that app; its volume is listed on the volumes page; detaching and deleting ask in
// the page first. axe-core finds no serious or critical violation on any of them; screenshots of
// each, light and dark, go to docs/console/.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Locator, Page } from 'playwright-core';
import type { MailSender } from '../../lib/mail/sender.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { accessibilityProblems, consoleShots, gone, signInToConsole, startTestMailSender } from '../support/console.js';
import { dnsServers } from '../support/dns.js';
import { uniqueName } from '../support/kube.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

interface DomainBody {
  name: string;
  status: string;
  reason: string | null;
  records: Array<{ purpose: string; type: string; name: string; value: string }>;
}

interface DatabaseBody {
  name: string;
  phase: string;
  attached_to: string | null;
}

describe('web console: domains, databases and volumes (Chromium, SMTP, DNS)', () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let signedIn: BrowserContext;
  const app = uniqueName('resources');
  const zone = `${uniqueName('shop')}.example`;
  const domain = `www.${zone}`;
  const database = uniqueName('orders');

  /** Each page, checked by axe and photographed in `scheme`. */
  const look = async (page: Page, name: string, scheme: 'light' | 'dark', mask: Locator[] = []) => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name} (${scheme})`);
    await page.screenshot({ path: path.join(consoleShots, `${name}-${scheme}.png`), mask, fullPage: true });
  };
  /** The same page in a dark context signed in with the same cookie, checked and photographed. */
  const lookDark = async (
    address: string,
    ready: (page: Page) => Promise<void>,
    name: string,
    mask: (page: Page) => Locator[] = () => [],
  ) => {
    const dark = await chromium.newContext({ colorScheme: 'dark' });
    await dark.addCookies(await signedIn.cookies(api.url));
    const page = await dark.newPage();
    await page.goto(`${api.url}${address}`);
    await ready(page);
    await look(page, name, 'dark', mask(page));
    await dark.close();
  };
  const domainsOf = async () =>
    (await expectJson<{ domains: DomainBody[] }>(await api.request('GET', `/api/apps/${app}/domains`), 200)).domains;
  const databases = async () =>
    (await expectJson<{ databases: DatabaseBody[] }>(await api.request('GET', '/api/databases'), 200)).databases;
  const volumes = async () =>
    (await expectJson<{ volumes: Array<{ ref: string }> }>(await api.request('GET', '/api/volumes'), 200)).volumes;

  before(async () => {
    await mkdir(consoleShots, { recursive: true });
    smtp = await startTestSmtp();
    // The local DNS server, as domains.test.ts has it: the domain's checks ask it (and find nothing).
    api = await startTestApi({ env: { SVC_SMTP_URL: smtp.url, SVC_DOMAINS_DNS_SERVERS: dnsServers().join(',') } });
    sender = startTestMailSender(api);
    chromium = await launchChromium();
    await expectJson(await api.request('POST', '/api/apps', { body: { name: app } }), 201);

    // Signed in by the mailed link, opened in the browser that asked for it (console.test.ts tests the flow itself).
    signedIn = await chromium.newContext({ colorScheme: 'light' });
    // The copy buttons write to the clipboard; the test reads it back.
    await signedIn.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api.url });
    await signInToConsole(signedIn, api, smtp);
  });
  after(async () => {
    await signedIn?.close();
    await chromium?.close();
    await sender?.stop();
    // What a failed run left behind: the database (detached first), the app.
    if (api) {
      const left = (await databases().catch(() => [])).find((d) => d.name === database);
      if (left?.attached_to) await api.request('DELETE', `/api/apps/${left.attached_to}/database`);
      if (left) await api.request('DELETE', `/api/databases/${database}`);
      await api.request('DELETE', `/api/apps/${app}`);
    }
    await api?.close();
    await smtp?.close();
  });

  it('adds a domain: refused names say why, then its pending status, reason and records to publish, copied exactly', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Custom domains of ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/domains`);
    await page.locator('#domains-empty').waitFor();
    assert.equal(await page.textContent('h1'), `Custom domains of ${app}`);
    const field = page.getByLabel('Domain name');
    const add = page.getByRole('button', { name: 'Add the domain' });

    // Plainly not a name: said in the page, nothing sent.
    await add.click();
    await page.locator('#domain-name-problem').waitFor();
    assert.match((await page.textContent('#domain-name-problem')) ?? '', /Enter a domain name/);
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    // Not one the platform serves: the API's own message under the form.
    await field.fill('192.0.2.1');
    await add.click();
    const refused = page.locator('#add-domain [role="alert"]');
    await refused.waitFor();
    assert.match((await refused.textContent()) ?? '', /Adding 192\.0\.2\.1 failed: .*not a domain the platform can serve.*\(HTTP 400\)/);
    assert.deepEqual(await domainsOf(), [], 'nothing added');

    await field.fill(domain.toUpperCase());
    await add.click();
    const card = page.locator(`section[data-domain="${domain}"]`);
    await card.waitFor();
    await page.getByText(`${domain} added: publish its records below.`).waitFor();
    assert.equal(await field.inputValue(), '', 'the form is emptied');
    const [added] = await domainsOf();
    assert.ok(added, 'added');
    assert.equal(added.name, domain);
    assert.equal(added.status, 'pending');
    assert.match((await card.locator('.domain-status').textContent()) ?? '', /^Pending: the records have not been seen yet$/);
    // Its reason, the API's words (not checked yet, or the record it did not find).
    await card.locator('.domain-reason').waitFor();
    assert.ok(((await card.locator('.domain-reason').textContent()) ?? '').length > 10, 'a reason in words');
    assert.match((await card.locator('.domain-https').textContent()) ?? '', /None until the domain is verified/);

    // The records to publish, exactly the API's: TXT for ownership, CNAME for routing.
    const rows = card.locator('table.records tbody tr');
    assert.equal(await rows.count(), added.records.length);
    for (const [i, r] of added.records.entries()) {
      const row = rows.nth(i);
      assert.equal(await row.getAttribute('data-record-type'), r.type);
      assert.equal(await row.locator('.record-name').textContent(), r.name);
      assert.equal(await row.locator('.record-value').textContent(), r.value);
    }
    const txt = added.records.find((r) => r.type === 'TXT')!;
    assert.equal(txt.name, `_svc-challenge.${domain}`);
    assert.match(txt.value, /^svc-verify=[0-9a-f]{40}$/);
    assert.equal(added.records.find((r) => r.type === 'CNAME')?.value, `${app}.apps.localhost`);

    // Copy buttons (a click handler: the CSP allows no inline script) put exactly the value on the clipboard.
    await card.getByRole('button', { name: `Copy the value of the TXT record ${txt.name}` }).click();
    await page.getByText('Copied the value of the TXT record.').waitFor();
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), txt.value);
    await card.getByRole('button', { name: `Copy the name of the TXT record ${txt.name}` }).click();
    await page.getByText('Copied the name of the TXT record.').waitFor();
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), txt.name);

    // Checked now: still pending (nothing is published), and the page says so.
    await card.getByRole('button', { name: `Check now: ${domain}` }).click();
    await page.getByText(`${domain} checked.`).waitFor();
    assert.match((await card.locator('.domain-status').textContent()) ?? '', /^Pending/);
    await look(page, 'domains', 'light');

    // The overview counts it and links here.
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.locator('#app-domains').waitFor();
    assert.equal(await page.textContent('#app-domains'), `1: ${domain}`);
    await page.close();
  });

  it('shows the domains page in dark mode too', async () => {
    await lookDark(`/console/apps/${app}/domains`, (page) => page.locator(`section[data-domain="${domain}"]`).waitFor(), 'domains');
  });

  it('removes the domain after a confirmation in the page (Keep changes nothing)', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}/domains`);
    const card = page.locator(`section[data-domain="${domain}"]`);
    await card.waitFor();
    await card.getByRole('button', { name: `Remove ${domain}` }).click();
    const confirm = card.getByRole('group', { name: `Confirm removing ${domain}` });
    assert.match((await confirm.textContent()) ?? '', /stops routing to the app at once/);
    await look(page, 'domains-remove', 'light');
    await confirm.getByRole('button', { name: 'Keep' }).click();
    await gone(confirm, 'the kept confirmation');
    assert.equal((await domainsOf()).length, 1, 'kept');

    await card.getByRole('button', { name: `Remove ${domain}` }).click();
    await confirm.getByRole('button', { name: 'Remove' }).click();
    await page.getByText(`${domain} removed: it no longer routes to ${app}, and the name is free.`).waitFor();
    await page.locator('#domains-empty').waitFor();
    await gone(card, 'the removed domain');
    assert.deepEqual(await domainsOf(), []);
    await page.close();
  });

  it('creates a database, attaches it to the app, lists its volume, then detaches and deletes it after confirmations', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Databases' }).click();
    await page.waitForURL(`${api.url}/console/databases`);
    await page.getByLabel('Database name').waitFor();
    await page.getByLabel('Database name').fill(database);
    await page.getByLabel('Size of its volume').selectOption({ label: '256 MiB' });
    await page.getByRole('button', { name: 'Create the database' }).click();
    const row = page.locator(`#databases tbody tr[data-database="${database}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /256 MiB/);
    // Starting, then Ready: the page reads the list again while one starts, with no reload.
    await row.locator('.database-state', { hasText: /^Ready$/ }).waitFor({ timeout: 90_000 });

    await row.getByRole('button', { name: `Attach ${database} to an app` }).click();
    await row.getByLabel(`App to attach ${database} to`).fill(app);
    await row.getByRole('button', { name: 'Attach' }).click();
    await page.getByText(`${database} attached to ${app}: its machines get DATABASE_URL as they are replaced.`).waitFor();
    // The row shows it once the platform has recorded it, with no reload.
    await row.locator('.database-app', { hasText: app }).waitFor({ timeout: 60_000 });
    await eventually(
      'the API to say it is attached',
      async () => (await databases()).find((d) => d.name === database)?.attached_to === app,
      {
        timeoutMs: 30_000,
      },
    );
    // Attached, it cannot be deleted: the page says what to do first.
    assert.equal(await row.getByRole('button', { name: `Delete ${database}` }).isDisabled(), true);
    assert.match((await row.textContent()) ?? '', new RegExp(`detach it from ${app} first`));
    await look(page, 'databases', 'light');

    // Its volume, on the volumes page.
    const ref = `db-${database}-data`;
    await eventually('the database’s volume listed', async () => (await volumes()).some((v) => v.ref === ref), { timeoutMs: 30_000 });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Volumes' }).click();
    await page.waitForURL(`${api.url}/console/volumes`);
    const volume = page.locator(`#volumes tbody tr[data-volume="${ref}"]`);
    await volume.waitFor();
    assert.match((await volume.locator('.volume-owner').textContent()) ?? '', new RegExp(`^database ${database}$`));
    assert.match((await volume.locator('.volume-state').textContent()) ?? '', /In use by its database/);
    assert.match((await page.textContent('#storage')) ?? '', /counted against the account’s limit/);
    await look(page, 'volumes', 'light');
    await lookDark('/console/volumes', (p) => p.locator(`#volumes tbody tr[data-volume="${ref}"]`).waitFor(), 'volumes');
    await lookDark('/console/databases', (p) => p.locator(`#databases tbody tr[data-database="${database}"]`).waitFor(), 'databases');

    // Detach, asked first.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Databases' }).click();
    await row.waitFor();
    await row.getByRole('button', { name: `Detach ${database} from ${app}` }).click();
    const detach = row.getByRole('group', { name: `Confirm detaching ${database}` });
    await detach.getByRole('button', { name: 'Keep' }).click();
    assert.equal((await databases()).find((d) => d.name === database)?.attached_to, app, 'Keep changes nothing');
    await row.getByRole('button', { name: `Detach ${database} from ${app}` }).click();
    await detach.getByRole('button', { name: 'Detach' }).click();
    await page.getByText(`${database} detached from ${app}.`).waitFor();
    await eventually(
      'the API to say it is detached',
      async () => (await databases()).find((d) => d.name === database)?.attached_to === null,
      {
        timeoutMs: 30_000,
      },
    );

    // Delete, asked first, saying what happens to its data (enabled once the page reads the detachment, with no reload).
    await row.getByRole('button', { name: `Delete ${database}` }).click({ timeout: 90_000 });
    const del = row.getByRole('group', { name: `Confirm deleting ${database}` });
    assert.match((await del.textContent()) ?? '', /Its data is deleted with it/);
    await look(page, 'databases-delete', 'light');
    await del.getByRole('button', { name: 'Delete' }).click();
    await page.getByText(`Database ${database} deleted.`).waitFor();
    await eventually('the database gone from the list', async () => !(await databases()).some((d) => d.name === database), {
      timeoutMs: 60_000,
    });
    await page.close();
  });
});
