// How the CLI writes sizes and tables (cli/table.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatBytes, table } from '../../cli/table.js';

describe('CLI formatting', () => {
  it('writes bytes in binary units, one decimal below 10', () => {
    assert.deepEqual([0, 512, 8192, 1536 * 1024, 64 << 20, 10 * 1024 ** 3 + 1].map(formatBytes), [
      '0 B',
      '512 B',
      '8 KiB',
      '1.5 MiB',
      '64 MiB',
      '10 GiB',
    ]);
  });

  it('pads columns to their widest cell', () => {
    assert.deepEqual(
      table([
        ['A', 'LONGER'],
        ['wide cell', 'x'],
      ]),
      ['A          LONGER', 'wide cell  x'],
    );
  });
});
