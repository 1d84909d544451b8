// An app's custom domains (docs/api/domains.md, docs/decisions/0027-app-domains.md): list, add,
// read, remove and check now. The decisions are the domain actions' (api/domains/actions.ts).
import { z } from 'zod';
import { actorOf } from '../actor.js';
import { resolveApp, type AppLookup } from '../app-access.js';
import { op, type Operation } from '../operation.js';
import { addedSchema, domainSchema, presentDomain } from '../presenters/domains.js';
import type { ApiDeps } from '../deps.js';
import { publishedRecords } from '../registrar/records.js';
import type { RegistrarActions } from '../registrar/actions.js';

type Deps = AppLookup & {
  domainActions: Pick<ApiDeps['domainActions'], 'list' | 'get' | 'add' | 'remove' | 'verify'>;
  registrar: Pick<RegistrarActions, 'publishRecords'> | undefined;
  log: ApiDeps['log'];
};

const one = z.object({ domain: domainSchema });

export function domainOperations(s: Deps): Operation[] {
  return [
    op({
      method: 'GET',
      path: '/apps/{appID}/domains',
      operationId: 'listAppDomains',
      tag: 'apps',
      summary: 'List domains',
      action: 'read',
      response: z.object({ domains: z.array(domainSchema) }),
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        return { body: { domains: (await s.domainActions.list(actorOf(caller), app)).map(presentDomain) } };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/{appID}/domains',
      operationId: 'createAppDomain',
      tag: 'apps',
      summary: 'Create domain',
      action: 'write',
      status: 201,
      body: z
        .object({ name: z.string().min(1).max(1024).describe('The domain: apex, subdomain or *.wildcard; Unicode or punycode') })
        .strict(),
      response: addedSchema,
      handler: async ({ caller, params, body }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const actor = actorOf(caller);
        const { view, created } = await s.domainActions.add(actor, app, body.name);
        return { status: created ? 201 : 200, body: { domain: presentDomain(view), ...(await publishedRecords(s, actor, view)) } };
      },
    }),
    op({
      method: 'GET',
      path: '/apps/{appID}/domains/{domain}',
      operationId: 'getAppDomain',
      tag: 'apps',
      summary: 'Get domain',
      action: 'read',
      response: one,
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        return { body: { domain: presentDomain(await s.domainActions.get(actorOf(caller), app, params.domain!)) } };
      },
    }),
    op({
      method: 'DELETE',
      path: '/apps/{appID}/domains/{domain}',
      operationId: 'deleteAppDomain',
      tag: 'apps',
      summary: 'Delete domain',
      action: 'write',
      status: 204,
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        await s.domainActions.remove(actorOf(caller), app, params.domain!);
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/{appID}/domains/{domain}/verify',
      operationId: 'verifyAppDomain',
      tag: 'apps',
      summary: 'Verify domain',
      action: 'write',
      response: one,
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        return { body: { domain: presentDomain(await s.domainActions.verify(actorOf(caller), app, params.domain!)) } };
      },
    }),
  ];
}
