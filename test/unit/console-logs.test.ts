// The pure parts of the console's logs and metrics pages (console/src/log-view.ts, charts.ts): NDJSON
// lines read, a followed log resumed after a cut with no gap and no repeat, at most maxLines kept,
// the window of rows a virtualised list renders (and fast enough for 100,000 lines), the charts'
// scales and paths, and the pages' routes.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { formatValue, linePath, niceMax, scaleOf, ticks, type Box } from '../../console/src/charts.js';
import {
  atBottom,
  LogCursor,
  LogStore,
  logReconnectDelay,
  parseLogLine,
  rowWindow,
  splitLines,
  writerOf,
  type LogLine,
} from '../../console/src/log-view.js';
import { hrefOf, routeOf, type Route } from '../../console/src/routes.js';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 22, 4, 40, 0) + ms).toISOString();
const line = (ms: number, pod: string, text: string): LogLine => ({ time: at(ms), machine: Number(pod.slice(1)), pod, line: text });
const json = (l: LogLine) => JSON.stringify(l);

/** A follow as follow-logs.ts runs it: each line through the cursor, what is accepted shown. */
function show(cursor: LogCursor, lines: LogLine[], shown: string[]) {
  for (const l of lines) if (cursor.accept(json(l), l)) shown.push(`${l.pod} ${l.line}`);
}

describe('console logs: lines read', () => {
  it('reads NDJSON lines and leaves out what is not one', () => {
    assert.deepEqual(parseLogLine('{"time":"2026-11-22T04:40:00.123Z","machine":0,"pod":"shop-m0-1","line":"hi"}'), {
      time: '2026-11-22T04:40:00.123Z',
      machine: 0,
      pod: 'shop-m0-1',
      line: 'hi',
    });
    assert.equal(parseLogLine('{"time":"x","service":"worker","machine":1,"pod":"p","line":"a"}')?.service, 'worker');
    assert.equal(parseLogLine(''), undefined);
    assert.equal(parseLogLine('<html>'), undefined);
    assert.equal(parseLogLine('{"line":"no time"}'), undefined);
  });
  it('splits a chunk into whole lines and the rest', () => {
    assert.deepEqual(splitLines('a\nb\nc'), { lines: ['a', 'b'], rest: 'c' });
    assert.deepEqual(splitLines('a\n'), { lines: ['a'], rest: '' });
  });
  it('names the writer as the text form does', () => {
    assert.equal(writerOf({ time: '', machine: 0, pod: 'p', line: '' }), 'm0');
    assert.equal(writerOf({ time: '', machine: 2, service: 'worker', pod: 'p', line: '' }), 'worker/m2');
    assert.equal(writerOf({ time: '', machine: null, pod: 'build-x', line: '' }), 'build-x');
  });
});

