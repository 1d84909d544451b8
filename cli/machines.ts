// `svc machines ls APP | migrate APP ORDINAL`: an app's machines as the App controller last saw
// them (GET /apps/{appID}/machines), and moving one to another node (POST
// /apps/{appID}/machines/{ordinal}/migrate).
import { body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { shellWord } from './domains.js';
import { table } from './table.js';

type MachineBody = paths['/apps/{appID}/machines']['get']['responses'][200]['content']['application/json']['machines'][number];

const usage = `usage:
  svc machines ls APP [--service S] [--json]   the app's machines: state, node, address, deploy
  svc machines migrate APP ORDINAL [--node NODE] [--json]
                                               move machine ORDINAL (0, 1, ...) to NODE, else to
                                               another ready node
example:
  svc machines ls shop && svc machines migrate shop 0`;

/** `svc machines ls`: one line per machine, named as the logs name them (m0, worker/m1). */
export function machinesTable(app: string, machines: MachineBody[]): string[] {
  if (machines.length === 0)
    return [`app ${app} has no machines (not deployed, or scaled to zero); deploy it: svc deploy ${shellWord(app)} DIR`];
  return table([
    ['MACHINE', 'STATE', 'NODE', 'ADDRESS', 'DEPLOY', 'STARTED'],
    ...machines.map((m) => [
      `${m.service ? `${m.service}/` : ''}m${m.ordinal}${m.service && m.public ? ' (public)' : ''}`,
      m.state,
      m.node ?? '-',
      m.address ?? '-',
      m.deploy ?? '-',
      m.started_at ?? '-',
    ]),
  ]);
}

export const machinesGroup: CommandGroup = {
  name: 'machines',
  synopsis: `  svc machines ls APP [--service S] | migrate APP ORDINAL [--node NODE]
                                              an app's machines, or move one to another node`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      service: { type: 'string' },
      node: { type: 'string' },
    });
    const [command, app, ordinal] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const api = () => connect(ctx, values.token);
    switch (command) {
      case 'ls': {
        if (!app) throw new GroupUsageError('svc machines ls APP', usage);
        const query = values.service !== undefined ? { service: values.service } : {};
        const answer = await body(api().GET('/apps/{appID}/machines', { params: { path: { appID: app }, query } }));
        show(ctx, json, answer, (a) => machinesTable(app, a.machines));
        return 0;
      }
      case 'migrate': {
        if (!app || !ordinal || !/^\d+$/.test(ordinal))
          throw new GroupUsageError('svc machines migrate APP ORDINAL (a machine number)', usage);
        const moved = await body(
          api().POST('/apps/{appID}/machines/{ordinal}/migrate', {
            params: { path: { appID: app, ordinal } },
            body: values.node ? { node: values.node } : {},
          }),
        );
        show(ctx, json, moved, (m) => [`moving machine m${m.ordinal} of ${app} from ${m.from ?? '(no node)'} to ${m.to}`]);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown machines command: ${command}`, usage);
    }
  },
};
