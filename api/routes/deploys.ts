// Deploys: deploy an app (inline files, a .tar.gz body, an image or a compose file), list and read
// deploys, and roll back to an earlier live deploy.
import { z } from 'zod';
import type { Deploy } from '../../lib/deploys.js';
import type { AppRecord } from '../repositories/app-record.js';
import type { Actor } from '../deploys/actions.js';
import { deployBody, tarballTypes, type Keep, type Prepared } from '../deploys/deployer.js';
import { invalid, notFound } from '../errors.js';
import { op, type Caller, type HandlerInput, type Operation } from '../operation.js';
import type { Services } from '../services.js';
import { allowedApp, requireApp, resolveApp } from './app-access.js';

export const deploySchema = z.object({
  id: z.string(),
  app: z.string(),
  app_id: z.string(),
  status: z.enum(['pending', 'building', 'deploying', 'live', 'failed']),
  reason: z.string().nullable(),
  current: z.boolean().describe('Whether the app serves this deploy now'),
  kind: z.string(),
  digest: z.string().nullable(),
  image: z.string().nullable(),
  origin: z.string(),
  origin_deploy: z.string().nullable(),
  summary: z.record(z.string(), z.unknown()),
  created_by: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  live_at: z.string().nullable(),
});

/**
 * A deploy as the API shows it. Its outcome is the App controller's (App.status.deploys); the row
 * catches up when the deploy recorder writes it, and until then the App's status is what is shown.
 */
export function presentDeploy(d: Deploy, app: AppRecord | undefined): z.infer<typeof deploySchema> {
  const inFlight = d.status === 'pending' || d.status === 'building' || d.status === 'deploying';
  const decided = inFlight && app?.id === d.appUid ? app.status?.deploys?.find((o) => o.id === d.id) : undefined;
  return {
    id: d.id,
    app: d.appName,
    app_id: d.appUid,
    status: decided?.state ?? d.status,
    reason: decided ? (decided.reason ?? null) : d.reason,
    current: app?.id === d.appUid && app.status?.currentDeploy === d.id,
    kind: d.kind,
    digest: d.digest,
    image: d.image,
    origin: d.origin,
    origin_deploy: d.originDeploy,
    summary: d.summary,
    created_by: d.createdBy,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
    live_at: decided?.state === 'live' ? new Date(decided.at).toISOString() : (d.liveAt?.toISOString() ?? null),
  };
}

export const uploadDescription =
  'JSON: {"files": {"path": "content" | {"base64": "..."}}} for small trees, {"image": "ref", "port"?, "command"?, "args"?} for a container service, or {"compose": "<yaml>", "files"?}. Larger trees: the .tar.gz itself as the body with Content-Type application/gzip.';

/** Stores an upload as the caller's account's, counted against its storage (api/storage/account-storage.ts). */
export const keepFor =
  (s: Services, caller: Caller, what: string): Keep =>
  (staged) =>
    s.storage.admit(caller.account.id, caller.account.namespace, staged, what);

/** Reads a deploy request (JSON or an uploaded .tar.gz) into a validated, stored Prepared. */
export function readDeployInput(s: Services, input: HandlerInput<z.infer<typeof deployBody> | undefined, unknown>): Promise<Prepared> {
  const keep = keepFor(s, input.caller, "the deploy's tree");
  if (input.upload) return s.deployer.prepareUpload(input.upload.stream, s.config.deploys.uploadLimitBytes, keep);
  if (!input.body) throw invalid('invalid body: send files, image, compose, or a .tar.gz body');
  return s.deployer.prepareBody(input.body, keep);
}

export const createdBy = (caller: Caller) => `token:${caller.principal.nonce}`;

/** Who an action acts for. */
export const actorOf = (caller: Caller): Actor => ({
  accountId: caller.account.id,
  namespace: caller.account.namespace,
  createdBy: createdBy(caller),
});

export function deployOperations(s: Services): Operation[] {
  const upload = { types: tarballTypes, limitBytes: s.config.deploys.uploadLimitBytes, description: uploadDescription };
  return [
    op({
      method: 'POST',
      path: '/apps/{appID}/deploy',
      operationId: 'deployApp',
      tag: 'apps',
      summary: 'Deploy an app',
      action: 'deploy',
      status: 202,
      body: deployBody,
      upload,
      response: deploySchema,
      handler: async (input) => {
        const app = await resolveApp(s, input.caller, input.params.appID!);
        const prepared = await readDeployInput(s, input);
        const deploy = await s.deployer.apply(input.caller.account.id, app, prepared, { createdBy: createdBy(input.caller) });
        return { status: 202, body: presentDeploy(deploy, app) };
      },
    }),
    op({
      method: 'GET',
      path: '/apps/{appID}/deploys',
      operationId: 'listDeploys',
      tag: 'apps',
      summary: 'List deploys',
      action: 'read',
      query: z.strictObject({ limit: z.coerce.number().int().min(1).max(200).default(50), before: z.string().max(63).optional() }),
      response: z.object({ deploys: z.array(deploySchema), next_before: z.string().nullable() }),
      handler: async ({ caller, params, query }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const list = await s.deploys.list(caller.account.id, app.id, query);
        return {
          body: { deploys: list.map((d) => presentDeploy(d, app)), next_before: list.length === query.limit ? list.at(-1)!.id : null },
        };
      },
    }),
    op({
      method: 'GET',
      path: '/deploys/{deployID}',
      operationId: 'getDeploy',
      tag: 'deploys',
      summary: 'Get deploy',
      action: 'read',
      response: deploySchema,
      handler: async ({ caller, params }) => {
        const deploy = await s.deploys.get(caller.account.id, params.deployID!);
        if (!deploy) throw notFound(`deploy ${params.deployID}`);
        requireApp(caller, deploy.appName);
        const app = allowedApp(caller, deploy.appName) ? await s.apps.find(caller.account.namespace, deploy.appUid) : undefined;
        return { body: presentDeploy(deploy, app) };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/{appID}/rollback',
      operationId: 'rollbackApp',
      tag: 'apps',
      summary: 'Roll back an app',
      action: 'deploy',
      status: 202,
      body: z.strictObject({
        deploy_id: z.string().max(63).optional().describe('The deploy to return to; default the last live one before the current'),
      }),
      response: deploySchema,
      handler: async ({ caller, params, body }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const deploy = await s.actions.rollback(actorOf(caller), app, body.deploy_id);
        return { status: 202, body: presentDeploy(deploy, app) };
      },
    }),
  ];
}
