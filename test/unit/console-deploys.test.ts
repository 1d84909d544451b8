// The pure parts of the console's deploys and previews pages (console/src/deploys.ts): a deploy's
// status and origin in words, which deploys may be rolled back to, the build a deploy came from,
// pages of deploys put together, an expiry in words, a followed build log kept to its newest part
// at a line's start, and the pages' routes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  appendLog,
  buildOf,
  buildPending,
  buildRunning,
  buildStatusInWords,
  canRollBack,
  deployStatusInWords,
  emptyLog,
  expiryInWords,
  inFlight,
  liveDeploy,
  mergeDeploys,
  originInWords,
  summaryFacts,
  type DeployFacts,
  type LogView,
} from '../../console/src/deploys.js';
import { hrefOf, routeOf, type Route } from '../../console/src/routes.js';

const deploy = (over: Partial<DeployFacts> = {}): DeployFacts => ({
  id: 'dep-1',
  status: 'live',
  reason: null,
  current: false,
  origin: 'files',
  origin_deploy: null,
  image: null,
  summary: {},
  created_by: 'token:test',
  ...over,
});

describe('console deploys page: deploys in words', () => {
  it('says each status, telling the live deploy serving now from one that served before', () => {
    assert.deepEqual(deployStatusInWords(deploy({ current: true })), { text: 'Live: serving now', tone: 'ok' });
    assert.deepEqual(deployStatusInWords(deploy()), { text: 'Served before', tone: 'idle' });
    assert.deepEqual(deployStatusInWords(deploy({ status: 'pending' })), { text: 'Waiting to start', tone: 'busy' });
    assert.deepEqual(deployStatusInWords(deploy({ status: 'building' })), { text: 'Building', tone: 'busy' });
    assert.deepEqual(deployStatusInWords(deploy({ status: 'deploying' })), { text: 'Deploying', tone: 'busy' });
    assert.deepEqual(deployStatusInWords(deploy({ status: 'failed', reason: 'ImagePullFailed' })), {
      text: 'Failed: ImagePullFailed',
      tone: 'bad',
    });
    assert.deepEqual(deployStatusInWords(deploy({ status: 'failed' })), { text: 'Failed', tone: 'bad' });
  });

  it('says where each came from', () => {
    assert.equal(originInWords(deploy()), 'files sent with the request');
    assert.equal(originInWords(deploy({ origin: 'tarball' })), 'an uploaded archive');
    assert.equal(originInWords(deploy({ origin: 'image', image: 'registry.example/shop:2' })), 'image registry.example/shop:2');
    assert.equal(originInWords(deploy({ origin: 'compose' })), 'a compose file');
    assert.equal(originInWords(deploy({ origin: 'rollback', origin_deploy: 'dep-0' })), 'a rollback to deploy dep-0');
    assert.equal(
      originInWords(deploy({ origin: 'fork', origin_deploy: 'dep-9', summary: { forked_from: 'shop' } })),
      'a fork of app shop of deploy dep-9',
    );
    assert.equal(originInWords(deploy({ origin: 'build', summary: { build: 'bld-1' } })), 'build bld-1');
    assert.equal(originInWords(deploy({ origin: 'something-new' })), 'something-new', 'an origin this list does not know yet');
  });

  it('finds the build a deploy came from: its summary, a rollback keeping it, else its author', () => {
    assert.equal(buildOf(deploy({ origin: 'build', summary: { build: 'bld-1' }, created_by: 'build:bld-1' })), 'bld-1');
    assert.equal(buildOf(deploy({ origin: 'rollback', summary: { build: 'bld-1', rollback_to: 'dep-0' } })), 'bld-1');
    assert.equal(buildOf(deploy({ created_by: 'build:bld-2' })), 'bld-2');
    assert.equal(buildOf(deploy()), undefined);
    assert.equal(buildOf(deploy({ created_by: null, summary: { build: 7 } })), undefined, 'only a string names a build');
  });

  it('says what a summary holds for people, leaving out the build and nested records', () => {
    assert.deepEqual(
      summaryFacts({ files: 2, bytes: 1024, kind_why: 'index.html', build: 'bld-1', nested: { a: 1 }, none: null, empty: '' }),
      [
        ['files', '2'],
        ['bytes', '1024'],
        ['kind why', 'index.html'],
      ],
    );
    assert.deepEqual(summaryFacts({ rollback_to: 'dep-0', reused: true }), [
      ['rollback to', 'dep-0'],
      ['reused', 'true'],
    ]);
  });

  it('offers a rollback only to a deploy that went live and does not serve now', () => {
    assert.equal(canRollBack(deploy()), true);
    assert.equal(canRollBack(deploy({ current: true })), false, 'the one serving needs none');
    for (const status of ['pending', 'building', 'deploying', 'failed'] as const)
      assert.equal(canRollBack(deploy({ status })), false, `${status}: never served, the API refuses it`);
  });

  it('knows the undecided deploys (the page asks again) and the live one', () => {
    assert.deepEqual(
      (['pending', 'building', 'deploying', 'live', 'failed'] as const).filter((status) => inFlight({ status })),
      ['pending', 'building', 'deploying'],
    );
    const list = [deploy({ id: 'dep-3', status: 'deploying' }), deploy({ id: 'dep-2', current: true }), deploy({ id: 'dep-1' })];
    assert.equal(liveDeploy(list)?.id, 'dep-2');
    assert.equal(liveDeploy([deploy()]), undefined);
  });

  it('puts pages of deploys together newest first, a deploy listed again replaced and never shown twice', () => {
    const shown = [deploy({ id: 'dep-5' }), deploy({ id: 'dep-4', status: 'deploying' })];
    const next = [deploy({ id: 'dep-4', status: 'live', current: true }), deploy({ id: 'dep-3' }), deploy({ id: 'dep-2' })];
    const merged = mergeDeploys(shown, next);
    assert.deepEqual(
      merged.map((d) => d.id),
      ['dep-5', 'dep-4', 'dep-3', 'dep-2'],
    );
    assert.equal(merged[1]!.status, 'live', 'the newer answer wins');
    assert.deepEqual(mergeDeploys([], next), next);
  });
});

