// bench/console: the web console (console/, decision 0031) in headless Chromium against a stand-in
// API in this process: one Koa app serving the built console (consoleRoutes, as api/server.ts does)
// and, under /api, the real router and operations (account, apps) on the fakes of
// test/support/fake-api.ts, the account holding BENCH_APPS (1,000) apps. The browser holds the
// console's session cookie for the fakes' token, as after a sign-in. Measured, BENCH_REPEATS (11)
// times each after 2 not counted, interleaved with its baseline (median, and lowest-highest):
// - first load: a new browser context (empty cache) navigating to /console/ until the apps table
//   shows its first row; baseline: the same navigation to a file of the same origin the console's
//   routes answer 404 (/console/does-not-exist.png), to its load event;
// - searching: typing a query into the search box, key by key, until the table shows exactly the
//   matching apps; baseline: the same keys typed into a bare <input> until it holds the query;
// - paging: a click on "Next page" until page 2's first app is shown; baseline: a click on a bare
//   button until its handler has run;
// - the logs page with 100,000 lines (BENCH_LOG_LINES; NDJSON answered by the browser's route: the
//   stand-in has no log operation): until the last line shows, how many rows the page holds
//   (virtualised), and a jump to anywhere in the log until its row shows, timed in the page from
//   setting scrollTop to the frame that has it (bound: < 100 ms, median).
// Each is timed from this process (Playwright's round trips are in both sides of a ratio). The
// issue's bounds: first load < 1 s, search and next page < 300 ms each (medians). Also printed: the
// bundle's size (the script and stylesheet index.html names), raw and gzip. The bundle is
// BENCH_CONSOLE_DIR, else dist/console beside this file (make build writes it), else built by
// hack/build-console.ts into a temp dir removed at exit.
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import Koa from 'koa';
import type { Browser, Page } from 'playwright-core';
import { consoleRoutes } from '../api/console/routes.js';
import { sessionCookieName } from '../api/console/session.js';
import { Authenticator } from '../api/middleware/authenticate.js';
import { errorHandler } from '../api/middleware/errors.js';
import { RateLimiter } from '../api/middleware/rate-limit.js';
import { requestContext } from '../api/middleware/request-context.js';
import { accountOperations } from '../api/operations/account.js';
import { appOperations } from '../api/operations/apps.js';
import { buildRouter, unmatched } from '../api/router.js';
import type { ApiState } from '../api/state.js';
import { buildConsole } from '../hack/build-console.js';
import { createLogger } from '../lib/logger.js';
import { launchChromium } from '../test/support/browser.js';
import { account, fakes } from '../test/support/fake-api.js';
import { median, medianSpread, pairedRatios, spread } from './load.js';

const appCount = Number(process.env.BENCH_APPS ?? 1000);
const logLines = Number(process.env.BENCH_LOG_LINES ?? 100_000);
/** A jump in the log until its row shows, ms (median). */
const maxScrollMs = 100;
const repeats = Number(process.env.BENCH_REPEATS ?? 11);
const warmups = 2;
/** The issue's bounds, ms. */
const maxFirstLoadMs = 1000;
const maxInteractionMs = 300;
/** Names contain it: app-0042 and app-0420 to app-0429 of 1,000. */
const query = '042';

/** Where the built console is: BENCH_CONSOLE_DIR, dist/console, or a fresh build in a temp dir. */
async function consoleDir(): Promise<{ dir: string; how: string }> {
  if (process.env.BENCH_CONSOLE_DIR) return { dir: path.resolve(process.env.BENCH_CONSOLE_DIR), how: 'BENCH_CONSOLE_DIR' };
  const built = fileURLToPath(new URL('../console/', import.meta.url));
  if (existsSync(path.join(built, 'index.html'))) return { dir: built, how: 'make build' };
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-console-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  await buildConsole(dir);
  return { dir, how: 'built into a temp dir' };
}

