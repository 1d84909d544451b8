// Artifacts are gzip-compressed tar archives of a site tree. Everything that reads one treats it as
// hostile: an archive comes from a tenant upload, so it is validated entry by entry (paths, kinds of
// entry, counts and sizes) before anything is believed or written, and extraction writes only
// regular files and directories strictly inside the destination.
//
// Decompression is done here rather than by tar's own sniffing so that only gzip is accepted and
// so that nothing after the end-of-archive marker is buffered (tar's parser keeps such trailing
// bytes in memory, which a small gzip bomb could exploit).
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createGunzip, gzip } from 'node:zlib';
import * as tar from 'tar';

export interface TreeLimits {
  maxFiles: number;
  maxBytes: number;
  maxPathLength: number;
}

export const defaultTreeLimits: TreeLimits = Object.freeze({
  maxFiles: 10_000,
  maxBytes: 512 * 1024 * 1024,
  maxPathLength: 1024,
});

/** A refusal of an archive or tree; the message is meant for the tenant. */
export class TreeError extends Error {
  override name = 'TreeError';
}

export interface TreeEntry {
  /** Normalized relative POSIX path: no leading "./" or "/". */
  path: string;
  size: number;
}

const gzipAsync = promisify(gzip);

/**
 * The normalized relative form of an archive or tree path, or a TreeError. `dir` admits the
 * archive's own root ("." or "./"), returned as "".
 */
function normalizePath(raw: string, limits: TreeLimits, dir = false): string {
  const shown = JSON.stringify(raw.length > 200 ? raw.slice(0, 200) + '…' : raw);
  if (raw.length > limits.maxPathLength * 4)
    throw new TreeError(`path ${shown} in archive is longer than ${limits.maxPathLength} characters`);
  // Control characters and backslashes have no business in a web tree and confuse other tools.
  if (/[\u0000-\u001f\u007f\\]/.test(raw)) throw new TreeError(`unsafe path ${shown} in archive`);
  if (raw.startsWith('/') || /^[a-zA-Z]:/.test(raw)) throw new TreeError(`absolute path ${shown} in archive`);
  const segments = raw.split('/');
  if (segments.includes('..')) throw new TreeError(`unsafe path ${shown} in archive`);
  const rel = segments.filter((s) => s !== '' && s !== '.').join('/');
  if (rel === '') {
    if (dir) return '';
    throw new TreeError(`empty path ${shown} in archive`);
  }
  if (rel.length > limits.maxPathLength) throw new TreeError(`path ${shown} in archive is longer than ${limits.maxPathLength} characters`);
  return rel;
}

/** Counts, sizes and the shape of the tree as entries arrive: duplicates and file/directory clashes. */
class TreeCheck {
  readonly files: TreeEntry[] = [];
  private readonly fileSet = new Set<string>();
  private readonly dirSet = new Set<string>();
  private bytes = 0;

  constructor(private readonly limits: TreeLimits) {}

  private addParents(rel: string): void {
    for (let i = rel.indexOf('/'); i !== -1; i = rel.indexOf('/', i + 1)) this.addDir(rel.slice(0, i));
  }

  private addDir(rel: string): void {
    if (this.dirSet.has(rel)) return;
    if (this.fileSet.has(rel)) throw new TreeError(`path "${rel}" in archive is both a file and a directory`);
    this.dirSet.add(rel);
    // Directories cost inodes too; bound them like files.
    if (this.dirSet.size > this.limits.maxFiles) throw new TreeError(`archive holds more than ${this.limits.maxFiles} directories`);
  }

  dir(rel: string): void {
    if (rel === '') return;
    this.addParents(rel);
    this.addDir(rel);
  }

  file(rel: string, size: number): TreeEntry {
    if (this.fileSet.has(rel)) throw new TreeError(`duplicate path "${rel}" in archive`);
    if (this.dirSet.has(rel)) throw new TreeError(`path "${rel}" in archive is both a file and a directory`);
    this.addParents(rel);
    this.fileSet.add(rel);
    if (this.fileSet.size > this.limits.maxFiles) throw new TreeError(`archive holds more than ${this.limits.maxFiles} files`);
    this.bytes += size;
    if (this.bytes > this.limits.maxBytes) throw new TreeError(`archive unpacks to more than ${this.limits.maxBytes} bytes`);
    const entry = { path: rel, size };
    this.files.push(entry);
    return entry;
  }
}

