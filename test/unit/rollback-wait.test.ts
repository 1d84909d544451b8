// A rollback's wait for the controller's report on the App's current spec (api/deploys/actions.ts
// reportedOn): what the rollback steps back from is decided on the status that planned the newest
// deploy, not on one from before it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { reportedOn } from '../../api/deploys/actions.js';
import type { AppRecord } from '../../api/repositories/app-record.js';

const record = (observed: boolean, id = 'uid-1', generation = 2): AppRecord =>
  ({ id, name: 'shop', namespace: 'ns', generation, observed, spec: {}, status: undefined }) as unknown as AppRecord;

describe('a rollback’s wait for the controller', () => {
  it('goes on at once when the controller has reported on the spec', async () => {
    let reads = 0;
    const app = record(true);
    assert.equal(await reportedOn(app, async () => (reads++, app)), app);
    assert.equal(reads, 0);
  });

  it('reads the App again until the controller has reported on it, and decides on that one', async () => {
    let reads = 0;
    const reported = record(true);
    const started = performance.now();
    const app = await reportedOn(record(false), async () => (++reads < 4 ? record(false) : reported));
    assert.equal(app, reported);
    assert.equal(reads, 4);
    assert.ok(performance.now() - started < 1000);
  });

  it('waits no longer than it is given, then goes on with what it read', async () => {
    const last = record(false);
    const started = performance.now();
    const app = await reportedOn(record(false), async () => last, 200);
    const waited = performance.now() - started;
    assert.equal(app, last);
    assert.ok(waited >= 190 && waited < 1000, `${waited} ms`);
  });

  it('stops when the App is gone or made again under its name, with the one it had', async () => {
    const first = record(false);
    assert.equal(await reportedOn(first, async () => undefined), first);
    assert.equal(await reportedOn(first, async () => record(true, 'uid-2')), first);
  });
});
