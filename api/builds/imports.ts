// Git import: what importing a repository would do (a shallow copy of the ref, planned: the plan, the
// compose services and the authentication policies found, nothing created), and the sync that keeps
// an imported app building: a push (by the signed webhook, or found by the poll) to the default
// branch builds and deploys the app; to another branch, the preview `<app>--<branch>` (made on the
// first push); a newer push cancels the older build of its branch; a deleted branch takes its
// preview with it. docs/api/imports.md.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { terminalPhases } from '../../lib/builds/index.js';
import { fetchTree, listBranches, resolveRef, type RemoteOptions } from '../../lib/builds/git.js';
import { planBuild, PlanError, type BuildPlan } from '../../lib/builds/plan.js';
import type { ImportedRepository } from '../../lib/builds/imported-repos.js';
import { treeOnDisk } from '../../lib/builds/tree.js';
import { dnsLabel, previewSeparator } from '../../lib/contract.js';
import type { Logger } from '../../lib/logger.js';
import { combine, isHtmlPage, isMarkdownPage, PolicyError, treeDeclarations, type AuthPolicy } from '../../lib/policy/index.js';
import { previewName } from '../deploys/actions.js';
import { parseCompose } from '../deploys/compose.js';
import type { ApiDeps } from '../deps.js';
import { startBuild } from './actions.js';

export interface ImportPreview {
  repository: string;
  ref: string;
  commit: string;
  path: string | null;
  plan: BuildPlan | null;
  /** Why nothing could be built, when nothing can. */
  problem: string | null;
  services: Array<{ name: string; image: string; port: number | null }>;
  auth: AuthPolicy | null;
  /** Where the policy comes from, or why it is not known before the build. */
  auth_from: string;
}

/** A branch name as a preview's ref (a DNS label, no `--`), or undefined when none fits. */
export function refOfBranch(app: string, branch: string): string | undefined {
  const ref = branch
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
  const room = 63 - app.length - previewSeparator.length;
  const cut = ref.slice(0, room).replace(/-+$/, '');
  return cut && dnsLabel.test(cut) ? cut : undefined;
}