describe('console deploys page: builds and their logs', () => {
  it('follows a log while the build is queued or running, and reads it once otherwise', () => {
    assert.deepEqual(['queued', 'building', 'succeeded', 'failed', 'canceled'].filter(buildRunning), ['queued', 'building']);
  });

  it('keeps asking about a build until it ended and the deploy it asked for is made or refused', () => {
    const b = { status: 'succeeded', deploy: true, deploy_id: null, deploy_error: null };
    assert.equal(buildPending({ ...b, status: 'building' }), true);
    assert.equal(buildPending(b), true, 'succeeded, its deploy not made yet');
    assert.equal(buildPending({ ...b, deploy_id: 'dep-1' }), false);
    assert.equal(buildPending({ ...b, deploy_error: 'app shop is gone' }), false);
    assert.equal(buildPending({ ...b, deploy: false }), false, 'no deploy asked for');
    assert.equal(buildPending({ ...b, status: 'failed' }), false);
  });

  it('says a build status, with why it failed', () => {
    assert.deepEqual(buildStatusInWords({ status: 'succeeded', reason: 'Built', message: null }), { text: 'Succeeded', tone: 'ok' });
    assert.match(buildStatusInWords({ status: 'succeeded', reason: 'Reused', message: null }).text, /reused/);
    assert.deepEqual(buildStatusInWords({ status: 'failed', reason: 'CommandFailed', message: '`npm run build` exited with code 1' }), {
      text: 'Failed: `npm run build` exited with code 1',
      tone: 'bad',
    });
    assert.equal(buildStatusInWords({ status: 'failed', reason: 'OutOfMemory', message: null }).text, 'Failed: OutOfMemory');
    assert.equal(buildStatusInWords({ status: 'queued', reason: null, message: null }).tone, 'busy');
    assert.equal(buildStatusInWords({ status: 'canceled', reason: 'Canceled', message: null }).text, 'Canceled');
  });

  it('appends a followed log chunk by chunk, however the stream splits it', () => {
    const whole = '==> $ npm ci\nadded 12 packages\n==> $ npm run build\nbuilt in 1.2 s\n';
    for (const size of [1, 3, 7, whole.length]) {
      let log: LogView = emptyLog;
      for (let i = 0; i < whole.length; i += size) log = appendLog(log, whole.slice(i, i + size));
      assert.deepEqual(log, { text: whole, dropped: 0 }, `chunks of ${size}`);
    }
    assert.equal(appendLog(emptyLog, ''), emptyLog, 'an empty chunk changes nothing');
  });

  it('keeps the newest part of a long log, cut at a line start, counting what was left out', () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i}\n`).join(''); // 7 characters a line
    const log = appendLog(emptyLog, lines, 20);
    assert.equal(log.text, 'line 8\nline 9\n', 'no half line');
    assert.equal(log.dropped + log.text.length, lines.length);
    const more = appendLog(log, 'line 10\n', 20);
    assert.equal(more.text, 'line 9\nline 10\n');
    assert.equal(more.dropped + more.text.length, lines.length + 'line 10\n'.length, 'counted across appends');
    // One line longer than the most kept: its end is shown.
    const long = appendLog(emptyLog, 'x'.repeat(50), 20);
    assert.equal(long.text.length, 20);
    assert.equal(long.dropped, 30);
  });
});

describe('console previews page: expiry in words', () => {
  const now = new Date('2026-11-28T12:00:00Z');
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  const minute = 60_000;
  const hour = 60 * minute;
  const day = 24 * hour;

  it('says how long is left, in the largest fitting unit', () => {
    assert.equal(expiryInWords(at(3 * day - 5000), now), 'expires in 3 days', 'a ttl of 3d set seconds ago');
    assert.equal(expiryInWords(at(2 * day), now), 'expires in 2 days');
    assert.equal(expiryInWords(at(47 * hour), now), 'expires in 47 hours');
    assert.equal(expiryInWords(at(2 * hour), now), 'expires in 2 hours');
    assert.equal(expiryInWords(at(45 * minute), now), 'expires in 45 minutes');
    assert.equal(expiryInWords(at(minute), now), 'expires in 1 minute');
    assert.equal(expiryInWords(at(20_000), now), 'expires in less than a minute');
  });

  it('says expired once passed, and no expiry when there is none', () => {
    assert.equal(expiryInWords(at(0), now), 'expired');
    assert.equal(expiryInWords(at(-day), now), 'expired');
    assert.equal(expiryInWords(null, now), 'no expiry');
    assert.equal(expiryInWords(undefined, now), 'no expiry');
    assert.equal(expiryInWords('not a time', now), 'no expiry');
  });
});

describe('console routes: deploys and previews', () => {
  it('names an app’s deploys, one deploy’s details and its previews, and back', () => {
    assert.deepEqual(routeOf('/console/apps/shop/deploys'), { page: 'app-deploys', name: 'shop' });
    assert.deepEqual(routeOf('/console/apps/shop/deploys/dep-2f777bf72e647bd0'), {
      page: 'app-deploys',
      name: 'shop',
      deploy: 'dep-2f777bf72e647bd0',
    });
    assert.deepEqual(routeOf('/console/apps/shop/previews'), { page: 'app-previews', name: 'shop' });
    assert.equal(hrefOf({ page: 'app-deploys', name: 'shop' }), '/console/apps/shop/deploys');
    assert.equal(hrefOf({ page: 'app-deploys', name: 'shop', deploy: 'dep-1' }), '/console/apps/shop/deploys/dep-1');
    assert.equal(hrefOf({ page: 'app-previews', name: 'shop' }), '/console/apps/shop/previews');
    const routes: Route[] = [
      { page: 'app-deploys', name: 'shop' },
      { page: 'app-deploys', name: 'a b', deploy: 'dep/x' },
      { page: 'app-previews', name: 'shop' },
    ];
    for (const route of routes) assert.deepEqual(routeOf(hrefOf(route)), route);
    assert.equal(routeOf('/console/apps/shop/previews/pr-1').page, 'not-found');
    assert.equal(routeOf('/console/apps/shop/deploys/dep-1/more').page, 'not-found');
  });
});
