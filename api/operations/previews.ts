// Previews: an app's deploys of a ref (a branch, a pull request) served beside it on their own
// hostname, `<app>--<ref>.<apps domain>`. A preview is an App named `<app>--<ref>` that names its
// parent and is owned by it, so deleting the app deletes its previews.
import { z } from 'zod';
import type { AppRecord } from '../repositories/app-record.js';
import { previewName } from '../deploys/actions.js';
import { deployBody, deployFields, tarballTypes, type Prepared } from '../deploys/deployer.js';
import { invalid, notFound } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { actorOf, createdBy } from '../actor.js';
import { resolveApp } from '../app-access.js';
import { keepFor, readDeployInput, uploadDescription } from '../deploys/input.js';
import { deploySchema, presentDeploy } from '../presenters/deploys.js';
import { dnsLabel, previewSeparator } from '../../lib/contract.js';

/** What readDeployInput (and keepFor) of api/deploys/input.ts take: all of ApiDeps until their signatures are narrowed there. */
type DeployInputDeps = Parameters<typeof readDeployInput>[0];

type Deps = DeployInputDeps & {
  apps: Pick<ApiDeps['apps'], 'find' | 'list' | 'delete'>;
  deployer: Pick<ApiDeps['deployer'], 'prepareBody' | 'apply'>;
  actions: Pick<ApiDeps['actions'], 'createPreview'>;
  events: Pick<ApiDeps['events'], 'record'>;
  /** The upload limit. */
  config: Pick<ApiDeps['config'], 'deploys'>;
};

const ref = z
  .string()
  .regex(dnsLabel, 'must be a DNS label (lowercase letters, digits, dashes)')
  .refine((r) => !r.includes(previewSeparator), `must not contain "${previewSeparator}"`);

const previewSchema = z.object({
  ref: z.string(),
  app: z.string().describe('The App serving the preview; usable as {appID} elsewhere'),
  id: z.string(),
  url: z.string().nullable(),
  status: z.string(),
  current_deploy: z.string().nullable(),
  database: z.string().nullable().describe("The preview's branch of its app's database (a copy, deleted with the preview)"),
  created_at: z.string().nullable(),
});

function presentPreview(p: AppRecord): z.infer<typeof previewSchema> {
  return {
    ref: p.spec.preview!.ref,
    app: p.name,
    id: p.id,
    url: p.status?.url ?? null,
    status: p.conditions.Ready?.reason ?? 'Pending',
    current_deploy: p.status?.currentDeploy ?? null,
    database: p.spec.database ?? null,
    created_at: p.createdAt?.toISOString() ?? null,
  };
}

export function previewOperations(s: Deps): Operation[] {
  const previewOf = async (namespace: string, parent: AppRecord, r: string): Promise<AppRecord> => {
    const p = await s.apps.find(namespace, previewName(parent.name, r));
    if (!p || p.spec.preview?.parent !== parent.name) throw notFound(`preview ${r} of app ${parent.name}`);
    return p;
  };
  return [
    op({
      method: 'GET',
      path: '/apps/{appID}/previews',
      operationId: 'listPreviews',
      tag: 'apps',
      summary: 'List previews',
      action: 'read',
      response: z.object({ previews: z.array(previewSchema) }),
      handler: async ({ caller, params }) => {
        const parent = await resolveApp(s, caller, params.appID!);
        const previews = s.apps.list(caller.account.namespace).filter((a) => a.spec.preview?.parent === parent.name);
        return { body: { previews: previews.map(presentPreview) } };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/{appID}/previews',
      operationId: 'createPreview',
      tag: 'apps',
      summary: 'Create preview',
      action: 'deploy',
      status: 201,
      // The ref, and optionally what to deploy on it (else the app's current deploy).
      body: deployFields.extend({ ref }),
      response: z.object({ preview: previewSchema, deploy: deploySchema.nullable() }),
      handler: async ({ caller, params, body }) => {
        const parent = await resolveApp(s, caller, params.appID!);
        const { ref: r, ...rest } = body;
        let prepared: Prepared | undefined;
        if (Object.values(rest).some((v) => v !== undefined)) {
          const parsed = deployBody.safeParse(rest);
          if (!parsed.success)
            throw invalid(`invalid body: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`);
          prepared = await s.deployer.prepareBody(parsed.data, keepFor(s, caller, "the preview's tree"));
        }
        const { app, deploy, branch } = await s.actions.createPreview(actorOf(caller), parent, r, prepared);
        await s.events.record(caller.account.id, 'preview.created', parent.name, {
          preview: app.name,
          ref: r,
          ...(deploy ? { deploy: deploy.id } : {}),
          ...(branch ? { database: branch } : {}),
        });
        if (branch)
          await s.events.record(caller.account.id, 'database.created', branch, {
            database: branch,
            branch_of: parent.spec.database,
            preview: app.name,
          });
        return { status: 201, body: { preview: presentPreview(app), deploy: deploy ? presentDeploy(deploy, app) : null } };
      },
    }),
    op({
      method: 'DELETE',
      path: '/apps/{appID}/previews/{ref}',
      operationId: 'deletePreview',
      tag: 'apps',
      summary: 'Delete preview',
      action: 'write',
      status: 204,
      handler: async ({ caller, params }) => {
        const parent = await resolveApp(s, caller, params.appID!);
        const p = await previewOf(caller.account.namespace, parent, params.ref!);
        await s.apps.delete(caller.account.namespace, p.name);
        await s.events.record(caller.account.id, 'preview.deleted', parent.name, { preview: p.name, ref: params.ref! });
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/{appID}/previews/{ref}/deploy',
      operationId: 'deployPreview',
      tag: 'apps',
      summary: 'Deploy preview',
      action: 'deploy',
      status: 202,
      body: deployBody,
      upload: { types: tarballTypes, limitBytes: s.config.deploys.uploadLimitBytes, description: uploadDescription },
      response: deploySchema,
      handler: async (input) => {
        const parent = await resolveApp(s, input.caller, input.params.appID!);
        const p = await previewOf(input.caller.account.namespace, parent, input.params.ref!);
        const prepared = await readDeployInput(s, input);
        const deploy = await s.deployer.apply(input.caller.account.id, p, prepared, { createdBy: createdBy(input.caller) });
        return { status: 202, body: presentDeploy(deploy, p) };
      },
    }),
  ];
}
