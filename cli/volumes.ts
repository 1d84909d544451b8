// `svc volumes ls|rm`: the account's volumes, its apps' machines' and its databases' (GET /volumes,
// DELETE /volumes/{ref}; docs/api/data.md).
import { body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, type CommandGroup } from './command.js';
import { formatBytes, table } from './table.js';

/** A volume as the API answers it (GET /volumes). */
type VolumeBody = paths['/volumes']['get']['responses'][200]['content']['application/json']['volumes'][number];

const usage = `usage:
  svc volumes ls [--json]                      the account's volumes: its apps' machines' and its
                                               databases', where each is mounted and how full
  svc volumes rm REF                           free one that no machine or database holds any more
example:
  svc volumes ls && svc volumes rm vol-shop-data-m0`;

function volumeTable(volumes: VolumeBody[]): string[] {
  const owner = (v: VolumeBody) => (v.kind === 'database' ? `database ${v.database}` : `${v.app} machine ${v.machine}`);
  return table([
    ['REF', 'OF', 'PATH', 'SIZE', 'USED', 'ATTACHED', 'NODE'],
    ...volumes.map((v) => [
      v.ref,
      owner(v),
      v.path ?? '-',
      formatBytes(v.size_bytes),
      v.used_bytes === null ? '-' : formatBytes(v.used_bytes),
      v.attached ? 'yes' : 'no',
      v.node ?? '-',
    ]),
  ]);
}

export const volumesGroup: CommandGroup = {
  name: 'volumes',
  synopsis: `  svc volumes ls [--json] | rm REF            the account's volumes (apps' machines' and databases');
                                              rm frees one no machine or database holds`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, { json: { type: 'boolean' } });
    const [command, ref] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const api = connect(ctx, values.token);
    switch (command) {
      case 'ls': {
        const { volumes } = await body(api.GET('/volumes'));
        // --json: the list itself, as it has always been printed.
        if (values.json) ctx.out(JSON.stringify(volumes));
        else volumeTable(volumes).forEach((l) => ctx.out(l));
        return 0;
      }
      case 'rm': {
        if (!ref) throw new GroupUsageError('svc volumes rm REF', usage);
        await api.DELETE('/volumes/{ref}', { params: { path: { ref } } });
        ctx.out(`${ref} deleted`);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown volumes command: ${command}`, usage);
    }
  },
};
