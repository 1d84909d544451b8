// Deploys: deploy an app (inline files, a .tar.gz body, an image or a compose file), list and read
// deploys, and roll back to an earlier live deploy.
import { z } from 'zod';
import { actorOf, createdBy } from '../actor.js';
import { allowedApp, requireApp, resolveApp } from '../app-access.js';
import { deployBody, tarballTypes } from '../deploys/deployer.js';
import { readDeployInput, uploadDescription } from '../deploys/input.js';
import { notFound } from '../errors.js';
import { op, type Operation } from '../operation.js';
import { deploySchema, presentDeploy } from '../presenters/deploys.js';
import type { ApiDeps } from '../deps.js';

/** What readDeployInput (api/deploys/input.ts) takes: all of ApiDeps until its signature is narrowed there. */
type DeployInputDeps = Parameters<typeof readDeployInput>[0];

type Deps = DeployInputDeps & {
  apps: Pick<ApiDeps['apps'], 'find'>;
  deploys: Pick<ApiDeps['deploys'], 'list' | 'get'>;
  deployer: Pick<ApiDeps['deployer'], 'apply'>;
  actions: Pick<ApiDeps['actions'], 'rollback'>;
  /** The upload limit. */
  config: Pick<ApiDeps['config'], 'deploys'>;
};

export function deployOperations(s: Deps): Operation[] {
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
