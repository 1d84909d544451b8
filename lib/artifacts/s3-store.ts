// Artifacts kept in an S3-compatible object store (AWS S3, versitygw, MinIO, Ceph RGW, R2, ...):
// what every API replica shares without a ReadWriteMany volume (docs/decisions/0038-object-store.md).
// A directory store on the API's own disk stays in front of it: uploads are staged there while
// they are hashed and measured (an object is named by its digest, known only at the end), and
// what the API reads (to serve it, or in place: an archive's kind, an image layer) is cached there
// once its bytes are checked against its name: the store is trusted to keep bytes, never to say
// what they are. The cache holds what was read lately (removeStaleStaged, the collector's, drops
// the rest). The objects are `<prefix>sha256/<hex>`: the directory store's layout, so a directory
// can be copied in (migrateDirectory below) and out with any S3 tool.
import { createReadStream } from 'node:fs';
import { readdir, stat, utimes } from 'node:fs/promises';
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
  type BucketLocationConstraint,
} from '@aws-sdk/client-s3';
import { digestPattern, DirectoryArtifactStore, UploadTooLarge, type ArtifactStore, type StagedUpload } from './store.js';

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

/** The bucket's object under an artifact's name is not that artifact (other bytes, or more of them). */
export class ArtifactCorrupt extends Error {}

const notFound = (err: unknown) =>
  err instanceof S3ServiceException && (err.$metadata.httpStatusCode === 404 || err.name === 'NotFound' || err.name === 'NoSuchKey');

/** What a store's refusal says, for a person: S3's code and the HTTP status (a HEAD's refusal has no body, so no message). */
export function describeStoreError(err: unknown): string {
  if (!(err instanceof S3ServiceException)) return err instanceof Error ? err.message : String(err);
  const status = err.$metadata.httpStatusCode;
  const what = err.name !== 'Unknown' && err.name !== 'UnknownError' ? `${err.name}: ${err.message}` : 'refused';
  const hint =
    status === 403 ? ': the key pair is wrong or may not use this bucket' : status === 301 ? ': the bucket is in another region' : '';
  return `${what} (HTTP ${status ?? 'no answer'}${hint})`;
}