describe('console logs: resuming after a cut', () => {
  it('resumes from the oldest last line of the machines writing, skipping what comes again once', () => {
    const cursor = new LogCursor();
    const shown: string[] = [];
    assert.equal(cursor.resume(), undefined, 'nothing shown: start afresh');
    show(cursor, [line(0, 'm0', 'a0'), line(10, 'm1', 'b0'), line(20, 'm0', 'a1'), line(30, 'm1', 'b1'), line(40, 'm0', 'a2')], shown);
    // Cut: m1's last line was at 30, m0's at 40: resume from 30.
    assert.equal(cursor.resume(), at(30));
    // The API sends every line from 30 on: b1 and a2 again, then new ones.
    show(cursor, [line(30, 'm1', 'b1'), line(40, 'm0', 'a2'), line(50, 'm1', 'b2'), line(60, 'm0', 'a3')], shown);
    assert.deepEqual(shown, ['m0 a0', 'm1 b0', 'm0 a1', 'm1 b1', 'm0 a2', 'm1 b2', 'm0 a3'], 'no gap, no repeat');
  });
  it('keeps a line an app wrote twice in one millisecond twice', () => {
    const cursor = new LogCursor();
    const shown: string[] = [];
    show(cursor, [line(0, 'm0', 'same'), line(0, 'm0', 'same')], shown);
    cursor.resume();
    show(cursor, [line(0, 'm0', 'same'), line(0, 'm0', 'same'), line(0, 'm0', 'same')], shown);
    assert.deepEqual(shown, ['m0 same', 'm0 same', 'm0 same'], 'two skipped, the third is new');
  });
  it('survives two cuts in a row', () => {
    const cursor = new LogCursor();
    const shown: string[] = [];
    show(cursor, [line(0, 'm0', 'a0'), line(5, 'm0', 'a1')], shown);
    assert.equal(cursor.resume(), at(5));
    // Cut again before anything came.
    assert.equal(cursor.resume(), at(5));
    show(cursor, [line(5, 'm0', 'a1'), line(9, 'm0', 'a2')], shown);
    assert.deepEqual(shown, ['m0 a0', 'm0 a1', 'm0 a2']);
  });
  it('does not hold back for a machine that stopped writing long ago', () => {
    const cursor = new LogCursor();
    const shown: string[] = [];
    show(cursor, [line(0, 'm1', 'old'), line(120_000, 'm0', 'new')], shown);
    assert.equal(cursor.resume(), at(120_000));
  });
  it('backs off from half a second to ten', () => {
    assert.deepEqual([1, 2, 3, 6, 10].map(logReconnectDelay), [500, 1000, 2000, 10_000, 10_000]);
  });
});

describe('console logs: lines kept', () => {
  it('keeps at most max lines, the newest, numbered in order', () => {
    const store = new LogStore(5);
    store.append([1, 2, 3].map((i) => line(i, 'm0', `l${i}`)));
    const v = store.version;
    store.append([4, 5, 6, 7].map((i) => line(i, 'm0', `l${i}`)));
    assert.ok(store.version > v);
    assert.deepEqual(
      store.lines.map((l) => l.line),
      ['l3', 'l4', 'l5', 'l6', 'l7'],
    );
    assert.deepEqual(
      store.lines.map((l) => l.seq),
      [3, 4, 5, 6, 7],
    );
    assert.equal(store.dropped, 2);
    store.clear();
    assert.equal(store.lines.length, 0);
  });
});

describe('console logs: the virtualised window', () => {
  it('renders the rows in view and a margin, over a spacer as tall as all', () => {
    const w = rowWindow({ total: 100_000, scrollTop: 20_000, viewportHeight: 400, rowHeight: 20, overscan: 10 });
    assert.deepEqual(w, { first: 990, end: 1031, offsetTop: 19_800, totalHeight: 2_000_000 });
    assert.ok(w.end - w.first < 60, 'a few dozen rows, not 100,000');
  });
  it('clamps at the top, the bottom and past the end', () => {
    assert.deepEqual(rowWindow({ total: 100, scrollTop: 0, viewportHeight: 200, rowHeight: 20, overscan: 5 }), {
      first: 0,
      end: 16,
      offsetTop: 0,
      totalHeight: 2000,
    });
    const bottom = rowWindow({ total: 100, scrollTop: 99_999, viewportHeight: 200, rowHeight: 20, overscan: 5 });
    assert.equal(bottom.end, 100);
    assert.equal(bottom.first, 85);
    assert.deepEqual(rowWindow({ total: 0, scrollTop: 0, viewportHeight: 200, rowHeight: 20 }), {
      first: 0,
      end: 0,
      offsetTop: 0,
      totalHeight: 0,
    });
    assert.deepEqual(rowWindow({ total: 3, scrollTop: 0, viewportHeight: 200, rowHeight: 20 }).end, 3);
  });
  it('says when the view is at the bottom', () => {
    assert.equal(atBottom(1600, 400, 2000, 20), true);
    assert.equal(atBottom(1590, 400, 2000, 20), true);
    assert.equal(atBottom(1000, 400, 2000, 20), false);
  });
  it('computes the window for 100,000 lines well under a millisecond per frame', () => {
    const store = new LogStore();
    store.append(Array.from({ length: 100_000 }, (_, i) => line(i, 'm0', `line ${i}`)));
    assert.equal(store.lines.length, 100_000);
    const frames = 1000;
    const started = performance.now();
    let rows = 0;
    for (let i = 0; i < frames; i++) {
      const w = rowWindow({ total: store.lines.length, scrollTop: (i * 1999) % 2_000_000, viewportHeight: 600, rowHeight: 20 });
      rows += store.lines.slice(w.first, w.end).length;
    }
    const perFrame = (performance.now() - started) / frames;
    assert.ok(rows > 0);
    assert.ok(perFrame < 0.1, `${perFrame.toFixed(4)} ms per frame`);
  });
  it('appends to 100,000 kept lines quickly (a batch does not copy the log per line)', () => {
    const store = new LogStore();
    store.append(Array.from({ length: 100_000 }, (_, i) => line(i, 'm0', `line ${i}`)));
    const started = performance.now();
    for (let b = 0; b < 100; b++) store.append(Array.from({ length: 10 }, (_, i) => line(b * 10 + i, 'm0', 'more')));
    assert.equal(store.lines.length, 100_000);
    assert.equal(store.dropped, 1000);
    assert.ok((performance.now() - started) / 100 < 5, 'a batch in under 5 ms');
  });
});

