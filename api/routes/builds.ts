// Builds: POST /builds (a source tree uploaded as .tar.gz, or a Git repository), GET /builds/{id},
// GET /builds/{id}/logs (followed while it runs), and the extensions GET /apps/{appID}/builds and
// POST /builds/{id}/cancel. A build is planned before it is made (an upload at once, here; a Git
// tree by its builder), so a tree with nothing to build is refused with the reason, not queued.
// docs/api/builds.md describes fields, states and limits.
import { z } from 'zod';
import { listTarball, readTarballFiles, TreeError } from '../../lib/artifacts/tarball.js';
import { UploadTooLarge } from '../../lib/artifacts/store.js';
import { buildIdPattern, terminalPhases } from '../../lib/builds/index.js';
import { resolveRef } from '../../lib/builds/git.js';
import { planBuild, PlanError, type SourceTree } from '../../lib/builds/plan.js';
import { createdBy } from '../actor.js';
import { resolveApp, type AppLookup } from '../app-access.js';
import { gitOrApiError } from '../builds/git-error.js';
import { startBuild, type StartBuild } from '../builds/start.js';
import { buildLogStream } from '../builds/logs.js';
import { tarballTypes } from '../deploys/deployer.js';
import { ApiError, conflict, invalid, notFound } from '../errors.js';
import { op, type Caller, type Operation } from '../operation.js';
import { buildSchema, presentBuild } from '../presenters/builds.js';
import type { Services } from '../services.js';

/** builds and config whole: startBuild (api/builds/start.ts) reads them, and the build log stream all of builds. */
type Deps = AppLookup &
  Pick<Services, 'builds' | 'config' | 'clock'> & {
    /** A build log read from its builder Pod. */
    machines: Pick<Services['machines'], 'logs'>;
    /** An uploaded tree is staged, then counted against the account's storage. */
    artifacts: Pick<Services['artifacts'], 'stage'>;
    storage: Pick<Services['storage'], 'admit'>;
  };

const createBody = z.strictObject({
  app: z.string().min(1).max(63).describe('The app to build for'),
  deploy: z.boolean().default(false).describe('Deploy the output when the build succeeds'),
  git: z
    .strictObject({
      url: z.string().min(1).max(2048).describe('An https URL of a Git repository'),
      ref: z.string().min(1).max(255).optional().describe('A branch or tag; the default branch when unset'),
      path: z
        .string()
        .max(1024)
        .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'must be a relative directory of the repository')
        .refine((p) => !p.split('/').includes('..'), 'must not leave the repository')
        .optional()
        .describe('A sub-directory to build'),
      token: z
        .string()
        .min(1)
        .max(1024)
        .optional()
        .describe('A token that reads the repository (kept in a Secret of the account, sent only to the clone)'),
    })
    .optional()
    .describe('Build from this repository; without it, send the source as a .tar.gz body (with ?app=)'),
  timeout_seconds: z.number().int().min(60).max(7200).optional().describe('Fail the build when it runs longer; default 2700 (45 minutes)'),
});

const uploadQuery = z.strictObject({
  app: z.string().min(1).max(63).optional().describe('With a .tar.gz body: the app to build for'),
  deploy: z.enum(['true', 'false']).optional().describe('With a .tar.gz body: deploy the output when the build succeeds'),
});

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

