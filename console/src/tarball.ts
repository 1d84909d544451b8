// A folder as the .tar.gz the API's deploy takes (POST /apps/{app}/deploy with Content-Type
// application/gzip, as `svc deploy` sends it): ustar headers (POSIX.1-1988, what tar and the API's
// reader take) around the files themselves as Blob parts, so the files are read from disk as they
// are gzipped by the browser's CompressionStream and never copied whole; the gzipped archive is
// held in memory until it is sent (XMLHttpRequest sends a Blob, for its progress). Written here:
// the small browser tar libraries (nanotar) truncate names past 100 bytes, the others need Node's
// streams. Pure but for the Blob and CompressionStream the browser and Node both have.

/** A file to pack: its path in the tree (`/`-separated, no leading `/`), its size and its bytes. */
export interface TreeEntry {
  path: string;
  size: number;
  /** Modification time in ms (the archive keeps whole seconds). */
  mtimeMs: number;
  body: Blob | Uint8Array<ArrayBuffer>;
}

export class TreeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TreeError';
  }
}

const block = 512;
const utf8 = new TextEncoder();

/** The path split into ustar's prefix (155 bytes) and name (100 bytes); a TreeError when it cannot be. */
export function ustarName(path: string): { prefix: string; name: string } {
  const bytes = (s: string) => utf8.encode(s).length;
  if (bytes(path) <= 100) return { prefix: '', name: path };
  // The last `/` that leaves a name of 100 bytes at most and a prefix of 155 at most.
  for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (bytes(name) > 100) break;
    if (bytes(prefix) <= 155 && name) return { prefix, name };
  }
  throw new TreeError(`${path}: too long a path for the archive (at most 100 bytes of file name under 155 of folders)`);
}

function field(header: Uint8Array, offset: number, length: number, value: string): void {
  const encoded = utf8.encode(value);
  if (encoded.length > length) throw new TreeError(`a header field of ${length} bytes cannot hold ${value}`);
  header.set(encoded, offset);
}

/** Octal, zero-padded to `digits`, then NUL: as tar writes numbers. */
const octal = (n: number, digits: number) => `${Math.trunc(n).toString(8).padStart(digits, '0')}\0`;

/** One file's 512-byte ustar header. */
export function ustarHeader(entry: Pick<TreeEntry, 'path' | 'size' | 'mtimeMs'>): Uint8Array<ArrayBuffer> {
  const { prefix, name } = ustarName(entry.path);
  if (!Number.isSafeInteger(entry.size) || entry.size < 0 || entry.size > 0o77777777777)
    throw new TreeError(`${entry.path}: a size of ${entry.size} bytes cannot be packed`);
  const h = new Uint8Array(block);
  field(h, 0, 100, name);
  field(h, 100, 8, octal(0o644, 7));
  field(h, 108, 8, octal(0, 7));
  field(h, 116, 8, octal(0, 7));
  field(h, 124, 12, octal(entry.size, 11));
  field(h, 136, 12, octal(Math.max(0, entry.mtimeMs / 1000), 11));
  field(h, 148, 8, '        ');
  field(h, 156, 1, '0');
  field(h, 257, 6, 'ustar\0');
  field(h, 263, 2, '00');
  field(h, 345, 155, prefix);
  const sum = h.reduce((a, b) => a + b, 0);
  field(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

/** The archive's parts, in order: each header, the file, its padding to 512 bytes; two empty blocks at the end. */
export function tarParts(entries: readonly TreeEntry[]): Array<Blob | Uint8Array<ArrayBuffer>> {
  const parts: Array<Blob | Uint8Array<ArrayBuffer>> = [];
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.path)) throw new TreeError(`${e.path}: twice in the tree`);
    seen.add(e.path);
    parts.push(ustarHeader(e), e.body);
    const pad = (block - (e.size % block)) % block;
    if (pad) parts.push(new Uint8Array(pad));
  }
  parts.push(new Uint8Array(block * 2));
  return parts;
}

/** The tree as a .tar.gz Blob (gzipped as it is read). */
export async function tarGzip(entries: readonly TreeEntry[]): Promise<Blob> {
  const tar = new Blob(tarParts(entries));
  return await new Response(tar.stream().pipeThrough(new CompressionStream('gzip'))).blob();
}

/** What a dropped folder leaves out, as version control and the desktop add it: `.git` and the like, `.DS_Store`, `Thumbs.db`. */
export function leftOut(path: string): boolean {
  const segments = path.split('/');
  const base = segments[segments.length - 1]!;
  return segments.some((s) => s === '.git' || s === '.hg' || s === '.svn') || base === '.DS_Store' || base === 'Thumbs.db';
}

/**
 * The paths as the deploy's tree: a single folder dropped or chosen (every path under one first
 * segment) is its contents, as `svc deploy DIR` sends DIR's; left-out files go; a path that climbs
 * or is absolute is refused.
 */
export function treePaths(paths: readonly string[]): { kept: Array<{ from: string; path: string }>; left: number } {
  const clean = paths.map((p) => p.replace(/\\/g, '/').replace(/^\.\//, ''));
  for (const p of clean) {
    if (p.startsWith('/') || p.split('/').some((s) => s === '..' || s === '')) throw new TreeError(`${p}: not a path inside the folder`);
  }
  const first = clean[0]?.split('/')[0];
  const oneFolder = clean.length > 0 && clean.every((p) => p.includes('/') && p.split('/')[0] === first);
  const kept: Array<{ from: string; path: string }> = [];
  let left = 0;
  clean.forEach((p, i) => {
    const path = oneFolder ? p.slice(first!.length + 1) : p;
    if (leftOut(path)) left++;
    else kept.push({ from: paths[i]!, path });
  });
  return { kept, left };
}

/** Whether a single file is itself an archive to send as it is. */
export const isTarball = (name: string) => /\.(tar\.gz|tgz)$/i.test(name);