describe('console metrics: charts', () => {
  const box: Box = { width: 100, height: 60, left: 10, right: 0, top: 0, bottom: 10 };
  it('rounds the axis up to 1, 2, 2.5 or 5 times a power of ten', () => {
    assert.deepEqual([0, 1, 3, 7, 10, 11, 24, 0.3, 180, 240, 260, 999].map(niceMax), [1, 1, 5, 10, 10, 20, 25, 0.5, 200, 250, 500, 1000]);
    assert.equal(niceMax(Number.NaN), 1);
    assert.deepEqual(ticks(20), [0, 5, 10, 15, 20]);
    assert.deepEqual(ticks(0.5, 2), [0, 0.25, 0.5]);
  });
  it('scales time left to right and values bottom to top', () => {
    const points = [
      { t: 0, v: 0 },
      { t: 50, v: 5 },
      { t: 100, v: 10 },
    ];
    const s = scaleOf(points, box, 0, 100);
    assert.equal(s.top, 10);
    assert.equal(s.x(0), 10);
    assert.equal(s.x(100), 100);
    assert.equal(s.y(0), 50);
    assert.equal(s.y(10), 0);
    assert.equal(linePath(points, s), 'M10 50 L55 25 L100 0');
  });
  it('breaks the line where a value is null, and draws flat zeros on an empty window', () => {
    const points = [
      { t: 0, v: 1 },
      { t: 50, v: null },
      { t: 100, v: 1 },
    ];
    const s = scaleOf(points, box, 0, 100);
    assert.equal(linePath(points, s), 'M10 0 M100 0');
    const zeros = scaleOf([{ t: 0, v: 0 }], box, 0, 0);
    assert.equal(zeros.top, 1);
    assert.equal(linePath([], zeros), '');
  });
  it('formats numbers for the axis and the table', () => {
    assert.deepEqual([null, 0, 3, 12.34, 310.5].map(formatValue), ['–', '0', '3', '12.3', '311']);
  });
});

describe('console logs and metrics: routes', () => {
  it('round-trips', () => {
    for (const route of [
      { page: 'app-logs', name: 'shop' },
      { page: 'app-metrics', name: 'shop' },
      { page: 'app-logs', name: 'a b' },
    ] satisfies Route[])
      assert.deepEqual(routeOf(hrefOf(route)), route);
    assert.equal(hrefOf({ page: 'app-logs', name: 'shop' }), '/console/apps/shop/logs');
    assert.equal(hrefOf({ page: 'app-metrics', name: 'shop' }), '/console/apps/shop/metrics');
  });
});
