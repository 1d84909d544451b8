// The data group's volumes: every volume claim of the account, its apps' machines' (declared by
// compose `volumes:` or x-svc.volumes, one per machine and volume) and its databases' (listed,
// deleted only with their database), and the deletion of a detached one (docs/api/data.md).
import { z } from 'zod';
import { conflict, notFound } from '../errors.js';
import { op, type Operation } from '../operation.js';
import type { Services } from '../services.js';

const volumeSchema = z.object({
  ref: z.string(),
  kind: z.enum(['machine', 'database']),
  app: z.string().nullable(),
  service: z.string().nullable().describe("The app's service whose machine it is, in an app with several; null otherwise."),
  machine: z.number().nullable(),
  volume: z.string().nullable(),
  database: z.string().nullable(),
  path: z.string().nullable(),
  size_bytes: z.number(),
  used_bytes: z.number().nullable(),
  attached: z.boolean(),
  mounted_by: z.string().nullable(),
  node: z.string().nullable(),
  created_at: z.string(),
});

const storageSchema = z
  .object({
    used_bytes: z.number().describe('What the storage limit counts now: the sum of the three below'),
    limit_bytes: z.number().describe("The account's storage limit (SVC_STORAGE_MAX_BYTES_PER_ACCOUNT)"),
    database_bytes: z.number().describe("Its databases' volumes (branches included), by size"),
    volume_bytes: z
      .number()
      .describe("Its apps' volumes by size: the claims that exist, attached or not, and those its apps declare that are not made yet"),
    artifact_bytes: z.number().describe('The stored artifacts it holds (deploy uploads, build sources and outputs, backups), each once'),
  })
  .describe("The account's storage as its limit counts it (docs/api/data.md#storage)");

export function volumeOperations(s: Services): Operation[] {
  const list = (namespace: string) => s.volumes.list(namespace, s.apps.list(namespace), s.databases.list(namespace));
  // Deciding a deletion needs no kubelet: the caches say what holds a volume.
  const describe = (namespace: string) => s.volumes.describe(namespace, s.apps.list(namespace), s.databases.list(namespace));
  return [
    op({
      method: 'GET',
      path: '/volumes',
      operationId: 'listVolumes',
      tag: 'data',
      summary: 'List volumes',
      action: 'read',
      accountWide: true,
      response: z.object({ volumes: z.array(volumeSchema), storage: storageSchema }),
      handler: async ({ caller }) => {
        const { account } = caller;
        const [volumes, use] = await Promise.all([list(account.namespace), s.storage.use(account.id, account.namespace)]);
        return {
          body: {
            volumes,
            storage: {
              used_bytes: use.usedBytes,
              limit_bytes: use.limitBytes,
              database_bytes: use.databaseBytes,
              volume_bytes: use.volumeBytes,
              artifact_bytes: use.artifactBytes,
            },
          },
        };
      },
    }),
    op({
      method: 'DELETE',
      path: '/volumes/{ref}',
      operationId: 'deleteVolume',
      tag: 'data',
      summary: 'Delete volume',
      action: 'write',
      accountWide: true,
      status: 204,
      handler: async ({ caller, params }) => {
        const ns = caller.account.namespace;
        const volume = describe(ns).find((v) => v.ref === params.ref);
        if (!volume) throw notFound(`volume ${params.ref}`);
        if (volume.kind === 'database' && volume.attached) {
          throw conflict(
            `volume ${volume.ref} holds database ${volume.database}'s data: it goes with the database (DELETE /databases/${volume.database})`,
          );
        }
        if (volume.kind === 'machine' && volume.attached) {
          const where = volume.mounted_by ? `mounted by ${volume.mounted_by}` : 'declared';
          throw conflict(
            `volume ${volume.ref} is attached to machine ${volume.machine} of app ${volume.app} (${where}${volume.path ? ` at ${volume.path}` : ''}): remove ${volume.volume} from the app's volumes, or scale the app below ${(volume.machine ?? 0) + 1} machines, first`,
          );
        }
        await s.volumes.delete(ns, volume);
        // A machine volume's storage and events are the volume meter's (api/usage/volume-meter.ts),
        // which sees every deletion, the garbage collector's too; a retained database's are here.
        if (volume.kind === 'database') {
          await s.usage.storage(caller.account.id, `database/${volume.database}`, 0);
          await s.events.record(caller.account.id, 'volume.deleted', volume.ref, {
            volume: volume.ref,
            database: volume.database,
            size_bytes: volume.size_bytes,
          });
        }
        return { status: 204, body: undefined };
      },
    }),
  ];
}
