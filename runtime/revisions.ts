// The revisions a runtime machine holds: the artifact it serves and the last few it served, each
// fetched, verified and extracted into a directory of its own under the site root
// (`revs/<hex>/`, its archive kept beside the tree), and the one site handler requests go to.
// A content swap (runtime/control.ts) prepares the new revision aside, builds its handler, and
// only then moves the one pointer requests read: a request is served wholly by the handler it
// started on. A swap that fails leaves the served revision as it was. A container that restarts
// comes back on the revision the last order it served names (runtime/control.ts keeps it), its
// tree built again from its verified archive (a tree handler code could have changed is never
// trusted).
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { artifactMarker } from '../lib/contract.js';
import type { Logger } from '../lib/logger.js';
import { digestPattern } from '../lib/artifacts/store.js';
import { fetchArtifact, restoreKept, writeAtomically, type FetchOptions } from './fetch.js';
import type { SiteHandler } from './static-site.js';

/**
 * A revision's site handler. One that runs the app's code in a process of its own (a handler tree:
 * runtime/handler-process.ts) is `ready` once that process serves, and `exclusive`: the app's code
 * can write what the next revision is made from, so the next is prepared only once this one is
 * stopped (its requests finished within `drainMs`, every process of the app's code ended).
 */
export type ServedSite = SiteHandler & { ready?: Promise<void>; exclusive?: boolean; stop?: (drainMs: number) => Promise<void> };

/** Where an artifact comes from: its digest, URL and credential, and how long to retry. */
export type Source = Pick<FetchOptions, 'url' | 'digest' | 'token' | 'deadlineMs'>;

export class SiteRevisions {
  private served: { digest: string; site: ServedSite } | undefined;
  /** Digests most recently served first; the first `keep` stay on disk. */
  private recent: string[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  /** While an exclusive revision is switched from: settles once requests can go to a revision again. */
  private held: Promise<void> | undefined;

  private readonly keep: number;
  private readonly drainMs: number;
  private readonly onLost: (reason: string) => void;

  /**
   * `keep`: how many revisions stay on disk (the one served among them); `drainMs`: how long an
   * exclusive revision may finish its requests before it is stopped for the next (default 5 s);
   * `onLost`: called when an exclusive revision was stopped and neither the next nor it again can
   * serve (the machine has nothing to serve: the runtime ends, and the container restarts).
   */
  constructor(
    private readonly root: string,
    private readonly make: (dir: string) => ServedSite,
    private readonly log: Logger,
    opts: { keep?: number; drainMs?: number; onLost?: (reason: string) => void } = {},
  ) {
    this.keep = opts.keep ?? 3;
    this.drainMs = opts.drainMs ?? 5000;
    this.onLost = opts.onLost ?? ((reason) => log.error({ reason }, 'No revision to serve'));
  }

  /**
   * The handler of the revision served now; while an exclusive revision is switched from, one that
   * waits for the switch and is served by the revision switched to.
   */
  get site(): SiteHandler {
    if (!this.served) throw new Error('no revision is served yet');
    const held = this.held;
    if (held) return (req, res) => held.then(() => this.site(req, res));
    return this.served.site;
  }

  get digest(): string | undefined {
    return this.served?.digest;
  }

  /**
   * The revision to serve at start: `resume` (the revision served before this container
   * restarted, as a verified order names it), rebuilt from its kept archive, else `named` (the pod
   * spec's), fetched.
   */
  async start(named: Source, resume?: string): Promise<'present' | 'restored' | 'fetched'> {
    if (resume && resume !== named.digest && digestPattern.test(resume)) {
      if (await restoreKept(this.dirOf(resume), resume, this.log)) {
        await this.activate(resume);
        return 'restored';
      }
      this.log.warn({ digest: resume }, 'The revision served before the restart is gone; fetching the one the machine was made with');
    }
    const how = await fetchArtifact({ ...named, root: this.dirOf(named.digest), keep: true, log: this.log });
    await this.activate(named.digest);
    return how;
  }

  /**
   * Serves `source` from now on, once it is fetched (or rebuilt from a revision kept here),
   * verified and its handler made; one swap at a time. A failure (FetchError) changes nothing.
   */
  swap(source: Source): Promise<{ digest: string; how: 'serving' | 'restored' | 'fetched' | 'present'; ms: number }> {
    const run = async () => {
      const started = Date.now();
      if (this.served?.digest === source.digest) return { digest: source.digest, how: 'serving' as const, ms: 0 };
      // Room first: with the one fetched, no more than `keep` revisions are on disk at any time.
      await this.prune([source.digest, ...this.recent.slice(0, this.keep - 1)]);
      const fetch = () => fetchArtifact({ ...source, root: this.dirOf(source.digest), keep: true, log: this.log });
      const how = await fetch();
      if (this.served?.site.exclusive) await this.switchExclusively(source.digest, fetch);
      else await this.activate(source.digest);
      const ms = Date.now() - started;
      this.log.info({ digest: source.digest, how, ms }, 'Serving a new revision');
      return { digest: source.digest, how, ms };
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * From a revision that runs the app's code to `digest`, with nothing of the first running while
   * the second is prepared: requests are held (not refused) from the moment the first stops taking
   * them until the second serves. Its tree is extracted again from its verified archive once the
   * first has stopped, whatever was written into it meanwhile. If it cannot be made to serve, the
   * first is made again the same way and serves on (failing that, onLost).
   */
  private async switchExclusively(digest: string, fetch: () => Promise<unknown>): Promise<void> {
    const previous = this.served!;
    let release!: () => void;
    this.held = new Promise<void>((resolve) => (release = resolve));
    try {
      await previous.site.stop?.(this.drainMs);
      try {
        await fetch();
        await this.activate(digest);
      } catch (err) {
        const back = await restoreKept(this.dirOf(previous.digest), previous.digest, this.log)
          .then((restored) => (restored ? this.activate(previous.digest).then(() => undefined) : 'its archive is gone or changed'))
          .catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
        if (back !== undefined) this.onLost(`${previous.digest}, stopped for a swap that failed, cannot serve again: ${back}`);
        throw err;
      }
    } finally {
      this.held = undefined;
      release();
    }
  }

  private dirOf(digest: string): string {
    return path.join(this.root, 'revs', digest.slice('sha256:'.length));
  }

  /**
   * Makes `digest`'s handler the one requests go to once it is ready (a handler that cannot be
   * made ready changes nothing), says so on disk, and lets go of old revisions.
   */
  private async activate(digest: string): Promise<void> {
    const site = this.make(this.dirOf(digest));
    try {
      await site.ready;
    } catch (err) {
      await site.stop?.(0);
      throw err;
    }
    this.served = { digest, site };
    this.recent = [digest, ...this.recent.filter((d) => d !== digest)].slice(0, this.keep);
    // The digest in place, for a fetch that finds it already there after a restart (runtime/fetch.ts presentDigest).
    await writeAtomically(path.join(this.root, artifactMarker), digest);
    await this.prune(this.recent);
  }

  /** Removes every revision directory but those of `digests` (never the one served). */
  private async prune(digests: readonly string[]): Promise<void> {
    const keep = new Set([...digests, ...(this.served ? [this.served.digest] : [])].map((d) => d.slice('sha256:'.length)));
    const revs = path.join(this.root, 'revs');
    for (const name of await readdir(revs).catch(() => [] as string[]))
      if (!keep.has(name)) await rm(path.join(revs, name), { recursive: true, force: true });
  }
}
