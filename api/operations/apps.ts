// The apps group, as far as the App controller serves it: create, list, get and delete. The rest
// of the group is in pending.ts until deploys land.
import { z } from 'zod';
import type { App } from '../../lib/resources/index.js';
import type { AppRecord } from '../repositories/app-record.js';
import { invalid, notFound } from '../errors.js';
import { refusedImage } from '../../lib/images/registry-policy.js';
import { op, type Caller, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { allowedApp, requireApp, resolveApp, serviceOrInvalid } from '../app-access.js';
import { appName } from '../app-name.js';
import { appSchema, presentApp } from '../presenters/apps.js';
import { envSchema, presentEnv } from '../presenters/env.js';

type Deps = {
  apps: Pick<ApiDeps['apps'], 'list' | 'find' | 'create' | 'delete'>;
  env: Pick<ApiDeps['env'], 'read' | 'write'>;
  events: Pick<ApiDeps['events'], 'record'>;
  /** The registry policy an image given at create must pass. */
  config: Pick<ApiDeps['config'], 'images'>;
  accountLock: Pick<ApiDeps['accountLock'], 'hold'>;
  /** The account's app quota, checked under its lock at create. */
  actions: Pick<ApiDeps['actions'], 'assertAppFits'>;
};

const createAppBody = z.strictObject({
  name: appName,
  image: z
    .string()
    .min(1)
    .max(512)
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$/, 'must be a container image reference')
    .optional(),
  port: z.number().int().min(1).max(65535).optional(),
  machines: z.number().int().min(0).max(20).optional(),
});

const envKey = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, 'must be an environment variable name (letters, digits, _; not starting with a digit)');
const envValue = z.string().max(32 * 1024);
const maxEnvVars = 256;
const replaceEnvBody = z.record(envKey, envValue).refine((e) => Object.keys(e).length <= maxEnvVars, `at most ${maxEnvVars} variables`);
/** PATCH: a null value removes the variable. */
const mergeEnvBody = z.record(envKey, envValue.nullable());

const listQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  after: z.string().max(63).optional(),
  /** Only apps whose name contains this, any case (what a console's search box sends). */
  q: z.string().trim().max(63).optional(),
});

