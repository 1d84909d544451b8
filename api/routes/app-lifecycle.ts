// What happens to an app as a whole besides deploys: forking it into a new app, giving it an
// expiry, and moving one of its machines to another node.
import { z } from 'zod';
import { parseDuration } from '../../lib/duration.js';
import { createServing, deploySpecOf } from '../deploys/deployer.js';
import { conflict, invalid, notFound } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { Services } from '../services.js';
import { appName, presentApp, appSchema } from './apps.js';
import { requireApp, resolveApp } from './app-access.js';
import { createdBy, deploySchema, presentDeploy } from './deploys.js';
import { labels } from '../../lib/contract.js';

/** Expiry further than this is a mistake more often than a plan. */
const maxExpiryMs = 366 * 86400e3;

export function lifecycleOperations(s: Services): Operation[] {
  return [
    op({
      method: 'POST',
      path: '/apps/{appID}/fork',
      operationId: 'forkApp',
      tag: 'apps',
      summary: 'Fork an app',
      action: 'write',
      status: 201,
      body: z.strictObject({ name: appName }),
      response: z.object({ app: appSchema, deploy: deploySchema.nullable() }),
      // The fork gets the source's current deploy, configuration and environment; not its domains,
      // app users, previews, database, expiry or machine placement.
      handler: async ({ caller, params, body }) => {
        const source = await resolveApp(s, caller, params.appID!);
        requireApp(caller, body.name);
        const spec = deploySpecOf(source);
        const originDeploy = source.status?.currentDeploy ?? source.spec.deployId;
        if (await s.apps.find(caller.account.namespace, body.name)) throw conflict(`an app named "${body.name}" already exists`);
        const env = await s.env.read(source);
        const { app, deploy } = await createServing(
          s,
          caller.account.id,
          caller.account.namespace,
          { name: body.name, labels: { [labels.forkedFrom]: source.metadata.name! } },
          {
            ...(source.spec.machines !== undefined ? { machines: source.spec.machines } : {}),
            ...(source.spec.resources ? { resources: source.spec.resources } : {}),
            ...(source.spec.auth ? { auth: source.spec.auth } : {}),
          },
          spec ? { spec, origin: 'fork', summary: { forked_from: source.metadata.name, ...(originDeploy ? { deploy: originDeploy } : {}) } } : undefined,
          { origin: 'fork', ...(originDeploy ? { originDeploy } : {}), createdBy: createdBy(caller), env },
        );
        return { status: 201, body: { app: presentApp(app), deploy: deploy ? presentDeploy(deploy, app) : null } };
      },
    }),
    op({
      method: 'PUT',
      path: '/apps/{appID}/expiry',
      operationId: 'setExpiry',
      tag: 'apps',
      summary: 'Set app expiry',
      action: 'write',
      body: z
        .strictObject({
          expires_at: z.iso.datetime({ offset: true }).optional().describe('An absolute time'),
          ttl: z.string().optional().describe('Or a duration from now: 90s, 30m, 12h, 7d, 2w'),
        })
        .refine((b) => (b.expires_at === undefined) !== (b.ttl === undefined), 'send exactly one of expires_at and ttl'),
      response: z.object({ expires_at: z.string() }),
      handler: async ({ caller, params, body }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const now = s.clock().getTime();
        let at: number;
        if (body.ttl !== undefined) {
          const ms = parseDuration(body.ttl);
          if (ms === undefined) throw invalid('invalid body: ttl: must be a duration like 90s, 30m, 12h, 7d or 2w');
          at = now + ms;
        } else at = Date.parse(body.expires_at!);
        if (at <= now) throw invalid('invalid body: the expiry must be in the future');
        if (at - now > maxExpiryMs) throw invalid('invalid body: the expiry must be within a year');
        const expiresAt = new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
        await s.apps.patchSpec(caller.account.namespace, app.metadata.name!, { expiresAt });
        return { body: { expires_at: expiresAt } };
      },
    }),
    op({
      method: 'DELETE',
      path: '/apps/{appID}/expiry',
      operationId: 'clearExpiry',
      tag: 'apps',
      summary: 'Clear app expiry',
      action: 'write',
      status: 204,
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        if (app.spec.expiresAt) await s.apps.patchSpec(caller.account.namespace, app.metadata.name!, { expiresAt: null });
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/{appID}/machines/{ordinal}/migrate',
      operationId: 'migrateMachine',
      tag: 'apps',
      summary: 'Migrate machine',
      action: 'write',
      status: 202,
      body: z.strictObject({ node: z.string().max(253).optional().describe('Target node; default another ready node') }),
      response: z.object({ ordinal: z.number(), from: z.string().nullable(), to: z.string() }),
      // The controller starts the replacement on the target node and deletes the old machine once
      // the new one is ready, as for a deploy.
      handler: async ({ caller, params, body }) => {
        const app = await resolveApp(s, caller, params.appID!);
        if (!/^\d{1,2}$/.test(params.ordinal!)) throw invalid('invalid path: ordinal must be a machine number');
        const ordinal = Number(params.ordinal);
        if (ordinal >= (app.spec.machines ?? 1)) throw notFound(`machine ${ordinal} of app ${app.metadata.name}`);
        const from = app.status?.machines?.find((m) => m.ordinal === ordinal)?.node ?? null;
        const nodes = (await s.core.listNode()).items
          .filter((n) => !n.spec?.unschedulable && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
          .map((n) => n.metadata!.name!)
          .sort();
        let to: string | undefined;
        if (body.node) {
          if (!nodes.includes(body.node)) throw invalid(`invalid body: node: ${body.node} is not a ready node`);
          if (body.node === from) throw conflict(`machine ${ordinal} already runs on ${from}`);
          to = body.node;
        } else {
          to = nodes.find((n) => n !== from);
          if (!to) throw conflict(`no other ready node to move machine ${ordinal} to`);
        }
        const placement = [...(app.spec.placement ?? []).filter((p) => p.ordinal !== ordinal), { ordinal, node: to }].sort((a, b) => a.ordinal - b.ordinal);
        await s.apps.patchSpec(caller.account.namespace, app.metadata.name!, { placement }, app.metadata.resourceVersion);
        return { status: 202, body: { ordinal, from, to } };
      },
    }),
  ];
}