export function buildOperations(s: Deps): Operation[] {
  const find = async (caller: Caller, id: string) => {
    const record = buildIdPattern.test(id) ? await s.builds.store.get(caller.account.id, id) : undefined;
    if (!record) throw notFound(`build ${id}`);
    // A token restricted to apps sees the builds of its apps only.
    const apps = caller.principal.authority.apps;
    if (apps && !apps.has(record.app)) throw notFound(`build ${id}`);
    return record;
  };
  return [
    op({
      method: 'POST',
      path: '/builds',
      operationId: 'createBuild',
      tag: 'builds',
      summary: 'Create build',
      action: 'deploy',
      status: 202,
      body: createBody,
      query: uploadQuery,
      upload: {
        types: tarballTypes,
        limitBytes: s.config.deploys.uploadLimitBytes,
        description:
          'The source tree as a .tar.gz (with ?app= and optionally ?deploy=true), instead of a JSON body naming a Git repository.',
      },
      response: buildSchema,
      handler: async ({ caller, body, query, upload }) => {
        const ns = caller.account.namespace;
        // With an upload the body is the tree (undefined here), the rest comes in the query.
        const appName = upload ? query.app : body.app;
        if (!appName) throw invalid('app: name the app to build for (?app= with an upload)');
        const app = await resolveApp(s, caller, appName);
        if (!s.config.deploys.artifactKey)
          throw new ApiError('unavailable', 'builds are not served here: the platform has no artifact key (SVC_ARTIFACT_KEY)');
        const deploy = upload ? query.deploy === 'true' : body.deploy;
        let source: StartBuild['source'];
        if (upload) {
          let staged;
          try {
            staged = await s.artifacts.stage(upload.stream, s.config.deploys.uploadLimitBytes);
          } catch (err) {
            if (err instanceof UploadTooLarge)
              throw new ApiError('payload_too_large', `upload larger than ${s.config.deploys.uploadLimitBytes} bytes`);
            throw err;
          }
          try {
            // Planned here: a tree with nothing to build is this request's 400, and nothing is kept.
            planBuild(await tarballTree(staged.file));
          } catch (err) {
            await staged.discard();
            if (err instanceof TreeError) throw invalid(`archive: ${err.message}`);
            if (err instanceof PlanError) throw invalid(`nothing can be built from this tree: ${err.message}`);
            throw err;
          }
          // The account's, counted against its storage (403 quota_exceeded past it, nothing kept).
          await s.storage.admit(caller.account.id, ns, staged, "the build's source");
          source = { artifact: { digest: staged.digest } };
        } else {
          if (!body.git) throw invalid('send the source: a .tar.gz body (with ?app=), or {"git": {"url": ...}}');
          const g = body.git;
          const resolved = await gitOrApiError(() =>
            resolveRef(g.url, g.ref, { token: g.token, allowPrivate: s.config.webhookAllowPrivate, resolver: s.builds.resolver }),
          );
          const secretName = g.token ? await s.builds.gitSecret(ns, app.name, g.token) : undefined;
          source = { git: { url: g.url, ref: resolved.ref, commit: resolved.commit, path: g.path, secretName } };
        }
        const { id, build } = await startBuild(s, {
          accountId: caller.account.id,
          namespace: ns,
          app,
          source,
          deploy,
          createdBy: createdBy(caller),
          timeoutSeconds: upload ? undefined : body.timeout_seconds,
        });
        const record = (await s.builds.store.get(caller.account.id, id))!;
        return { status: 202, body: presentBuild(record, s.builds.repo.get(ns, id) ?? build), headers: { Location: `/api/builds/${id}` } };
      },
    }),
    op({
      method: 'GET',
      path: '/builds/{buildID}',
      operationId: 'getBuild',
      tag: 'builds',
      summary: 'Get build',
      action: 'read',
      response: buildSchema,
      handler: async ({ caller, params }) => {
        const record = await find(caller, params.buildID!);
        return { body: presentBuild(record, s.builds.repo.get(caller.account.namespace, record.id)) };
      },
    }),
    op({
      method: 'GET',
      path: '/builds/{buildID}/logs',
      operationId: 'getBuildLogs',
      tag: 'builds',
      summary: 'Get build logs',
      action: 'read',
      query: z.strictObject({
        follow: z.enum(['true', 'false']).default('false').describe('true: stream the log as it is written, until the build ends'),
      }),
      handler: async ({ caller, params, query }) => {
        const record = await find(caller, params.buildID!);
        const follow = query.follow === 'true';
        const stream = buildLogStream(
          { core: s.builds.core, machines: s.machines, builds: s.builds.repo, store: s.builds.store },
          record,
          caller.account.namespace,
          follow,
        );
        return {
          body: stream,
          headers: {
            'Content-Type': 'text/plain; charset=utf-8',
            'Cache-Control': 'no-store',
            'X-Content-Type-Options': 'nosniff',
            ...(follow ? { 'X-Accel-Buffering': 'no' } : {}),
          },
        };
      },
    }),
    op({
      method: 'POST',
      path: '/builds/{buildID}/cancel',
      operationId: 'cancelBuild',
      tag: 'builds',
      summary: 'Cancel a build (extension)',
      action: 'deploy',
      status: 202,
      response: buildSchema,
      handler: async ({ caller, params }) => {
        const record = await find(caller, params.buildID!);
        const ns = caller.account.namespace;
        const live = s.builds.repo.get(ns, record.id);
        const phase = live?.status?.phase ?? record.phase;
        if (terminalPhases.has(phase)) throw conflict(`build ${record.id} has ended (${phase.toLowerCase()}): nothing to cancel`);
        if (!live || !(await s.builds.repo.cancel(ns, record.id, s.clock()))) throw conflict(`build ${record.id} is no longer running`);
        const now = await s.builds.repo.until(ns, record.id, (b) => b.status?.phase === 'Canceled', 10_000);
        return { status: 202, body: presentBuild(record, now) };
      },
    }),
    op({
      method: 'GET',
      path: '/apps/{appID}/builds',
      operationId: 'listAppBuilds',
      tag: 'apps',
      summary: 'List app builds (extension)',
      action: 'read',
      query: z.strictObject({ limit: z.coerce.number().int().min(1).max(100).default(20) }),
      response: z.object({ builds: z.array(buildSchema) }),
      handler: async ({ caller, params, query }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const records = await s.builds.store.list(caller.account.id, app.name, query.limit);
        return { body: { builds: records.map((r) => presentBuild(r, s.builds.repo.get(caller.account.namespace, r.id))) } };
      },
    }),
  ];
}