export function appOperations(s: Deps): Operation[] {
  const find = (caller: Caller, idOrName: string): Promise<AppRecord> => resolveApp(s, caller, idOrName);
  /** env.changed names the keys set (new or changed) and removed, never a value. */
  const recordEnvChange = async (accountId: string, app: string, before: Record<string, string>, after: Record<string, string>) => {
    const set = Object.keys(after).filter((k) => before[k] !== after[k]);
    const removed = Object.keys(before).filter((k) => !(k in after));
    if (set.length || removed.length) await s.events.record(accountId, 'env.changed', app, { set, removed });
  };
  return [
    op({
      method: 'GET',
      path: '/apps',
      operationId: 'listApps',
      tag: 'apps',
      summary: 'List apps',
      action: 'read',
      query: listQuery,
      response: z.object({ apps: z.array(appSchema), next_after: z.string().nullable() }),
      handler: async ({ caller, query }) => {
        // Previews are listed under their app.
        const q = query.q?.toLowerCase();
        const all = s.apps
          .list(caller.account.namespace)
          .filter((a) => !a.spec.preview && allowedApp(caller, a.name) && (!q || a.name.includes(q)));
        const page = all.filter((a) => query.after === undefined || a.name > query.after).slice(0, query.limit);
        const more = page.length === query.limit && all.at(-1) !== page.at(-1);
        return { body: { apps: page.map(presentApp), next_after: more ? page.at(-1)!.name : null } };
      },
    }),
    op({
      method: 'POST',
      path: '/apps',
      operationId: 'createApp',
      tag: 'apps',
      summary: 'Create an app',
      action: 'write',
      status: 201,
      body: createAppBody,
      response: appSchema,
      handler: async ({ caller, body }) => {
        requireApp(caller, body.name);
        const refused = body.image ? refusedImage([body.image], s.config.images) : undefined;
        if (refused) throw invalid(refused);
        const spec: App['spec'] = body.image ? { kind: 'container', image: body.image } : {};
        if (body.port !== undefined) spec.port = body.port;
        if (body.machines !== undefined) spec.machines = body.machines;
        const ns = caller.account.namespace;
        const app = await s.accountLock.hold(caller.account.id, async () => {
          s.actions.assertAppFits(ns);
          return s.apps.create(ns, body.name, spec);
        });
        await s.events.record(caller.account.id, 'app.created', app.name, { app: app.name });
        return { status: 201, body: presentApp(app) };
      },
    }),
    op({
      method: 'GET',
      path: '/apps/{appID}',
      operationId: 'getApp',
      tag: 'apps',
      summary: 'Get app',
      action: 'read',
      response: appSchema,
      handler: async ({ caller, params }) => ({ body: presentApp(await find(caller, params.appID!)) }),
    }),
    op({
      method: 'GET',
      path: '/apps/{appID}/env',
      operationId: 'getEnv',
      tag: 'apps',
      summary: 'Get app environment',
      // Values are secrets (database URLs, keys): reading them is as much as setting them.
      action: 'write',
      response: envSchema,
      handler: async ({ caller, params }) => {
        const app = await find(caller, params.appID!);
        return { body: presentEnv(app, await s.env.read(app)) };
      },
    }),
    op({
      method: 'PATCH',
      path: '/apps/{appID}/env',
      operationId: 'mergeEnv',
      tag: 'apps',
      summary: 'Merge app environment',
      action: 'write',
      body: mergeEnvBody,
      response: envSchema,
      handler: async ({ caller, params, body }) => {
        const app = await find(caller, params.appID!);
        const env = await s.env.read(app);
        const before = { ...env };
        for (const [k, v] of Object.entries(body)) {
          if (v === null) delete env[k];
          else env[k] = v;
        }
        if (Object.keys(env).length > maxEnvVars) throw invalid(`invalid body: at most ${maxEnvVars} variables`);
        await s.env.write(app, env);
        await recordEnvChange(caller.account.id, app.name, before, env);
        return { body: presentEnv(app, env) };
      },
    }),
    op({
      method: 'PUT',
      path: '/apps/{appID}/env',
      operationId: 'replaceEnv',
      tag: 'apps',
      summary: 'Replace app environment',
      action: 'write',
      body: replaceEnvBody,
      response: envSchema,
      handler: async ({ caller, params, body }) => {
        const app = await find(caller, params.appID!);
        const before = await s.env.read(app);
        await s.env.write(app, body);
        await recordEnvChange(caller.account.id, app.name, before, body);
        return { body: presentEnv(app, body) };
      },
    }),
    op({
      method: 'DELETE',
      path: '/apps/{appID}/env/{key}',
      operationId: 'deleteEnvVar',
      tag: 'apps',
      summary: 'Delete one environment variable',
      action: 'write',
      status: 204,
      handler: async ({ caller, params }) => {
        const app = await find(caller, params.appID!);
        const env = await s.env.read(app);
        if (!(params.key! in env)) throw notFound(`variable ${params.key} of app ${app.name}`);
        delete env[params.key!];
        await s.env.write(app, env);
        await s.events.record(caller.account.id, 'env.changed', app.name, { set: [], removed: [params.key!] });
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'GET',
      path: '/apps/{appID}/machines',
      operationId: 'listMachines',
      tag: 'apps',
      summary: 'List machines',
      action: 'read',
      query: z.strictObject({
        service: z
          .string()
          .max(30)
          .optional()
          .describe("Only this service's machines (an app deployed from a compose file with several services)."),
      }),
      response: z.object({
        machines: z.array(
          z.object({
            ordinal: z.number(),
            service: z.string().nullable().describe('The service the machine runs, in an app with several; null otherwise.'),
            public: z.boolean().describe("Whether it serves the app's hostname (its public service's)."),
            node: z.string().nullable(),
            state: z.string(),
            address: z.string().nullable(),
            deploy: z.string().nullable(),
            started_at: z.string().nullable(),
          }),
        ),
      }),
      // As the App controller last observed them (App status), so this reads no Pod.
      handler: async ({ caller, params, query }) => {
        const app = await find(caller, params.appID!);
        const only = query.service !== undefined ? serviceOrInvalid(app, query.service) : undefined;
        const groups = app.status?.services?.length
          ? app.status.services.map((v) => ({ service: v.name, public: v.public ?? false, machines: v.machines ?? [] }))
          : [{ service: null, public: true, machines: app.status?.machines ?? [] }];
        return {
          body: {
            machines: groups
              .filter((g) => only === undefined || g.service === only)
              .flatMap((g) =>
                g.machines.map((m) => ({
                  ordinal: m.ordinal,
                  service: g.service,
                  public: g.public,
                  node: m.node ?? null,
                  state: m.state ?? 'pending',
                  address: m.address ?? null,
                  deploy: m.deploy ?? null,
                  started_at: m.startedAt ?? null,
                })),
              ),
          },
        };
      },
    }),
    op({
      method: 'DELETE',
      path: '/apps/{appID}',
      operationId: 'deleteApp',
      tag: 'apps',
      summary: 'Delete app',
      action: 'write',
      status: 204,
      handler: async ({ caller, params }) => {
        const app = await find(caller, params.appID!);
        await s.apps.delete(caller.account.namespace, app.name);
        await s.events.record(caller.account.id, 'app.deleted', app.name, { app: app.name });
        return { status: 204, body: undefined };
      },
    }),
  ];
}
