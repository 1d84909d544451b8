// A worker's passes (lib/passes.ts): one at a time, nudges coalesced, a pass on demand begins after
// the one in flight, a failing pass reported, none after stop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Passes } from '../../lib/passes.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

function counting(o: { ms?: number; fail?: boolean } = {}) {
  let runs = 0;
  let inFlight = 0;
  let most = 0;
  const errors: unknown[] = [];
  const passes = new Passes<number>({
    run: async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await tick(o.ms ?? 20);
      inFlight--;
      if (o.fail) throw new Error('apiserver down');
      return ++runs;
    },
    intervalMs: 60_000,
    nudgeMs: 10,
    onError: (err) => errors.push(err),
  });
  return { passes, runs: () => runs, most: () => most, errors };
}

describe('Passes', () => {
  it('coalesces a burst of nudges into one pass', async () => {
    const t = counting();
    for (let i = 0; i < 20; i++) t.passes.nudge();
    await tick(80);
    assert.equal(t.runs(), 1);
  });

  it('runs a pass asked for after the one in flight, never two at once', async () => {
    const t = counting({ ms: 30 });
    const first = t.passes.pass();
    const second = t.passes.pass();
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    assert.equal(t.most(), 1);
  });

  it('reports a failing pass from a nudge, and stops nudging after stop() (which waits for the one running)', async () => {
    const t = counting({ fail: true });
    t.passes.nudge();
    await tick(60);
    assert.equal(t.errors.length, 1);
    assert.match(String(t.errors[0]), /apiserver down/);
    const running = t.passes.pass().catch(() => 'failed');
    await t.passes.stop();
    assert.equal(await running, 'failed');
    assert.ok(t.passes.isStopped);
    t.passes.nudge();
    await tick(40);
    assert.equal(t.errors.length, 1, 'no pass after stop');
  });
});
