// The provisioner of the `svc-local` StorageClass: a claim is provisioned on the node the scheduler
// picked for its first pod (WaitForFirstConsumer) as a filesystem of the claim's size, an ext4 image
// <nodes dir>/<node>/volumes/pvc-<uid>.img loop-mounted at the directory beside it (./filesystem.ts:
// a directory alone let a 16 MiB volume take 64 MiB of the disk etcd, PostgreSQL and the registry
// share, issue 30), as a `local` PersistentVolume pinned to that node, which its kubelet mounts
// (and gives the pod's fsGroup); a released volume is unmounted and its image, directory and
// PersistentVolume deleted. hack/nodes.sh mounts the images again before the kubelets start (after
// `nodes.sh down` or a host restart). Being the one that knows where each volume's files are, it
// also measures them, every `measureEveryMs`, onto the claim (annotation svc.dev/used-bytes): the
// statfs of a volume's own filesystem, or for a directory volume made before filesystems (which
// shares its node's filesystem, whose statfs figures are the node's) a walk of its files.
import { rmSync } from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { kubeStatus, mergePatch } from '../lib/kube/client.js';
import { keepWatching, type Restartable } from '../lib/kube/keep-watching.js';
import type { Logger } from '../lib/logger.js';
import { annotations, labels } from '../lib/contract.js';
import { diskUsage } from './usage.js';
import { claimBytes, hasImage, makeFilesystem, removeFilesystem, usedBytes } from './filesystem.js';

export const provisionerName = 'svc.dev/local-volumes';
const selectedNode = 'volume.kubernetes.io/selected-node';
const provisionerAnnotation = 'volume.kubernetes.io/storage-provisioner';
const provisionedBy = 'pv.kubernetes.io/provisioned-by';

/** The PersistentVolume for a claim on a node: a pure function of the two. */
export function volumeFor(pvc: k8s.V1PersistentVolumeClaim, node: string, dir: string): k8s.V1PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `pvc-${pvc.metadata!.uid}`, annotations: { [provisionedBy]: provisionerName }, labels: { [labels.node]: node } },
    spec: {
      capacity: { storage: pvc.spec?.resources?.requests?.storage ?? '1Gi' },
      accessModes: pvc.spec?.accessModes ?? ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: pvc.spec?.storageClassName,
      volumeMode: 'Filesystem',
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: pvc.metadata!.namespace,
        name: pvc.metadata!.name,
        uid: pvc.metadata!.uid,
      },
      local: { path: dir },
      nodeAffinity: {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] },
      },
    },
  };
}

export class LocalProvisioner {
  private readonly watches: Array<{ stop(): Promise<void> }> = [];

  private resync: NodeJS.Timeout | undefined;

  private measuring: NodeJS.Timeout | undefined;

  private stopped = false;