/** The script and stylesheet index.html names, raw and gzip (level 9), in bytes. */
function bundleSize(dir: string): { files: string[]; raw: number; gzip: number } {
  const html = readFileSync(path.join(dir, 'index.html'), 'utf8');
  const files = [...html.matchAll(/\/console\/(main-[A-Z0-9]+\.(?:js|css))"/g)].map((m) => m[1]!);
  if (files.length !== 2) throw new Error(`index.html in ${dir} names ${files.join(', ') || 'no bundle'}`);
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    raw += statSync(path.join(dir, f)).size;
    gzip += gzipSync(readFileSync(path.join(dir, f)), { level: 9 }).length;
  }
  return { files, raw, gzip };
}

/** The console and the API on the fakes, as api/server.ts's createApi chains them, on 127.0.0.1. */
async function startStandIn(dir: string) {
  const f = fakes();
  for (let i = 1; i <= appCount; i++) f.apps.put(account.namespace, `app-${String(i).padStart(4, '0')}`);
  const router = buildRouter([...accountOperations(f), ...appOperations(f)], f, new Authenticator(f), new RateLimiter(1e9, 1e9));
  const app = new Koa<ApiState>();
  app.use(requestContext(createLogger('bench-console', 'silent')));
  app.use(errorHandler());
  app.use(consoleRoutes({ dir }));
  app.use(router.routes());
  app.use(unmatched(router));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token: f.tokens.token,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

const started = performance.now();
const { dir, how } = await consoleDir();
const bundle = bundleSize(dir);
const standIn = await startStandIn(dir);
const browser: Browser = await launchChromium();

/** A page in a new context (nothing cached) holding the console's session cookie. */
async function freshPage(): Promise<Page> {
  const context = await browser.newContext();
  await context.addCookies([
    { name: sessionCookieName(false), value: standIn.token, url: standIn.origin, httpOnly: true, sameSite: 'Strict' },
  ]);
  return context.newPage();
}

const firstRow = 'table.apps tbody tr';
const rowNames = (page: Page) => page.locator(`${firstRow} th`).allTextContents();

/** The console opened fresh until its first row shows, and until it counts every app: ms, and the page (for the interactions). */
async function consoleLoad(): Promise<{ ms: number; allMs: number; page: Page }> {
  const page = await freshPage();
  const t0 = performance.now();
  await page.goto(`${standIn.origin}/console/`, { waitUntil: 'commit' });
  await page.locator(firstRow).first().waitFor();
  const ms = performance.now() - t0;
  // The rest of the list (a second request of 500): the count then says all of them.
  await page.locator('#apps-count', { hasText: `${appCount.toLocaleString('en')} apps;` }).waitFor();
  return { ms, allMs: performance.now() - t0, page };
}

/** The same navigation to a 404 of the same origin, to its load event. */
async function baselineLoad(): Promise<number> {
  const page = await freshPage();
  const t0 = performance.now();
  const answer = await page.goto(`${standIn.origin}/console/does-not-exist.png`, { waitUntil: 'load' });
  const ms = performance.now() - t0;
  if (answer?.status() !== 404) throw new Error(`the baseline answered ${answer?.status()}`);
  await page.context().close();
  return ms;
}

const expected = Array.from({ length: appCount }, (_, i) => `app-${String(i + 1).padStart(4, '0')}`).filter((n) => n.includes(query));

/**
 * What the functions run in the page below use of the DOM (this program's types have none). They are
 * functions, not strings: the console's CSP (no 'unsafe-eval') refuses strings.
 */
declare const document: {
  querySelector(selector: string): { value?: string; dataset?: Record<string, string> } | null;
  querySelectorAll(selector: string): Iterable<{ textContent: string | null }>;
};

/** In the page: whether the table's rows show these names, in order (`prefix`: as their start). */
const rowsAre = ({ want, prefix }: { want: string[]; prefix: boolean }): boolean => {
  const shown = [...document.querySelectorAll('table.apps tbody tr th')].map((th) => th.textContent);
  return (prefix || shown.length === want.length) && want.every((name, i) => shown[i] === name);
};

/** Typing the query into the console's search box until the table shows exactly the matches. */
async function consoleSearch(page: Page): Promise<number> {
  await page.locator('#search').focus();
  const t0 = performance.now();
  await page.keyboard.type(query);
  await page.waitForFunction(rowsAre, { want: expected.slice(0, 25), prefix: false }, { polling: 'raf' });
  return performance.now() - t0;
}

/** "Next page" on the full list until page 2's first app shows. */
async function consolePage(page: Page): Promise<number> {
  const t0 = performance.now();
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForFunction(rowsAre, { want: ['app-0026'], prefix: true }, { polling: 'raf' });
  return performance.now() - t0;
}

/** The same keys into a bare input, and a click on a bare button (about:blank: no CSP refusing the inline handler). */
async function baselineInteractions(): Promise<{ search: number; page: number }> {
  const page = await freshPage();
  await page.setContent('<input id="search" type="search"><button type="button" onclick="this.dataset.clicked = 1">Next page</button>');
  await page.locator('#search').focus();
  let t0 = performance.now();
  await page.keyboard.type(query);
  await page.waitForFunction((want) => document.querySelector('input')?.value === want, query, { polling: 'raf' });
  const search = performance.now() - t0;
  t0 = performance.now();
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForFunction(() => document.querySelector('button')?.dataset?.clicked === '1', undefined, { polling: 'raf' });
  const paged = performance.now() - t0;
  await page.context().close();
  return { search, page: paged };
}

/** What the jump below uses of the DOM. */
interface LogDom {
  querySelector(selector: string): { scrollTop: number } | null;
}
declare const requestAnimationFrame: (callback: () => void) => void;

/** In the page: jumps the log to line `seq` and waits, frame by frame, until its row is in the page; ms, or -1 after 5 s. */
const jumpTo = async (seq: number): Promise<number> => {
  const dom = document as unknown as LogDom;
  const view = dom.querySelector('#log')!;
  const t0 = performance.now();
  view.scrollTop = (seq - 1) * 20;
  for (;;) {
    await new Promise<void>((resolve) => requestAnimationFrame(resolve));
    if (dom.querySelector(`#log li[data-seq="${seq}"]`)) return performance.now() - t0;
    if (performance.now() - t0 > 5000) return -1;
  }
};

/** The logs page reading `logLines` lines: until the last shows, the rows in the page, and jumps. */
async function logView(): Promise<{ loadMs: number; rows: number; jumps: number[] }> {
  const page = await freshPage();
  const start = Date.UTC(2026, 10, 28);
  const body = `${Array.from({ length: logLines }, (_, i) =>
    JSON.stringify({
      time: new Date(start + i).toISOString(),
      machine: 0,
      pod: 'app-0001-m0',
      line: `line ${i + 1} of the benchmark's log`,
    }),
  ).join('\n')}\n`;
  let served = false;
  await page.route(
    (u) => u.pathname === '/api/apps/app-0001/logs',
    (route) => {
      // The log once; its reconnections (the body ended) find nothing new.
      const answer = served ? '' : body;
      served = true;
      return route.fulfill({ status: 200, contentType: 'application/x-ndjson', body: answer });
    },
  );
  const t0 = performance.now();
  await page.goto(`${standIn.origin}/console/apps/app-0001/logs`, { waitUntil: 'commit' });
  await page.locator(`#log li[data-seq="${logLines}"]`).waitFor({ timeout: 60_000 });
  const loadMs = performance.now() - t0;
  const rows = await page.locator('#log li[data-seq]').count();
  const jumps: number[] = [];
  for (let i = 0; i < warmups + repeats; i++) {
    // Spread over the log, never where the view already is.
    const seq = 1 + Math.floor((((i * 7919) % 1000) / 1000) * (logLines - 100));
    const ms = await page.evaluate(jumpTo, seq);
    if (ms < 0) throw new Error(`line ${seq} never showed after a jump`);
    if (i >= warmups) jumps.push(ms);
  }
  await page.context().close();
  return { loadMs, rows, jumps };
}

