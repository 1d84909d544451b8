import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import timings from '../support/timings-reporter.js';

async function* events(list: Array<{ type: string; data?: object }>) {
  for (const e of list) yield e;
}

describe('the per-file timings reporter', () => {
  it("sums each file's top-level tests, marks a file with a failure, and lists the slowest first", async () => {
    const out: string[] = [];
    for await (const chunk of timings(
      events([
        { type: 'test:pass', data: { nesting: 0, file: `${process.cwd()}/test/a.test.ts`, details: { duration_ms: 1500 } } },
        { type: 'test:pass', data: { nesting: 1, file: `${process.cwd()}/test/a.test.ts`, details: { duration_ms: 1400 } } },
        { type: 'test:fail', data: { nesting: 0, file: `${process.cwd()}/test/b.test.ts`, details: { duration_ms: 90_000 } } },
        { type: 'test:pass', data: { nesting: 0, file: `${process.cwd()}/test/a.test.ts`, details: { duration_ms: 500 } } },
        { type: 'test:diagnostic', data: { nesting: 0 } },
      ]),
    ))
      out.push(chunk);
    const lines = out.join('').trim().split('\n');
    assert.match(lines[0]!, /time per file \(2 files, 1\.5 min in all\)/);
    assert.equal(lines[1], '    90.0 s  ✖ test/b.test.ts');
    assert.equal(lines[2], '     2.0 s    test/a.test.ts');
  });

  it('prints nothing for a single file (the spec output already says its time)', async () => {
    const out: string[] = [];
    for await (const chunk of timings(events([{ type: 'test:pass', data: { nesting: 0, file: 'x', details: { duration_ms: 1 } } }])))
      out.push(chunk);
    assert.deepEqual(out, []);
  });
});
