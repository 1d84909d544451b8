// What the API decides about builds: starting one (one way for every caller: POST /builds, an import,
// a push or a poll), what an uploaded tree may be (planned before it is kept: a tree with nothing to
// build is refused with the reason, not queued; then counted against the account's storage), which
// builds a caller sees, cancelling one that still runs, and reading its log. Handlers parse,
// authorize and present; the decisions are made here and raise domain errors (lib/errors.ts).
// A Git refusal (lib/builds/git.ts GitError) is the handlers' to translate (api/builds/git-error.ts).
import type { Readable } from 'node:stream';
import { listTarball, readTarballFiles, TreeError } from '../../lib/artifacts/tarball.js';
import { buildIdPattern, newBuildId, terminalPhases } from '../../lib/builds/index.js';
import { resolveRef, type RemoteOptions } from '../../lib/builds/git.js';
import { planBuild, PlanError, type SourceTree } from '../../lib/builds/plan.js';
import type { BuildSource, BuildRecord as StoredBuild, BuildStore } from '../../lib/builds/store.js';
import { DomainError } from '../../lib/errors.js';
import type { BuildSpec } from '../../lib/resources/index.js';
import type { AppRecord } from '../repositories/app-record.js';
import type { ApiDeps } from '../deps.js';
import type { BuildRecord, BuildRepository } from './repository.js';

/** Who a build is started for: an account's namespace, and who asked (null: nobody the records name). */
export interface BuildActor {
  accountId: string;
  namespace: string;
  createdBy: string | null;
}

/** What a build is made from: an uploaded tree kept as an artifact, or a commit of a Git repository. */
export type StartSource =
  | { artifact: { digest: string } }
  | { git: { url: string; ref: string; commit: string; path?: string | undefined; secretName?: string | undefined } };

export interface StartOptions {
  deploy: boolean;
  timeoutSeconds?: number | undefined;
}

/** A build as shown: its stored record, and its Build as cached when there still is one. */
export interface BuildView {
  stored: StoredBuild;
  live: BuildRecord | undefined;
}

/** An uploaded tree as staged (api/storage): a file, its digest, and the way to drop it. */
export type StagedTree = Awaited<ReturnType<ApiDeps['artifacts']['stage']>>;

/** Whether the caller's authority reaches an app's builds (a token restricted to apps sees its apps' only). */
export type SeesApp = (app: string) => boolean;

export interface StartDeps {
  builds: Pick<BuildRepository, 'create'>;
  store: Pick<BuildStore, 'create'>;
  settings: {
    /** Where this API serves stored artifacts: a builder fetches an upload there, and sends results to its origin. */
    artifactBaseUrl: string;
  };
  clock: () => Date;
}

export interface BuildActionDeps extends StartDeps {
  builds: Pick<BuildRepository, 'create' | 'record' | 'cancel' | 'untilRecord'>;
  store: Pick<BuildStore, 'create' | 'get' | 'list'>;
  /** A build's log stream (api/builds/logs.ts): its Pod's while it runs, its record's after. */
  logs: (build: StoredBuild, namespace: string, follow: boolean) => Readable;
  /** An uploaded tree, counted against the account's storage (quota_exceeded past it, nothing kept). */
  storage: Pick<ApiDeps['storage'], 'admit'>;
  git: {
    /** Keeps an app's Git token in a Secret of the account (the clone's only); answers its name. */
    secret: ApiDeps['builds']['gitSecret'];
    /** How a repository is reached (the egress guard's settings). */
    remote: (token: string | undefined) => RemoteOptions;
  };
  settings: StartDeps['settings'] & {
    /** Whether builds are served here at all (SVC_ARTIFACT_KEY set). */
    artifactKey: Buffer | undefined;
  };
}

/** A repository to build, as asked: resolved to a commit when the build is started. */
export interface GitSource {
  url: string;
  ref?: string | undefined;
  path?: string | undefined;
  token?: string | undefined;
}

/** The files whose contents decide a plan (the rest it sees by path). */
const decisive = new Set([
  'package.json',
  '.nvmrc',
  '.node-version',
  'requirements.txt',
  'pyproject.toml',
  'Pipfile',
  '.python-version',
  'runtime.txt',
  'Dockerfile',
]);

async function tarballTree(file: string): Promise<SourceTree> {
  const entries = await listTarball(file);
  const contents = await readTarballFiles(file, (p) => decisive.has(p), 1024 * 1024);
  return { paths: entries.map((e) => e.path), read: (p) => contents.get(p)?.toString('utf8') };
}

/**
 * Starts a build: its record first (with build.queued), then its Build object, owned by its App,
 * whose controller runs it. The one way for every caller (GitSync starts pushes' builds with it).
 */
export async function startBuild(
  d: StartDeps,
  actor: BuildActor,
  app: AppRecord,
  from: StartSource,
  o: StartOptions,
): Promise<{ id: string; created: BuildRecord }> {
  const id = newBuildId();
  const base = d.settings.artifactBaseUrl;
  const spec: BuildSpec = {
    app: app.name,
    source:
      'artifact' in from
        ? { artifact: { digest: from.artifact.digest, url: `${base}/${from.artifact.digest}` } }
        : {
            git: {
              url: from.git.url,
              ref: from.git.ref,
              commit: from.git.commit,
              ...(from.git.path ? { path: from.git.path } : {}),
              ...(from.git.secretName ? { secretName: from.git.secretName } : {}),
            },
          },
    deploy: o.deploy,
    // Results come back to this API's machine listener (any replica's: they share the store).
    resultsUrl: `${new URL(base).origin}/builds`,
    ...(o.timeoutSeconds ? { timeoutSeconds: o.timeoutSeconds } : {}),
  };
  // The record never names the token's Secret: it is the clone's business.
  const source: BuildSource =
    'artifact' in from
      ? { artifact: { digest: from.artifact.digest } }
      : {
          git: {
            url: from.git.url,
            ref: from.git.ref,
            commit: from.git.commit,
            ...(from.git.path ? { path: from.git.path } : {}),
          },
        };
  await d.store.create({
    id,
    accountId: actor.accountId,
    app: app.name,
    source,
    deploy: o.deploy,
    createdBy: actor.createdBy,
    createdAt: d.clock(),
  });
  const created = await d.builds.create(actor.namespace, id, app, spec);
  return { id, created };
}

