// The web console's logs and metrics pages end to end in headless Chromium against the API
// in-process and a real SMTP server (docs/console.md): signed in by the mailed link as
// console.test.ts does. An app whose machine prints a numbered line every 200 ms (as
// api-app-logs.test.ts's talker) is deployed; from its overview, its logs page shows the lines
// live; after the browser goes offline and back, and after the tab is hidden and shown, it resumes
// from the last line seen: every number once, none missing. The list is virtualised: far fewer rows
// in the DOM than lines. Request metrics recorded as the auth proxy records them (the recorder,
// flushed) show on the metrics page as three charts with accessible names and tables of their
// numbers. axe-core finds no serious or critical violation; screenshots go to docs/console/.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import type { MailSender } from '../../lib/mail/sender.js';
import { RequestRecorder } from '../../lib/metrics/requests.js';
import { deployLive, expectJson, startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/browser.js';
import { accessibilityProblems, consoleShots, signInToConsole, startTestMailSender } from '../support/console.js';
import { images } from '../support/images.js';
import { uniqueName } from '../support/kube.js';
import { startTestSmtp, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

/** Serves HTTP (so the machine becomes Ready) and prints `tick <n>` every 200 ms. */
const talkerCommand = [
  'sh',
  '-c',
  'python3 -m http.server "$PORT" --bind 0.0.0.0 >/dev/null 2>&1 & i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.2; done',
];

/**
 * Every line the page holds, read by scrolling its virtualised list from top to bottom (only the
 * rows in view are in the DOM): [seq, text] pairs, in order, each seq once.
 */
const allLines = (page: Page) =>
  page.evaluate<Array<[number, string]>>(`(async () => {
    const box = document.getElementById('log');
    const seen = new Map();
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    for (let top = 0; ; top += Math.max(20, Math.floor(box.clientHeight / 2))) {
      box.scrollTop = top;
      await frame();
      for (const row of box.querySelectorAll('li[data-seq]')) seen.set(Number(row.getAttribute('data-seq')), row.querySelector('.log-text').textContent);
      if (top + box.clientHeight >= box.scrollHeight) break;
    }
    box.scrollTop = box.scrollHeight;
    return [...seen.entries()].sort((a, b) => a[0] - b[0]);
  })()`);

/** The tick numbers of the lines, checked: each once, consecutive (no gap, no repeat). */
const ticksOf = (lines: Array<[number, string]>): number[] => {
  const numbers = lines.map(([, text]) => Number(/^tick (\d+)$/.exec(text)?.[1] ?? Number.NaN));
  assert.ok(
    numbers.every((n) => Number.isInteger(n)),
    `only ticks: ${JSON.stringify(lines.slice(0, 5))}`,
  );
  for (let i = 1; i < numbers.length; i++) assert.equal(numbers[i], numbers[i - 1]! + 1, `line ${i}: no gap, no repeat`);
  return numbers;
};

describe('web console: logs and metrics (Chromium, SMTP)', () => {
  let api: TestApi;
  let smtp: TestSmtp;
  let sender: MailSender;
  let chromium: Chromium;
  let signedIn: BrowserContext;
  let recorder: RequestRecorder;
  const app = uniqueName('logs');

  const look = async (page: Page, name: string) => {
    assert.deepEqual(await accessibilityProblems(page), [], `accessibility of ${name}`);
    await page.screenshot({ path: path.join(consoleShots, `${name}-light.png`), fullPage: true });
  };

  before(async () => {
    await mkdir(consoleShots, { recursive: true });
    smtp = await startTestSmtp();
    api = await startTestApi({ env: { SVC_SMTP_URL: smtp.url } });
    sender = startTestMailSender(api);
    chromium = await launchChromium();
    await expectJson(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    await deployLive(api, app, { image: images.python, command: talkerCommand });
    recorder = new RequestRecorder(api.db, { flushIntervalMs: 60_000 });
    signedIn = await chromium.newContext({ colorScheme: 'light' });
    await signInToConsole(signedIn, api, smtp);
  });
  after(async () => {
    await recorder?.stop();
    await signedIn?.close();
    await chromium?.close();
    await sender?.stop();
    await api?.close();
    await smtp?.close();
  });

  it('follows the log live and resumes after going offline and after a hidden tab, with no gap and no repeat', async () => {
    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Logs of ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/logs`);
    await page.evaluate('window.notReloaded = true');
    assert.equal(await page.textContent('h1'), `Logs of ${app}`);
    await page.getByText('Live: new lines appear at the bottom.').waitFor();
    const count = async () => Number(/^[\d,]+/.exec((await page.textContent('#log-count')) ?? '')?.[0]?.replace(/,/g, '') ?? 0);
    // Lines arrive without a reload.
    const first = await eventually('lines shown', async () => ((await count()) >= 5 ? count() : undefined), { timeoutMs: 30_000 });
    await eventually('more lines live', async () => (await count()) > first + 5, { timeoutMs: 30_000 });

    // Offline: the stream is cut; lines printed meanwhile come when back online, each once.
    await signedIn.setOffline(true);
    await page.getByText('Reconnecting').waitFor();
    const offlineAt = await count();
    await new Promise((r) => setTimeout(r, 2000));
    await signedIn.setOffline(false);
    await page.getByText('Live: new lines appear at the bottom.').waitFor({ timeout: 30_000 });
    await eventually('lines after the cut', async () => (await count()) > offlineAt + 15, { timeoutMs: 30_000 });

    // The tab sleeps (hidden: the stream is closed) and wakes.
    const visibility = (state: string) =>
      page.evaluate(
        `Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${state}' }); document.dispatchEvent(new Event('visibilitychange'))`,
      );
    await visibility('hidden');
    await page.getByText('Paused while this tab is hidden').waitFor();
    const hiddenAt = await count();
    await new Promise((r) => setTimeout(r, 2000));
    await visibility('visible');
    await page.getByText('Live: new lines appear at the bottom.').waitFor({ timeout: 30_000 });
    await eventually('lines after waking', async () => (await count()) > hiddenAt + 15, { timeoutMs: 30_000 });

    // Paused by the button, then resumed.
    await page.getByRole('button', { name: 'Pause following' }).click();
    await page.getByText('Paused: following resumes').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Pause following' }).getAttribute('aria-pressed'), 'true');
    await new Promise((r) => setTimeout(r, 1000));
    await page.getByRole('button', { name: 'Pause following' }).click();
    await page.getByText('Live: new lines appear at the bottom.').waitFor({ timeout: 30_000 });
    const resumedAt = await count();
    await eventually('lines after the pause', async () => (await count()) > resumedAt + 5, { timeoutMs: 30_000 });

    // Every line once, none missing: the numbers are consecutive across the three cuts.
    await page.getByRole('button', { name: 'Pause following' }).click();
    await page.getByText('Paused: following resumes').waitFor();
    const lines = await allLines(page);
    assert.equal(lines.length, await count(), 'every line read');
    const numbers = ticksOf(lines);
    assert.ok(numbers.length > 40, `${numbers.length} lines`);
    // Virtualised: the DOM holds a window of rows, not every line.
    const rows = await page.locator('#log li[data-seq]').count();
    assert.ok(rows > 0 && rows < lines.length, `${rows} rows in the DOM for ${lines.length} lines`);
    assert.equal(await page.evaluate('window.notReloaded'), true);
    await page.getByRole('button', { name: 'Pause following' }).click();
    await page.getByText('Live: new lines appear at the bottom.').waitFor({ timeout: 30_000 });
    await look(page, 'logs');
    await page.close();
  });

  it('charts requests, errors and latency, with the numbers in tables', async () => {
    const { id: appUid } = await expectJson<{ id: string }>(await api.request('GET', `/api/apps/${app}`), 200);
    const now = api.clock.read().getTime();
    const sample = (status: number, durationMs: number, minutesAgo: number) =>
      recorder.record({ namespace: api.account.namespace, app, appUid, status, durationMs, at: new Date(now - minutesAgo * 60_000) });
    for (let m = 0; m < 30; m += 3) {
      for (let i = 0; i < 5 + m; i++) sample(200, 10 + i, m);
      sample(404, 3, m);
      if (m % 9 === 0) sample(503, 900, m);
    }
    await recorder.flush();
    const totals = await expectJson<{ total: { requests: number } }>(
      await api.request('GET', `/api/apps/${app}/metrics/requests?since=1h`),
      200,
    );
    assert.ok(totals.total.requests > 0);

    const page = await signedIn.newPage();
    await page.goto(`${api.url}/console/apps/${app}`);
    await page.getByRole('link', { name: `Metrics of ${app}` }).click();
    await page.waitForURL(`${api.url}/console/apps/${app}/metrics`);
    assert.equal(await page.textContent('h1'), `Metrics of ${app}`);
    await page.locator('#metrics-totals').waitFor();
    assert.match((await page.textContent('#metrics-totals')) ?? '', new RegExp(`^${totals.total.requests.toLocaleString('en')} requests`));
    for (const name of ['Requests', 'Errors', 'Latency']) {
      const chart = page.getByRole('img', { name: new RegExp(`^${name}`) });
      assert.equal(await chart.count(), 1, `${name} chart`);
      assert.ok((await chart.locator('path.series').count()) >= 1);
    }
    assert.notEqual(await page.locator('#chart-requests path.series').getAttribute('d'), '', 'a line drawn');
    // The numbers behind a chart, in a table.
    await page.getByText('The numbers of requests').click();
    const table = page.locator('#chart-requests-table');
    assert.ok((await table.locator('tbody tr').count()) > 1);
    const sum = await page.evaluate<number>(
      "[...document.querySelectorAll('#chart-requests-table tbody td')].reduce((n, td) => n + Number(td.textContent), 0)",
    );
    assert.equal(sum, totals.total.requests, 'the table adds up to the total');
    await look(page, 'metrics');
    await page.close();
  });
});