/** The plan, compose services and policies of `url` at `ref` (`path` in it), from a shallow copy. */
export async function previewImport(
  url: string,
  ref: string | undefined,
  sub: string | undefined,
  o: RemoteOptions,
): Promise<ImportPreview> {
  const resolved = await resolveRef(url, ref, o);
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-import-'));
  try {
    await fetchTree(url, resolved.commit, dir, o);
    const root = sub ? path.join(dir, sub) : dir;
    const tree = treeOnDisk(root);
    const base = { repository: url.replace(/\/\/[^@/]*@/, '//***@'), ref: resolved.ref, commit: resolved.commit, path: sub ?? null };
    let plan: BuildPlan | null = null;
    let problem: string | null = null;
    try {
      plan = planBuild(tree);
    } catch (err) {
      if (!(err instanceof PlanError)) throw err;
      problem = err.message;
    }
    let services: ImportPreview['services'] = [];
    let auth: AuthPolicy | null = null;
    let authFrom = 'no policy declared: the app is public';
    try {
      if (plan?.kind === 'compose') {
        const compose = parseCompose(await readFile(path.join(root, plan.compose!), 'utf8'));
        services = compose.services.map((s) => ({ name: s.name, image: s.image, port: s.port ?? null }));
        auth = combine(compose.policy ?? []) ?? null;
        if (auth) authFrom = `x-svc.auth of ${plan.compose}`;
      } else if (plan && !plan.build.length && ['static', 'markdown', 'handlers'].includes(plan.kind)) {
        // The tree is what is deployed: its pages' declarations are the policy.
        const pages = new Map<string, Buffer>();
        for (const p of tree.paths.filter((x) => isHtmlPage(x) || isMarkdownPage(x))) {
          const text = tree.read(p);
          if (text !== undefined) pages.set(p, Buffer.from(text));
        }
        auth = combine(treeDeclarations(plan.kind as 'static' | 'markdown' | 'handlers', tree.paths, pages)) ?? null;
        if (auth) authFrom = "the pages' svc- meta tags and front matter";
      } else if (plan) {
        authFrom = "decided by what the build outputs (its pages' declarations), at deploy";
      }
    } catch (err) {
      if (!(err instanceof PolicyError) && !(err instanceof Error && /compose/.test(err.message))) throw err;
      problem = `${problem ? `${problem}; ` : ''}${err.message}`;
    }
    return { ...base, plan, problem, services, auth, auth_from: authFrom };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Reads the token of an imported repository, when it has one (the API holds account Secrets' rights). */
export type TokenReader = (namespace: string, secretName: string) => Promise<string | undefined>;

export class GitSync {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly s: Pick<ApiDeps, 'apps' | 'builds' | 'actions' | 'events' | 'config' | 'clock' | 'importedRepos' | 'accounts'>,
    private readonly readToken: TokenReader,
    private readonly log: Logger,
    private readonly pollEveryMs: number,
  ) {}

  private remote(repo: ImportedRepository, token: string | undefined): RemoteOptions {
    return { token, allowPrivate: this.s.config.webhookAllowPrivate, resolver: this.s.builds.resolver };
  }

  /** The branch is at `commit` now (null: deleted): builds it, or deletes its preview, once. */
  async onHead(repo: ImportedRepository, branch: string, commit: string | null, why: string): Promise<string | undefined> {
    const account = await this.s.accounts.get(repo.accountId);
    if (!account) return undefined;
    const ns = account.namespace;
    const parent = await this.s.apps.find(ns, repo.app);
    if (!parent) return undefined;
    const isDefault = branch === repo.defaultBranch;
    const ref = isDefault ? undefined : refOfBranch(repo.app, branch);
    if (!isDefault && !ref) {
      this.log.info({ app: repo.app, branch }, 'A push to a branch no preview name can hold; not built');
      return undefined;
    }
    const target = isDefault ? repo.app : previewName(repo.app, ref!);
    // Told before (by the poll, or an earlier delivery): the build that was started for it, which
    // may still be being made (its Build shows in the cache a moment after the head moved).
    if (!(await this.s.importedRepos.moveHead(repo.accountId, repo.app, branch, commit))) {
      if (commit === null) return undefined;
      for (let i = 0; i < 50; i++) {
        const made = this.s.builds.repo.ofApp(ns, target).find((b) => b.spec.source.git?.commit === commit);
        if (made) return made.metadata.name;
        await new Promise((r) => setTimeout(r, 100));
      }
      return undefined;
    }
    if (commit === null) {
      if (isDefault) return undefined;
      const preview = await this.s.apps.find(ns, target);
      if (preview?.spec.preview?.parent === repo.app) {
        await this.s.apps.delete(ns, target);
        await this.s.events.record(repo.accountId, 'preview.deleted', repo.app, {
          preview: target,
          ref,
          reason: `branch ${branch} deleted`,
        });
        this.log.info({ app: repo.app, branch, preview: target }, 'Branch deleted: its preview deleted');
      }
      return undefined;
    }
    let app = isDefault ? parent : await this.s.apps.find(ns, target);
    if (!app) {
      const made = await this.s.actions.createPreview(
        { accountId: repo.accountId, namespace: ns, createdBy: `git:${repo.hookId}` },
        parent,
        ref!,
        undefined,
      );
      app = made.app;
      await this.s.events.record(repo.accountId, 'preview.created', repo.app, { preview: app.name, ref, branch });
    }
    // A newer push makes the older build of the same branch pointless.
    for (const older of this.s.builds.repo.ofApp(ns, app.name)) {
      if (older.status?.phase && terminalPhases.has(older.status.phase)) continue;
      await this.s.builds.repo.cancel(ns, older.metadata.name!, this.s.clock());
      this.log.info({ app: app.name, build: older.metadata.name, branch }, 'Canceled an older build of the branch');
    }
    const { id } = await startBuild(
      {
        builds: this.s.builds.repo,
        store: this.s.builds.store,
        settings: { artifactBaseUrl: this.s.config.deploys.artifactBaseUrl },
        clock: this.s.clock,
      },
      { accountId: repo.accountId, namespace: ns, createdBy: `git:${why}` },
      app,
      { git: { url: repo.url, ref: branch, commit, path: repo.path ?? undefined, secretName: repo.secretName ?? undefined } },
      { deploy: true },
    );
    this.log.info({ app: app.name, branch, commit, build: id, why }, 'Building a push');
    return id;
  }

  /** Compares each due repository's branches with what was built, as a push would tell. */
  async pollOnce(): Promise<void> {
    // On the wall clock: polling is the real world's timing, not a test's moved clock.
    const due = await this.s.importedRepos.claimDue(new Date(), this.pollEveryMs);
    for (const repo of due) {
      try {
        const account = await this.s.accounts.get(repo.accountId);
        const token = repo.secretName && account ? await this.readToken(account.namespace, repo.secretName) : undefined;
        const heads = await listBranches(repo.url, this.remote(repo, token));
        for (const [branch, commit] of Object.entries(heads))
          if (repo.heads[branch] !== commit) await this.onHead(repo, branch, commit, 'poll');
        for (const branch of Object.keys(repo.heads)) if (!(branch in heads)) await this.onHead(repo, branch, null, 'poll');
      } catch (err) {
        this.log.warn(
          { err, app: repo.app, repository: repo.url.replace(/\/\/[^@/]*@/, '//***@') },
          'Polling a repository failed; the next poll retries',
        );
      }
    }
  }

  start(): void {
    const next = () => {
      if (this.stopped) return;
      // Each replica looks every few seconds for repositories not polled for pollEveryMs.
      this.timer = setTimeout(
        () =>
          void this.pollOnce()
            .catch((err: unknown) => this.log.warn({ err }, 'Polling repositories failed'))
            .finally(next),
        Math.min(this.pollEveryMs, 5_000),
      );
      this.timer.unref();
    };
    next();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
