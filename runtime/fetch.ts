// Fetches an artifact, verifies it against the digest the pod spec names, and extracts it into a
// root (an emptyDir): a machine's runtime before it serves (runtime/main.ts, keeping the archive to
// rebuild the tree from at each start), a build's source container (`fetch`). The store is trusted
// for availability only: bytes that do not hash to the digest are refused.
//
// Env: SVC_ARTIFACT_URL (http(s) URL of the artifact), SVC_ARTIFACT_DIGEST (sha256:<64 hex>),
// SVC_ARTIFACT_TOKEN (the credential the App controller minted for this digest, sent as a bearer
// token: lib/artifacts/credential.ts), SVC_SITE_ROOT (destination directory),
// SVC_FETCH_DEADLINE_MS (how long transient failures are retried, default 30000), SVC_LOG_LEVEL.
//
// Run again on the same root (a container restarted while its pod's sandbox survived), it finds
// the marker of a completed extraction of the same digest and is done, or, keeping the archive,
// checks it and rebuilds the tree from it, without a request.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { pathToFileURL } from 'node:url';
import { digestPattern } from '../lib/artifacts/store.js';
import { defaultTreeLimits, extractTarball } from '../lib/artifacts/tarball.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { artifactMarker, reservedPrefix } from './static-site.js';

export interface FetchOptions {
  url: string;
  digest: string;
  /** The artifact credential, sent as `Authorization: Bearer`. */
  token?: string;
  root: string;
  /** Transient failures are retried until this long after the first attempt. */
  deadlineMs?: number;
  /** First pause between attempts; doubles up to maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** No response headers, or no body bytes, for this long fails the attempt. */
  idleMs?: number;
  /** Refuse downloads larger than this. */
  maxBytes?: number;
  /**
   * Keep the verified archive in the root (`.svc-archive`, never served) and, on a later run, build
   * the tree again from it once its hash is checked, rather than trust a tree someone may have
   * changed since: a machine's runtime, whose root its own handler code can write.
   */
  keep?: boolean;
  log?: Logger;
}

/** A failed fetch; `transient` ones (unreachable, 5xx, cut off) are worth another attempt. */
export class FetchError extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

/** The options of SVC_* variables, or an Error naming what is wrong. */
export function optionsFromEnv(env: Record<string, string | undefined>): FetchOptions {
  const url = env.SVC_ARTIFACT_URL ?? '';
  const digest = env.SVC_ARTIFACT_DIGEST ?? '';
  const root = env.SVC_SITE_ROOT ?? '';
  const problems: string[] = [];
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) problems.push('SVC_ARTIFACT_URL must be an http(s) URL');
  if (!digestPattern.test(digest)) problems.push('SVC_ARTIFACT_DIGEST must be sha256:<64 lowercase hex>');
  if (!root) problems.push('SVC_SITE_ROOT must name the destination directory');
  const deadlineMs = env.SVC_FETCH_DEADLINE_MS === undefined ? undefined : Number(env.SVC_FETCH_DEADLINE_MS);
  if (deadlineMs !== undefined && !(Number.isFinite(deadlineMs) && deadlineMs >= 0))
    problems.push('SVC_FETCH_DEADLINE_MS must be milliseconds');
  if (problems.length) throw new Error(problems.join('; '));
  const token = env.SVC_ARTIFACT_TOKEN || undefined;
  return { url, digest, root, ...(token ? { token } : {}), ...(deadlineMs === undefined ? {} : { deadlineMs }) };
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  const detail = cause instanceof Error ? ((cause as NodeJS.ErrnoException).code ?? cause.message) : undefined;
  return detail ? `${err.message} (${detail})` : err.message;
}

