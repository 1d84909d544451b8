// The data group's volumes: every volume claim of the account, its apps' machines' (declared by
// compose `volumes:` or x-svc.volumes, one per machine and volume) and its databases' (listed,
// deleted only with their database), and the deletion of a detached one (docs/api/data.md).
import { z } from 'zod';
import type { AppRecord } from '../repositories/app-record.js';
import { volumeBytes, volumeClaimName } from '../../lib/volumes.js';
import type { Prepared } from '../deploys/deployer.js';
import { ApiError, conflict, notFound } from '../errors.js';
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

/**
 * Refuses (403 quota_exceeded) what would bring the account's storage (databases and volumes) over
 * its limit with `more` bytes; `need` says what asks for them.
 */
export function assertStorageFits(s: Services, namespace: string, more: number, need: string): void {
  const used = s.storedBytes(namespace);
  const limit = s.config.databases.maxBytesPerAccount;
  if (used + more > limit) throw new ApiError('quota_exceeded', `${need}, which would bring the account's storage to ${used + more}, over its limit of ${limit} bytes (${used} in use)`);
}

/**
 * Refuses (403 quota_exceeded) a deploy whose volumes would make claims that bring the account's
 * storage over its limit: one per machine and volume not made yet.
 */
/** Refuses (403 quota_exceeded) a deploy whose new volume claims (every service's, per machine) would not fit. */
export function checkVolumeQuota(s: Services, app: AppRecord, prepared: Pick<Prepared, 'volumes' | 'machines' | 'spec'>): void {
  const groups = [
    { volumes: prepared.volumes ?? [], count: prepared.machines ?? app.spec.machines ?? 1 },
    ...(prepared.spec.services ?? []).map((sv) => ({ volumes: sv.volumes ?? [], count: sv.machines ?? 1 })),
  ];
  let more = 0;
  for (const { volumes, count } of groups) {
    for (const v of volumes) for (let m = 0; m < count; m++) if (!s.volumes.has(app.namespace, volumeClaimName(app.name, v.name, m))) more += volumeBytes(v.size);
  }
  if (more > 0) assertStorageFits(s, app.namespace, more, `the app's volumes need ${more} more bytes`);
}

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
      response: z.object({ volumes: z.array(volumeSchema) }),
      handler: async ({ caller }) => ({ body: { volumes: await list(caller.account.namespace) } }),
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
          throw conflict(`volume ${volume.ref} holds database ${volume.database}'s data: it goes with the database (DELETE /databases/${volume.database})`);
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
          await s.events.record(caller.account.id, 'volume.deleted', volume.ref, { volume: volume.ref, database: volume.database, size_bytes: volume.size_bytes });
        }
        return { status: 204, body: undefined };
      },
    }),
  ];
}
