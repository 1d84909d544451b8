// App-user operations (spec "App-user operations"): the owner lists, disables and enables the
// people of an app, sees which sign-in providers its policy uses and whether this platform has
// them set up, and revokes sessions. Also the owner's own way in: a one-time link that opens the
// app signed in as the owner (docs/decisions/0010-sign-in.md).
import { z } from 'zod';
import type { AppUser } from '../../lib/auth/app-users.js';
import { admitsAppUsers, type Identity } from '../../lib/auth/identity.js';
import { ownerLinkLifetimeMs } from '../../lib/auth/links.js';
import type { AppRecord } from '../repositories/app-record.js';
import { conflict, invalid, notFound } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { resolveApp, type AppLookup } from '../app-access.js';
import { appUrl, loginUrl } from '../../lib/contract.js';

type Deps = AppLookup &
  Pick<ApiDeps, 'clock'> & {
    auth: {
      users: Pick<ApiDeps['auth']['users'], 'list' | 'get' | 'disable' | 'enable'>;
      /** Whole: users.disable revokes the user's sessions through it. */
      sessions: ApiDeps['auth']['sessions'];
      links: Pick<ApiDeps['auth']['links'], 'handoff'>;
    };
    /** The app's URL (site), and which sign-in providers this platform is set up for (mail, auth). */
    config: Pick<ApiDeps['config'], 'site' | 'mail' | 'auth'>;
  };

const userSchema = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  last_provider: z.string().nullable(),
  created_at: z.string(),
  last_sign_in_at: z.string().nullable(),
  disabled: z.boolean(),
  disabled_at: z.string().nullable(),
  active_sessions: z.number().int(),
});

const providerSchema = z.object({
  name: z.enum(['email', 'passkey', 'svc', 'idp', 'codehost']),
  in_policy: z.boolean().describe('The app’s policy admits identities of this provider'),
  configured: z.boolean().describe('This platform is set up for the provider'),
});

function presentUser(u: AppUser, sessions: number): z.infer<typeof userSchema> {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    last_provider: u.lastProvider,
    created_at: u.createdAt.toISOString(),
    last_sign_in_at: u.lastSignInAt?.toISOString() ?? null,
    disabled: u.disabledAt !== null,
    disabled_at: u.disabledAt?.toISOString() ?? null,
    active_sessions: sessions,
  };
}

function providersOf(s: Pick<Deps, 'config'>, app: AppRecord): Array<z.infer<typeof providerSchema>> {
  const admit = (app.spec.auth?.rules ?? []).map((r) => r.admit);
  const appUsers = admitsAppUsers(app.spec.auth);
  return [
    { name: 'email', in_policy: appUsers, configured: s.config.mail.smtpUrl !== undefined },
    { name: 'passkey', in_policy: appUsers, configured: true },
    { name: 'svc', in_policy: admit.some((a) => a.owner), configured: true },
    { name: 'idp', in_policy: admit.some((a) => a.idp), configured: s.config.auth.idp !== undefined },
    { name: 'codehost', in_policy: admit.some((a) => a.codehost), configured: s.config.auth.codehost !== undefined },
  ];
}

