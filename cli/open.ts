// `svc open APP [PATH]`: prints a one-time link that opens the app signed in as its owner (the API's
// POST /apps/{appID}/auth/owner-link; valid five minutes, once). Open it in a browser.
import { body } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, type CommandGroup } from './command.js';

const usage = `usage:
  svc open APP [PATH] [--json]                 print a one-time link (valid 5 minutes) that opens the
                                               app at PATH (default /) signed in as its owner
example:
  svc open shop /admin`;

export const openGroup: CommandGroup = {
  name: 'open',
  synopsis: `  svc open APP [PATH]                          print a one-time link (5 minutes) that opens the app
                                              signed in as its owner`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, { json: { type: 'boolean' } });
    if (values.help) return printUsage(this, ctx);
    const [app, where = '/', extra] = positionals;
    if (!app) throw new GroupUsageError('name the app to open', usage);
    if (extra !== undefined) throw new GroupUsageError(`one path at a time (got ${where} and ${extra})`, usage);
    if (!where.startsWith('/')) throw new GroupUsageError('PATH starts with /', usage);
    const api = connect(ctx, values.token);
    const link = await body(api.POST('/apps/{appID}/auth/owner-link', { params: { path: { appID: app } }, body: { next: where } }));
    // The link alone on stdout, to hand to a browser: xdg-open "$(svc open shop)".
    ctx.out(values.json ? JSON.stringify(link) : link.url);
    return 0;
  },
};
