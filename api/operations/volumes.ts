// The data group's volumes: every volume claim of the account, its apps' machines' (declared by
// compose `volumes:` or x-svc.volumes, one per machine and volume) and its databases' (listed,
// deleted only with their database), and the deletion of a detached one (docs/api/data.md). The
// decisions are the volume actions' (api/volumes/actions.ts).
import { z } from 'zod';
import { actorOf } from '../actor.js';
import { op, type Operation } from '../operation.js';
import { presentStorage, presentVolume, storageSchema, volumeSchema } from '../presenters/volumes.js';
import type { ApiDeps } from '../deps.js';

type Deps = {
  volumeActions: Pick<ApiDeps['volumeActions'], 'list' | 'delete'>;
};

export function volumeOperations(s: Deps): Operation[] {
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
        const { volumes, storage } = await s.volumeActions.list(actorOf(caller));
        return { body: { volumes: volumes.map(presentVolume), storage: presentStorage(storage) } };
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
        await s.volumeActions.delete(actorOf(caller), params.ref!);
        return { status: 204, body: undefined };
      },
    }),
  ];
}