// ---------------------------------------------------------------------------------------------
// Packing

const textEncoder = new TextEncoder();

function octal(value: number, width: number): string {
  // width includes the terminating NUL
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, type: '0' | '5' | 'x', size: number, mode: number): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0, 100, 'utf8');
  block.write(octal(mode, 8), 100, 'ascii');
  block.write(octal(0, 8), 108, 'ascii');
  block.write(octal(0, 8), 116, 'ascii');
  block.write(octal(size, 12), 124, 'ascii');
  block.write(octal(0, 12), 136, 'ascii');
  block.write('        ', 148, 'ascii');
  block.write(type, 156, 'ascii');
  block.write('ustar\u000000', 257, 'ascii');
  let sum = 0;
  for (const b of block) sum += b;
  block.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return block;
}

function padding(size: number): Buffer {
  return Buffer.alloc((512 - (size % 512)) % 512);
}

/** Header blocks for one entry; a pax header carries names that ustar's 100 bytes cannot. */
function entryHeaders(name: string, type: '0' | '5', size: number, mode: number): Buffer[] {
  const bytes = textEncoder.encode(name).length;
  // Non-ASCII names also go through pax, which defines them as UTF-8.
  if (bytes <= 100 && /^[\x20-\x7e]*$/.test(name)) return [header(name, type, size, mode)];
  const body = `path=${name}\n`;
  let length = Buffer.byteLength(body) + 2;
  while (Buffer.byteLength(`${length} ${body}`) !== length) length = Buffer.byteLength(`${length} ${body}`);
  const record = Buffer.from(`${length} ${body}`, 'utf8');
  const fallback = Buffer.from(name, 'utf8')
    .subarray(0, 100)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return [header('PaxHeader', 'x', record.length, 0o644), record, padding(record.length), header(fallback, type, size, mode)];
}

/**
 * Deterministic tar.gz of the files: sorted paths, mtime 0, mode 0644 (dirs 0755), no owner names;
 * same files => same bytes. Validates paths like listTarball (throws TreeError).
 */
export async function packTree(files: Record<string, string | Uint8Array>): Promise<Buffer> {
  const check = new TreeCheck(defaultTreeLimits);
  const contents = new Map<string, Buffer>();
  for (const [raw, content] of Object.entries(files)) {
    const rel = normalizePath(raw, defaultTreeLimits);
    const bytes =
      typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    check.file(rel, bytes.length);
    contents.set(rel, bytes);
  }
  const dirs = new Set<string>();
  for (const rel of contents.keys()) {
    for (let i = rel.indexOf('/'); i !== -1; i = rel.indexOf('/', i + 1)) dirs.add(rel.slice(0, i) + '/');
  }
  // A directory's name with its slash sorts before everything inside it.
  const names = [...dirs, ...contents.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const blocks: Buffer[] = [];
  for (const name of names) {
    const bytes = contents.get(name);
    if (bytes === undefined) {
      blocks.push(...entryHeaders(name, '5', 0, 0o755));
    } else {
      blocks.push(...entryHeaders(name, '0', bytes.length, 0o644), bytes, padding(bytes.length));
    }
  }
  blocks.push(Buffer.alloc(1024));
  // Node's gzip writes mtime 0 and no file name in its header, so the output depends on the input only.
  return gzipAsync(Buffer.concat(blocks), { level: 9 });
}

// ---------------------------------------------------------------------------------------------
// Reading

type OnFile = (entry: tar.ReadEntry, item: TreeEntry) => Promise<void> | undefined;
type OnDir = (rel: string) => void;

function toTreeError(err: unknown): Error {
  if (err instanceof TreeError) return err;
  const code = (err as { code?: string } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || /unexpected end of file|incorrect header check/i.test(message)) {
    return new TreeError('archive is not a valid gzip stream (corrupt or truncated)');
  }
  if (typeof code === 'string' && code.startsWith('TAR_')) {
    return new TreeError(`archive is not a valid tar archive: ${message.replace(/^TAR_[A-Z_]+: /, '')}`);
  }
  return err instanceof Error ? err : new Error(message);
}

async function requireGzip(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    if (bytesRead < 2 || buffer[0] !== 0x1f || buffer[1] !== 0x8b) throw new TreeError('archive is not a gzip-compressed tar (tar.gz)');
  } finally {
    await handle.close();
  }
}