interface Round {
  load: number;
  /** Until the count says every app. */
  allMs: number;
  loadBase: number;
  search: number;
  searchBase: number;
  page: number;
  pageBase: number;
}

const rounds: Round[] = [];
let log: Awaited<ReturnType<typeof logView>> | undefined;
try {
  for (let i = 0; i < warmups + repeats; i++) {
    // Baseline and console alternate which goes first.
    const baseFirst = i % 2 === 0;
    const loadBase0 = baseFirst ? await baselineLoad() : 0;
    const { ms: load, allMs, page } = await consoleLoad();
    const loadBase = baseFirst ? loadBase0 : await baselineLoad();
    const shown = await rowNames(page);
    if (shown.length !== 25 || shown[0] !== 'app-0001') throw new Error(`the first page shows ${shown.length} rows from ${shown[0]}`);
    const pageMs = await consolePage(page);
    const search = await consoleSearch(page);
    if ((await rowNames(page)).length !== Math.min(25, expected.length)) throw new Error('the search shows other rows');
    await page.context().close();
    const base = await baselineInteractions();
    if (i >= warmups) rounds.push({ load, allMs, loadBase, search, searchBase: base.search, page: pageMs, pageBase: base.page });
  }
  log = await logView();
} finally {
  await browser.close();
  await standIn.close();
}