  /** Claims whose filesystem is being made (mkfs takes a moment; updates keep arriving meanwhile). */
  private readonly making = new Set<string>();

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly nodes: readonly string[],
    private readonly dataDir: string,
    private readonly log: Logger,
    private readonly measureEveryMs = 10_000,
  ) {}

  async start(): Promise<void> {
    const core = this.kc.makeApiClient(k8s.CoreV1Api);
    const claims = new k8s.ListWatch<k8s.V1PersistentVolumeClaim>(
      '/api/v1/persistentvolumeclaims',
      new k8s.Watch(this.kc),
      () => core.listPersistentVolumeClaimForAllNamespaces(),
      false,
    );
    const provision = (pvc: k8s.V1PersistentVolumeClaim) => {
      const node = pvc.metadata?.annotations?.[selectedNode];
      const ours = pvc.metadata?.annotations?.[provisionerAnnotation] === provisionerName;
      if (!ours || !node || !this.nodes.includes(node) || pvc.spec?.volumeName || pvc.status?.phase === 'Bound') return;
      const uid = pvc.metadata!.uid!;
      if (this.making.has(uid)) return;
      const dir = path.join(this.dataDir, node, 'volumes', `pvc-${uid}`);
      const claim = `${pvc.metadata!.namespace}/${pvc.metadata!.name}`;
      const bytes = claimBytes(pvc.spec?.resources?.requests?.storage ?? '1Gi');
      if (bytes === undefined) {
        this.log.warn(
          { claim, size: pvc.spec?.resources?.requests?.storage },
          'Not provisioning a claim of a size this provisioner does not read',
        );
        return;
      }
      this.making.add(uid);
      // The filesystem is mounted before the PersistentVolume exists: the kubelet binds whatever is at
      // the path when the pod starts, and a bare directory there would be unbounded.
      makeFilesystem(dir, bytes)
        .then(() => core.createPersistentVolume({ body: volumeFor(pvc, node, dir) }))
        .then(
          () => this.log.info({ claim, node, bytes }, 'Provisioned volume'),
          (err: unknown) => {
            if (kubeStatus(err) !== 409) this.log.warn({ err, claim }, 'Provisioning failed');
          },
        )
        .finally(() => this.making.delete(uid));
    };
    claims.on('add', provision);
    claims.on('update', provision);

    const volumes = new k8s.ListWatch<k8s.V1PersistentVolume>(
      '/api/v1/persistentvolumes',
      new k8s.Watch(this.kc),
      () => core.listPersistentVolume(),
      false,
    );
    const reclaim = (pv: k8s.V1PersistentVolume) => {
      if (pv.metadata?.annotations?.[provisionedBy] !== provisionerName || pv.status?.phase !== 'Released') return;
      const node = pv.metadata.labels?.[labels.node];
      if (!node || !this.nodes.includes(node) || !pv.spec?.local?.path) return;
      const dir = pv.spec.local.path;
      // A volume whose filesystem cannot be unmounted yet keeps its PersistentVolume: the next resync
      // tries again, rather than leaving an image nothing would ever delete.
      const removed = hasImage(dir) ? removeFilesystem(dir) : Promise.resolve(rmSync(dir, { recursive: true, force: true }));
      removed
        .then(() => core.deletePersistentVolume({ name: pv.metadata!.name! }))
        .then(
          () => this.log.info({ volume: pv.metadata!.name }, 'Deleted released volume'),
          (err: unknown) => {
            if (kubeStatus(err) !== 404) this.log.warn({ err, volume: pv.metadata!.name }, 'Volume deletion failed');
          },
        );
    };
    volumes.on('add', reclaim);
    volumes.on('update', reclaim);
    // Level-triggered: every claim and volume is looked at again each minute, whatever events were
    // lost. The timer also keeps this process alive while its watches restart (theirs do not).
    this.resync = setInterval(() => {
      for (const c of claims.list()) provision(c);
      for (const v of volumes.list()) reclaim(v);
    }, 60_000);
    this.measureLoop(core, claims, volumes);
    for (const [w, what] of [
      [claims, 'claims'],
      [volumes, 'volumes'],
    ] as Array<[Restartable & { stop(): Promise<void> }, string]>) {
      keepWatching(w, what, this.log);
      await w.start();
      this.watches.push(w);
    }
  }

  /**
   * Measures every bound volume of these nodes, one after another (a walk is I/O; the disk is
   * shared with the machines), and writes a changed figure on its claim.
   */
  private measureLoop(
    core: k8s.CoreV1Api,
    claims: k8s.ListWatch<k8s.V1PersistentVolumeClaim>,
    volumes: k8s.ListWatch<k8s.V1PersistentVolume>,
  ): void {
    const round = async () => {
      for (const pv of volumes.list()) {
        const ref = pv.spec?.claimRef;
        const node = pv.metadata?.labels?.[labels.node];
        if (
          pv.metadata?.annotations?.[provisionedBy] !== provisionerName ||
          pv.status?.phase !== 'Bound' ||
          !ref?.namespace ||
          !ref.name ||
          !node ||
          !this.nodes.includes(node) ||
          !pv.spec?.local?.path
        )
          continue;
        const claim = claims.get(ref.name, ref.namespace);
        if (!claim || claim.metadata?.uid !== ref.uid) continue;
        try {
          const dir = pv.spec.local.path;
          const used = String(hasImage(dir) ? await usedBytes(dir) : await diskUsage(dir));
          if (claim.metadata?.annotations?.[annotations.usedBytes] === used) continue;
          await core.patchNamespacedPersistentVolumeClaim(
            { namespace: ref.namespace, name: ref.name, body: { metadata: { annotations: { [annotations.usedBytes]: used } } } },
            mergePatch,
          );
        } catch (err) {
          if (kubeStatus(err) !== 404) this.log.warn({ err, claim: `${ref.namespace}/${ref.name}` }, 'Measuring a volume failed');
        }
      }
    };
    const next = () => {
      if (this.stopped) return;
      // Not kept alive by this: the watches' restarts are what the process waits on.
      this.measuring = setTimeout(() => void round().finally(next), this.measureEveryMs).unref();
    };
    next();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.measuring);
    clearInterval(this.resync);
    for (const w of this.watches) await w.stop();
  }
}
