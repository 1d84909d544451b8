// `svc users ls|disable|enable|providers APP`: the people signed in to an app that admits app users
// (GET /apps/{appID}/auth/users, POST .../users/{userID}/disable|enable, GET
// /apps/{appID}/auth/providers; docs/api/app-users.md). Disabling one ends their sessions at once.
// Ending sessions without disabling anyone is cli/sessions.ts.
import { body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { shellWord } from './domains.js';
import { table } from './table.js';

type UserBody = paths['/apps/{appID}/auth/users']['get']['responses'][200]['content']['application/json']['users'][number];
type ProviderBody = paths['/apps/{appID}/auth/providers']['get']['responses'][200]['content']['application/json']['providers'][number];

const usage = `usage:
  svc users ls APP [--json]                    the app's users: email, last sign-in, sessions, disabled
  svc users disable APP USER_ID [--json]       refuse a user, ending their sessions now
  svc users enable APP USER_ID [--json]        let a disabled user sign in again
  svc users providers APP [--json]             the sign-in providers the app's policy uses, and
                                               whether this platform has each set up
example:
  svc users ls shop && svc users disable shop usr_0123456789`;

export function usersTable(app: string, users: UserBody[]): string[] {
  if (users.length === 0) return [`app ${app} has no users yet`];
  return table([
    ['ID', 'EMAIL', 'NAME', 'LAST SIGN-IN', 'VIA', 'SESSIONS', 'STATE'],
    ...users.map((u) => [
      u.id,
      u.email,
      u.name ?? '-',
      u.last_sign_in_at ?? 'never',
      u.last_provider ?? '-',
      String(u.active_sessions),
      u.disabled ? `disabled ${u.disabled_at ?? ''}`.trim() : 'active',
    ]),
  ]);
}

export function providersTable(providers: ProviderBody[]): string[] {
  return table([
    ['PROVIDER', 'IN POLICY', 'SET UP'],
    ...providers.map((p) => [
      p.name,
      p.in_policy ? 'yes' : 'no',
      p.configured ? 'yes' : p.in_policy ? 'no (cannot sign in with it)' : 'no',
    ]),
  ]);
}

export const usersGroup: CommandGroup = {
  name: 'users',
  synopsis: `  svc users ls APP | disable APP USER_ID | enable APP USER_ID | providers APP
                                              the people of an app's sign-in, and its providers`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, { json: { type: 'boolean' } });
    const [command, app, userID] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    if (!app) throw new GroupUsageError(`svc users ${command} APP`, usage);
    const json = values.json === true;
    const api = () => connect(ctx, values.token);
    switch (command) {
      case 'ls': {
        // Every page (next_after), as one list.
        const users: UserBody[] = [];
        for (let after: string | undefined; ;) {
          const query = { limit: 200, ...(after ? { after } : {}) };
          const page = await body(api().GET('/apps/{appID}/auth/users', { params: { path: { appID: app }, query } }));
          users.push(...page.users);
          if (!page.next_after) break;
          after = page.next_after;
        }
        show(ctx, json, { users }, (a) => usersTable(app, a.users));
        return 0;
      }
      case 'disable':
      case 'enable': {
        if (!userID) throw new GroupUsageError(`svc users ${command} APP USER_ID`, usage);
        const params = { params: { path: { appID: app, userID } } };
        const { user } = await body(
          command === 'disable'
            ? api().POST('/apps/{appID}/auth/users/{userID}/disable', params)
            : api().POST('/apps/{appID}/auth/users/{userID}/enable', params),
        );
        show(ctx, json, { user }, () => [
          command === 'disable'
            ? `${user.email} can no longer sign in to ${app}; their sessions have ended`
            : `${user.email} can sign in to ${app} again (svc users disable ${shellWord(app)} ${shellWord(user.id)} undoes it)`,
        ]);
        return 0;
      }
      case 'providers':
        show(ctx, json, await body(api().GET('/apps/{appID}/auth/providers', { params: { path: { appID: app } } })), (a) =>
          providersTable(a.providers),
        );
        return 0;
      default:
        throw new GroupUsageError(`unknown users command: ${command}`, usage);
    }
  },
};