export function appAuthOperations(s: Deps): Operation[] {
  const userOp = (action: 'disable' | 'enable') =>
    op({
      method: 'POST',
      path: `/apps/{appID}/auth/users/{userID}/${action}`,
      operationId: `${action}AppUser`,
      tag: 'apps',
      summary: action === 'disable' ? 'Disable an app user' : 'Enable an app user',
      action: 'write',
      response: z.object({ user: userSchema }),
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const uid = app.id;
        const user =
          action === 'disable'
            ? await s.auth.users.disable(uid, params.userID!, s.auth.sessions)
            : await s.auth.users.enable(uid, params.userID!);
        if (!user) throw notFound(`app user ${params.userID}`);
        const counts = await s.auth.sessions.activeCount(uid);
        return { body: { user: presentUser(user, counts.get(user.id) ?? 0) } };
      },
    });
  return [
    op({
      method: 'GET',
      path: '/apps/{appID}/auth/users',
      operationId: 'listAppUsers',
      tag: 'apps',
      summary: 'List app users',
      action: 'read',
      query: z.strictObject({ limit: z.coerce.number().int().min(1).max(200).default(50), after: z.string().max(64).optional() }),
      response: z.object({ users: z.array(userSchema), next_after: z.string().nullable() }),
      handler: async ({ caller, params, query }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const uid = app.id;
        const users = await s.auth.users.list(uid, { limit: query.limit, ...(query.after ? { after: query.after } : {}) });
        const counts = await s.auth.sessions.activeCount(uid);
        return {
          body: {
            users: users.map((u) => presentUser(u, counts.get(u.id) ?? 0)),
            next_after: users.length === query.limit ? users.at(-1)!.id : null,
          },
        };
      },
    }),
    userOp('disable'),
    userOp('enable'),
    op({
      method: 'POST',
      path: '/apps/{appID}/auth/sessions/revoke',
      operationId: 'revokeAppSessions',
      tag: 'apps',
      summary: 'Revoke app sessions',
      action: 'write',
      body: z
        .strictObject({ user_id: z.string().max(64).optional(), email: z.email().max(254).optional() })
        .refine((b) => !(b.user_id && b.email), 'send at most one of user_id and email')
        .optional(),
      response: z.object({ revoked: z.number().int() }),
      handler: async ({ caller, params, body }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const uid = app.id;
        if (body?.user_id && !(await s.auth.users.get(uid, body.user_id))) throw notFound(`app user ${body.user_id}`);
        const revoked = await s.auth.sessions.revoke(uid, {
          ...(body?.user_id ? { appUserId: body.user_id } : {}),
          ...(body?.email ? { email: body.email } : {}),
        });
        return { body: { revoked } };
      },
    }),
    op({
      method: 'GET',
      path: '/apps/{appID}/auth/providers',
      operationId: 'listAuthProviders',
      tag: 'apps',
      summary: 'List configured authentication providers',
      action: 'read',
      response: z.object({ providers: z.array(providerSchema) }),
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        return { body: { providers: providersOf(s, app) } };
      },
    }),
    op({
      method: 'POST',
      path: '/apps/{appID}/auth/owner-link',
      operationId: 'createOwnerLink',
      tag: 'apps',
      summary: 'Open the app signed in as its owner',
      // It mints a session with the owner's identity: as much as changing the app, never a reader's.
      action: 'write',
      status: 201,
      body: z.strictObject({ next: z.string().max(2048).startsWith('/').optional() }).optional(),
      response: z.object({ url: z.string(), expires_at: z.string() }),
      handler: async ({ caller, params, body }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const url = app.status?.url ? appUrl(s.config.site, app.name) : undefined;
        if (!url) throw conflict(`app ${app.name} has no URL yet (deploy it first)`);
        if (!(app.spec.auth?.rules ?? []).some((r) => r.admit.owner))
          throw conflict(`the policy of app ${app.name} does not admit its owner; add \`owner\` to it`);
        const next = body?.next ?? '/';
        if (next.startsWith('//') || next.includes('\\')) throw invalid('invalid body: next: must be a path of the app');
        const identity: Identity = {
          provider: 'svc',
          subject: caller.account.id,
          email: caller.account.email,
          name: caller.account.name,
          facts: { namespace: caller.account.namespace },
        };
        const token = await s.auth.links.handoff(app.id, identity, { next, lifetimeMs: ownerLinkLifetimeMs });
        const expires = new Date(s.clock().getTime() + ownerLinkLifetimeMs);
        return {
          status: 201,
          body: { url: loginUrl(next, { origin: url, fragment: `handoff=${token}` }), expires_at: expires.toISOString() },
        };
      },
    }),
  ];
}
