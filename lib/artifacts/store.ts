// The content-addressed artifact store: an artifact is the bytes of a deploy's tree (a tar.gz), a
// build's output or a database backup, named by their sha256. Machines fetch artifacts by digest
// and verify them, so the store never needs to be trusted for integrity, only for availability.
// Two implementations: a directory (this file; the API's own disk, a shared volume when replicated)
// and an S3-compatible object store (s3-store.ts, docs/decisions/0038-object-store.md).
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export const digestPattern = /^sha256:[a-f0-9]{64}$/;

export class UploadTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`upload larger than ${limit} bytes`);
  }
}

export interface StagedUpload {
  /** A temporary file holding the bytes; remove it with discard() or hand it to put(). */
  file: string;
  digest: string;
  size: number;
  discard(): Promise<void>;
}

/** What the API needs of an artifact store, whichever keeps the bytes. */
export interface ArtifactStore {
  /** Streams `body` into a temporary local file while hashing it, refusing more than `limit` bytes. */
  stage(body: Readable, limit: number): Promise<StagedUpload>;
  stageBytes(bytes: Buffer): Promise<StagedUpload>;
  /** Keeps a staged upload under its digest (a no-op when it is there already). */
  put(staged: StagedUpload): Promise<void>;
  has(digest: string): Promise<boolean>;
  /** The artifact's bytes and size, or undefined when the store lacks it. */
  open(digest: string): Promise<{ stream: Readable; size: number } | undefined>;
  /** The artifact's size, or undefined when the store lacks it. */
  size(digest: string): Promise<number | undefined>;
  /** Every stored artifact with its size and when it was written (the collector's listing). */
  list(): Promise<Array<{ digest: string; bytes: number; writtenAt: Date }>>;
  /** Deletes an artifact (the collector's, once no account holds it). */
  remove(digest: string): Promise<void>;
  /** Deletes staged uploads written before `before` (left by a process that ended mid-upload); answers how many. */
  removeStaleStaged(before: Date): Promise<number>;
  /** A local file with a stored artifact's bytes, for reading it in place (kind detection, image layers). */
  localFile(digest: string): Promise<string>;
}

export class DirectoryArtifactStore implements ArtifactStore {
  constructor(private readonly dir: string) {}

  private pathOf(digest: string): string {
    if (!digestPattern.test(digest)) throw new Error(`not an artifact digest: ${digest}`);
    return path.join(this.dir, 'sha256', digest.slice('sha256:'.length));
  }

  async stage(body: Readable, limit: number): Promise<StagedUpload> {
    const tmpDir = path.join(this.dir, 'tmp');
    await mkdir(tmpDir, { recursive: true });
    const file = path.join(tmpDir, `${Date.now()}-${randomBytes(6).toString('hex')}`);
    const hash = createHash('sha256');
    let size = 0;
    const discard = () => rm(file, { force: true });
    try {
      await pipeline(
        body,
        async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            size += chunk.length;
            if (size > limit) throw new UploadTooLarge(limit);
            hash.update(chunk);
            yield chunk;
          }
        },
        createWriteStream(file, { mode: 0o600 }),
      );
    } catch (err) {
      await discard();
      throw err;
    }
    return { file, digest: `sha256:${hash.digest('hex')}`, size, discard };
  }

  async stageBytes(bytes: Buffer): Promise<StagedUpload> {
    const { Readable } = await import('node:stream');
    return this.stage(Readable.from([bytes]), Number.MAX_SAFE_INTEGER);
  }

  async put(staged: StagedUpload): Promise<void> {
    const target = this.pathOf(staged.digest);
    if (await this.has(staged.digest)) return staged.discard();
    await mkdir(path.dirname(target), { recursive: true });
    // rename is atomic: a reader sees the whole artifact or none.
    await rename(staged.file, target);
  }

  async has(digest: string): Promise<boolean> {
    return stat(this.pathOf(digest)).then(
      () => true,
      () => false,
    );
  }

  async open(digest: string): Promise<{ stream: Readable; size: number } | undefined> {
    const file = this.pathOf(digest);
    const info = await stat(file).catch(() => undefined);
    if (!info) return undefined;
    return { stream: createReadStream(file), size: info.size };
  }

  async size(digest: string): Promise<number | undefined> {
    return (await stat(this.pathOf(digest)).catch(() => undefined))?.size;
  }

  async list(): Promise<Array<{ digest: string; bytes: number; writtenAt: Date }>> {
    const dir = path.join(this.dir, 'sha256');
    const names = await readdir(dir).catch(() => [] as string[]);
    const found = [];
    for (const name of names) {
      const digest = `sha256:${name}`;
      if (!digestPattern.test(digest)) continue;
      const info = await stat(path.join(dir, name)).catch(() => undefined);
      if (info?.isFile()) found.push({ digest, bytes: info.size, writtenAt: info.mtime });
    }
    return found;
  }

  async remove(digest: string): Promise<void> {
    await rm(this.pathOf(digest), { force: true });
  }

  async removeStaleStaged(before: Date): Promise<number> {
    const dir = path.join(this.dir, 'tmp');
    let removed = 0;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const file = path.join(dir, name);
      const info = await stat(file).catch(() => undefined);
      if (info && info.mtime < before) {
        await rm(file, { force: true });
        removed += 1;
      }
    }
    return removed;
  }

  async localFile(digest: string): Promise<string> {
    const file = this.pathOf(digest);
    if (!(await this.has(digest))) throw new Error(`artifact ${digest} is not in the store`);
    return file;
  }
}
