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
import type { Database } from '../../lib/resources/index.js';
import { measuredBytes, quantityBytes } from '../../lib/volumes.js';
import type { AppRecord } from './app-record.js';

export interface Volume {
  ref: string;
  /** `machine`: an app machine's; `database`: a database server's (listed, never deleted here). */
  kind: 'machine' | 'database';
  app: string | null;
  /** The app's service whose machine it is, in an app with several (compose services); null otherwise. */
  service: string | null;
  machine: number | null;
  volume: string | null;
  database: string | null;
  /** Where the machine sees it, while the app declares it. */
  path: string | null;
  size_bytes: number;
  /**
   * As the kubelet measures it when the volume is a filesystem of its own; a directory volume (the
   * local platform's), whose filesystem is the node's, as its provisioner last measured its files
   * (annotation svc.dev/used-bytes); null when neither has a figure.
   */
  used_bytes: number | null;
  /** Declared by its app for a machine it runs, or mounted by a machine Pod, or its database's. */
  attached: boolean;
  /** The Pod that mounts it now, if one does. */
  mounted_by: string | null;
  node: string | null;
  created_at: string;
}

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
  async list(namespace: string, apps: readonly AppRecord[], databases: readonly Database[]): Promise<Volume[]> {
    const volumes = this.describe(namespace, apps, databases);
    await this.measure(namespace, volumes);
    return volumes;
  }

  /** The account's volumes as the caches show them, by ref (used_bytes as the provisioner last measured them). */
  describe(namespace: string, apps: readonly AppRecord[], databases: readonly Database[]): Volume[] {
    const pods = this.machinePods.list(namespace).filter((p) => !p.metadata?.deletionTimestamp);
    const mounter = (claim: string) => pods.find((p) => p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim));
    const volumes = this.claimsOf(namespace).map((c): Volume => {
      const l = c.metadata!.labels!;
      const ref = c.metadata!.name!;
      const pod = mounter(ref);
      const node = pod?.spec?.nodeName ?? c.metadata?.annotations?.[selectedNode] ?? null;
      const base = {
        ref,
        size_bytes: claimBytes(c),
        used_bytes: measuredBytes(c) ?? null,
        node,
        created_at: new Date(c.metadata!.creationTimestamp as unknown as string).toISOString(),
      };
      if (l[labels.database]) {
        const db = databases.find((d) => d.metadata.name === l[labels.database]);
        return {
          ...base,
          kind: 'database',
          app: null,
          service: null,
          machine: null,
          volume: null,
          database: l[labels.database]!,
          path: null,
          attached: db !== undefined,
          mounted_by: null,
        };
      }
      const ordinal = Number(l[labels.machine]);
      const app = apps.find((a) => a.name === l[labels.app]);
      // A private service's volume is declared by that service, for as many machines as it runs.
      const service = l[labels.service];
      const owner = app && servicesOf(app.spec).find((v) => (service === undefined ? v.public : !v.public && v.name === service));
      const declared = owner?.volumes.find((v) => v.name === l[labels.volume]);
      const runs = owner !== undefined && ordinal < owner.machines;
      return {
        ...base,
        kind: 'machine',
        app: l[labels.app] ?? null,
        service: service ?? null,
        machine: Number.isInteger(ordinal) ? ordinal : null,
        volume: l[labels.volume]!,
        database: null,
        path: declared?.path ?? null,
        attached: (declared !== undefined && runs) || pod !== undefined,
        mounted_by: pod?.metadata?.name ?? null,
      };
    });
    return volumes.sort((a, b) => a.ref.localeCompare(b.ref));
  }

  /** Bytes used, from each node's kubelet once, where it measures the volume's own filesystem. */
  private async measure(namespace: string, volumes: Volume[]): Promise<void> {
    const nodes = [...new Set(volumes.map((v) => v.node).filter((n): n is string => n !== null))];
    const used = new Map<string, number>();
    const size = new Map(volumes.map((v) => [v.ref, v.size_bytes]));
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
    for (const v of volumes) v.used_bytes = used.get(v.ref) ?? v.used_bytes;
  }

  /**
   * Deletes a detached volume. A database's is refused while its Database exists; a retained one
   * (its Database deleted) goes with its credentials Secret, which nothing else could open.
   */
  async delete(namespace: string, volume: Volume): Promise<void> {
    try {
      await this.core.deleteNamespacedPersistentVolumeClaim({ namespace, name: volume.ref });
      if (volume.kind === 'database' && volume.database) {
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
