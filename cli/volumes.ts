// `svc volumes ls|rm`: the account's volumes, its apps' machines' and its databases' (docs/api/data.md).
import { callJson, request, type ApiTarget } from './api.js';
import { formatBytes, table } from './table.js';
import { UsageError } from './token-commands.js';

interface VolumeRecord {
  ref: string;
  kind: string;
  app: string | null;
  machine: number | null;
  database: string | null;
  path: string | null;
  size_bytes: number;
  used_bytes: number | null;
  attached: boolean;
  node: string | null;
}

function volumeTable(volumes: VolumeRecord[]): string[] {
  const owner = (v: VolumeRecord) => (v.kind === 'database' ? `database ${v.database}` : `${v.app} machine ${v.machine}`);
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

export async function volumesCommand(
  t: ApiTarget,
  command: string | undefined,
  args: string[],
  o: { json: boolean; out: (line: string) => void },
): Promise<void> {
  switch (command) {
    case 'ls': {
      const { volumes } = await callJson<{ volumes: VolumeRecord[] }>(t, 'GET', '/volumes');
      if (o.json) o.out(JSON.stringify(volumes));
      else volumeTable(volumes).forEach((l) => o.out(l));
      return;
    }
    case 'rm': {
      const [ref] = args;
      if (!ref) throw new UsageError('svc volumes rm REF');
      await request(t, 'DELETE', `/volumes/${encodeURIComponent(ref)}`);
      o.out(`${ref} deleted`);
      return;
    }
    default:
      throw new UsageError(`unknown volumes command: ${command ?? '(none)'}`);
  }
}
