// An account's volumes as the API reads and deletes them: the volume claims the controllers made
// for apps' machines (one per machine and volume, controllers/app/volume-claims.ts) and for databases'
// servers, from a cluster-wide informer; bytes used from the kubelets' stats of the nodes they are
// on. Which are attached is decided from the Apps and the machines' Pods (docs/api/data.md).
import * as k8s from '@kubernetes/client-node';
import { servicesOf } from '../../lib/app-services.js';
import { labels, managers } from '../../lib/contract.js';
import { databaseObjects } from '../../lib/databases.js';
import { DomainError } from '../../lib/errors.js';
import { kubeStatus } from '../../lib/kube/client.js';
import { keepWatching } from '../../lib/kube/keep-watching.js';
import type { Logger } from '../../lib/logger.js';
import { measuredBytes, quantityBytes } from '../../lib/volumes.js';
import type { AppRecord } from './app-record.js';
import type { DatabaseRecord } from './databases.js';

interface VolumeFields {
  /** The claim's name: how the API names the volume. */
  readonly ref: string;
  /** Bytes its claim asks for. */
  readonly sizeBytes: number;
  /**
   * As the kubelet measures it when the volume is a filesystem of its own; a directory volume (the
   * local platform's), whose filesystem is the node's, as its provisioner last measured its files
   * (annotation svc.dev/used-bytes); undefined when neither has a figure.
   */
  readonly usedBytes: number | undefined;
  /** Declared by its app for a machine it runs, or mounted by a machine Pod, or its database's. */
  readonly attached: boolean;
  /** The node it is on: its mounting Pod's, or the one its storage was provisioned on. */
  readonly node: string | undefined;
  readonly createdAt: Date;
}

/** An app machine's volume (one per machine and declared volume). */
export interface MachineVolumeRecord extends VolumeFields {
  readonly kind: 'machine';
  readonly app: string | undefined;
  /** The app's service whose machine it is, in an app with several (compose services); undefined otherwise. */
  readonly service: string | undefined;
  readonly machine: number | undefined;
  readonly volume: string;
  /** Where the machine sees it, while the app declares it. */
  readonly path: string | undefined;
  /** The Pod that mounts it now, if one does. */
  readonly mountedBy: string | undefined;
}

/** A database server's volume: listed, deleted only once its Database is gone (a retained one). */
export interface DatabaseVolumeRecord extends VolumeFields {
  readonly kind: 'database';
  readonly database: string;
}

/** A volume claim of the account as the API's handlers and actions see it, read once from the claim and what holds it. */
export type VolumeRecord = MachineVolumeRecord | DatabaseVolumeRecord;

/** The response shape of a volume (api/presenters/volumes.ts), named here for the tests that read it. */
export type { Volume } from '../presenters/volumes.js';

const selectedNode = 'volume.kubernetes.io/selected-node';

/** Bytes of a claim's request (`1Gi`, `1073741824`). */
export function claimBytes(claim: k8s.V1PersistentVolumeClaim): number {
  return quantityBytes(claim.spec?.resources?.requests?.storage ?? '0') ?? 0;
}

interface Summary {
  pods?: Array<{
    podRef?: { name?: string; namespace?: string };
    volume?: Array<{ usedBytes?: number; capacityBytes?: number; pvcRef?: { name?: string; namespace?: string } }>;
  }>;
}

export class VolumeRepository {
  private readonly claims: k8s.ListWatch<k8s.V1PersistentVolumeClaim>;
  private readonly core: k8s.CoreV1Api;

