// The CloudNativePG provider (a platform team's choice: SVC_DATABASE_PROVIDER=cloudnative-pg, or a
// Database's spec.provider): a Database becomes a postgresql.cnpg.io/v1 Cluster that the operator
// runs, with the API's credentials Secret as its owner's, and the same Service name and policy as a
// server of our own, so attached apps see no difference. Pure: the reconciler applies the result.
// docs/decisions/0017-databases.md#the-cloudnative-pg-provider.
import type * as k8s from '@kubernetes/client-node';
import { labels, managers } from '../../lib/contract.js';
import { databaseBytes, databaseObjects, databasePort } from '../../lib/databases.js';
import { platformPeers } from '../../lib/kube/platform-peers.js';
import type { App, Database } from '../../lib/resources/index.js';
import type { ConditionInput } from '../frame/status.js';
import {
  credentialEnv,
  databaseEphemeralStorage,
  dumpJobSpec,
  meta,
  restoreEnv,
  serverPolicy,
  backupPlan,
  type DatabaseObserved,
  type DatabasePlan,
  type DatabaseSettings,
  type DatabaseStatusFields,
} from './desired.js';

/** The instance manager's status port: the kubelet's probes and the operator ask it. */
const instanceManagerPort = 8000;

export const cnpg = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters', kind: 'Cluster' } as const;

