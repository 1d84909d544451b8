// The console's folder packing (console/src/tarball.ts), read back by the API's own archive reader
// (lib/artifacts/tarball.ts), which is what a dropped folder meets.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listTarball, readTarballFiles } from '../../lib/artifacts/tarball.js';
import { isTarball, leftOut, tarGzip, treePaths, TreeError, ustarName, type TreeEntry } from '../../console/src/tarball.js';

const text = (path: string, content: string): TreeEntry => {
  const body = new TextEncoder().encode(content);
  return { path, size: body.length, mtimeMs: Date.UTC(2026, 10, 28), body };
};

describe('the console packs a folder as the API reads it', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'console-tar-'));
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  const packed = async (entries: TreeEntry[]) => {
    const file = path.join(dir, `t-${Math.random().toString(36).slice(2)}.tar.gz`);
    await writeFile(file, new Uint8Array(await (await tarGzip(entries)).arrayBuffer()));
    return file;
  };

  it('round-trips names long and short, UTF-8, empty files and files of exactly a block, from Blob parts too', async () => {
    const deep = `${'assets/'.repeat(18)}fonts/a-font-file-whose-own-name-is-long-enough-to-need-ustars-prefix-field.woff2`;
    assert.ok(new TextEncoder().encode(deep).length > 100);
    const block = 'x'.repeat(512);
    const entries = [
      text('index.html', '<h1>hello</h1>'),
      text('café/menü.html', 'ünïcode'),
      text('empty.txt', ''),
      text('block.txt', block),
      { path: deep, size: 3, mtimeMs: 0, body: new Blob(['abc']) },
    ];
    const file = await packed(entries);
    const listed = await listTarball(file);
    assert.deepEqual(listed.map((e) => [e.path, e.size]).sort(), entries.map((e) => [e.path, e.size]).sort());
    const read = await readTarballFiles(file, () => true);
    assert.equal(read.get('index.html')?.toString(), '<h1>hello</h1>');
    assert.equal(read.get('café/menü.html')?.toString(), 'ünïcode');
    assert.equal(read.get('block.txt')?.toString(), block);
    assert.equal(read.get(deep)?.toString(), 'abc');
  });

  it('splits a long path into prefix and name, and refuses what ustar cannot hold', () => {
    assert.deepEqual(ustarName('a/b.html'), { prefix: '', name: 'a/b.html' });
    const long = `${'d'.repeat(120)}/index.html`;
    assert.deepEqual(ustarName(long), { prefix: 'd'.repeat(120), name: 'index.html' });
    assert.throws(() => ustarName(`dir/${'n'.repeat(101)}`), TreeError);
    assert.throws(() => ustarName(`${'p'.repeat(160)}/index.html`), TreeError);
  });

  it('refuses the same path twice', async () => {
    await assert.rejects(tarGzip([text('a.html', '1'), text('a.html', '2')]), /twice/);
  });
});

describe("a dropped folder's paths", () => {
  it('are its contents when one folder is dropped, as svc deploy DIR sends them', () => {
    assert.deepEqual(treePaths(['site/index.html', 'site/css/a.css']), {
      kept: [
        { from: 'site/index.html', path: 'index.html' },
        { from: 'site/css/a.css', path: 'css/a.css' },
      ],
      left: 0,
    });
  });

  it('stay as they are for several things dropped together', () => {
    assert.deepEqual(
      treePaths(['index.html', 'css/a.css']).kept.map((k) => k.path),
      ['index.html', 'css/a.css'],
    );
  });

  it('leave out version control and desktop litter, counted', () => {
    const { kept, left } = treePaths(['site/index.html', 'site/.git/config', 'site/.git/objects/ab', 'site/img/.DS_Store']);
    assert.deepEqual(
      kept.map((k) => k.path),
      ['index.html'],
    );
    assert.equal(left, 3);
    assert.equal(leftOut('.github/workflows/ci.yml'), false, '.github is not .git');
  });

  it('refuse a path that climbs or is absolute', () => {
    assert.throws(() => treePaths(['../etc/passwd']), TreeError);
    assert.throws(() => treePaths(['/etc/passwd']), TreeError);
    assert.throws(() => treePaths(['a//b']), TreeError);
  });

  it('tell an archive by its name', () => {
    assert.ok(isTarball('site.tar.gz') && isTarball('SITE.TGZ'));
    assert.ok(!isTarball('site.zip') && !isTarball('tar.gz.html'));
  });
});
