// The local volumes' measure (local-volumes/usage.ts) counts what files take on disk, as du does:
// a sparse file its blocks, not its length; a file linked twice once; a file gone mid-walk nothing.
import assert from 'node:assert/strict';
import { linkSync, mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { diskUsage } from '../../local-volumes/usage.js';

describe('diskUsage', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-du-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('counts the blocks of files in nested directories, a hard-linked file once, a sparse file by what it holds', async () => {
    const empty = await diskUsage(root);
    mkdirSync(path.join(root, 'a/b'), { recursive: true });
    writeFileSync(path.join(root, 'a/b/data'), Buffer.alloc(4 << 20, 1));
    const withData = await diskUsage(root);
    assert.ok(withData - empty >= 4 << 20 && withData - empty < (4 << 20) + (256 << 10), `4 MiB written: ${withData - empty} more bytes`);
    linkSync(path.join(root, 'a/b/data'), path.join(root, 'a/again'));
    assert.equal(await diskUsage(root), withData, 'a second link takes no more room');
    writeFileSync(path.join(root, 'sparse'), '');
    truncateSync(path.join(root, 'sparse'), 1 << 30);
    assert.ok((await diskUsage(root)) - withData < 64 << 10, 'a 1 GiB hole takes no room');
  });

  it('answers 0 for a directory that is gone (a volume deleted meanwhile), rather than failing', async () => {
    assert.equal(await diskUsage(path.join(root, 'nothing-here')), 0);
  });
});
