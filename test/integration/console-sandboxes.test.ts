// The web console's sandboxes and builds pages end to end in headless Chromium against the API
// in-process and a real SMTP server (docs/console.md): signed in by the mailed link as
// console.test.ts does, a sandbox is opened from the sandboxes page (the API with the sandbox image,
// as sandboxes.test.ts has it), `echo hello` run in it shows `hello` and exit code 0, and it is
// deleted after a confirmation in the page. An uploaded build (the builder and registry of
// builds.test.ts) is listed on the app's builds page with its state in words, and its log opens at
// its own address. axe-core finds no serious or critical violation on any of them; screenshots go
// to docs/console/.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import { packTree } from '../../lib/artifacts/tarball.js';
import type { MailSender } from '../../lib/mail/sender.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { packageLock } from '../support/build-trees.js';
import { accessibilityProblems, consoleShots, signInToConsole, startTestMailSender } from '../support/console.js';
import { images } from '../support/images.js';
import { uniqueName } from '../support/kube.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

interface SandboxBody {
  id: string;
  state: string;
  reason: string | null;
}

/** A site whose build step writes dist/index.html (no dependencies: nothing to fetch), as console-deploys.test.ts builds. */
const site = (mark: string) => ({
  'package.json': JSON.stringify({ name: 'site', version: '1.0.0', scripts: { build: 'node build.js' } }),
  'package-lock.json': packageLock('site'),
  'build.js': `require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/index.html','<h1>${mark}</h1>');console.log('wrote dist/index.html')`,
});

