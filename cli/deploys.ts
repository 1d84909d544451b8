// `svc deploys ls APP | get ID`: an app's deploys, newest first (GET /apps/{appID}/deploys, paged
// by next_before), and one deploy (GET /deploys/{deployID}). Deploying is cli/deploy.ts; going back
// to an earlier deploy is cli/rollback.ts.
import { body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { shellWord } from './domains.js';
import { table } from './table.js';

/** A deploy as the API answers it (GET /deploys/{deployID}). */
export type DeployBody = paths['/deploys/{deployID}']['get']['responses'][200]['content']['application/json'];

const usage = `usage:
  svc deploys ls APP [--limit N] [--json]      the app's deploys, newest first (default the last 20);
                                               * marks the one it serves
  svc deploys get ID [--json]                  one deploy: status, why it failed, what it deployed
example:
  svc deploys ls shop && svc rollback shop`;

/** `svc deploys ls`: one line per deploy, the current one marked. */
export function deploysTable(app: string, deploys: DeployBody[]): string[] {
  if (deploys.length === 0) return [`app ${app} has no deploys yet; deploy it: svc deploy ${shellWord(app)} DIR`];
  return table([
    ['', 'ID', 'STATUS', 'KIND', 'ORIGIN', 'CREATED', 'BY', 'REASON'],
    ...deploys.map((d) => [
      d.current ? '*' : '',
      d.id,
      d.status,
      d.kind,
      d.origin_deploy ? `${d.origin} of ${d.origin_deploy}` : d.origin,
      d.created_at,
      d.created_by ?? '-',
      d.reason ?? '-',
    ]),
  ]);
}

/** `svc deploys get` and `svc rollback`: the deploy's fields. */
export function describeDeploy(d: DeployBody): string[] {
  return table([
    ['deploy:', `${d.id}${d.current ? ' (serving now)' : ''}`],
    ['app:', d.app],
    ['status:', d.status],
    ...(d.reason ? [['reason:', d.reason]] : []),
    ['kind:', d.kind],
    ['image:', d.image ?? '-'],
    ['digest:', d.digest ?? '-'],
    ['origin:', d.origin_deploy ? `${d.origin} of ${d.origin_deploy}` : d.origin],
    ['created:', `${d.created_at}${d.created_by ? ` by ${d.created_by}` : ''}`],
    ['live:', d.live_at ?? '-'],
  ]);
}

export const deploysGroup: CommandGroup = {
  name: 'deploys',
  synopsis: `  svc deploys ls APP [--limit N] | get ID     an app's deploys, newest first, or one deploy`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, { json: { type: 'boolean' }, limit: { type: 'string' } });
    const [command, arg] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const api = () => connect(ctx, values.token);
    switch (command) {
      case 'ls': {
        if (!arg) throw new GroupUsageError('svc deploys ls APP', usage);
        const limit = values.limit === undefined ? 20 : Number(values.limit);
        if (!Number.isInteger(limit) || limit < 1) throw new GroupUsageError('--limit is a number of deploys', usage);
        // Pages of at most 200 (the API's most) until there are enough, or no more.
        const deploys: DeployBody[] = [];
        for (let before: string | undefined; deploys.length < limit;) {
          const query = { limit: Math.min(200, limit - deploys.length), ...(before ? { before } : {}) };
          const page = await body(api().GET('/apps/{appID}/deploys', { params: { path: { appID: arg }, query } }));
          deploys.push(...page.deploys);
          if (!page.next_before) break;
          before = page.next_before;
        }
        show(ctx, json, { deploys }, (a) => deploysTable(arg, a.deploys));
        return 0;
      }
      case 'get': {
        if (!arg) throw new GroupUsageError('svc deploys get ID', usage);
        show(ctx, json, await body(api().GET('/deploys/{deployID}', { params: { path: { deployID: arg } } })), describeDeploy);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown deploys command: ${command}`, usage);
    }
  },
};
