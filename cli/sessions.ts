// `svc sessions revoke APP [--user USER_ID | --email EMAIL]`: sign people out of an app (POST
// /apps/{appID}/auth/sessions/revoke): everyone, one user, or one address. The API lists no
// sessions, only how many each user has (svc users ls APP).
import { body } from '../lib/client/index.js';
import { confirm, connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';

const usage = `usage:
  svc sessions revoke APP [--user USER_ID | --email EMAIL] [--yes] [--json]
                                               sign out one user, or one address, or (with neither,
                                               after asking) everyone; they can sign in again
                                               (to stop that: svc users disable APP USER_ID)
Each user's number of sessions: svc users ls APP.
example:
  svc sessions revoke shop --email someone@example.com`;

export const sessionsGroup: CommandGroup = {
  name: 'sessions',
  synopsis: `  svc sessions revoke APP [--user USER_ID | --email EMAIL]
                                              sign people out of an app (everyone, after asking)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      user: { type: 'string' },
      email: { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
    });
    const [command, app] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    if (command !== 'revoke') throw new GroupUsageError(`unknown sessions command: ${command}`, usage);
    if (!app) throw new GroupUsageError('svc sessions revoke APP [--user USER_ID | --email EMAIL]', usage);
    if (values.user && values.email) throw new GroupUsageError('give --user or --email, not both', usage);
    const who = values.user ? `user ${values.user}` : values.email ? values.email : 'everyone';
    // Everyone out is the broad one: asked, as rm is.
    if (!values.user && !values.email && !(await confirm(ctx, `sign everyone out of ${app}?`, values.yes === true))) {
      ctx.err('svc: nothing revoked');
      return 1;
    }
    const request = values.user ? { user_id: values.user } : values.email ? { email: values.email } : {};
    const answer = await body(
      connect(ctx, values.token).POST('/apps/{appID}/auth/sessions/revoke', { params: { path: { appID: app } }, body: request }),
    );
    show(ctx, values.json === true, answer, (a) => [`signed ${who} out of ${app}: ${a.revoked} sessions ended`]);
    return 0;
  },
};
