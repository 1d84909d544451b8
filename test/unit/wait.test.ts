import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually } from '../support/wait.js';

describe('eventually', () => {
  it('returns the first value the check gives', async () => {
    let n = 0;
    assert.equal(await eventually('three', () => (++n === 3 ? n : undefined), { intervalMs: 1 }), 3);
  });

  it('says on timeout what was awaited, the last error, and what `detail` last saw', async () => {
    let seen = 0;
    await assert.rejects(
      eventually(
        'the impossible',
        () => {
          seen++;
          throw new Error('not yet');
        },
        { timeoutMs: 20, intervalMs: 5, detail: () => `checked ${seen > 0 ? 'at least once' : 'never'}` },
      ),
      /^Error: timed out after 20 ms waiting for the impossible: last error not yet; checked at least once$/,
    );
  });
});