/** The part of a Cluster this provider reads (its status as the operator writes it). */
export interface CnpgCluster extends k8s.KubernetesObject {
  spec?: Record<string, unknown>;
  status?: {
    phase?: string;
    phaseReason?: string;
    instances?: number;
    readyInstances?: number;
    currentPrimary?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

export type Provider = NonNullable<DatabaseSettings['provider']>;

export function providerOf(db: Database, settings: DatabaseSettings): Provider {
  return db.spec.provider ?? settings.provider ?? 'pods';
}

/**
 * The Cluster: `settings.cnpg.instances` instances (a primary and standbys the operator fails over
 * to), each on a volume of the Database's size, bootstrapped with the API's credentials.
 */
export function cnpgCluster(db: Database, settings: DatabaseSettings): CnpgCluster {
  const name = db.metadata.name!;
  const o = databaseObjects(name);
  const instances = settings.cnpg?.instances ?? 1;
  return {
    apiVersion: `${cnpg.group}/${cnpg.version}`,
    kind: cnpg.kind,
    metadata: meta(db, o.service),
    spec: {
      instances,
      // With a standby, a commit waits for one to have it (or for none to be up): a failover keeps
      // what the app was told is written. `preferred`: a Cluster whose standbys are all down still takes writes.
      ...(instances > 1 ? { postgresql: { synchronous: { method: 'any', number: 1, dataDurability: 'preferred' } } } : {}),
      ...(settings.cnpg?.image ? { imageName: settings.cnpg.image } : {}),
      storage: {
        size: String(databaseBytes(db, settings.defaultBytes)),
        ...(settings.storageClass ? { storageClass: settings.storageClass } : {}),
      },
      // The node disk its instances may take besides the volume, as for a server of our own.
      resources: {
        requests: { 'ephemeral-storage': databaseEphemeralStorage.request },
        limits: { 'ephemeral-storage': databaseEphemeralStorage.limit },
      },
      // The owner is the Secret's username (the API writes `app`); the database is the Database's name.
      bootstrap: { initdb: { database: name, owner: 'app', secret: { name: o.secret } } },
      // Its pods and volumes carry the Database's label: the Service, the policy and the volume list find them.
      inheritedMetadata: { labels: { [labels.database]: name, [labels.managedBy]: managers.controllers } },
    },
  };
}

/** The Service attached apps reach, as for a server of our own, on the Cluster's primary. */
export function cnpgService(db: Database): k8s.V1Service {
  const o = databaseObjects(db.metadata.name!);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(db, o.service),
    spec: {
      selector: { 'cnpg.io/cluster': o.service, 'cnpg.io/instanceRole': 'primary' },
      ports: [{ name: 'postgres', port: databasePort, targetPort: databasePort }],
    },
  };
}

/**
 * A server of our own's policy (in: the attached app's machines), and: in, the Cluster's own
 * instances (a standby streams from the primary; the instance managers ask each other's status),
 * the operator's pods (its status checks of the instance manager), both on PostgreSQL's and the
 * instance manager's ports only, and the nodes' addresses on the instance manager's (the kubelet's
 * probes; no rule at all when none are configured: a rule with no peer admits everyone); out, anything (the instance
 * manager talks to the Kubernetes API and its peers; the operator's role keeps the tenant's away
 * from them: the owner, `app`, is not a superuser, as on our own servers, and CloudNativePG leaves
 * superuser access off).
 */
export function cnpgPolicy(db: Database, settings: DatabaseSettings, attachedApps: App[]): k8s.V1NetworkPolicy {
  const base = serverPolicy(db, settings, { attachedApps, pod: undefined });
  // The operator's own pods, not its whole namespace (which a team may share with other things).
  const operator = {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': settings.cnpg?.operatorNamespace ?? 'cnpg-system' } },
    podSelector: { matchLabels: { 'app.kubernetes.io/name': 'cloudnative-pg' } },
  };
  const instances = { podSelector: { matchLabels: { 'cnpg.io/cluster': databaseObjects(db.metadata.name!).service } } };
  const ports = [databasePort, instanceManagerPort].map((port) => ({ protocol: 'TCP', port }));
  // The nodes (ipBlocks), where the kubelet probes from; not the platform's namespace.
  const nodes = platformPeers(settings.platformCidrs, undefined);
  return {
    ...base,
    spec: {
      ...base.spec!,
      ingress: [
        ...(base.spec!.ingress ?? []),
        { from: [operator, instances], ports },
        ...(nodes.length ? [{ from: nodes, ports: [{ protocol: 'TCP', port: instanceManagerPort }] }] : []),
      ] as unknown as k8s.V1NetworkPolicyIngressRule[],
      egress: [{}],
    },
  };
}

/** Whether the operator says the Cluster is Ready, with an instance that is. */
function clusterReady(cluster: CnpgCluster | undefined): boolean {
  const s = cluster?.status;
  return s?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && (s.readyInstances ?? 0) > 0;
}

/** The Database's status from the Cluster's, as the operator wrote it, and the Service's address. */
export function cnpgStatus(
  db: Database,
  cluster: CnpgCluster | undefined,
  service: k8s.V1Service | undefined,
  attachedTo: string | undefined,
  restore: CnpgRestore = { state: 'none' },
): { status: DatabaseStatusFields; ready: Omit<ConditionInput, 'type'> } {
  const name = db.metadata.name!;
  const host = service?.spec?.clusterIP;
  const base: DatabaseStatusFields = {
    secretName: databaseObjects(name).secret,
    port: databasePort,
    databaseName: name,
    ...(host ? { host } : {}),
    ...(attachedTo ? { attachedTo } : {}),
  };
  const s = cluster?.status;
  const backup = db.spec.restoreFrom?.backup ?? db.spec.restoreFrom?.digest;
  if (restore.state === 'failed')
    return {
      status: { ...base, phase: 'Failed' },
      ready: { ok: false, reason: 'RestoreFailed', message: `restoring backup ${backup} failed: ${restore.reason}` },
    };
  const ready = clusterReady(cluster) && host;
  if (ready && (restore.state === 'running' || restore.state === 'waiting'))
    return {
      status: { ...base, phase: 'Pending' },
      ready: { ok: false, reason: 'Restoring', message: `CloudNativePG: ready; loading backup ${backup} into it` },
    };
  if (ready) {
    return {
      status: { ...base, phase: 'Ready' },
      ready: {
        ok: true,
        reason: 'ClusterReady',
        message: `CloudNativePG: ${s?.phase ?? 'ready'}; PostgreSQL accepts connections at ${host}:${databasePort}`,
      },
    };
  }
  const why = !cluster
    ? 'the Cluster is being created'
    : s?.phase
      ? `${s.phase}${s.phaseReason ? `: ${s.phaseReason}` : ''}`
      : 'waiting for the operator (is CloudNativePG installed and running?)';
  return { status: { ...base, phase: 'Pending' }, ready: { ok: false, reason: 'ClusterNotReady', message: `CloudNativePG: ${why}` } };
}

/** The condition a Database restored into a Cluster keeps, so its dump is loaded once whatever becomes of the Job. */
const restoredCondition = 'Restored';

/** The Restored condition, once the dump is in (and then on every status written after). */
export function restoredConditions(db: Database, restore: CnpgRestore): ConditionInput[] {
  const from = db.spec.restoreFrom;
  return from && restore.state === 'done'
    ? [{ type: restoredCondition, ok: true, reason: 'Restored', message: `backup ${from.backup ?? from.digest} loaded` }]
    : [];
}

/** Where a restore into a Cluster stands (spec.restoreFrom; none without it). */
export type CnpgRestore =
  { state: 'none' | 'done' } | { state: 'waiting' | 'running'; job?: k8s.V1Job } | { state: 'failed'; reason: string };

/**
 * A restore into a Cluster: once the Cluster is Ready (bootstrapped empty, with the API's
 * credentials), one Job of the platform's image loads the dump into its primary as the tenant, in
 * one transaction (a failed one leaves the database empty, not half-loaded). It carries the backup
 * Jobs' label: their policy (out: the Cluster's instances and the platform, in: nothing) and the
 * Database's (in: its backups) are a restore's too. Kept after it ends (the Database owns it); the
 * Restored condition is what says it was done, so a Job deleted by hand is not run again.
 */
export function cnpgRestore(
  db: Database,
  settings: DatabaseSettings,
  clusterReady: boolean,
  host: string | undefined,
  jobs: readonly k8s.V1Job[],
  now: Date,
): CnpgRestore {
  const from = db.spec.restoreFrom;
  if (!from) return { state: 'none' };
  if (db.status?.conditions?.some((c) => c.type === restoredCondition && c.status === 'True')) return { state: 'done' };
  const name = db.metadata.name!;
  const jobName = `db-${name}-restore`;
  // This Database's own: a Job of a deleted Database of the same name (collected in the background)
  // says nothing about this one's data.
  const existing = jobs.find((j) => j.metadata?.name === jobName && j.metadata.ownerReferences?.some((o) => o.uid === db.metadata.uid));
  if (existing) {
    if (existing.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')) return { state: 'done' };
    const failed = existing.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
    if (failed) return { state: 'failed', reason: `${failed.reason ?? 'Failed'}${failed.message ? `: ${failed.message}` : ''}` };
    return { state: 'running' };
  }
  if (!settings.backups) return { state: 'failed', reason: 'this platform keeps no backups (its controllers have no backup settings)' };
  if (!clusterReady || !host) return { state: 'waiting' };
  const job: k8s.V1Job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { ...meta(db, jobName), labels: { [labels.backupOf]: name, [labels.managedBy]: managers.controllers } },
    spec: dumpJobSpec(db, settings, 'restore', [
      ...credentialEnv(db),
      { name: 'SVC_RESTORE_HOST', value: host },
      ...restoreEnv(db, settings, now),
    ]),
  };
  return { state: 'waiting', job };
}

/** What a Database on CloudNativePG should have (controllers/database/reconciler.ts applies it). */
export interface CnpgPlan {
  cluster: CnpgCluster;
  service: k8s.V1Service;
  policy: k8s.V1NetworkPolicy;
  /** The backup Jobs' policy (a restore's too), once the Service has an address and backups are configured. */
  backupPolicy: k8s.V1NetworkPolicy | undefined;
  /** The nightly CronJob and a requested backup's Job: not before a restore's dump is in. */
  backup: DatabasePlan['backup'];
  /** The restore's Job to create, when it is time. */
  restoreJob: k8s.V1Job | undefined;
  status: DatabaseStatusFields;
  ready: Omit<ConditionInput, 'type'>;
  /** Returned with every outcome: the frame writes the conditions it is given, and drops the rest. */
  conditions: ConditionInput[];
}

export function cnpgPlan(
  db: Database,
  observed: Pick<DatabaseObserved, 'attachedApps' | 'service' | 'backupJobs'> & { cluster: CnpgCluster | undefined },
  settings: DatabaseSettings,
  now: Date,
): CnpgPlan {
  const restore = cnpgRestore(
    db,
    settings,
    clusterReady(observed.cluster),
    observed.service?.spec?.clusterIP,
    observed.backupJobs ?? [],
    now,
  );
  const loaded = restore.state === 'none' || restore.state === 'done';
  const backups = backupPlan(db, { ...observed, pod: undefined, claim: undefined }, settings, now);
  const attachedTo = observed.attachedApps.map((a) => a.metadata.name!).sort()[0];
  return {
    cluster: cnpgCluster(db, settings),
    service: cnpgService(db),
    // Until the dump is in, the attached app's machines are not let in: nothing reads or writes half a restore.
    policy: cnpgPolicy(db, settings, loaded ? observed.attachedApps : []),
    backupPolicy: backups?.policy,
    backup: loaded ? backups : undefined,
    restoreJob: 'job' in restore ? restore.job : undefined,
    ...cnpgStatus(db, observed.cluster, observed.service, attachedTo, restore),
    conditions: restoredConditions(db, restore),
  };
}