/** Attempts at a PUT: the SDK cannot send a consumed file stream again, so the retries are ours, each with a fresh one. */
const putAttempts = 3;

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
      // A store that stops answering fails the request (and the upload holding the account's lock)
      // rather than hanging it.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 120_000 },
    });
    this.cache = new DirectoryArtifactStore(cacheDir);
  }

  private keyOf(digest: string): string {
    if (!digestPattern.test(digest)) throw new Error(`not an artifact digest: ${digest}`);
    return `${this.config.prefix}sha256/${digest.slice('sha256:'.length)}`;
  }

  /** Makes the bucket when it is missing (the local platform's; a cloud's is usually made by its owner). */
  async ensureBucket(): Promise<void> {
    await this.makeBucket().catch((err: unknown) => {
      throw new Error(`the bucket ${this.config.bucket} at ${this.config.endpoint} cannot be used: ${describeStoreError(err)}`, {
        cause: err,
      });
    });
  }

  private async makeBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.config.bucket }));
      return;
    } catch (err) {
      if (!notFound(err)) throw err;
    }
    try {
      await this.client.send(
        new CreateBucketCommand({
          Bucket: this.config.bucket,
          // AWS makes a bucket outside us-east-1 only when told its region.
          ...(this.config.region !== 'us-east-1'
            ? { CreateBucketConfiguration: { LocationConstraint: this.config.region as BucketLocationConstraint } }
            : {}),
        }),
      );
    } catch (err) {
      // Another replica made it between the two requests.
      if (!(err instanceof S3ServiceException && err.name === 'BucketAlreadyOwnedByYou')) throw err;
    }
  }

  stage(body: Readable, limit: number): Promise<StagedUpload> {
    return this.cache.stage(body, limit);
  }

  stageBytes(bytes: Buffer): Promise<StagedUpload> {
    return this.cache.stageBytes(bytes);
  }

  async put(staged: StagedUpload): Promise<void> {
    try {
      // An object of another size under the name is not the artifact (planted, or cut short): replaced.
      if ((await this.headSize(staged.digest)) !== staged.size) await this.upload(staged);
    } finally {
      await staged.discard();
    }
  }

  private async upload(staged: Pick<StagedUpload, 'digest' | 'file' | 'size'>): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      const body = createReadStream(staged.file);
      try {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.config.bucket,
            Key: this.keyOf(staged.digest),
            Body: body,
            ContentLength: staged.size,
            ContentType: 'application/octet-stream',
          }),
        );
        return;
      } catch (err) {
        const status = err instanceof S3ServiceException ? err.$metadata.httpStatusCode : undefined;
        const transient = status === undefined || status >= 500 || status === 429;
        if (!transient || attempt >= putAttempts) throw err;
        await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
      } finally {
        body.destroy();
      }
    }
  }

  async has(digest: string): Promise<boolean> {
    return (await this.headSize(digest)) !== undefined;
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
  size(digest: string): Promise<number | undefined> {
    return this.headSize(digest);
  }

  /** Only bytes checked against the name are answered (machines check again; a database restore does not). */
  async open(digest: string): Promise<{ stream: Readable; size: number } | undefined> {
    return (await this.verifiedFile(digest)) === undefined ? undefined : this.cache.open(digest);
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

  /** Staged uploads left behind, and cached copies not read since `before` (the bucket keeps them). */
  async removeStaleStaged(before: Date): Promise<number> {
    const removed = await this.cache.removeStaleStaged(before);
    for (const cached of await this.cache.list()) if (cached.writtenAt < before) await this.cache.remove(cached.digest);
    return removed;
  }

  async localFile(digest: string): Promise<string> {
    const file = await this.verifiedFile(digest);
    if (file === undefined) throw new Error(`artifact ${digest} is not in the store`);
    return file;
  }

  /**
   * A cached file of the artifact, fetched and checked against its name when not cached yet;
   * undefined when the bucket does not have it (asked first: a copy cached here of an object
   * another replica's collector removed is no answer, and is dropped).
   */
  private async verifiedFile(digest: string): Promise<string | undefined> {
    const size = await this.headSize(digest);
    if (size === undefined) {
      await this.cache.remove(digest);
      return undefined;
    }
    if (!(await this.cache.has(digest))) {
      let got;
      try {
        got = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.keyOf(digest) }));
      } catch (err) {
        if (notFound(err)) return undefined;
        throw err;
      }
      if (!(got.Body instanceof Readable)) throw new Error(`the object store answered ${digest} without a body`);
      // No more than the store said it holds: a planted object cannot fill this disk.
      const staged = await this.cache.stage(got.Body, size).catch((err: unknown) => {
        if (err instanceof UploadTooLarge) throw new ArtifactCorrupt(`the object store answered more than ${size} bytes for ${digest}`);
        throw err;
      });
      if (staged.digest !== digest) {
        await staged.discard();
        throw new ArtifactCorrupt(`the object store answered other bytes for ${digest} (${staged.digest})`);
      }
      await this.cache.put(staged);
    }
    const file = await this.cache.localFile(digest);
    // Kept while it is read: removeStaleStaged drops copies not read for the collector's grace.
    const now = new Date();
    await utimes(file, now, now).catch(() => undefined);
    return file;
  }

  /**
   * Copies every artifact of a directory store (the layout DirectoryArtifactStore writes) into the
   * object store, skipping what is there already: the move from a shared volume to a bucket. Each
   * file is hashed on the way (staged in the cache: the source may be read-only), and a file whose
   * bytes are not its name is reported, not copied. A directory without sha256/ is refused: a
   * mistyped path or a claim not mounted must not read as "nothing to copy".
   */
  async migrateDirectory(
    dir: string,
    progress: (line: string) => void = () => undefined,
  ): Promise<{ copied: number; present: number; refused: string[] }> {
    const result = { copied: 0, present: 0, refused: [] as string[] };
    const from = path.join(dir, 'sha256');
    const names = (
      await readdir(from).catch((err: unknown) => {
        throw new Error(`${dir} is not a directory of artifacts (${err instanceof Error ? err.message : String(err)})`);
      })
    ).sort();
    for (const [i, name] of names.entries()) {
      const digest = `sha256:${name}`;
      const file = path.join(from, name);
      if (!digestPattern.test(digest) || !(await stat(file).catch(() => undefined))?.isFile()) continue;
      if ((await this.headSize(digest)) !== undefined) {
        result.present += 1;
        continue;
      }
      const staged = await this.cache.stage(createReadStream(file), Number.MAX_SAFE_INTEGER);
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
