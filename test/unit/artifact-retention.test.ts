// Which stored artifacts an account keeps (lib/artifacts/retention.ts, docs/decisions/0024): observed
// → desired, with no store, database or cluster. What a rollback, a preview, a build in progress, an
// undeployed output or a backup still needs is kept; so is anything stored within the grace period;
// the rest is released, per account.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  keptBuildLogs,
  retainedArtifacts,
  type Observed,
  type ObservedDeploy,
  type RetentionPolicy,
} from '../../lib/artifacts/retention.js';

const policy: RetentionPolicy = { rollbackDeploys: 3, graceMs: 3600_000, buildGraceMs: 24 * 3600_000, buildLogMs: 30 * 24 * 3600_000 };
const now = new Date('2026-11-27T12:00:00Z');
const hoursAgo = (h: number) => new Date(now.getTime() - h * 3600_000);
const dg = (n: string) => `sha256:${n.padStart(64, '0')}`;

const empty: Observed = { now, apps: [], deploys: [], builds: [], backups: [], holds: [] };
const keptOf = (o: Partial<Observed>, p: RetentionPolicy = policy, account = 'acc1') =>
  [
    ...(retainedArtifacts({ ...empty, ...o }, p)
      .get(account)
      ?.keys() ?? []),
  ].sort();
/** The digests kept, in any order. */
const same = (actual: string[], expected: string[]) => assert.deepEqual(actual, [...expected].sort());
const deploy = (seq: number, over: Partial<ObservedDeploy> = {}): ObservedDeploy => ({
  accountId: 'acc1',
  id: `dep-${seq}`,
  appUid: 'u-shop',
  seq,
  digest: dg(String(seq)),
  status: 'live',
  ...over,
});
const shop = { accountId: 'acc1', uid: 'u-shop', name: 'shop', preview: false, digests: [dg('10')], deploys: ['dep-10'] };

describe('artifact retention', () => {
  it("keeps an app's current deploy and its last N live deploys, and nothing older", () => {
    const deploys = Array.from({ length: 10 }, (_, i) => deploy(i + 1));
    same(keptOf({ apps: [shop], deploys }), [dg('7'), dg('8'), dg('9'), dg('10')]);
  });

  it('counts only live deploys in the rollback window (a failed one is never a rollback target) and keeps in-flight ones', () => {
    const deploys = [
      deploy(1),
      deploy(2),
      deploy(3, { status: 'failed' }),
      deploy(4, { status: 'failed' }),
      deploy(5),
      deploy(6, { status: 'deploying' }),
      deploy(7),
    ];
    const app = { ...shop, digests: [dg('7')], deploys: ['dep-7'] };
    // current 7; in flight 6; live 5, 2, 1 in the window of 3; the failed 3 and 4 released.
    same(keptOf({ apps: [app], deploys }), [dg('1'), dg('2'), dg('5'), dg('6'), dg('7')]);
  });

  it('a window of 0 keeps the current deploy only; the same digest in two deploys is kept once', () => {
    const deploys = [deploy(1, { digest: dg('a') }), deploy(2, { digest: dg('a') }), deploy(3)];
    const app = { ...shop, digests: [dg('3')], deploys: ['dep-3'] };
    same(keptOf({ apps: [app], deploys }, { ...policy, rollbackDeploys: 0 }), [dg('3')]);
    same(keptOf({ apps: [app], deploys }, { ...policy, rollbackDeploys: 1 }), [dg('3'), dg('a')]);
  });

  it("keeps what a preview serves and what an App's live revision serves while its spec rolls out", () => {
    const preview = { accountId: 'acc1', uid: 'u-pr', name: 'shop--pr-1', preview: true, digests: [dg('p1')], deploys: [] };
    const rolling = { ...shop, digests: [dg('new'), dg('old')] };
    const kept = retainedArtifacts({ ...empty, apps: [preview, rolling] }, policy).get('acc1')!;
    same([...kept.keys()].sort(), [dg('new'), dg('old'), dg('p1')]);
    assert.match(kept.get(dg('p1'))!, /preview shop--pr-1/);
  });

  it("keeps nothing for a deleted app's deploys (it cannot be rolled back)", () => {
    same(keptOf({ deploys: [deploy(1), deploy(2)] }), []);
  });

  it("keeps builds' sources and outputs until they end, and an undeployed output for the build grace period", () => {
    const b = { accountId: 'acc1', sourceDigest: null, outputDigest: null, deployed: false, completedAt: null, ended: false };
    const builds = [
      { ...b, id: 'running', sourceDigest: dg('src1'), outputDigest: dg('out1') },
      { ...b, id: 'fresh', ended: true, sourceDigest: dg('src2'), outputDigest: dg('out2'), completedAt: hoursAgo(2) },
      { ...b, id: 'stale', ended: true, outputDigest: dg('out3'), completedAt: hoursAgo(25) },
      { ...b, id: 'deployed', ended: true, outputDigest: dg('out4'), deployed: true, completedAt: hoursAgo(1) },
    ];
    // The ended build's source and a deployed output are not kept by the build (a deploy keeps the latter).
    same(keptOf({ builds }), [dg('out1'), dg('out2'), dg('src1')]);
  });

  it("keeps an ended build's log for the log retention period after it ended, held by no account", () => {
    const b = { accountId: 'acc1', sourceDigest: null, outputDigest: null, deployed: true, ended: true };
    const builds = [
      { ...b, id: 'recent', completedAt: hoursAgo(24 * 29), logDigest: dg('log1') },
      { ...b, id: 'old', completedAt: hoursAgo(24 * 31), logDigest: dg('log2') },
      { ...b, id: 'kept-before', completedAt: hoursAgo(1), logDigest: null },
    ];
    same([...keptBuildLogs({ now, builds }, policy)], [dg('log1')]);
    same([...keptBuildLogs({ now, builds }, { buildLogMs: 32 * 24 * 3600_000 })], [dg('log1'), dg('log2')]);
    // No account's artifact: its storage does not count them.
    same(keptOf({ builds }), []);
  });

  it('keeps every recorded backup, and anything stored within the grace period', () => {
    const backups = [{ accountId: 'acc1', database: 'orders', digest: dg('bk') }];
    const holds = [
      { accountId: 'acc1', digest: dg('young'), usedAt: hoursAgo(0.5) },
      { accountId: 'acc1', digest: dg('old'), usedAt: hoursAgo(2) },
    ];
    same(keptOf({ backups, holds }), [dg('bk'), dg('young')]);
    // The grace is measured from the last use: a re-upload of old bytes is young again.
    same(keptOf({ holds: [{ ...holds[1]!, usedAt: hoursAgo(0.1) }] }), [dg('old')]);
  });

  it("decides per account: one account's reference keeps nothing for another holding the same bytes", () => {
    const other = { ...shop, accountId: 'acc2', uid: 'u-other', name: 'other' };
    const holds = [
      { accountId: 'acc1', digest: dg('10'), usedAt: hoursAgo(5) },
      { accountId: 'acc2', digest: dg('10'), usedAt: hoursAgo(5) },
      { accountId: 'acc2', digest: dg('x'), usedAt: hoursAgo(5) },
    ];
    const kept = retainedArtifacts({ ...empty, apps: [other], holds }, policy);
    assert.equal(kept.get('acc1'), undefined);
    assert.deepEqual([...kept.get('acc2')!.keys()], [dg('10')]);
  });
});
