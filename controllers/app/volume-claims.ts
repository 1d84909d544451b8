// The claim behind each of a machine's persistent volumes.
import type * as k8s from '@kubernetes/client-node';
import type { ServiceView } from '../../lib/app-services.js';
import { labels } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';
import { defaultVolumeSize, volumeClaimName } from '../../lib/volumes.js';
import type { AppSettings } from './desired.js';
import { managerName, ownerRef } from './owner.js';

/**
 * Machine `ordinal`'s claim for volume `volume`. Owned by the App but not its controller's to
 * delete: a volume dropped from the spec or a machine scaled away keeps its data, detached, until
 * DELETE /volumes/{ref} (docs/decisions/0018-volumes.md). Its size is fixed when it is made. A
 * volume belongs to one service of the app, so its name and the ordinal say which claim it is.
 */
export function volumeClaim(
  app: App,
  volume: NonNullable<App['spec']['volumes']>[number],
  ordinal: number,
  settings: AppSettings,
  view?: ServiceView,
): k8s.V1PersistentVolumeClaim {
  const name = app.metadata.name!;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: volumeClaimName(name, volume.name, ordinal),
      namespace: app.metadata.namespace,
      labels: {
        [labels.app]: name,
        ...(view && !view.public ? { [labels.service]: view.name! } : {}),
        [labels.machine]: String(ordinal),
        [labels.volume]: volume.name,
        [labels.managedBy]: managerName,
      },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: volume.size ?? defaultVolumeSize } },
      ...(settings.volumeStorageClass ? { storageClassName: settings.volumeStorageClass } : {}),
    },
  };
}
