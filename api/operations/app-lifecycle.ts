// What happens to an app as a whole besides deploys: forking it into a new app, giving it an
// expiry, and moving one of its machines to another node.
import { z } from 'zod';
import { parseDuration } from '../../lib/duration.js';
import { invalid } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { actorOf } from '../actor.js';
import { requireApp, resolveApp } from '../app-access.js';
import { appName } from '../app-name.js';
import { appSchema, presentApp } from '../presenters/apps.js';
import { deploySchema, presentDeploy } from '../presenters/deploys.js';

type Deps = Pick<ApiDeps, 'clock'> & {
  apps: Pick<ApiDeps['apps'], 'find' | 'patchSpec' | 'delete'>;
  htmlData: Pick<ApiDeps['htmlData'], 'copyApp'>;
  actions: Pick<ApiDeps['actions'], 'fork' | 'migrate'>;
  events: Pick<ApiDeps['events'], 'record'>;
};

/** Expiry further than this is a mistake more often than a plan. */
const maxExpiryMs = 366 * 86400e3;

export function lifecycleOperations(s: Deps): Operation[] {
  return [
    op({
      method: 'POST',
      path: '/apps/{appID}/fork',
      operationId: 'forkApp',
      tag: 'apps',
      summary: 'Fork an app',
      action: 'write',
      status: 201,
      body: z.strictObject({
        name: appName,
        data: z
          .boolean()
          .optional()
          .describe("Copy an HTML app's data records too (authors and times kept); by default the fork starts with none"),
      }),
      response: z.object({
        app: appSchema,
        deploy: deploySchema.nullable(),
        data_records: z.number().int().optional().describe('Records copied, when data was asked for'),
      }),
      handler: async ({ caller, params, body }) => {
        const source = await resolveApp(s, caller, params.appID!);
        requireApp(caller, body.name);
        const { app, deploy } = await s.actions.fork(actorOf(caller), source, body.name);
        let copied: number | undefined;
        if (body.data) {
          try {
            copied = await s.htmlData.copyApp(source.id, app.id);
          } catch (err) {
            // All or nothing: a fork without the data it was asked to take is not left behind.
            await s.apps.delete(app.namespace, app.name).catch(() => undefined);
            throw err;
          }
        }
        await s.events.record(caller.account.id, 'app.created', app.name, {
          app: app.name,
          forked_from: source.name,
          ...(deploy ? { deploy: deploy.id } : {}),
          ...(copied !== undefined ? { data_records: copied } : {}),
        });
        return {
          status: 201,
          body: {
            app: presentApp(app),
            deploy: deploy ? presentDeploy(deploy, app) : null,
            ...(copied !== undefined ? { data_records: copied } : {}),
          },
        };
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
        await s.apps.patchSpec(caller.account.namespace, app.name, { expiresAt });
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
        if (app.spec.expiresAt) await s.apps.patchSpec(caller.account.namespace, app.name, { expiresAt: null });
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
      handler: async ({ caller, params, body }) => {
        const app = await resolveApp(s, caller, params.appID!);
        if (!/^\d{1,2}$/.test(params.ordinal!)) throw invalid('invalid path: ordinal must be a machine number');
        const moved = await s.actions.migrate(app, Number(params.ordinal), body.node);
        await s.events.record(caller.account.id, 'machine.migrated', app.name, { machine: moved.ordinal, from: moved.from, to: moved.to });
        return { status: 202, body: moved };
      },
    }),
  ];
}
