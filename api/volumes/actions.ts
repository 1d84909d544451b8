// What the data group decides about volumes: which of the account's volumes, with what holds them,
// and whether one may be deleted (a detached one only: a database's goes with its database, an app
// machine's while its app declares it or a machine mounts it is refused). Handlers parse and
// present; the decisions are made here and raise domain errors (lib/errors.ts).
import { DomainError } from '../../lib/errors.js';
import type { Actor } from '../deploys/actions.js';
import type { AppRepository } from '../repositories/apps.js';
import type { DatabaseRepository } from '../repositories/databases.js';
import type { VolumeRecord, VolumeRepository } from '../repositories/volumes.js';
import type { ApiDeps } from '../deps.js';
import type { AccountStorage, StorageUse } from '../storage/account-storage.js';

export interface VolumeActionDeps {
  volumes: Pick<VolumeRepository, 'list' | 'describe' | 'delete'>;
  /** What declares a volume (the Apps) and what holds a database's (the Databases). */
  apps: Pick<AppRepository, 'list'>;
  databases: Pick<DatabaseRepository, 'records'>;
  storage: Pick<AccountStorage, 'use'>;
  usage: Pick<ApiDeps['usage'], 'storage'>;
  events: Pick<ApiDeps['events'], 'record'>;
}

export class VolumeActions {
  constructor(private readonly d: VolumeActionDeps) {}

  /** The account's volumes, with their bytes used as the nodes measure them, and its storage as its limit counts it. */
  async list(actor: Actor): Promise<{ volumes: VolumeRecord[]; storage: StorageUse }> {
    const ns = actor.namespace;
    const [volumes, storage] = await Promise.all([
      this.d.volumes.list(ns, this.d.apps.list(ns), this.d.databases.records(ns)),
      this.d.storage.use(actor.accountId, ns),
    ]);
    return { volumes, storage };
  }

  /** Deletes a detached volume. */
  async delete(actor: Actor, ref: string): Promise<void> {
    const ns = actor.namespace;
    // Deciding a deletion needs no kubelet: the caches say what holds a volume.
    const volume = this.d.volumes.describe(ns, this.d.apps.list(ns), this.d.databases.records(ns)).find((v) => v.ref === ref);
    if (!volume) throw new DomainError('not_found', `volume ${ref} not found`);
    if (volume.kind === 'database' && volume.attached) {
      throw new DomainError(
        'conflict',
        `volume ${volume.ref} holds database ${volume.database}'s data: it goes with the database (DELETE /databases/${volume.database})`,
      );
    }
    if (volume.kind === 'machine' && volume.attached) {
      const where = volume.mountedBy ? `mounted by ${volume.mountedBy}` : 'declared';
      // An unlabelled machine or app reads as null, as the API shows it.
      throw new DomainError(
        'conflict',
        `volume ${volume.ref} is attached to machine ${volume.machine ?? null} of app ${volume.app ?? null} (${where}${volume.path ? ` at ${volume.path}` : ''}): remove ${volume.volume} from the app's volumes, or scale the app below ${(volume.machine ?? 0) + 1} machines, first`,
      );
    }
    await this.d.volumes.delete(ns, volume);
    // A machine volume's storage and events are the volume meter's (api/usage/volume-meter.ts),
    // which sees every deletion, the garbage collector's too; a retained database's are here.
    if (volume.kind === 'database') {
      await this.d.usage.storage(actor.accountId, `database/${volume.database}`, 0);
      await this.d.events.record(actor.accountId, 'volume.deleted', volume.ref, {
        volume: volume.ref,
        database: volume.database,
        size_bytes: volume.sizeBytes,
      });
    }
  }
}