describe('web console: sandboxes and builds (Chromium, SMTP)', { timeout: 600_000 }, () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let signedIn: BrowserContext;
  const app = uniqueName('builds');
  const opened: string[] = [];

  /** Each page, checked by axe and photographed (light). */
  const look = async (page: Page, name: string) => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name}`);
    await page.screenshot({ path: path.join(consoleShots, `${name}-light.png`), fullPage: true });
  };

  before(async () => {
    await mkdir(consoleShots, { recursive: true });
    smtp = await startTestSmtp();
    // Sandboxes as sandboxes.test.ts has them, and the builder and registry as builds.test.ts has them.
    api = await startTestApi({
      env: {
        SVC_SMTP_URL: smtp.url,
        SVC_SANDBOX_MAX_OPEN: '8',
        SVC_SANDBOX_IMAGE: images.sandbox,
        SVC_BUILD_REGISTRY: images.registry,
        SVC_IMAGE_BUILDER: images.builder,
      },
    });
    sender = startTestMailSender(api);
    chromium = await launchChromium();
    await expectJson(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    // The controllers record the runtimes once a pool member is ready (a fresh cluster: its first pull).
    await eventually('the sandbox runtimes to be recorded', async () => (await api.request('GET', '/api/runtimes')).status === 200, {
      timeoutMs: 180_000,
      intervalMs: 500,
    });

    signedIn = await chromium.newContext({ colorScheme: 'light' });
    await signInToConsole(signedIn, api, smtp);
  });
  after(async () => {
    for (const id of opened) await api?.request('DELETE', `/api/sandboxes/${id}`).catch(() => undefined);
    await signedIn?.close();
    await chromium?.close();
    await sender?.stop();
    await api?.close();
    await smtp?.close();
  });

  it('opens a sandbox, runs echo hello and shows hello and exit code 0, and deletes it after a confirmation', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sandboxes' }).click();
    await page.waitForURL(`${api.url}/console/sandboxes`);
    assert.equal(await page.textContent('h1'), 'Sandboxes');
    await page.locator('#sandboxes-empty, #sandboxes').first().waitFor();

    // Opened: the API answers once it is ready, and the page goes to it.
    await page.getByRole('button', { name: 'Open a sandbox' }).click();
    await page.waitForURL((u) => /^\/console\/sandboxes\/sb-[0-9a-f]+$/.test(u.pathname), { timeout: 90_000 });
    const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    opened.push(id);
    assert.equal(await page.textContent('h1'), `Sandbox ${id}`);
    await page.locator('#sandbox-state').waitFor();
    await eventually('the sandbox ready on the page', async () => /^Ready/.test((await page.textContent('#sandbox-state')) ?? ''), {
      timeoutMs: 60_000,
    });

    // Listed, with its state in words.
    const list = await signedIn.newPage();
    await list.goto(`${api.url}/console/sandboxes`);
    const row = list.locator(`#sandboxes tbody tr[data-sandbox="${id}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /Ready/);
    await look(list, 'sandboxes');
    await list.close();

    // A command: its output and exit code.
    await page.getByLabel('Command line').fill('echo hello');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const run = page.locator('#sandbox-runs .run').last();
    await eventually('the run to end', async () => /Exit code/.test((await run.locator('.run-exit').textContent()) ?? ''), {
      timeoutMs: 60_000,
    });
    assert.equal(((await run.locator('.run-output').textContent()) ?? '').trim(), 'hello');
    assert.match((await run.locator('.run-exit').textContent()) ?? '', /^Exit code 0\b/);
    assert.match((await run.locator('.run-command').textContent()) ?? '', /\$ echo hello/);

    // Standard error apart, and a command's own exit code.
    await page.getByLabel('Command line').fill('echo oops >&2; exit 3');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const second = page.locator('#sandbox-runs .run[data-run="2"]');
    await eventually('the second run to end', async () => /Exit code/.test((await second.locator('.run-exit').textContent()) ?? ''), {
      timeoutMs: 60_000,
    });
    assert.equal(((await second.locator('.run-output .stderr').textContent()) ?? '').trim(), 'oops');
    assert.match((await second.locator('.run-exit').textContent()) ?? '', /^Exit code 3\b/);
    await look(page, 'sandbox');

    // Deleting asks first; Keep changes nothing.
    await page.getByRole('button', { name: 'Delete the sandbox' }).click();
    const confirm = page.getByRole('group', { name: `Confirm deleting sandbox ${id}` });
    await confirm.getByRole('button', { name: 'Keep' }).click();
    assert.equal(await confirm.count(), 0);
    assert.equal((await expectJson<SandboxBody>(await api.request('GET', `/api/sandboxes/${id}`), 200)).state, 'ready', 'not deleted');
    await page.getByRole('button', { name: 'Delete the sandbox' }).click();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.getByText(`Sandbox ${id} deleted.`).waitFor();
    // "Ended: destroyed on request" (the controller's message), or "Ended: deleted" before it has written it.
    assert.match((await page.textContent('#sandbox-state')) ?? '', /^Ended/);
    assert.equal(await page.getByLabel('Command line').count(), 0, 'nothing more runs in it');
    const ended = await expectJson<SandboxBody>(await api.request('GET', `/api/sandboxes/${id}`), 200);
    assert.equal(ended.state, 'ended');
    assert.equal(ended.reason, 'Deleted');
    await page.close();
  });

  it("lists an app's builds with their state in words and opens one's log", async () => {
    const res = await fetch(`${api.url}/api/builds?app=${app}&deploy=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/gzip' },
      body: await packTree(site('v1')),
    });
    const build = await expectJson<{ id: string }>(res, 202);

    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Builds of ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/builds`);
    assert.equal(await page.textContent('h1'), `Builds of ${app}`);
    const row = page.locator(`#builds tbody tr[data-build="${build.id}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /Queued|Building|Succeeded/);
    assert.match((await row.textContent()) ?? '', /an upload/);
    // Followed without a reload until it has succeeded and made its deploy.
    await eventually('the build succeeded on the page', async () => /Succeeded/.test((await row.textContent()) ?? ''), {
      timeoutMs: 180_000,
      intervalMs: 500,
    });
    assert.equal(await page.locator('#repositories-none').count(), 1, 'an upload names no repository');
    await look(page, 'builds');

    // Its log at its own address.
    await row.getByRole('link', { name: `Log of build ${build.id}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/builds/${build.id}`);
    const log = page.locator(`#build-${build.id}-log`);
    await log.waitFor();
    await eventually('the whole log', async () => ((await log.textContent()) ?? '').includes('wrote dist/index.html'), {
      timeoutMs: 30_000,
    });
    assert.match((await page.textContent(`#build-${build.id}-status`)) ?? '', /Succeeded/);
    assert.deepEqual(await accessibilityProblems(page), [], 'accessibility of a build log');
    await page.close();
  });
});