const col = (f: (r: Round) => number) => rounds.map(f);
const ms = (xs: number[]) => `${median(xs).toFixed(0).padStart(4)} ms (${spread(xs)})`;
const verdict = (ok: boolean) => (ok ? 'holds' : 'MISSED');
console.log(
  `bench/console: headless Chromium against the console and the real API router (account, apps operations) on fakes, ${appCount.toLocaleString('en')} apps, in one process; ${repeats} runs after ${warmups} not counted, interleaved with the baseline (median, and lowest-highest), same machine, same run`,
);
console.log(
  `  bundle (${how}): ${bundle.files.join(' + ')}: ${(bundle.raw / 1024).toFixed(1)} KiB raw, ${(bundle.gzip / 1024).toFixed(1)} KiB gzip`,
);
const many = appCount.toLocaleString('en');
const figures: Array<[string, string, number | undefined, (r: Round) => number, ((r: Round) => number) | undefined]> = [
  [
    `first load, until the first of ${many} rows shows`,
    '404 of the same origin, to load',
    maxFirstLoadMs,
    (r) => r.load,
    (r) => r.loadBase,
  ],
  [`  ... until it counts all ${many} (2nd request)`, '', undefined, (r) => r.allMs, undefined],
  [
    `search "${query}" typed, until its ${expected.length} matches show`,
    'keys into a bare input',
    maxInteractionMs,
    (r) => r.search,
    (r) => r.searchBase,
  ],
  ['next page, until page 2 shows', 'click on a bare button', maxInteractionMs, (r) => r.page, (r) => r.pageBase],
];
console.log(`  ${''.padEnd(50)} ${'console'.padEnd(18)}   ${'baseline'.padEnd(18)}   console/baseline   added`);
let held = true;
for (const [label, base, bound, get, getBase] of figures) {
  const xs = col(get);
  let line = `  ${label.padEnd(50)} ${ms(xs).padEnd(18)}`;
  if (getBase) {
    const bs = col(getBase);
    const added = xs.map((x, i) => x - bs[i]!);
    line += `   ${ms(bs).padEnd(18)}   ${medianSpread(pairedRatios(xs, bs)).padEnd(17)}  ${median(added).toFixed(0).padStart(4)} ms`;
  }
  if (bound !== undefined) {
    const ok = median(xs) < bound;
    held &&= ok;
    line += `   (bound: < ${bound} ms: ${verdict(ok)}; baseline: ${base})`;
  }
  console.log(line.trimEnd());
}
if (log) {
  const ok = median(log.jumps) < maxScrollMs;
  held &&= ok;
  console.log(
    `  logs page, ${logLines.toLocaleString('en')} lines: the last shows after ${log.loadMs.toFixed(0)} ms, with ${log.rows} rows in the page; a jump anywhere until its row shows ${ms(log.jumps)}   (bound: < ${maxScrollMs} ms: ${verdict(ok)})`,
  );
}
console.log(`  bounds: ${held ? 'all hold' : 'NOT all hold'}   (${((performance.now() - started) / 1000).toFixed(0)} s)`);
process.exit(held ? 0 : 1);
