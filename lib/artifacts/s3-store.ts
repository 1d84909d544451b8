// Artifacts kept in an S3-compatible object store (AWS S3, versitygw, MinIO, Ceph RGW, R2, ...):
// what every API replica shares without a ReadWriteMany volume (docs/decisions/0038-object-store.md).
// A directory store on the API's own disk stays in front of it: uploads are staged there while
// they are hashed and measured (an object is named by its digest, known only at the end), and
// what the API reads in place (an archive's kind, an image layer) is cached there. The objects
// are `<prefix>sha256/<hex>`: the directory store's layout, so a directory can be copied in
// (migrateDirectory below) and out with any S3 tool.
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { digestPattern, DirectoryArtifactStore, type ArtifactStore, type StagedUpload } from './store.js';

export interface ObjectStoreConfig {
  endpoint: string;
  bucket: string;
  region: string;
  /** Put before every object's name: empty, or segments each ending in `/`. */
  prefix: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `<endpoint>/<bucket>/<key>` rather than `<bucket>.<host>`: what self-hosted stores serve. */
  pathStyle: boolean;
}

const notFound = (err: unknown) =>
  err instanceof S3ServiceException && (err.$metadata.httpStatusCode === 404 || err.name === 'NotFound' || err.name === 'NoSuchKey');

export class S3ArtifactStore implements ArtifactStore {
  private readonly client: S3Client;
  private readonly cache: DirectoryArtifactStore;

  constructor(
    private readonly config: ObjectStoreConfig,
    cacheDir: string,
  ) {
    this.client = new S3Client({
      endpoint: config.endpoint,
      region: config.region,
      forcePathStyle: config.pathStyle,
      credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
      // The SDK's default checksums (CRC32 trailers on every PUT) are not implemented by every
      // S3-compatible store; the digest in the name is the integrity check that matters here.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
    this.cache = new DirectoryArtifactStore(cacheDir);
  }

  private keyOf(digest: string): string {
    if (!digestPattern.test(digest)) throw new Error(`not an artifact digest: ${digest}`);
    return `${this.config.prefix}sha256/${digest.slice('sha256:'.length)}`;
  }

  /** Makes the bucket when it is missing (the local platform's; a cloud's is made by its owner). */
  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.config.bucket }));
    } catch (err) {
      if (!notFound(err)) throw err;
      await this.client.send(new CreateBucketCommand({ Bucket: this.config.bucket }));
    }
  }

  stage(body: Readable, limit: number): Promise<StagedUpload> {
    return this.cache.stage(body, limit);
  }

  stageBytes(bytes: Buffer): Promise<StagedUpload> {
    return this.cache.stageBytes(bytes);
  }

  async put(staged: StagedUpload): Promise<void> {
    if ((await this.headSize(staged.digest)) === undefined) await this.upload(staged);
    // Kept in the cache too: the caller often reads it in place next (a build's image layer).
    await this.cache.put(staged);
  }

  private async upload(staged: StagedUpload): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.config.bucket,
        Key: this.keyOf(staged.digest),
        Body: createReadStream(staged.file),
        ContentLength: staged.size,
        ContentType: 'application/octet-stream',
      }),
    );
  }

  async has(digest: string): Promise<boolean> {
    return (await this.size(digest)) !== undefined;
  }

  private async headSize(digest: string): Promise<number | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.config.bucket, Key: this.keyOf(digest) }));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  /** The store is the truth: a cached copy of an object the collector removed elsewhere is not an answer. */
  async size(digest: string): Promise<number | undefined> {
    return this.headSize(digest);
  }

  async open(digest: string): Promise<{ stream: Readable; size: number } | undefined> {
    if (await this.cache.has(digest)) {
      if ((await this.headSize(digest)) === undefined) return undefined;
      return this.cache.open(digest);
    }
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.keyOf(digest) }));
      if (!(got.Body instanceof Readable)) throw new Error(`the object store answered ${digest} without a body`);
      return { stream: got.Body, size: got.ContentLength ?? 0 };
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  async list(): Promise<Array<{ digest: string; bytes: number; writtenAt: Date }>> {
    const found: Array<{ digest: string; bytes: number; writtenAt: Date }> = [];
    const prefix = `${this.config.prefix}sha256/`;
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const o of page.Contents ?? []) {
        const digest = `sha256:${(o.Key ?? '').slice(prefix.length)}`;
        if (digestPattern.test(digest)) found.push({ digest, bytes: o.Size ?? 0, writtenAt: o.LastModified ?? new Date(0) });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return found;
  }

  async remove(digest: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.keyOf(digest) }));
    await this.cache.remove(digest);
  }

  removeStaleStaged(before: Date): Promise<number> {
    return this.cache.removeStaleStaged(before);
  }

  async localFile(digest: string): Promise<string> {
    // The bucket first: a copy cached here of an object another replica's collector removed is no answer.
    if ((await this.headSize(digest)) === undefined) throw new Error(`artifact ${digest} is not in the store`);
    if (!(await this.cache.has(digest))) {
      const opened = await this.open(digest);
      if (!opened) throw new Error(`artifact ${digest} is not in the store`);
      const staged = await this.cache.stage(opened.stream, Number.MAX_SAFE_INTEGER);
      // The object store is not trusted for integrity: what it answered must be what was named.
      if (staged.digest !== digest) {
        await staged.discard();
        throw new Error(`the object store answered other bytes for ${digest} (${staged.digest})`);
      }
      await this.cache.put(staged);
    }
    return this.cache.localFile(digest);
  }

  /**
   * Copies every artifact of a directory store (the layout DirectoryArtifactStore writes) into the
   * object store, skipping what is there already: the move from a shared volume to a bucket. Each
   * file is hashed on the way, and a file whose bytes are not its name is reported, not copied.
   */
  async migrateDirectory(
    dir: string,
    progress: (line: string) => void = () => undefined,
  ): Promise<{ copied: number; present: number; refused: string[] }> {
    const result = { copied: 0, present: 0, refused: [] as string[] };
    const from = path.join(dir, 'sha256');
    const names = (await readdir(from).catch(() => [] as string[])).sort();
    const source = new DirectoryArtifactStore(dir);
    for (const [i, name] of names.entries()) {
      const digest = `sha256:${name}`;
      const file = path.join(from, name);
      if (!digestPattern.test(digest) || !(await stat(file).catch(() => undefined))?.isFile()) continue;
      if ((await this.headSize(digest)) !== undefined) {
        result.present += 1;
        continue;
      }
      const staged = await source.stage(createReadStream(file), Number.MAX_SAFE_INTEGER);
      try {
        if (staged.digest !== digest) {
          result.refused.push(`${file}: its bytes are ${staged.digest}`);
          continue;
        }
        await this.upload(staged);
        result.copied += 1;
        progress(`${i + 1}/${names.length} ${digest} ${staged.size} bytes`);
      } finally {
        await staged.discard();
      }
    }
    return result;
  }

  close(): void {
    this.client.destroy();
  }
}

/** The API's artifact store as configured: the object store when one is given, else the directory. */
export function artifactStoreOf(config: { artifactDir: string; objectStore?: ObjectStoreConfig | undefined }): ArtifactStore {
  return config.objectStore ? new S3ArtifactStore(config.objectStore, config.artifactDir) : new DirectoryArtifactStore(config.artifactDir);
}
