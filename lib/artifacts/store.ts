// The content-addressed artifact store: an artifact is the bytes of a deploy's tree (a tar.gz),
// named by their sha256. Machines fetch artifacts by digest and verify them, so the store never
// needs to be trusted for integrity, only for availability. This implementation keeps them in a
// directory (a shared volume when the API runs replicated); an object store would implement the
// same interface.
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

export class ArtifactStore {
  constructor(private readonly dir: string) {}

  private pathOf(digest: string): string {
    if (!digestPattern.test(digest)) throw new Error(`not an artifact digest: ${digest}`);
    return path.join(this.dir, 'sha256', digest.slice('sha256:'.length));
  }

  /** Streams `body` into a temporary file while hashing it, refusing more than `limit` bytes. */
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

  /** Moves a staged upload into the store under its digest (a no-op when it is there already). */
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

  /** The artifact's bytes and size, or undefined when the store lacks it. */
  async open(digest: string): Promise<{ stream: Readable; size: number } | undefined> {
    const file = this.pathOf(digest);
    const info = await stat(file).catch(() => undefined);
    if (!info) return undefined;
    return { stream: createReadStream(file), size: info.size };
  }

  /** The artifact's size, or undefined when the store lacks it. */
  async size(digest: string): Promise<number | undefined> {
    return (await stat(this.pathOf(digest)).catch(() => undefined))?.size;
  }

  /** Every stored artifact with its size and when its file was written (the collector's listing). */
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

  /** Deletes an artifact (the collector's, once no account holds it). */
  async remove(digest: string): Promise<void> {
    await rm(this.pathOf(digest), { force: true });
  }

  /** Deletes staged uploads written before `before` (left by a process that ended mid-upload); answers how many. */
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

  /** A stored artifact's path, for reading it (kind detection) without copying. */
  fileOf(digest: string): string {
    return this.pathOf(digest);
  }
}
