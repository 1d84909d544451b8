// The web console's deploys and previews pages end to end in headless Chromium against the API
// in-process and a real SMTP server (docs/console.md): signed in by the mailed link as
// console.test.ts does, two versions deployed are both listed, newest first, the live one marked;
// one opens to its details at its own address; "Roll back to this" on the first asks in the page,
// then the new deploy goes live without a reload and the app's overview shows it serving the first
// again. A build uploaded with deploy=true shows its log (followed while it runs when the page sees
// it running), and its deploy's details show the same log. A preview is listed with its URL,
// deploy and expiry in words, and deleted after a confirmation. axe-core finds no serious or
// critical violation on any of them; screenshots of each, light and dark, go to docs/console/.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Locator, Page } from 'playwright-core';
import { packTree } from '../../lib/artifacts/tarball.js';
import type { MailSender } from '../../lib/mail/sender.js';
import { deployLive, expectJson, startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { accessibilityProblems, consoleShots, gone, signInToConsole, startTestMailSender } from '../support/console.js';
import { packageLock } from '../support/build-trees.js';
import { images } from '../support/images.js';
import { uniqueName } from '../support/kube.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

interface DeployBody {
  id: string;
  status: string;
  current: boolean;
  origin: string;
  origin_deploy: string | null;
}

/** A site whose build step writes dist/index.html saying `mark` (no dependencies: nothing to fetch), as builds.test.ts builds. */
const site = (mark: string) => ({
  'package.json': JSON.stringify({ name: 'site', version: '1.0.0', scripts: { build: 'node build.js' } }),
  'package-lock.json': packageLock('site'),
  'build.js': `require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/index.html','<h1>${mark}</h1>');console.log('wrote dist/index.html')`,
});

describe('web console: deploys, build logs, rollback and previews (Chromium, SMTP)', () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let signedIn: BrowserContext;
  const app = uniqueName('deploys');
  let v1 = '';
  let v2 = '';
  let previewApp = '';

  /** Each page, checked by axe and photographed in `scheme`. */
  const look = async (page: Page, name: string, scheme: 'light' | 'dark', mask: Locator[] = []) => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name} (${scheme})`);
    await page.screenshot({ path: path.join(consoleShots, `${name}-${scheme}.png`), mask, fullPage: true });
  };
  const rowOf = (page: Page, id: string) => page.locator(`#deploys tbody tr[data-deploy="${id}"]`);

  before(async () => {
    await mkdir(consoleShots, { recursive: true });
    smtp = await startTestSmtp();
    // The builder and registry as builds.test.ts has them: this test builds a site too.
    api = await startTestApi({ env: { SVC_SMTP_URL: smtp.url, SVC_BUILD_REGISTRY: images.registry, SVC_IMAGE_BUILDER: images.builder } });
    sender = startTestMailSender(api);
    chromium = await launchChromium();
    await expectJson(await api.request('POST', '/api/apps', { body: { name: app } }), 201);

    // Signed in by the mailed link, opened in the browser that asked for it (console.test.ts tests the flow itself).
    signedIn = await chromium.newContext({ colorScheme: 'light' });
    await signInToConsole(signedIn, api, smtp);
  });
  after(async () => {
    await signedIn?.close();
    await chromium?.close();
    await sender?.stop();
    await api?.close();
    await smtp?.close();
  });

  it('lists two deploys newest first, opens one, rolls back to the first, and the overview shows it live', async () => {
    v1 = await deployLive(api, app, { files: { 'index.html': '<h1>v1</h1>' } });
    v2 = await deployLive(api, app, { files: { 'index.html': '<h1>v2</h1>' } });

    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Deploys of ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/deploys`);
    await rowOf(page, v1).waitFor();
    // A mark that a reload would erase.
    await page.evaluate('window.notReloaded = true');
    assert.equal(await page.textContent('h1'), `Deploys of ${app}`);
    assert.deepEqual(
      await page.evaluate<string[]>("[...document.querySelectorAll('#deploys tbody tr')].map((r) => r.getAttribute('data-deploy'))"),
      [v2, v1],
      'newest first',
    );
    assert.match((await rowOf(page, v2).textContent()) ?? '', /live.*Live: serving now/s);
    assert.match((await rowOf(page, v1).textContent()) ?? '', /Served before/);
    assert.match((await rowOf(page, v1).textContent()) ?? '', /files sent with the request/);
    assert.equal(
      await rowOf(page, v2)
        .getByRole('button', { name: `Roll back to this (deploy ${v2})` })
        .count(),
      0,
      'not offered on the live one',
    );
    assert.match((await page.textContent('#deploys-live')) ?? '', new RegExp(`Serving now: ${v2}`));
    await look(page, 'deploys', 'light');

    // Details at their own address; not from a build, so no log.
    await page.getByRole('link', { name: `Details of deploy ${v1}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/deploys/${v1}`);
    await page.locator('#deploy-details').waitFor();
    assert.equal(await page.textContent('#deploy-details-heading'), `Deploy ${v1}`);
    assert.match((await page.textContent('#deploy-details')) ?? '', /did not come from a build/);
    assert.equal(await page.evaluate('document.activeElement.id'), 'deploy-details-heading', 'the details take the focus');

    // Rolling back asks in the page first; Cancel changes nothing.
    await rowOf(page, v1)
      .getByRole('button', { name: `Roll back to this (deploy ${v1})` })
      .click();
    const confirm = page.getByRole('group', { name: `Confirm rolling back to ${v1}` });
    assert.match((await confirm.textContent()) ?? '', new RegExp(`in place of ${v2}`));
    await look(page, 'deploys-rollback', 'light');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await gone(confirm, 'the cancelled confirmation');
    const listed = async () =>
      (await expectJson<{ deploys: DeployBody[] }>(await api.request('GET', `/api/apps/${app}/deploys`), 200)).deploys;
    assert.equal((await listed()).length, 2, 'no rollback was made');

    await rowOf(page, v1)
      .getByRole('button', { name: `Roll back to this (deploy ${v1})` })
      .click();
    await confirm.getByRole('button', { name: 'Roll back' }).click();
    await eventually('the rollback said', async () => ((await page.textContent('#deploys-done')) ?? '').includes(`back to deploy ${v1}`));
    const back = (await listed())[0]!;
    assert.equal(back.origin, 'rollback');
    assert.equal(back.origin_deploy, v1);
    // The new deploy appears on top and goes live, with no reload.
    await rowOf(page, back.id).waitFor();
    await eventually(
      'the rollback live on the page',
      async () => /Live: serving now/.test((await rowOf(page, back.id).textContent()) ?? ''),
      { timeoutMs: 90_000 },
    );
    assert.match((await rowOf(page, back.id).textContent()) ?? '', new RegExp(`a rollback to deploy ${v1}`));
    assert.match((await rowOf(page, v2).textContent()) ?? '', /Served before/);
    assert.equal(
      await rowOf(page, v2)
        .getByRole('button', { name: `Roll back to this (deploy ${v2})` })
        .count(),
      1,
      'v2 may now be rolled back to',
    );
    assert.equal(await page.evaluate('window.notReloaded'), true);

    // The overview (through the breadcrumbs) serves the first version again.
    await page.locator('.crumbs').getByRole('link', { name: app, exact: true }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}`);
    await page.locator('#app-deploy').waitFor();
    const overview = (await page.textContent('#app-deploy')) ?? '';
    assert.match(overview, new RegExp(`${back.id}.*from rollback of ${v1}`, 's'));
    const served = await expectJson<{ current_deploy: string }>(await api.request('GET', `/api/apps/${app}`), 200);
    assert.equal(served.current_deploy, back.id);
    await page.close();
  });

  it("shows a build's log, followed while it runs, and the log of the deploy it made", async () => {
    const res = await fetch(`${api.url}/api/builds?app=${app}&deploy=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/gzip' },
      body: await packTree(site('v3')),
    });
    const build = await expectJson<{ id: string }>(res, 202);

    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}/deploys`);
    await rowOf(page, v1).waitFor();
    // Still running when the page lists it (a build takes seconds, but this is not certain): its log is followed.
    const running = page.locator(`#builds li[data-build="${build.id}"]`);
    if (
      await running.waitFor({ timeout: 10_000 }).then(
        () => true,
        () => false,
      )
    ) {
      await running
        .getByRole('button', { name: `Show the log of build ${build.id}` })
        .click()
        .catch(() => undefined);
      await eventually(
        'the log shown',
        async () =>
          (
            (await page
              .locator(`#build-${build.id}-log`)
              .textContent()
              .catch(() => null)) ?? ''
          ).includes('==> ') || !(await running.count()),
        { timeoutMs: 60_000 },
      );
    }
    // Once built, its deploy is listed (without a reload) and goes live.
    const fromBuild = page.locator('#deploys tbody tr', { hasText: `build ${build.id}` });
    await eventually(
      'the build’s deploy live on the page',
      async () => /Live: serving now/.test((await fromBuild.textContent({ timeout: 1000 }).catch(() => '')) ?? ''),
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    const { deploy_id: deployId } = await expectJson<{ deploy_id: string | null }>(
      await api.request('GET', `/api/builds/${build.id}`),
      200,
    );
    assert.ok(deployId, 'the build made a deploy');
    await page.getByRole('link', { name: `Details of deploy ${deployId}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/deploys/${deployId}`);
    const log = page.locator(`#build-${build.id}-log`);
    await log.waitFor();
    await eventually('the whole log', async () => ((await log.textContent()) ?? '').includes('wrote dist/index.html'), {
      timeoutMs: 30_000,
    });
    assert.match((await log.textContent()) ?? '', /==> /);
    assert.match((await page.textContent(`#build-${build.id}-status`)) ?? '', /Succeeded/);
    // A tall log scrolls inside its box, which the keyboard can reach.
    assert.equal(await log.getAttribute('tabindex'), '0');
    assert.notEqual(await page.evaluate(`getComputedStyle(document.getElementById('build-${build.id}-log')).maxHeight`), 'none');
    await look(page, 'deploy-build-log', 'light');
    await page.close();
  });

  it('lists a preview with its URL, deploy and expiry in words, and deletes it after a confirmation', async () => {
    const created = await expectJson<{ preview: { ref: string; app: string }; deploy: DeployBody }>(
      await api.request('POST', `/api/apps/${app}/previews`, { body: { ref: 'pr-7', files: { 'index.html': 'preview of pr-7' } } }),
      201,
    );
    previewApp = created.preview.app;
    await eventually(
      'the preview live',
      async () => (await expectJson<DeployBody>(await api.request('GET', `/api/deploys/${created.deploy.id}`), 200)).status === 'live',
      { timeoutMs: 90_000 },
    );
    await expectJson(await api.request('PUT', `/api/apps/${previewApp}/expiry`, { body: { ttl: '3d' } }), 200);
    const url = await eventually('the preview’s URL', async () => {
      const l = await expectJson<{ previews: Array<{ ref: string; url: string | null }> }>(
        await api.request('GET', `/api/apps/${app}/previews`),
        200,
      );
      return l.previews.find((p) => p.ref === 'pr-7')?.url ?? undefined;
    });

    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Previews of ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/previews`);
    const row = page.locator('#previews tbody tr[data-ref="pr-7"]');
    await row.waitFor();
    assert.equal(await page.textContent('h1'), `Previews of ${app}`);
    const text = (await row.textContent()) ?? '';
    assert.match(text, /expires in 3 days/);
    assert.ok(text.includes(created.deploy.id), text);
    assert.equal(await row.getByRole('link', { name: url }).count(), 1, 'its URL, a link');
    await look(page, 'previews', 'light');

    const dark = await chromium.newContext({ colorScheme: 'dark' });
    await dark.addCookies(await signedIn.cookies(api.url));
    const inDark = await dark.newPage();
    await inDark.goto(`${api.url}/console/apps/${app}/previews`);
    await inDark.locator('#previews tbody tr[data-ref="pr-7"]').waitFor();
    await look(inDark, 'previews', 'dark');
    await dark.close();

    // Asks first; Keep changes nothing.
    await row.getByRole('button', { name: 'Delete preview pr-7' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm deleting preview pr-7' });
    await confirm.getByRole('button', { name: 'Keep' }).click();
    assert.equal((await api.request('GET', `/api/apps/${previewApp}`)).status, 200, 'not deleted');
    await row.getByRole('button', { name: 'Delete preview pr-7' }).click();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('Preview pr-7 deleted.').waitFor();
    await gone(row, 'the deleted preview');
    await eventually('the preview app to go', async () => (await api.request('GET', `/api/apps/${previewApp}`)).status === 404, {
      timeoutMs: 60_000,
    });
    await page.reload();
    await page.locator('#previews-empty').waitFor();
    await page.close();
  });

  it('deploys a chosen folder and a dropped file: packed in the browser, sent, listed and live', async () => {
    const target = uniqueName('dropped');
    await expectJson(await api.request('POST', '/api/apps', { body: { name: target } }), 201);
    const dir = await mkdtemp(path.join(tmpdir(), 'console-drop-'));
    try {
      // A folder as a person has one: a subfolder, and version control's files, which stay behind.
      const folder = path.join(dir, 'site');
      await mkdir(path.join(folder, 'css'), { recursive: true });
      await mkdir(path.join(folder, '.git'), { recursive: true });
      await writeFile(path.join(folder, 'index.html'), '<h1>chosen folder</h1>');
      await writeFile(path.join(folder, 'css', 'a.css'), 'h1 { color: teal }');
      await writeFile(path.join(folder, '.git', 'config'), '[core]');

      const page = await signedIn.newPage();
      await page.goto(`${api.url}/console/apps/${target}/deploys`);
      await page.locator('#deploys-empty').waitFor();
      await look(page, 'deploys-drop', 'light');
      await page.setInputFiles('#deploy-folder', folder);
      const said = page.locator('#deploys-done');
      await page.getByText(/^Deploy \S+ of 2 files \(.*; 1 left out: \.git and the like\) is on its way/).waitFor({ timeout: 30_000 });
      const chosen = /^Deploy (\S+) of/.exec((await said.textContent()) ?? '')![1]!;
      await rowOf(page, chosen).waitFor();
      const made = await expectJson<DeployBody & { summary: { files: number } }>(await api.request('GET', `/api/deploys/${chosen}`), 200);
      assert.equal(made.summary.files, 2, 'index.html and css/a.css, at the root of the tree');
      await eventually(
        'the chosen folder live',
        async () => (await expectJson<DeployBody>(await api.request('GET', `/api/deploys/${chosen}`), 200)).status === 'live',
        {
          timeoutMs: 60_000,
        },
      );
      await rowOf(page, chosen).locator('.tag.live').waitFor({ timeout: 30_000 });

      // Dropped on the zone (a drop without folder entries: its files as they are).
      await page.evaluate(`(() => {
        const dt = new DataTransfer();
        dt.items.add(new File(['<h1>dropped</h1>'], 'index.html', { type: 'text/html' }));
        const zone = document.querySelector('#deploy-drop');
        zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
        zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      })()`);
      await page.getByText(/^Deploy \S+ of 1 file \(/).waitFor({ timeout: 30_000 });
      const dropped = /^Deploy (\S+) of/.exec((await said.textContent()) ?? '')![1]!;
      assert.notEqual(dropped, chosen);
      await rowOf(page, dropped).waitFor();

      // A folder with nothing to deploy is said so, and nothing is sent.
      const empty = path.join(dir, 'empty');
      await mkdir(path.join(empty, '.git'), { recursive: true });
      await writeFile(path.join(empty, '.git', 'HEAD'), 'ref');
      const before = (await expectJson<{ deploys: DeployBody[] }>(await api.request('GET', `/api/apps/${target}/deploys`), 200)).deploys
        .length;
      await page.setInputFiles('#deploy-folder', empty);
      await page.getByText(/nothing to deploy: the folder is empty/).waitFor();
      const after = (await expectJson<{ deploys: DeployBody[] }>(await api.request('GET', `/api/apps/${target}/deploys`), 200)).deploys
        .length;
      assert.equal(after, before, 'no deploy made');
      await page.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('forks the app from its overview: a bad name is refused in words, a good one opens the new app, serving', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('button', { name: `Fork ${app}…` }).click();
    const form = page.locator('#fork-app');
    await page.getByLabel('Name of the new app').fill('Not A Name!');
    await form.getByRole('button', { name: 'Fork', exact: true }).click();
    await form.getByRole('alert').waitFor();
    assert.match((await form.getByRole('alert').textContent()) ?? '', /Forking .* failed: .*name/i);
    await look(page, 'app-fork', 'light');

    const copy = uniqueName('fork');
    await page.getByLabel('Name of the new app').fill(copy);
    await form.getByRole('button', { name: 'Fork', exact: true }).click();
    await page.waitForURL(`${api.url}/console/apps/${copy}`);
    await page.getByRole('heading', { level: 1, name: copy }).waitFor();
    // Its deploy (of what the app served) goes live as any deploy does.
    await eventually(
      'the fork serving its deploy',
      async () =>
        (await expectJson<{ current_deploy: string | null }>(await api.request('GET', `/api/apps/${copy}`), 200)).current_deploy !== null,
      { timeoutMs: 60_000 },
    );
    await page.close();
  });

  it('opens the app signed in as its owner from the overview, or says why its policy does not allow it', async () => {
    // The first app's policy does not admit its owner: said in words, nothing opened.
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('button', { name: `Open signed in to ${app} as its owner` }).click();
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /does not admit its owner/);

    const owned = uniqueName('owned');
    await expectJson(await api.request('POST', '/api/apps', { body: { name: owned } }), 201);
    await deployLive(api, owned, { compose: 'x-svc:\n  auth: owner\n', files: { 'index.html': '<h1>mine</h1>' } });
    const { url } = await expectJson<{ url: string }>(await api.request('GET', `/api/apps/${owned}`), 200);
    // The app's own host is the ingress's, not this test's: the browser's visit there is answered here.
    let visited = '';
    await page.route(
      (u) => u.href.startsWith(url),
      (route) => {
        visited = route.request().url();
        return route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>the app</h1>' });
      },
    );
    await page.goto(`${api.url}/console/apps/${owned}`);
    await page.getByRole('button', { name: `Open signed in to ${owned} as its owner` }).click();
    await page.waitForURL((u) => u.href.startsWith(url));
    assert.match(page.url(), /#handoff=[A-Za-z0-9_-]+/, 'a one-time owner link, in the fragment (never sent to a server)');
    assert.ok(visited.startsWith(url), visited);
    await page.close();
  });

  it('shows the deploys page in dark mode too', async () => {
    const dark = await chromium.newContext({ colorScheme: 'dark' });
    await dark.addCookies(await signedIn.cookies(api.url));
    const page = await dark.newPage();
    await page.goto(`${api.url}/console/apps/${app}/deploys`);
    await rowOf(page, v2).waitFor();
    await look(page, 'deploys', 'dark');
    await dark.close();
  });
});
