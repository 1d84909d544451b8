// The Database reconciler on the frame: plans with desired.ts from the informers' caches and
// applies the plan (the volume claim and server Pod created, the Service and NetworkPolicy applied
// when missing), and holds the Database with a finalizer until its deletionPolicy is honoured: Drop
// deletes the volume claim (the data goes with it), Retain lets go of it so that Kubernetes' garbage
// collector leaves it (and its data) when the Database goes.
import * as k8s from '@kubernetes/client-node';
import { group, pluralOf, version } from '../../lib/contract.js';
import { databaseFinalizer, databaseObjects } from '../../lib/databases.js';
import { ignoreStatus, kubeStatus, mergePatch } from '../../lib/kube/client.js';
import type { EventRecorder } from '../../lib/kube/events.js';
import type { Logger } from '../../lib/logger.js';
import type { Database } from '../../lib/resources/index.js';
import { Applier } from '../frame/apply.js';
import type { Outcome, Reconciler } from '../frame/controller.js';
import { KindEvents } from '../frame/events.js';
import { customMetadataPatcher, ensureFinalizer, hasFinalizer, removeFinalizer, type MetadataPatcher } from '../frame/finalizers.js';
import { cnpg, cnpgPlan, providerOf, type CnpgCluster } from './cnpg.js';
import { plan, type DatabasePlan, type DatabaseObserved, type DatabaseSettings, type DatabaseStatusFields } from './desired.js';

export interface DatabaseCache {
  observe(db: Database): DatabaseObserved & {
    policy: k8s.V1NetworkPolicy | undefined;
    cronJob: k8s.V1CronJob | undefined;
    /** Every volume claim labelled with it (a CloudNativePG Cluster's too). */
    claims: k8s.V1PersistentVolumeClaim[];
    /** Its CloudNativePG Cluster, once the Clusters' cache is started (clusters() starts it). */
    cluster: CnpgCluster | undefined;
  };
  /** Starts watching CloudNativePG Clusters, the first time a Database needs them. */
  clusters(): void;
}

export class DatabaseReconciler implements Reconciler<Database, DatabaseStatusFields> {
  /** What applies the policy, Service (and backup CronJob, or Cluster), remembering the shape last applied per Database uid. */
  readonly applier: Applier;
  private readonly events: KindEvents<Database>;
  /** Writes a Database's finalizers. */
  private readonly patchMetadata: MetadataPatcher<Database>;

  constructor(
    private readonly core: k8s.CoreV1Api,
    custom: k8s.CustomObjectsApi,
    networking: k8s.NetworkingV1Api,
    private readonly batch: k8s.BatchV1Api,
    private readonly cache: DatabaseCache,
    private readonly settings: DatabaseSettings,
    private readonly log: Logger,
    events?: EventRecorder,
  ) {
    this.events = new KindEvents(events, 'Database', `${group}/${version}`);
    this.applier = new Applier({ core, networking, batch, custom });
    this.patchMetadata = customMetadataPatcher(custom, group, version, pluralOf('Database'));
  }

