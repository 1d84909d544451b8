// Git import: GET /apps/imports/preview (what an import would do: nothing is created) and
// POST /apps/imports (the app created, built and deployed from the repository, which it remembers:
// pushes to it then build, by the signed push webhook or by the poll). docs/api/imports.md.
import { z } from 'zod';
import { resolveRef } from '../../lib/builds/git.js';
import { previewImport } from '../builds/imports.js';
import { invalid } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { createdBy } from '../actor.js';
import { requireApp } from '../app-access.js';
import { appName } from '../app-name.js';
import { gitOrApiError } from '../builds/git-error.js';
import { appSchema, presentApp } from '../presenters/apps.js';
import { buildSchema, presentBuild } from '../presenters/builds.js';

type Deps = Pick<ApiDeps, 'clock'> & {
  config: Pick<ApiDeps['config'], 'webhookAllowPrivate'>;
  /** A repository is reached through the egress guard's resolver, and its token kept in a Secret of the account. */
  builds: Pick<ApiDeps['builds'], 'resolver' | 'gitSecret'>;
  /** The app's first build, started as every build is (api/builds/actions.ts). */
  buildActions: Pick<ApiDeps['buildActions'], 'startShown'>;
  apps: Pick<ApiDeps['apps'], 'create'>;
  accountLock: Pick<ApiDeps['accountLock'], 'hold'>;
  /** The account's app quota, checked under its lock. */
  actions: Pick<ApiDeps['actions'], 'assertAppFits'>;
  events: Pick<ApiDeps['events'], 'record'>;
  importedRepos: Pick<ApiDeps['importedRepos'], 'create'>;
};

const repository = z.string().min(1).max(2048).describe('An https URL of a Git repository');
const ref = z.string().min(1).max(255).optional().describe('A branch or tag; the default branch when unset');
const sub = z
  .string()
  .max(1024)
  .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'must be a relative directory of the repository')
  .refine((p) => !p.split('/').includes('..'), 'must not leave the repository')
  .optional()
  .describe('A sub-directory of the repository that is the app');

const previewSchema = z.object({
  repository: z.string(),
  ref: z.string(),
  commit: z.string(),
  path: z.string().nullable(),
  plan: z.record(z.string(), z.unknown()).nullable(),
  problem: z.string().nullable().describe('Why nothing can be built from it, when nothing can'),
  services: z.array(z.object({ name: z.string(), image: z.string(), port: z.number().nullable() })),
  auth: z.record(z.string(), z.unknown()).nullable().describe("The authentication policy found (compose x-svc.auth, pages' declarations)"),
  auth_from: z.string(),
});

/** The app name an import takes by default: the repository's last path segment, as a DNS label. */
export function nameOfRepository(url: string): string {
  const last = new URL(url).pathname.split('/').filter(Boolean).at(-1) ?? 'app';
  return (
    last
      .replace(/\.git$/, '')
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/-{2,}/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 50) || 'app'
  );
}

export function importOperations(s: Deps): Operation[] {
  const remote = (token: string | undefined) => ({ token, allowPrivate: s.config.webhookAllowPrivate, resolver: s.builds.resolver });
  return [
    op({
      method: 'GET',
      path: '/apps/imports/preview',
      operationId: 'previewImport',
      tag: 'apps',
      summary: 'Preview a Git import',
      action: 'read',
      query: z.strictObject({ repository, ref, path: sub }),
      response: previewSchema,
      handler: async ({ query, headers }) => {
        // A token for a private repository comes in a header: query strings end up in logs.
        const token = typeof headers['x-svc-git-token'] === 'string' ? headers['x-svc-git-token'] : undefined;
        const preview = await gitOrApiError(() => previewImport(query.repository, query.ref, query.path, remote(token)));
        return {
          body: {
            ...preview,
            plan: preview.plan as Record<string, unknown> | null,
            auth: preview.auth as unknown as Record<string, unknown> | null,
          },
        };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/imports',
      operationId: 'importApp',
      tag: 'apps',
      summary: 'Import a Git repository',
      action: 'deploy',
      status: 202,
      body: z.strictObject({
        repository,
        ref,
        path: sub,
        name: appName.optional().describe("The app's name; the repository's by default"),
        token: z
          .string()
          .min(1)
          .max(1024)
          .optional()
          .describe('A token that reads the repository: kept in a Secret of the account, given only to clones'),
      }),
      response: z.object({
        app: appSchema,
        build: buildSchema,
        repository: z.object({
          url: z.string(),
          default_branch: z.string(),
          path: z.string().nullable(),
          hook_path: z.string().describe("Where the code host sends push events, on the API's address"),
          hook_secret: z.string().describe('What they are signed with (X-Hub-Signature-256); shown once'),
        }),
      }),
      handler: async ({ caller, body }) => {
        const ns = caller.account.namespace;
        const name = body.name ?? nameOfRepository(body.repository);
        requireApp(caller, name);
        // Everything that can be refused is, before anything is made: the ref, and what it holds.
        const preview = await gitOrApiError(() => previewImport(body.repository, body.ref, body.path, remote(body.token)));
        if (!preview.plan) throw invalid(`nothing can be built from ${preview.repository} at ${preview.ref}: ${preview.problem}`);
        if (preview.plan.kind === 'compose')
          throw invalid(
            `${preview.repository} holds ${preview.plan.compose}: deploy a compose file with POST /apps/{app}/deploy; an import builds source`,
          );
        const defaultBranch = body.ref ?? (await gitOrApiError(() => resolveRef(body.repository, undefined, remote(body.token)))).ref;
        const app = await s.accountLock.hold(caller.account.id, async () => {
          s.actions.assertAppFits(ns);
          return s.apps.create(ns, name, {});
        });
        await s.events.record(caller.account.id, 'app.created', app.name, { app: app.name, repository: preview.repository });
        const secretName = body.token ? await s.builds.gitSecret(ns, app.name, body.token) : undefined;
        const repo = await s.importedRepos.create({
          accountId: caller.account.id,
          app: app.name,
          url: body.repository,
          defaultBranch,
          path: body.path ?? null,
          secretName: secretName ?? null,
          commit: preview.commit,
          now: s.clock(),
        });
        const { stored, created } = await s.buildActions.startShown(
          { accountId: caller.account.id, namespace: ns, createdBy: createdBy(caller) },
          app,
          { git: { url: body.repository, ref: preview.ref, commit: preview.commit, path: body.path, secretName } },
          { deploy: true },
        );
        return {
          status: 202,
          body: {
            app: presentApp(app),
            build: presentBuild(stored, created),
            repository: {
              url: preview.repository,
              default_branch: defaultBranch,
              path: body.path ?? null,
              hook_path: `/api/hooks/git/${repo.hookId}`,
              hook_secret: repo.hookSecret,
            },
          },
        };
      },
    }),
  ];
}
