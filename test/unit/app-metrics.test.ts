// Request metrics arithmetic (status classes, latency buckets and percentiles, merging sums as a
// flush upsert does), the metrics window.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { windowOf } from '../../api/operations/app-metrics.js';
import { ApiError } from '../../api/errors.js';
import {
  addSample,
  addTotals,
  bucketCount,
  bucketOf,
  emptyTotals,
  latencyBoundsMs,
  quantile,
  statusClass,
} from '../../lib/metrics/requests.js';

describe('request metrics aggregation', () => {
  it('counts status classes, leaving 1xx and nonsense out of the classes but in the total', () => {
    assert.equal(statusClass(200), '2xx');
    assert.equal(statusClass(304), '3xx');
    assert.equal(statusClass(499), '4xx');
    assert.equal(statusClass(503), '5xx');
    assert.equal(statusClass(101), undefined);
    assert.equal(statusClass(0), undefined);
    const t = emptyTotals();
    for (const s of [200, 201, 302, 404, 500, 502, 101]) addSample(t, s, 10);
    assert.equal(t.requests, 7);
    assert.deepEqual(t.status, { '2xx': 2, '3xx': 1, '4xx': 1, '5xx': 2 });
    assert.equal(t.durationMsSum, 70);
  });

  it('puts durations in buckets by inclusive upper bound, slower ones in the last', () => {
    assert.equal(bucketCount, latencyBoundsMs.length + 1);
    assert.equal(bucketOf(0), 0);
    assert.equal(bucketOf(1), 0);
    assert.equal(bucketOf(1.5), 1);
    assert.equal(bucketOf(100), latencyBoundsMs.indexOf(100));
    assert.equal(bucketOf(100.1), latencyBoundsMs.indexOf(200));
    assert.equal(bucketOf(1e9), latencyBoundsMs.length);
    const t = emptyTotals();
    addSample(t, 200, -5);
    addSample(t, 200, Number.NaN);
    assert.equal(t.latency[0], 2, 'negative and NaN durations count as 0 ms');
    assert.equal(t.durationMsSum, 0);
  });

  it('estimates percentiles from the histogram by interpolating inside the bucket', () => {
    assert.equal(quantile(emptyTotals().latency, 0.5), null);
    const t = emptyTotals();
    // 100 requests evenly in the (50, 100] bucket: the p50 is halfway through it.
    for (let i = 0; i < 100; i++) addSample(t, 200, 60);
    assert.equal(quantile(t.latency, 0.5), 75);
    assert.equal(quantile(t.latency, 0.9), 95);
    assert.equal(quantile(t.latency, 0.99), 99.5);
    // 90 fast (<= 1 ms) and 10 at 400 ms, in (300, 500]: p50 within the first bucket, p99 in the slow one.
    const u = emptyTotals();
    for (let i = 0; i < 90; i++) addSample(u, 200, 1);
    for (let i = 0; i < 10; i++) addSample(u, 200, 400);
    assert.ok(quantile(u.latency, 0.5)! <= 1);
    assert.equal(quantile(u.latency, 0.9), 1);
    assert.equal(quantile(u.latency, 0.99), 480);
    // Slower than the last bound: the last bound is all the histogram can say.
    const v = emptyTotals();
    addSample(v, 200, 60_000);
    assert.equal(quantile(v.latency, 0.5), latencyBoundsMs[latencyBoundsMs.length - 1]);
  });

  it('merges sums as the flush upsert does: every counter and bucket adds up', () => {
    const a = emptyTotals();
    const b = emptyTotals();
    const both = emptyTotals();
    const samples: Array<[number, number]> = [
      [200, 3],
      [500, 250],
      [404, 12],
      [200, 3],
      [301, 0.5],
      [200, 40_000],
    ];
    samples.forEach(([s, ms], i) => {
      addSample(i % 2 ? a : b, s, ms);
      addSample(both, s, ms);
    });
    addTotals(a, b);
    assert.deepEqual(a, both);
    assert.equal(
      a.latency.reduce((n, c) => n + c, 0),
      a.requests,
    );
  });
});

describe('metrics window', () => {
  const now = Date.parse('2026-11-22T10:17:30Z');
  it('ends at the next minute and starts whole steps before, covering since', () => {
    const w = windowOf({}, now);
    assert.equal(w.end.toISOString(), '2026-11-22T10:18:00.000Z');
    assert.equal(w.stepMs, 60_000);
    assert.equal(w.start.toISOString(), '2026-11-22T09:18:00.000Z');
    const d = windowOf({ since: '1d' }, now);
    assert.equal(d.stepMs, 30 * 60_000, 'auto step: at most 60 points');
    assert.equal((d.end.getTime() - d.start.getTime()) / d.stepMs, 48);
    const explicit = windowOf({ since: '90m', step: '1h' }, now);
    assert.equal((explicit.end.getTime() - explicit.start.getTime()) / explicit.stepMs, 2);
    const abs = windowOf({ since: '2026-11-22T10:00:00Z', step: '5m' }, now);
    assert.ok(abs.start.getTime() <= Date.parse('2026-11-22T10:00:00Z'));
  });

  it('refuses steps that are not whole minutes, too many points, and windows past retention or in the future', () => {
    const bad = (q: Record<string, string>, re: RegExp) =>
      assert.throws(
        () => windowOf(q, now),
        (e: unknown) => e instanceof ApiError && e.code === 'invalid_request' && re.test(e.message),
      );
    bad({ step: '90s' }, /whole minutes/);
    bad({ since: '30d', step: '1m' }, /at most 1440/);
    bad({ since: '31d' }, /at most 30d/);
    bad({ since: '2026-11-23T00:00:00Z' }, /in the past/);
  });
});
