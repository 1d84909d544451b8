// The artifact tarball library against real archives: its own, the system tar's, and hostile ones
// crafted header by header.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar';
import {
  defaultTreeLimits,
  extractTarball,
  listTarball,
  packTree,
  readTarballFiles,
  TreeError,
  type TreeLimits,
} from '../../lib/artifacts/tarball.js';
import { scratchDir } from '../support/scratch.js';

const work = scratchDir('svc-tarball-');
let n = 0;
const fileOf = (bytes: Buffer) => {
  const file = path.join(work, `a${n++}.tgz`);
  writeFileSync(file, bytes);
  return file;
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** One raw ustar header block; fields the test does not name are zero or empty. */
function rawHeader(name: string, type: string, size = 0, extra: { linkname?: string; mode?: number; checksum?: boolean } = {}): Buffer {
  const b = Buffer.alloc(512);
  b.write(name, 0, 100, 'utf8');
  b.write((extra.mode ?? 0o644).toString(8).padStart(7, '0') + '\0', 100);
  b.write('0000000\0', 108);
  b.write('0000000\0', 116);
  b.write(size.toString(8).padStart(11, '0') + '\0', 124);
  b.write('00000000000\0', 136);
  b.write('        ', 148);
  b.write(type, 156);
  if (extra.linkname) b.write(extra.linkname, 157, 100);
  b.write('ustar\u000000', 257);
  let sum = 0;
  for (const x of b) sum += x;
  if (extra.checksum !== false) b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return b;
}
function rawFile(name: string, content: string): Buffer[] {
  const body = Buffer.from(content);
  return [rawHeader(name, '0', body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512)];
}
const archive = (...blocks: (Buffer | Buffer[])[]) => fileOf(gzipSync(Buffer.concat([...blocks.flat(), Buffer.alloc(1024)])));

async function refused(file: string, pattern: RegExp, limits?: TreeLimits): Promise<void> {
  await assert.rejects(listTarball(file, limits), (err: unknown) => {
    assert.ok(err instanceof TreeError, `a TreeError, not ${String(err)}`);
    assert.match(err.message, pattern);
    return true;
  });
  const dest = path.join(work, `refused-${n++}`);
  await assert.rejects(extractTarball(file, dest, limits), TreeError);
  assert.deepEqual(existsSync(dest) ? readdirSync(dest) : [], [], 'a refused archive leaves nothing behind');
}

describe('artifact tarballs', () => {
  const tree = {
    'index.html': '<h1>home</h1>',
    'css/site.css': 'body{}',
    './docs/guide/intro.md': '# Intro',
    'empty.txt': '',
    'bin.dat': new Uint8Array([0, 1, 2, 255]),
    [`${'deep/'.repeat(30)}ünïcode name.txt`]: 'long',
  };

  it('packs deterministically: same files, same bytes, whatever the insertion order', async () => {
    const a = await packTree(tree);
    const b = await packTree(Object.fromEntries(Object.entries(tree).reverse()));
    assert.equal(sha(a), sha(b));
    assert.notEqual(sha(await packTree({ ...tree, 'index.html': '<h1>other</h1>' })), sha(a));
    assert.equal(a[0], 0x1f);
    assert.equal(a[1], 0x8b);
  });

  it('round-trips pack → list → extract, and the system tar reads what it packs', async () => {
    const file = fileOf(await packTree(tree));
    const listed = await listTarball(file);
    const expected = [
      { path: 'bin.dat', size: 4 },
      { path: 'css/site.css', size: 6 },
      { path: `${'deep/'.repeat(30)}ünïcode name.txt`, size: 4 },
      { path: 'docs/guide/intro.md', size: 7 },
      { path: 'empty.txt', size: 0 },
      { path: 'index.html', size: 13 },
    ];
    assert.deepEqual(listed, expected);
    const dest = path.join(work, 'out');
    assert.deepEqual(await extractTarball(file, dest), expected);
    assert.equal(readFileSync(path.join(dest, 'docs/guide/intro.md'), 'utf8'), '# Intro');
    assert.deepEqual([...readFileSync(path.join(dest, 'bin.dat'))], [0, 1, 2, 255]);
    assert.equal(readFileSync(path.join(dest, 'deep/'.repeat(30), 'ünïcode name.txt'), 'utf8'), 'long');
    assert.deepEqual(readdirSync(dest).sort(), ['bin.dat', 'css', 'deep', 'docs', 'empty.txt', 'index.html'], 'no temporary files left');

    const verbose = execFileSync('tar', ['-tvzf', file], { encoding: 'utf8' });
    assert.match(verbose, /-rw-r--r-- 0\/0 +13 1970-01-01 00:00 index\.html/);
    assert.match(verbose, /drwxr-xr-x 0\/0 +0 1970-01-01 00:00 css\//);
    const sys = path.join(work, 'sys-out');
    mkdirSync(sys);
    execFileSync('tar', ['-xzf', file, '-C', sys]);
    assert.equal(readFileSync(path.join(sys, 'deep/'.repeat(30), 'ünïcode name.txt'), 'utf8'), 'long');
  });

  it('accepts an archive made by the system tar -czf, with its leading ./', async () => {
    const src = path.join(work, 'src');
    mkdirSync(path.join(src, 'img'), { recursive: true });
    writeFileSync(path.join(src, 'index.html'), 'hi');
    writeFileSync(path.join(src, 'img/a.svg'), '<svg/>');
    const file = path.join(work, 'sys.tgz');
    execFileSync('tar', ['-czf', file, '-C', src, '.']);
    assert.match(execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }), /^\.\/$/m);
    const listed = await listTarball(file);
    assert.deepEqual(listed.map((e) => e.path).sort(), ['img/a.svg', 'index.html']);
    const dest = path.join(work, 'sys-extracted');
    await extractTarball(file, dest);
    assert.equal(readFileSync(path.join(dest, 'img/a.svg'), 'utf8'), '<svg/>');
  });

  it('reads chosen small files for kind detection', async () => {
    const file = fileOf(await packTree({ 'index.html': 'x', 'compose.yaml': 'services: {}', 'big.md': 'y'.repeat(5000), 'a.md': 'ok' }));
    const got = await readTarballFiles(file, (p) => /\.(md|yaml)$/.test(p), 1000);
    assert.deepEqual([...got.keys()].sort(), ['a.md', 'compose.yaml']);
    assert.equal(got.get('compose.yaml')!.toString(), 'services: {}');
  });

  it('refuses what is not a gzip-compressed tar', async () => {
    await refused(fileOf(Buffer.from('just text')), /not a gzip-compressed tar/);
    await refused(fileOf(Buffer.concat([rawHeader('a', '0'), Buffer.alloc(1024)])), /not a gzip-compressed tar/);
    await refused(fileOf(gzipSync('hello, not a tar, but long enough? no.')), /not a valid tar archive/);
    await refused(fileOf(gzipSync(gzipSync(Buffer.concat([...rawFile('a', 'b'), Buffer.alloc(1024)])))), /compressed twice/);
    await refused(fileOf(Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3])), /not a valid gzip stream/);
    const whole = gzipSync(Buffer.concat([...rawFile('a.txt', 'x'.repeat(5000)), Buffer.alloc(1024)]));
    await refused(fileOf(whole.subarray(0, whole.length - 20)), /not a valid gzip stream|truncated/i);
    await refused(archive(rawHeader('a.txt', '0', 0, { checksum: false })), /not a valid tar archive/);
    // Cut off while a wanted file is being read: refused, not left waiting for the rest.
    const random = randomBytes(300_000);
    const zipped = gzipSync(Buffer.concat([rawHeader('a.md', '0', random.length), random, Buffer.alloc(1024)]));
    const cut = fileOf(zipped.subarray(0, zipped.length >> 1));
    await assert.rejects(
      readTarballFiles(cut, () => true),
      /not a valid gzip stream/,
    );
    // A header promising more bytes than follow.
    await refused(
      fileOf(gzipSync(Buffer.concat([rawHeader('a.txt', '0', 4096), Buffer.alloc(512)]))),
      /not a valid tar archive|truncated/i,
    );
  });

  it('refuses absolute paths and paths that climb out', async () => {
    await refused(archive(rawFile('/etc/passwd', 'x')), /absolute path "\/etc\/passwd"/);
    await refused(archive(rawFile('../x', 'x')), /unsafe path "\.\.\/x" in archive/);
    await refused(archive(rawFile('a/../../x', 'x')), /unsafe path/);
    await refused(archive(rawFile('./a/..', 'x')), /unsafe path/);
    await refused(archive(rawFile('a\\..\\..\\x', 'x')), /unsafe path/);
    // Built with the tar package too, which writes what it is told when preservePaths is set.
    const src = path.join(work, 'tarpkg');
    mkdirSync(src, { recursive: true });
    writeFileSync(path.join(src, 'f'), 'f');
    const file = path.join(work, 'tarpkg.tgz');
    await tar.c({ gzip: true, file, cwd: src, preservePaths: true, portable: true }, [path.join(src, 'f')]);
    await refused(file, /absolute path/);
  });

  it('refuses links, devices and other special entries', async () => {
    await refused(archive(rawHeader('evil', '2', 0, { linkname: '/etc/passwd' })), /symlink "evil" in archive is not allowed/);
    await refused(archive(rawFile('a', 'x'), rawHeader('b', '1', 0, { linkname: 'a' })), /hard link "b"/);
    await refused(archive(rawHeader('tty', '3')), /device "tty"/);
    await refused(archive(rawHeader('disk', '4')), /device "disk"/);
    await refused(archive(rawHeader('pipe', '6')), /FIFO "pipe"/);
    await refused(archive(rawHeader('weird', 'V')), /unsupported entry|not allowed/);
    // A symlink archived by the tar package from a real tree.
    const src = path.join(work, 'linktree');
    mkdirSync(src, { recursive: true });
    writeFileSync(path.join(src, 'index.html'), 'x');
    symlinkSync('/etc/passwd', path.join(src, 'passwd'));
    const file = path.join(work, 'link.tgz');
    await tar.c({ gzip: true, file, cwd: src, portable: true }, ['.']);
    await refused(file, /symlink "\.\/passwd"/);
  });

  it('refuses duplicates and a path that is both a file and a directory', async () => {
    await refused(archive(rawFile('a.txt', '1'), rawFile('./a.txt', '2')), /duplicate path "a\.txt"/);
    await refused(archive(rawFile('a', '1'), rawFile('a/b', '2')), /both a file and a directory/);
    await refused(archive(rawHeader('d/', '5'), rawFile('d', '2')), /both a file and a directory/);
  });

  it('refuses too many files, too many bytes, too-long paths', async () => {
    const small: TreeLimits = { maxFiles: 3, maxBytes: 100, maxPathLength: 20 };
    const four = fileOf(await packTree({ a: '1', b: '2', c: '3', d: '4' }));
    await refused(four, /more than 3 files/, small);
    assert.equal((await listTarball(four)).length, 4, 'within the default limits');
    await refused(fileOf(await packTree({ a: 'x'.repeat(60), b: 'y'.repeat(60) })), /more than 100 bytes/, small);
    await refused(fileOf(await packTree({ [`${'x'.repeat(15)}/${'y'.repeat(10)}`]: '1' })), /longer than 20 characters/, small);
    await assert.rejects(packTree({ [`${'x'.repeat(defaultTreeLimits.maxPathLength)}.txt`]: '1' }), /longer than 1024 characters/);
    // A gzip bomb: a few kilobytes that unpack to far more than the limit.
    const bomb = fileOf(
      gzipSync(Buffer.concat([rawHeader('zeros', '0', 10 * 1024 * 1024), Buffer.alloc(10 * 1024 * 1024), Buffer.alloc(1024)])),
    );
    await refused(bomb, /more than 100 bytes/, small);
  });

  it('packTree refuses unsafe names the same way', async () => {
    await assert.rejects(packTree({ '../x': '1' }), TreeError);
    await assert.rejects(packTree({ '/x': '1' }), /absolute path/);
    await assert.rejects(packTree({ a: '1', './a': '2' }), /duplicate path/);
    await assert.rejects(packTree({ a: '1', 'a/b': '2' }), /both a file and a directory/);
    await assert.rejects(packTree({ '': '1' }), /empty path/);
  });

  it('never writes through a symlink already in the destination', async () => {
    const outside = path.join(work, 'outside');
    mkdirSync(outside);
    const dest = path.join(work, 'planted');
    mkdirSync(dest);
    symlinkSync(outside, path.join(dest, 'css'));
    symlinkSync(path.join(outside, 'victim'), path.join(dest, 'index.html'));
    const file = fileOf(await packTree({ 'index.html': 'new', 'css/x.css': 'x' }));
    await assert.rejects(extractTarball(file, dest), /"css" exists in the destination and is not a directory/);
    assert.deepEqual(readdirSync(outside), []);
    const other = fileOf(await packTree({ 'index.html': 'new' }));
    await extractTarball(other, dest);
    assert.equal(readFileSync(path.join(dest, 'index.html'), 'utf8'), 'new', 'the link is replaced, not followed');
    assert.deepEqual(readdirSync(outside), []);
  });
});