/** One download of `url` into `file`, hashing as it streams; returns the digest and size. */
export async function downloadOnce(
  url: string,
  file: string,
  opts: { idleMs?: number; maxBytes?: number; token?: string; onProgress?: (bytes: number) => void } = {},
): Promise<{ digest: string; bytes: number }> {
  const idleMs = opts.idleMs ?? 15_000;
  const maxBytes = opts.maxBytes ?? defaultTreeLimits.maxBytes;
  const abort = new AbortController();
  let idle = setTimeout(() => abort.abort(new Error(`no response for ${idleMs} ms`)), idleMs);
  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => abort.abort(new Error(`no data for ${idleMs} ms`)), idleMs);
  };
  try {
    let res: Response;
    try {
      // A redirect to another origin drops the Authorization header (fetch does): the credential
      // goes only where the App said to fetch.
      res = await fetch(url, {
        signal: abort.signal,
        redirect: 'follow',
        ...(opts.token ? { headers: { authorization: `Bearer ${opts.token}` } } : {}),
      });
    } catch (err) {
      throw new FetchError(`cannot reach ${url}: ${describe(err)}`, true);
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      throw new FetchError(`${url} answered ${res.status} ${res.statusText}`.trim(), res.status >= 500 || !res.body);
    }
    touch();
    const hash = createHash('sha256');
    let bytes = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        if (bytes > maxBytes) {
          done(new FetchError(`artifact is larger than ${maxBytes} bytes`, false));
          return;
        }
        hash.update(chunk);
        touch();
        opts.onProgress?.(bytes);
        done(null, chunk);
      },
    });
    try {
      await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), meter, createWriteStream(file, { mode: 0o600 }));
    } catch (err) {
      if (err instanceof FetchError) throw err;
      throw new FetchError(`download from ${url} broke off after ${bytes} bytes: ${describe(err)}`, true);
    }
    return { digest: `sha256:${hash.digest('hex')}`, bytes };
  } finally {
    clearTimeout(idle);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Downloads with retries of transient failures, then checks the digest. */
export async function downloadVerified(opts: FetchOptions, file: string): Promise<{ bytes: number; ms: number; attempts: number }> {
  const deadlineMs = opts.deadlineMs ?? 30_000;
  const maxBackoffMs = opts.maxBackoffMs ?? 4_000;
  let backoff = opts.backoffMs ?? 250;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    let lastLogged = Date.now();
    try {
      const got = await downloadOnce(opts.url, file, {
        ...(opts.idleMs === undefined ? {} : { idleMs: opts.idleMs }),
        ...(opts.maxBytes === undefined ? {} : { maxBytes: opts.maxBytes }),
        ...(opts.token === undefined ? {} : { token: opts.token }),
        onProgress: (bytes) => {
          if (Date.now() - lastLogged < 1000) return;
          lastLogged = Date.now();
          opts.log?.info({ bytes, ms: lastLogged - started }, 'Downloading artifact');
        },
      });
      const ms = Date.now() - started;
      if (got.digest !== opts.digest) {
        throw new FetchError(
          `artifact digest mismatch: expected ${opts.digest}, got ${got.digest} (${got.bytes} bytes from ${opts.url})`,
          false,
        );
      }
      opts.log?.info({ bytes: got.bytes, ms, attempts: attempt }, 'Downloaded and verified artifact');
      return { bytes: got.bytes, ms, attempts: attempt };
    } catch (err) {
      await rm(file, { force: true });
      const transient = err instanceof FetchError && err.transient;
      const elapsed = Date.now() - started;
      if (!transient || elapsed + backoff > deadlineMs) {
        if (transient) throw new FetchError(`${(err as Error).message}; gave up after ${attempt} attempts in ${elapsed} ms`, true);
        throw err;
      }
      opts.log?.warn({ attempt, retryInMs: backoff, error: (err as Error).message }, 'Artifact download failed; retrying');
      await sleep(backoff);
      backoff = Math.min(backoff * 2, maxBackoffMs);
    }
  }
}