/**
 * One validating pass over a tar.gz file. Every entry is checked before its callback runs; the
 * first refusal stops the pass, and the returned promise rejects with it once writers are done.
 */
async function scan(file: string, limits: TreeLimits, onFile?: OnFile, onDir?: OnDir): Promise<TreeEntry[]> {
  await requireGzip(file);
  const check = new TreeCheck(limits);
  // Headers, pax records and padding are bounded per entry, so this caps a gzip bomb's output.
  const maxTarBytes = limits.maxBytes + 4096 * (2 * limits.maxFiles + 16);
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const pending: Promise<void>[] = [];
  // Entries a callback is still consuming: if the pass stops, they would wait forever for data.
  const active = new Set<tar.ReadEntry>();
  const fail = (err: unknown) => {
    failure ??= toTreeError(err);
    wake?.();
  };
  let eof = false;
  const parser = new tar.Parser({
    strict: true,
    zstd: false,
    brotli: false,
    maxMetaEntrySize: 16 * 1024,
    onReadEntry(entry) {
      if (failure) {
        entry.resume();
        return;
      }
      try {
        const kind = entry.type;
        if (kind === 'Directory') {
          const rel = normalizePath(entry.path, limits, true);
          check.dir(rel);
          if (rel) onDir?.(rel);
        } else if (kind === 'File' || kind === 'OldFile' || kind === 'ContiguousFile') {
          const item = check.file(normalizePath(entry.path, limits), entry.size);
          const writing = onFile?.(entry, item);
          if (writing) {
            active.add(entry);
            pending.push(
              writing
                .catch((err: unknown) => {
                  fail(err);
                  entry.resume();
                })
                .finally(() => active.delete(entry)),
            );
            return;
          }
        } else {
          const what =
            kind === 'SymbolicLink'
              ? 'symlink'
              : kind === 'Link'
                ? 'hard link'
                : kind === 'CharacterDevice' || kind === 'BlockDevice'
                  ? 'device'
                  : kind === 'FIFO'
                    ? 'FIFO'
                    : `${kind} entry`;
          throw new TreeError(`${what} ${JSON.stringify(entry.path)} in archive is not allowed (only files and directories)`);
        }
      } catch (err) {
        fail(err);
      }
      entry.resume();
    },
  });
  parser.on('ignoredEntry', (entry: tar.ReadEntry) =>
    fail(new TreeError(`unsupported entry ${JSON.stringify(entry.path)} (${entry.type}) in archive`)),
  );
  parser.on('error', fail);
  parser.on('eof', () => {
    eof = true;
  });
  const ended = new Promise<void>((resolve) => parser.once('end', resolve));

  const gunzip = createGunzip();
  const input = createReadStream(file);
  input.on('error', (err) => gunzip.destroy(err));
  input.pipe(gunzip);
  let total = 0;
  let first = true;
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      if (first && chunk.length >= 2 && chunk[0] === 0x1f && chunk[1] === 0x8b) {
        throw new TreeError('archive is not a gzip-compressed tar (tar.gz): it is compressed twice');
      }
      first = false;
      total += chunk.length;
      if (total > maxTarBytes) throw new TreeError(`archive unpacks to more than ${limits.maxBytes} bytes`);
      if (!parser.write(chunk) && !failure && !eof) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          parser.once('drain', resolve);
        });
        wake = undefined;
      }
      if (failure) throw failure;
      if (eof) break;
    }
    parser.end();
    await Promise.race([ended, new Promise<void>((resolve) => (wake = resolve))]);
    if (failure) throw failure;
    await Promise.all(pending);
    // The entry callbacks may have set it meanwhile (narrowing above cannot see them).
    const late = failure as Error | undefined;
    if (late) throw late;
  } catch (err) {
    fail(err);
    input.destroy();
    gunzip.destroy();
    for (const entry of active) entry.destroy(failure);
    await Promise.allSettled(pending);
    throw failure ?? err;
  }
  input.destroy();
  gunzip.destroy();
  return check.files;
}

