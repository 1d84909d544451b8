// `svc rollback APP [DEPLOY_ID]`: serve an earlier deploy again (POST /apps/{appID}/rollback): the
// one named, or by default the last live one before the current. The rollback is itself a deploy;
// it prints it and how to follow it.
import { body } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { describeDeploy } from './deploys.js';
import { shellWord } from './domains.js';

const usage = `usage:
  svc rollback APP [DEPLOY_ID] [--json]        serve an earlier deploy again: DEPLOY_ID (from
                                               svc deploys ls APP), else the last live one before
                                               the current
example:
  svc deploys ls shop && svc rollback shop dep_0123456789`;

export const rollbackGroup: CommandGroup = {
  name: 'rollback',
  synopsis: `  svc rollback APP [DEPLOY_ID]                serve an earlier deploy again (default: the last
                                              live one before the current)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, { json: { type: 'boolean' } });
    const [app, deployId, extra] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!app || extra !== undefined) throw new GroupUsageError('svc rollback APP [DEPLOY_ID]', usage);
    const deploy = await body(
      connect(ctx, values.token).POST('/apps/{appID}/rollback', {
        params: { path: { appID: app } },
        body: deployId ? { deploy_id: deployId } : {},
      }),
    );
    show(ctx, values.json === true, deploy, (d) => [
      `rolling ${app} back: deploy ${d.id} (${d.origin_deploy ? `${d.origin} of ${d.origin_deploy}` : d.origin})`,
      ...describeDeploy(d),
      `follow it: svc deploys get ${shellWord(d.id)}`,
    ]);
    return 0;
  },
};