export class BuildActions {
  constructor(private readonly d: BuildActionDeps) {}

  /** Whether builds are served here: without an artifact key no builder can fetch or send anything. */
  get served(): boolean {
    return !!this.d.settings.artifactKey;
  }

  /** Starts a build of `app` (see startBuild); answers its id and its Build as created. */
  start(actor: BuildActor, app: AppRecord, source: StartSource, o: StartOptions): Promise<{ id: string; created: BuildRecord }> {
    return startBuild(this.d, actor, app, source, o);
  }

  /** Starts a build and answers it as shown, its stored record with its Build as created. */
  async startShown(
    actor: BuildActor,
    app: AppRecord,
    source: StartSource,
    o: StartOptions,
  ): Promise<{ stored: StoredBuild; created: BuildRecord }> {
    const { id, created } = await this.start(actor, app, source, o);
    return { stored: (await this.d.store.get(actor.accountId, id))!, created };
  }

  /**
   * Builds an uploaded tree: planned first, so a tree with nothing to build is refused (and not
   * kept); then counted against the account's storage, and built.
   */
  async buildUpload(actor: BuildActor, app: AppRecord, staged: StagedTree, o: StartOptions): Promise<BuildView> {
    try {
      planBuild(await tarballTree(staged.file));
    } catch (err) {
      await staged.discard();
      if (err instanceof TreeError) throw new DomainError('invalid', `archive: ${err.message}`);
      if (err instanceof PlanError) throw new DomainError('invalid', `nothing can be built from this tree: ${err.message}`);
      throw err;
    }
    await this.d.storage.admit(actor.accountId, actor.namespace, staged, "the build's source");
    return this.started(actor, app, { artifact: { digest: staged.digest } }, o);
  }

  /** Builds a Git repository at its ref (the default branch when unset), resolved to a commit now; its token kept for the clone. */
  async buildGit(actor: BuildActor, app: AppRecord, git: GitSource, o: StartOptions): Promise<BuildView> {
    const resolved = await resolveRef(git.url, git.ref, this.d.git.remote(git.token));
    const secretName = git.token ? await this.d.git.secret(actor.namespace, app.name, git.token) : undefined;
    return this.started(actor, app, { git: { url: git.url, ref: resolved.ref, commit: resolved.commit, path: git.path, secretName } }, o);
  }

  private async started(actor: BuildActor, app: AppRecord, source: StartSource, o: StartOptions): Promise<BuildView> {
    const { id, created } = await this.start(actor, app, source, o);
    const stored = (await this.d.store.get(actor.accountId, id))!;
    return { stored, live: this.d.builds.record(actor.namespace, id) ?? created };
  }

  /** A build of the account whose app the caller sees; not found otherwise. */
  async get(actor: BuildActor, id: string, sees: SeesApp): Promise<BuildView> {
    const stored = buildIdPattern.test(id) ? await this.d.store.get(actor.accountId, id) : undefined;
    if (!stored) throw new DomainError('not_found', `build ${id} not found`);
    // A caller that does not see the app does not see that the build exists.
    if (!sees(stored.app)) throw new DomainError('not_found', `build ${id} not found`);
    return { stored, live: this.d.builds.record(actor.namespace, stored.id) };
  }

  /** The app's builds, newest first. */
  async list(actor: BuildActor, app: AppRecord, limit: number): Promise<BuildView[]> {
    const stored = await this.d.store.list(actor.accountId, app.name, limit);
    return stored.map((r) => ({ stored: r, live: this.d.builds.record(actor.namespace, r.id) }));
  }

  /** The build's log: followed while it runs when `follow`. */
  async logs(actor: BuildActor, id: string, sees: SeesApp, follow: boolean): Promise<Readable> {
    const { stored } = await this.get(actor, id, sees);
    return this.d.logs(stored, actor.namespace, follow);
  }

  /**
   * Cancels a build that still runs (a conflict once it ended, or when its Build is gone); answers
   * it once its Build shows Canceled, or as it is after 10 seconds.
   */
  async cancel(actor: BuildActor, id: string, sees: SeesApp): Promise<BuildView> {
    const { stored, live } = await this.get(actor, id, sees);
    const ns = actor.namespace;
    const phase = live?.phase ?? stored.phase;
    if (terminalPhases.has(phase))
      throw new DomainError('conflict', `build ${stored.id} has ended (${phase.toLowerCase()}): nothing to cancel`);
    if (!live || !(await this.d.builds.cancel(ns, stored.id, this.d.clock())))
      throw new DomainError('conflict', `build ${stored.id} is no longer running`);
    const now = await this.d.builds.untilRecord(ns, stored.id, (b) => b.phase === 'Canceled', 10_000);
    return { stored, live: now };
  }
}