  constructor(
    kc: k8s.KubeConfig,
    /** The machines' Pods (the machine meter's informer): which one mounts a claim. */
    private readonly machinePods: k8s.ListWatch<k8s.V1Pod>,
    /** The kubelet's stats summary of a node (api/repositories/machines.ts). */
    private readonly nodeSummary: (node: string) => Promise<unknown>,
    private readonly log: Logger,
  ) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    const selector = `${labels.managedBy}=${managers.controllers}`;
    this.claims = new k8s.ListWatch<k8s.V1PersistentVolumeClaim>(
      '/api/v1/persistentvolumeclaims',
      new k8s.Watch(kc),
      () => this.core.listPersistentVolumeClaimForAllNamespaces({ labelSelector: selector }),
      false,
      selector,
    );
    keepWatching(this.claims, `volume claims (${selector})`, log);
  }

  start(): Promise<void> {
    return this.claims.start();
  }

  /** The claims' informer (the volume meter observes it). */
  get informer(): k8s.ListWatch<k8s.V1PersistentVolumeClaim> {
    return this.claims;
  }

  stop(): Promise<void> {
    return this.claims.stop();
  }

  /** The account's claims of apps' machines and databases (the informer's cache). */
  private claimsOf(namespace: string): k8s.V1PersistentVolumeClaim[] {
    return this.claims.list(namespace).filter((c) => c.metadata?.labels?.[labels.volume] || c.metadata?.labels?.[labels.database]);
  }

  /** The account's app volume claims that exist (attached or not), by name, with their sizes. */
  appVolumeClaims(namespace: string): Map<string, number> {
    return new Map(
      this.claimsOf(namespace)
        .filter((c) => c.metadata?.labels?.[labels.volume])
        .map((c) => [c.metadata!.name!, claimBytes(c)]),
    );
  }

  /** The node a claim's volume was provisioned on, when its storage is bound to one (WaitForFirstConsumer). */
  pinnedNode(namespace: string, claimName: string): string | undefined {
    return this.claims.get(claimName, namespace)?.metadata?.annotations?.[selectedNode];
  }

  /** Whether the claim exists (attached or not). */
  has(namespace: string, claimName: string): boolean {
    return this.claims.get(claimName, namespace) !== undefined;
  }

  /** The account's volumes with their bytes used, as the nodes' kubelets measure them (GET /volumes). */
  async list(namespace: string, apps: readonly AppRecord[], databases: readonly Pick<DatabaseRecord, 'name'>[]): Promise<VolumeRecord[]> {
    const volumes = this.describe(namespace, apps, databases);
    const used = await this.measure(namespace, volumes);
    return volumes.map((v) => {
      const bytes = used.get(v.ref);
      return bytes === undefined ? v : Object.freeze({ ...v, usedBytes: bytes });
    });
  }

  /** The account's volumes as the caches show them, by ref (usedBytes as the provisioner last measured them). */
  describe(namespace: string, apps: readonly AppRecord[], databases: readonly Pick<DatabaseRecord, 'name'>[]): VolumeRecord[] {
    const pods = this.machinePods.list(namespace).filter((p) => !p.metadata?.deletionTimestamp);
    const mounter = (claim: string) => pods.find((p) => p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim));
    const volumes = this.claimsOf(namespace).map((c): VolumeRecord => {
      const l = c.metadata!.labels!;
      const ref = c.metadata?.name;
      const createdAt = new Date(c.metadata?.creationTimestamp ?? Number.NaN);
      if (!ref || Number.isNaN(createdAt.getTime()))
        throw new DomainError(
          'unavailable',
          `cannot read volume ${ref ?? '(unnamed)'}: the cluster answered its claim without ${!ref ? 'metadata.name' : 'metadata.creationTimestamp'}`,
        );
      const pod = mounter(ref);
      const base = {
        ref,
        sizeBytes: claimBytes(c),
        usedBytes: measuredBytes(c),
        node: pod?.spec?.nodeName ?? c.metadata?.annotations?.[selectedNode],
        createdAt,
      };
      const database = l[labels.database];
      if (database) {
        return Object.freeze({ ...base, kind: 'database', database, attached: databases.some((d) => d.name === database) });
      }
      const ordinal = Number(l[labels.machine]);
      const app = apps.find((a) => a.name === l[labels.app]);
      // A private service's volume is declared by that service, for as many machines as it runs.
      const service = l[labels.service];
      const owner = app && servicesOf(app.spec).find((v) => (service === undefined ? v.public : !v.public && v.name === service));
      const declared = owner?.volumes.find((v) => v.name === l[labels.volume]);
      const runs = owner !== undefined && ordinal < owner.machines;
      return Object.freeze({
        ...base,
        kind: 'machine',
        app: l[labels.app],
        service,
        machine: Number.isInteger(ordinal) ? ordinal : undefined,
        volume: l[labels.volume]!,
        path: declared?.path,
        attached: (declared !== undefined && runs) || pod !== undefined,
        mountedBy: pod?.metadata?.name,
      });
    });
    return volumes.sort((a, b) => a.ref.localeCompare(b.ref));
  }

  /** Bytes used by ref, from each node's kubelet once, where it measures the volume's own filesystem. */
  private async measure(namespace: string, volumes: readonly VolumeRecord[]): Promise<Map<string, number>> {
    const nodes = [...new Set(volumes.map((v) => v.node).filter((n): n is string => n !== undefined))];
    const used = new Map<string, number>();
    const size = new Map(volumes.map((v) => [v.ref, v.sizeBytes]));
    await Promise.all(
      nodes.map(async (node) => {
        try {
          const summary = (await this.nodeSummary(node)) as Summary;
          for (const pod of summary.pods ?? []) {
            for (const v of pod.volume ?? []) {
              const ref = v.pvcRef?.namespace === namespace ? v.pvcRef.name : undefined;
              if (!ref || typeof v.usedBytes !== 'number') continue;
              // A filesystem of its own is about the claim's size (a few percent of it are the filesystem's own).
              const own = typeof v.capacityBytes === 'number' && v.capacityBytes <= (size.get(ref) ?? 0) * 1.1;
              if (own) used.set(ref, v.usedBytes);
            }
          }
        } catch (err) {
          this.log.warn({ err, node }, 'Reading volume usage from the node failed');
        }
      }),
    );
    return used;
  }

  /**
   * Deletes a detached volume. A database's is refused while its Database exists; a retained one
   * (its Database deleted) goes with its credentials Secret, which nothing else could open.
   */
  async delete(namespace: string, volume: VolumeRecord): Promise<void> {
    try {
      await this.core.deleteNamespacedPersistentVolumeClaim({ namespace, name: volume.ref });
      if (volume.kind === 'database') {
        await this.core.deleteNamespacedSecret({ namespace, name: databaseObjects(volume.database).secret }).catch((err: unknown) => {
          if (kubeStatus(err) !== 404) throw err;
        });
      }
    } catch (err) {
      if (kubeStatus(err) === 404) return;
      throw new DomainError('unavailable', `cannot delete volume ${volume.ref} right now; retry later`, err);
    }
  }
}