/** The digest whose extraction completed in root, if any. */
export async function presentDigest(root: string): Promise<string | undefined> {
  try {
    return (await readFile(path.join(root, artifactMarker), 'utf8')).trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes root hold exactly the artifact's tree, marked with its digest. Returns 'present' when an
 * earlier run had already done so.
 */
export async function fetchArtifact(opts: FetchOptions): Promise<'present' | 'restored' | 'fetched'> {
  const { root, log } = opts;
  if (!digestPattern.test(opts.digest)) throw new FetchError(`not an artifact digest: ${opts.digest}`, false);
  await mkdir(root, { recursive: true });
  const kept = path.join(root, keptArchive);
  if (opts.keep) {
    if (await restoreKept(root, opts.digest, log)) return 'restored';
  } else if ((await presentDigest(root)) === opts.digest) {
    log?.info({ digest: opts.digest, root }, 'Artifact already in place');
    return 'present';
  }
  // Whatever is there is a partial or older extraction: the tree must be exactly the artifact's.
  await clear(root);
  const download = path.join(root, `${reservedPrefix}download-${randomBytes(6).toString('hex')}`);
  log?.info({ url: opts.url, digest: opts.digest, root }, 'Fetching artifact');
  try {
    await downloadVerified(opts, download);
    await extractInto(download, root, opts.digest, log);
    if (opts.keep) {
      await rm(kept, { recursive: true, force: true });
      await rename(download, kept);
    }
  } finally {
    await rm(download, { force: true });
  }
  return 'fetched';
}

const keptArchive = `${reservedPrefix}archive`;

/**
 * Builds root's tree again from the archive kept there (`keep`), if that archive hashes to
 * `digest`: no request. False when there is no such archive (then nothing was changed).
 */
export async function restoreKept(root: string, digest: string, log?: Logger): Promise<boolean> {
  const kept = path.join(root, keptArchive);
  if ((await hashOf(kept)) !== digest) return false;
  // Read from a name no archive entry can know, and put back over whatever one extracted.
  const reading = path.join(root, `${reservedPrefix}restore-${randomBytes(6).toString('hex')}`);
  await rename(kept, reading);
  await clear(root, reading);
  await extractInto(reading, root, digest, log);
  await rm(kept, { recursive: true, force: true });
  await rename(reading, kept);
  log?.info({ digest, root }, 'Artifact restored from its kept archive');
  return true;
}

/** Empties root, but for `keep`. */
async function clear(root: string, keep?: string): Promise<void> {
  for (const name of await readdir(root))
    if (path.join(root, name) !== keep) await rm(path.join(root, name), { recursive: true, force: true });
}

/** The sha256 digest of a file, or undefined when there is none. */
async function hashOf(file: string): Promise<string | undefined> {
  const hash = createHash('sha256');
  try {
    await pipeline(createReadStream(file), hash);
  } catch {
    return undefined;
  }
  return `sha256:${hash.digest('hex')}`;
}

/** Extracts a verified archive into root, then marks root with its digest. */
async function extractInto(archive: string, root: string, digest: string, log: Logger | undefined): Promise<void> {
  const started = Date.now();
  const files = await extractTarball(archive, root);
  const bytes = files.reduce((n, f) => n + f.size, 0);
  log?.info({ files: files.length, bytes, ms: Date.now() - started }, 'Extracted artifact');
  // Last, and atomically: its presence means the tree is complete. The archive cannot have
  // planted something in its way that survives this.
  await writeAtomically(path.join(root, artifactMarker), digest);
}

/**
 * `content` and a newline into `file`, at once: a reader (or a crash) sees the old one or the new
 * one, never none nor half. What else is at that name (a directory an archive or app code made) is
 * replaced.
 */
export async function writeAtomically(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temp = `${file}-${randomBytes(6).toString('hex')}`;
  await writeFile(temp, content + '\n', { mode: 0o644 });
  try {
    await rename(temp, file);
  } catch {
    await rm(file, { recursive: true, force: true });
    await rename(temp, file);
  }
}

/** The init container's process: fetch per the environment, log, exit 0 or 1. */
export async function main(): Promise<void> {
  const levels = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
  const level = process.env.SVC_LOG_LEVEL ?? 'info';
  const log = createLogger('fetch', levels.has(level) ? (level as 'info') : 'info');
  let code = 0;
  try {
    const opts = optionsFromEnv(process.env);
    await fetchArtifact({ ...opts, log });
  } catch (err) {
    code = 1;
    const message = err instanceof Error ? err.message : String(err);
    log.error({ error: message }, `Cannot fetch the artifact: ${message}`);
  }
  await new Promise<void>((resolve) => log.flush(() => resolve()));
  process.exit(code);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