/**
 * Lists the regular files of a tar.gz file on disk. Throws TreeError for: not a gzip tar, absolute
 * paths, "..", symlinks/hardlinks/devices, too many files, too many bytes, too-long paths,
 * duplicate paths. Directories are allowed but not listed.
 */
export async function listTarball(file: string, limits: TreeLimits = defaultTreeLimits): Promise<TreeEntry[]> {
  return scan(file, limits);
}

/**
 * Reads the contents of the files whose path satisfies `want` (each at most maxFileBytes, larger
 * ones are skipped), for kind detection. Same validation as listTarball.
 */
export async function readTarballFiles(
  file: string,
  want: (path: string) => boolean,
  maxFileBytes = 1024 * 1024,
): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  await scan(file, defaultTreeLimits, (entry, item) => {
    if (item.size > maxFileBytes || !want(item.path)) return undefined;
    return new Promise<void>((resolve, reject) => {
      const chunks: Buffer[] = [];
      entry.on('data', (c: Buffer) => chunks.push(c));
      entry.on('error', reject);
      entry.on('end', () => {
        found.set(item.path, Buffer.concat(chunks));
        resolve();
      });
    });
  });
  return found;
}

/** Extracts into dest (created if missing) with the same validation; never writes outside dest. */
export async function extractTarball(file: string, dest: string, limits: TreeLimits = defaultTreeLimits): Promise<TreeEntry[]> {
  // Validate the whole archive first, so that a refused archive leaves nothing behind.
  await scan(file, limits);
  await mkdir(dest, { recursive: true });
  const root = await realpath(dest);
  const safeDirs = new Set<string>(['']);

  // Creates rel's directory chain one level at a time, refusing anything already there that is
  // not a real directory (a symlink planted in dest must not lead the write elsewhere).
  const ensureDir = async (rel: string): Promise<void> => {
    if (safeDirs.has(rel)) return;
    const parent = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
    await ensureDir(parent);
    const target = path.join(root, ...rel.split('/'));
    try {
      await mkdir(target, { mode: 0o755 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const s = await lstat(target);
      if (!s.isDirectory()) throw new TreeError(`cannot extract: "${rel}" exists in the destination and is not a directory`);
    }
    safeDirs.add(rel);
  };

  const writeFile = async (entry: tar.ReadEntry, item: TreeEntry): Promise<void> => {
    const rel = item.path;
    const parent = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
    await ensureDir(parent);
    const target = path.join(root, ...rel.split('/'));
    if (!target.startsWith(root + path.sep)) throw new TreeError(`unsafe path "${rel}" in archive`);
    // Written under a fresh name, then renamed: O_EXCL never follows a planted symlink, and
    // rename replaces a link rather than writing through it.
    const temp = path.join(path.dirname(target), `.svc-tmp-${randomBytes(6).toString('hex')}`);
    const handle = await open(temp, 'wx', 0o644);
    try {
      // The stream owns the handle and closes it; 'close' means the bytes are handed to the kernel.
      const out = handle.createWriteStream();
      await new Promise<void>((resolve, reject) => {
        out.on('error', reject);
        entry.on('error', reject);
        out.on('close', () => (out.errored ? reject(out.errored) : resolve()));
        entry.pipe(out);
      });
    } catch (err) {
      await handle.close().catch(() => undefined);
      await rm(temp, { force: true });
      throw err;
    }
    try {
      await rename(temp, target);
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      if ((err as NodeJS.ErrnoException).code === 'EISDIR' || (err as NodeJS.ErrnoException).code === 'ENOTEMPTY') {
        throw new TreeError(`cannot extract: "${rel}" exists in the destination and is a directory`);
      }
      throw err;
    }
  };

  // Second pass writes; it validates again rather than trusting the file not to have changed.
  const dirs: string[] = [];
  return scan(file, limits, writeFile, (rel) => dirs.push(rel)).then(async (files) => {
    for (const rel of dirs) await ensureDir(rel);
    return files;
  });
}