  async reconcile(db: Database, now: Date): Promise<Outcome<DatabaseStatusFields>> {
    const { namespace, name } = db.metadata as { namespace: string; name: string };
    const observed = this.cache.observe(db);
    if (db.metadata.deletionTimestamp) {
      await this.finalize(db, observed.claims);
      return { deleted: true };
    }
    await ensureFinalizer(this.patchMetadata, db, databaseFinalizer);
    if (providerOf(db, this.settings) === 'cloudnative-pg') return this.reconcileCluster(db, observed, namespace, now);
    const p = plan(db, observed, this.settings, now);
    if (!observed.claim) {
      await this.core.createNamespacedPersistentVolumeClaim({ namespace, body: p.claim }).catch(ignoreStatus(409));
      this.events.record(
        db,
        'Normal',
        'VolumeClaimed',
        `volume ${p.claim.metadata!.name} of ${p.claim.spec!.resources!.requests!.storage} bytes claimed`,
      );
    }
    // Applied when missing, or once per process when its shape is not the one last applied.
    await this.applier.applyAll(
      db.metadata.uid!,
      namespace,
      [p.policy, p.service, ...(p.backup ? [p.backup.policy, p.backup.cronJob] : [])],
      !observed.policy || !observed.service || (p.backup !== undefined && !observed.cronJob),
    );
    await this.startRequestedBackup(db, p.backup);
    if (p.deletePod) {
      await this.core.deleteNamespacedPod({ namespace, name: p.deletePod.metadata!.name! }).catch(ignoreStatus(404));
      const image = p.deletePod.spec?.containers.find((c) => c.name === 'postgres')?.image;
      this.log.info(
        { kind: 'Database', namespace, name, phase: p.deletePod.status?.phase, image },
        "Replacing the server Pod (ended, or on another image than the platform's)",
      );
    } else if (p.createPod) {
      try {
        await this.core.createNamespacedPod({ namespace, body: p.createPod });
        this.log.info({ kind: 'Database', namespace, name }, 'Created the server Pod');
      } catch (err) {
        // The account's quota is full: say so (its owner can free some), and look again later.
        // The client hands over the apiserver's reply as text.
        const reply = (err as { body?: unknown }).body;
        const refused = kubeStatus(err) === 403 && typeof reply === 'string' ? /exceeded quota[^"\\]*/.exec(reply)?.[0] : undefined;
        if (!refused) {
          if (kubeStatus(err) !== 409) throw err;
        } else {
          if (db.status?.phase !== 'Failed') this.events.record(db, 'Warning', 'QuotaExceeded', refused);
          return {
            status: { ...p.status, phase: 'Failed' },
            ready: { ok: false, reason: 'QuotaExceeded', message: `the server cannot start: the account's ${refused}` },
            requeueMs: 10_000,
          };
        }
      }
    }
    if (db.status?.phase !== p.status.phase) {
      this.log.info({ kind: 'Database', namespace, name, phase: p.status.phase, why: p.ready.message }, 'Database phase');
      if (p.status.phase === 'Ready') this.events.record(db, 'Normal', 'Ready', p.ready.message);
      if (p.status.phase === 'Failed') this.events.record(db, 'Warning', 'ServerFailed', p.ready.message);
    }
    return { status: p.status, ready: p.ready, ...(p.status.phase === 'Pending' ? { requeueMs: 5000 } : {}) };
  }

  /** A backup asked for through the API (the Database's annotation), started once. */
  private async startRequestedBackup(db: Database, backup: DatabasePlan['backup']): Promise<void> {
    if (!backup?.requested) return;
    const { namespace, name } = db.metadata as { namespace: string; name: string };
    await this.batch.createNamespacedJob({ namespace, body: backup.requested }).catch(ignoreStatus(409));
    this.log.info({ kind: 'Database', namespace, name, job: backup.requested.metadata!.name }, 'Started a backup on request');
    this.events.record(db, 'Normal', 'BackupStarted', `backup ${backup.requested.metadata!.name} started on request`);
  }

  /**
   * The CloudNativePG provider: the Cluster, the Service and the policy applied; a restore's Job
   * once the Cluster is Ready (the attached app let in only after it loaded); the platform's backups
   * as for a server of our own, by the Service; the status mapped from the Cluster's.
   */
  private async reconcileCluster(
    db: Database,
    observed: ReturnType<DatabaseCache['observe']>,
    namespace: string,
    now: Date,
  ): Promise<Outcome<DatabaseStatusFields>> {
    this.cache.clusters();
    const p = cnpgPlan(db, observed, this.settings, now);
    const shape = [p.cluster, p.service, p.policy, ...(p.backupPolicy ? [p.backupPolicy] : []), ...(p.backup ? [p.backup.cronJob] : [])];
    const uid = db.metadata.uid!;
    if (
      !observed.cluster ||
      !observed.service ||
      !observed.policy ||
      (p.backup !== undefined && !observed.cronJob) ||
      !this.applier.unchanged(uid, shape)
    ) {
      try {
        await this.applier.apply(namespace, p.cluster, { plural: cnpg.plural });
      } catch (err) {
        if (kubeStatus(err) !== 404) throw err;
        const message = `CloudNativePG is not installed: the cluster has no ${cnpg.plural}.${cnpg.group} resource`;
        return {
          status: { secretName: databaseObjects(db.metadata.name!).secret, phase: 'Failed' },
          ready: { ok: false, reason: 'ProviderMissing', message },
          conditions: p.conditions,
          requeueMs: 30_000,
        };
      }
      for (const o of shape.slice(1)) await this.applier.apply(namespace, o);
      this.applier.remember(uid, shape);
    }
    await this.startRequestedBackup(db, p.backup);
    if (p.restoreJob) {
      await this.batch.createNamespacedJob({ namespace, body: p.restoreJob }).catch(ignoreStatus(409));
      this.log.info(
        { kind: 'Database', namespace, name: db.metadata.name, job: p.restoreJob.metadata!.name },
        'Started restoring a backup into the Cluster',
      );
      this.events.record(db, 'Normal', 'RestoreStarted', `loading backup ${db.spec.restoreFrom?.backup ?? db.spec.restoreFrom?.digest}`);
    }
    const { status, ready, conditions } = p;
    if (db.status?.phase !== status.phase)
      this.log.info(
        {
          kind: 'Database',
          namespace,
          name: db.metadata.name,
          provider: 'cloudnative-pg',
          phase: status.phase,
          why: ready.message,
        },
        'Database phase',
      );
    if (db.status?.phase !== status.phase && status.phase === 'Failed') this.events.record(db, 'Warning', ready.reason, ready.message);
    return { status, ready, conditions, ...(status.phase === 'Pending' ? { requeueMs: 5000 } : {}) };
  }

  private async finalize(db: Database, claims: k8s.V1PersistentVolumeClaim[]): Promise<void> {
    const { namespace, name } = db.metadata as { namespace: string; name: string };
    if (!hasFinalizer(db, databaseFinalizer)) return;
    const policy = db.spec.deletionPolicy ?? 'Drop';
    const claimName = databaseObjects(name).claim;
    if (policy === 'Retain') {
      // Not owned any more (by the Database, or by its CloudNativePG Cluster): the garbage collector leaves them.
      for (const c of claims.filter((c) => c.metadata?.ownerReferences?.length)) {
        await this.core.patchNamespacedPersistentVolumeClaim(
          { namespace, name: c.metadata!.name!, body: { metadata: { ownerReferences: null } } },
          mergePatch,
        );
      }
    } else {
      // A Cluster's volumes go with the Cluster (its owner), which goes with the Database.
      await this.core.deleteNamespacedPersistentVolumeClaim({ namespace, name: claimName }).catch(ignoreStatus(404));
    }
    await removeFinalizer(this.patchMetadata, db, databaseFinalizer);
    this.log.info(
      { kind: 'Database', namespace, name, deletionPolicy: policy, volume: claimName },
      policy === 'Retain' ? 'Database deleted; its volume is kept' : 'Database deleted with its volume',
    );
  }
}
