// Builds: POST /builds (a source tree uploaded as .tar.gz, or a Git repository), GET /builds/{id},
// GET /builds/{id}/logs (followed while it runs), and the extensions GET /apps/{appID}/builds and
// POST /builds/{id}/cancel. A build is planned before it is made (an upload at once, by the API; a
// Git tree by its builder), so a tree with nothing to build is refused with the reason, not queued.
// docs/api/builds.md describes fields, states and limits. The decisions are the build actions'
// (api/builds/actions.ts); handlers parse, authorize and present.
import { z } from 'zod';
import { UploadTooLarge } from '../../lib/artifacts/store.js';
import { createdBy } from '../actor.js';
import { resolveApp, type AppLookup } from '../app-access.js';
import type { BuildActor, SeesApp } from '../builds/actions.js';
import { gitOrApiError } from '../builds/git-error.js';
import { tarballTypes } from '../deploys/deployer.js';
import { ApiError, invalid } from '../errors.js';
import { op, type Caller, type Operation } from '../operation.js';
import { buildSchema, presentBuild } from '../presenters/builds.js';
import type { ApiDeps } from '../deps.js';

type Deps = AppLookup & {
  buildActions: Pick<ApiDeps['buildActions'], 'served' | 'buildUpload' | 'buildGit' | 'get' | 'list' | 'logs' | 'cancel'>;
  /** An upload is the body: staged (at most the upload limit) before anything is decided on it. */
  artifacts: Pick<ApiDeps['artifacts'], 'stage'>;
  config: { deploys: Pick<ApiDeps['config']['deploys'], 'uploadLimitBytes'> };
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

/** Who a build is made for: the caller's account, named in its record by the caller's token. */
const actorOf = (caller: Caller): BuildActor => ({
  accountId: caller.account.id,
  namespace: caller.account.namespace,
  createdBy: createdBy(caller),
});

/** A token restricted to apps sees the builds of its apps only. */
const seesOf =
  (caller: Caller): SeesApp =>
  (app) => {
    const apps = caller.principal.authority.apps;
    return !apps || apps.has(app);
  };

export function buildOperations(s: Deps): Operation[] {
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
        // With an upload the body is the tree (undefined here), the rest comes in the query.
        const appName = upload ? query.app : body.app;
        if (!appName) throw invalid('app: name the app to build for (?app= with an upload)');
        const app = await resolveApp(s, caller, appName);
        // Not a moment's outage (no Retry-After): the platform is configured without builds.
        if (!s.buildActions.served)
          throw new ApiError('unavailable', 'builds are not served here: the platform has no artifact key (SVC_ARTIFACT_KEY)');
        const actor = actorOf(caller);
        let built;
        if (upload) {
          let staged;
          try {
            staged = await s.artifacts.stage(upload.stream, s.config.deploys.uploadLimitBytes);
          } catch (err) {
            if (err instanceof UploadTooLarge)
              throw new ApiError('payload_too_large', `upload larger than ${s.config.deploys.uploadLimitBytes} bytes`);
            throw err;
          }
          built = await s.buildActions.buildUpload(actor, app, staged, { deploy: query.deploy === 'true' });
        } else {
          if (!body.git) throw invalid('send the source: a .tar.gz body (with ?app=), or {"git": {"url": ...}}');
          const git = body.git;
          built = await gitOrApiError(() =>
            s.buildActions.buildGit(actor, app, git, { deploy: body.deploy, timeoutSeconds: body.timeout_seconds }),
          );
        }
        return { status: 202, body: presentBuild(built.stored, built.live), headers: { Location: `/api/builds/${built.stored.id}` } };
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
        const b = await s.buildActions.get(actorOf(caller), params.buildID!, seesOf(caller));
        return { body: presentBuild(b.stored, b.live) };
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
        const follow = query.follow === 'true';
        const stream = await s.buildActions.logs(actorOf(caller), params.buildID!, seesOf(caller), follow);
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
        const b = await s.buildActions.cancel(actorOf(caller), params.buildID!, seesOf(caller));
        return { status: 202, body: presentBuild(b.stored, b.live) };
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
        const builds = await s.buildActions.list(actorOf(caller), app, query.limit);
        return { body: { builds: builds.map((b) => presentBuild(b.stored, b.live)) } };
      },
    }),
  ];
}
