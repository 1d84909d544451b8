// A local volume's own filesystem (local-volumes/filesystem.ts): the claim's size read as the
// provisioner reads it, and (as root, which mounting needs) the whole life of one: made at the
// claim's size, empty, full with ENOSPC past it, measured within the size, made again without
// harm, removed with its image.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { claimBytes, imageOf, isMounted, makeFilesystem, removeFilesystem, usedBytes } from '../../local-volumes/filesystem.js';

const MiB = 1024 ** 2;

describe('local volume filesystems', () => {
  it('reads the sizes claims are written in', () => {
    assert.equal(claimBytes('16Mi'), 16 * MiB);
    assert.equal(claimBytes('1Gi'), 1024 * MiB);
    assert.equal(claimBytes('500M'), 500e6);
    assert.equal(claimBytes('1073741824'), 1024 * MiB);
    assert.equal(claimBytes('1.5Gi'), undefined);
    assert.equal(claimBytes('lots'), undefined);
  });

  it(
    'makes a filesystem of the size, full past it, measured within it, and removes it',
    { skip: process.getuid?.() !== 0 && 'mounting needs root' },
    async () => {
      const root = await mkdtemp(path.join(os.tmpdir(), 'svc-volume-'));
      const dir = path.join(root, 'pvc-test');
      try {
        await makeFilesystem(dir, 16 * MiB);
        assert.ok(await isMounted(dir));
        assert.deepEqual(await readdir(dir), [], 'a new volume is empty (no lost+found)');
        await makeFilesystem(dir, 16 * MiB); // again: nothing changes
        await assert.rejects(writeFile(path.join(dir, 'fill'), Buffer.alloc(20 * MiB)), { code: 'ENOSPC' });
        const used = await usedBytes(dir);
        assert.ok(used > 12 * MiB && used <= 16 * MiB, `used ${used}`);
        assert.ok((await stat(imageOf(dir))).blocks * 512 <= 16 * MiB, 'the host holds at most the size');
        await removeFilesystem(dir);
        assert.equal(existsSync(dir) || existsSync(imageOf(dir)), false);
      } finally {
        if (await isMounted(dir)) await removeFilesystem(dir);
        await rm(root, { recursive: true, force: true });
      }
    },
  );
});
