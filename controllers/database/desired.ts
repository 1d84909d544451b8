// The Database reconciler's pure half: from a Database and what the informers show of its server
// (Pod, volume claim, Service) and of the Apps naming it, the objects it should have and the status
// to report. One PostgreSQL server per Database (docs/decisions/0017-databases.md): a Pod of the
// svc/postgres image on its own PersistentVolumeClaim, a ClusterIP Service, and a NetworkPolicy that
// lets in only the machines of the app attached to it, its own branches' servers and its backups.
// The credentials Secret is the API's (the controllers never read Secrets): the server and attached
// machines get it through the kubelet.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { artifactCredentialTtlSeconds, mintArtifactCredential, mintBackupCredential } from '../../lib/artifacts/credential.js';
import { apiVersion, labels, managers } from '../../lib/contract.js';
import {
  backupRequestAnnotation,
  credentialKeys,
  databaseBytes,
  databaseObjects,
  databasePort,
  replicationKey,
} from '../../lib/databases.js';
import type { App, Database } from '../../lib/resources/index.js';
import { measuredBytes } from '../../lib/volumes.js';
import { hopelessWaiting, podReady } from '../frame/pods.js';
import type { ConditionInput } from '../frame/status.js';
import { clusterDnsEgress, platformPeers } from '../../lib/kube/platform-peers.js';

export interface DatabaseSettings {
  image: string;
  /** The volume class; the cluster's default when unset. */
  storageClass: string | undefined;
  defaultBytes: number;
  /** Where the kubelet's probes (and the platform) come from, as the App policies name it. */
  platformCidrs: readonly string[];
  platformNamespace?: string | undefined;
  /** What serves a Database that names no provider (controllers/database/cnpg.ts for cloudnative-pg). */
  provider?: 'pods' | 'cloudnative-pg';
  cnpg?: { image: string | undefined; operatorNamespace: string; instances?: number };
  /** Servers and their backup Jobs in a user namespace of their own (hostUsers: false; config.userNamespaces). */
  userNamespaces?: boolean | undefined;
  /** Backup and restore Jobs may ask the cluster DNS (SVC_MACHINE_CLUSTER_DNS): the platform's URL may be a Service name. */
  clusterDns?: boolean | undefined;
  /**
   * Backups and restores through the API's machine listener: its ports (as the App policies name
   * them), the artifact store's base URL (restores fetch a dump there), where backups go, when, and
   * the key their credentials are minted with. Without it, no backups (no CronJob) and no restores.
   */
  backups?:
    | {
        platformPorts: ReadonlyArray<{ port: number; endPort?: number }>;
        artifactBaseUrl: string;
        backupBaseUrl: string;
        schedule: string;
        key: Buffer;
      }
    | undefined;
}

export type DatabaseStatusFields = NonNullable<Database['status']>;

export interface DatabaseObserved {
  pod: k8s.V1Pod | undefined;
  claim: k8s.V1PersistentVolumeClaim | undefined;
  service: k8s.V1Service | undefined;
  /** The Apps of the namespace whose spec.database names it. */
  attachedApps: App[];
  /** A branch's source server's address (its Service), once known. */
  sourceHost?: string | undefined;
  /** What serves a branch's source: a CloudNativePG Cluster is copied logically (pg_dump), a server of our own physically. */
  sourceProvider?: 'pods' | 'cloudnative-pg' | undefined;
  /** Backup Jobs of this Database there are (made by its CronJob, or on request). */
  backupJobs?: k8s.V1Job[];
}

export interface DatabasePlan {
  claim: k8s.V1PersistentVolumeClaim;
  service: k8s.V1Service;
  policy: k8s.V1NetworkPolicy;
  /** The server Pod to create; undefined when it exists (or the claim is not made yet). */
  createPod: k8s.V1Pod | undefined;
  /** A server Pod that ended (Failed/Succeeded), or runs another image than the platform's, and is replaced. */
  deletePod: k8s.V1Pod | undefined;
  status: DatabaseStatusFields;
  ready: Omit<ConditionInput, 'type'>;
  /** The nightly backup (once the server has an address) and its Jobs' policy; none without backup settings. */
  backup?: { cronJob: k8s.V1CronJob; policy: k8s.V1NetworkPolicy; requested: k8s.V1Job | undefined } | undefined;
}

function owner(db: Database): k8s.V1OwnerReference {
  return { apiVersion, kind: 'Database', name: db.metadata.name!, uid: db.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

/**
 * The node disk a database's pods may take besides the data volume (docs/decisions/0023-disks.md):
 * /tmp (64Mi, bounded on its own) and logs; the kubelet evicts past it.
 */
export const databaseEphemeralStorage = { request: '64Mi', limit: '256Mi' } as const;

export function meta(db: Database, name: string): k8s.V1ObjectMeta {
  const branch: Record<string, string> = db.spec.branchOf ? { [labels.branchOf]: db.spec.branchOf } : {};
  return {
    name,
    namespace: db.metadata.namespace,
    labels: { [labels.database]: db.metadata.name!, ...branch, [labels.managedBy]: managers.controllers },
    ownerReferences: [owner(db)],
  };
}

/** The server runs as this uid (not root: account namespaces enforce the restricted profile). */
const serverUid = 1000;
const dataPath = '/var/lib/svc-postgres';

const serverContainerSecurity: k8s.V1SecurityContext = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
};

/** The tenant role's credentials, from the API's Secret, as libpq's variables. */
export function credentialEnv(db: Database): k8s.V1EnvVar[] {
  const secret = databaseObjects(db.metadata.name!).secret;
  const fromSecret = (name: string, key: string): k8s.V1EnvVar => ({ name, valueFrom: { secretKeyRef: { name: secret, key } } });
  return [
    fromSecret('PGUSER', credentialKeys.username),
    fromSecret('PGPASSWORD', credentialKeys.password),
    fromSecret('PGDATABASE', credentialKeys.database),
  ];
}

/**
 * The replication passwords the server holds (the entrypoint sets them before it listens, and keeps
 * them out of the server's environment): its own `svc_replicator`'s, and a branch's source's, which
 * it copies with. Optional: a Secret made before the key (the API adds it) or by hand without it
 * starts a server that no branch can copy; a branch whose source's Secret lacks it says so and stops.
 */
function replicationEnv(db: Database, sourceProvider: DatabaseObserved['sourceProvider']): k8s.V1EnvVar[] {
  const ref = (name: string, database: string, key: string = replicationKey): k8s.V1EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: databaseObjects(database).secret, key, optional: true } },
  });
  // A CloudNativePG source has no svc_replicator: its tenant dumps it (the role that owns the data).
  const source = !db.spec.branchOf
    ? []
    : sourceProvider === 'cloudnative-pg'
      ? [ref('SVC_BRANCH_PASSWORD', db.spec.branchOf, credentialKeys.password), { name: 'SVC_BRANCH_LOGICAL', value: '1' }]
      : [ref('SVC_BRANCH_PASSWORD', db.spec.branchOf)];
  return [ref('SVC_REPLICATION_PASSWORD', db.metadata.name!), ...source];
}

/** Where a restore fetches its dump, and the artifact credential it shows (an hour from `now`). */
export function restoreEnv(db: Database, settings: DatabaseSettings, now: Date): k8s.V1EnvVar[] {
  const from = db.spec.restoreFrom;
  if (!from || !settings.backups) return [];
  return [
    { name: 'SVC_RESTORE_URL', value: from.url ?? `${settings.backups.artifactBaseUrl}/${from.digest}` },
    {
      name: 'SVC_RESTORE_TOKEN',
      value: mintArtifactCredential(settings.backups.key, from.digest, new Date(now.getTime() + artifactCredentialTtlSeconds * 1000)),
    },
  ];
}

/**
 * The server. A branch (spec.branchOf) first copies its source server into the empty volume
 * (`sourceHost` its address), so it is made only once that address is known.
 */
export function serverPod(
  db: Database,
  settings: DatabaseSettings,
  sourceHost?: string,
  now = new Date(),
  sourceProvider?: DatabaseObserved['sourceProvider'],
): k8s.V1Pod {
  const o = databaseObjects(db.metadata.name!);
  // A branch first copies its source server (the entrypoint does, into the empty volume).
  const branch = db.spec.branchOf && sourceHost ? [{ name: 'SVC_BRANCH_HOST', value: sourceHost }] : [];
  const env = [
    ...credentialEnv(db),
    ...replicationEnv(db, sourceProvider),
    { name: 'PGDATA', value: `${dataPath}/data` },
    ...branch,
    ...restoreEnv(db, settings, now),
  ];
  const mounts = [
    { name: 'data', mountPath: dataPath },
    { name: 'tmp', mountPath: '/tmp' },
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta(db, o.pod),
    spec: {
      // It runs the tenant's SQL: were that to run code, it would be an unprivileged high uid on the
      // node. (A running server keeps the shape it was made with until it is replaced.)
      ...(settings.userNamespaces ? { hostUsers: false } : {}),
      // The volume is made the server's group only when its root is not already (not on every start).
      securityContext: {
        runAsNonRoot: true,
        runAsUser: serverUid,
        runAsGroup: serverUid,
        fsGroup: serverUid,
        fsGroupChangePolicy: 'OnRootMismatch',
        seccompProfile: { type: 'RuntimeDefault' },
      },
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      containers: [
        {
          name: 'postgres',
          image: settings.image,
          env,
          ports: [{ name: 'postgres', containerPort: databasePort }],
          readinessProbe: { tcpSocket: { port: databasePort as unknown as k8s.IntOrString }, periodSeconds: 1, failureThreshold: 3 },
          // Counted against the account's quota like its machines: half a CPU, not the namespace's default one.
          resources: {
            requests: { cpu: '50m', memory: '128Mi', 'ephemeral-storage': databaseEphemeralStorage.request },
            limits: { cpu: '500m', memory: '512Mi', 'ephemeral-storage': databaseEphemeralStorage.limit },
          },
          securityContext: serverContainerSecurity,
          volumeMounts: mounts,
        },
      ],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: o.claim } },
        { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
      ],
    },
  };
}

export function dataClaim(db: Database, settings: DatabaseSettings): k8s.V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: meta(db, databaseObjects(db.metadata.name!).claim),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: String(databaseBytes(db, settings.defaultBytes)) } },
      ...(settings.storageClass ? { storageClassName: settings.storageClass } : {}),
    },
  };
}

export function serverService(db: Database): k8s.V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(db, databaseObjects(db.metadata.name!).service),
    spec: { selector: { [labels.database]: db.metadata.name! }, ports: [{ name: 'postgres', port: databasePort, targetPort: 'postgres' }] },
  };
}

/**
 * In, on PostgreSQL's port: the machines of the apps attached to it (whose own policy lets them out
 * to here), its own branches' servers (which copy it), its backup Jobs, and the platform (the
 * kubelet's readiness probe). Not the account's other apps, nor other databases' servers: a preview's
 * branch is another database, with no way back to its parent. Out: nothing, but what its first start
 * needs (a branch's copy of its source, a restore's dump from the machine listener) until the server
 * is ready; then that goes too.
 */
export function serverPolicy(
  db: Database,
  settings: DatabaseSettings,
  observed: Pick<DatabaseObserved, 'attachedApps' | 'pod'>,
): k8s.V1NetworkPolicy {
  const name = db.metadata.name!;
  const attached = [...new Set(observed.attachedApps.map((a) => a.metadata.name!))].sort();
  const starting = !observed.pod || !podReady(observed.pod);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(db, databaseObjects(db.metadata.name!).policy),
    spec: {
      podSelector: { matchLabels: { [labels.database]: db.metadata.name! } },
      policyTypes: ['Ingress', 'Egress'],
      // `from` on the wire: apply patches are sent as written, not renamed like the model's `_from`.
      ingress: [
        {
          from: [
            ...(attached.length ? [{ podSelector: { matchExpressions: [{ key: labels.app, operator: 'In', values: attached }] } }] : []),
            { podSelector: { matchLabels: { [labels.branchOf]: name }, matchExpressions: [{ key: labels.database, operator: 'Exists' }] } },
            { podSelector: { matchLabels: { [labels.backupOf]: name } } },
            ...platformPeers(settings.platformCidrs, settings.platformNamespace),
          ],
          ports: [{ protocol: 'TCP', port: databasePort as unknown as k8s.IntOrString }],
        } as unknown as k8s.V1NetworkPolicyIngressRule,
      ],
      egress: [
        ...(db.spec.branchOf && starting
          ? [
              {
                to: [{ podSelector: { matchLabels: { [labels.database]: db.spec.branchOf } } }],
                ports: [{ protocol: 'TCP', port: databasePort as unknown as k8s.IntOrString }],
              },
            ]
          : []),
        // A restore fetches its dump from the machine listener (by name, where the cluster DNS answers).
        ...(db.spec.restoreFrom && settings.backups && starting
          ? [toPlatform(settings, settings.backups), ...(settings.clusterDns ? [clusterDnsEgress] : [])]
          : []),
      ],
    },
  };
}

function toPlatform(settings: DatabaseSettings, backups: NonNullable<DatabaseSettings['backups']>): k8s.V1NetworkPolicyEgressRule {
  return {
    to: platformPeers(settings.platformCidrs, settings.platformNamespace),
    ports: backups.platformPorts.map((p) => ({ protocol: 'TCP', port: p.port, ...(p.endPort ? { endPort: p.endPort } : {}) })),
  };
}

/** A backup credential's expiry: five weeks after the start of this week, so it changes (and the CronJob with it) once a week. */
export function backupCredentialExpiry(now: Date): Date {
  const week = 7 * 86_400_000;
  return new Date((Math.floor(now.getTime() / week) + 5) * week);
}

/**
 * A Job of the platform's image in `mode` (the entrypoint's `backup` or `restore`) for this
 * Database: as the tenant (the env's credentials), under the backup Jobs' label (their policy and
 * the Database's let it reach the server and the platform only), an hour at most, one retry.
 */
export function dumpJobSpec(db: Database, settings: DatabaseSettings, mode: 'backup' | 'restore', env: k8s.V1EnvVar[]): k8s.V1JobSpec {
  const name = db.metadata.name!;
  return {
    backoffLimit: 1,
    activeDeadlineSeconds: 3600,
    template: {
      metadata: { labels: { [labels.backupOf]: name, [labels.managedBy]: managers.controllers } },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        ...(settings.userNamespaces ? { hostUsers: false } : {}),
        securityContext: { runAsNonRoot: true, runAsUser: serverUid, runAsGroup: serverUid, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: mode,
            image: settings.image,
            args: [mode],
            env,
            resources: {
              requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': databaseEphemeralStorage.request },
              limits: { cpu: '500m', memory: '256Mi', 'ephemeral-storage': databaseEphemeralStorage.limit },
            },
            // Its last words are the Job's pod's termination message.
            terminationMessagePolicy: 'FallbackToLogsOnError',
            securityContext: serverContainerSecurity,
            volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
          },
        ],
        volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
      },
    },
  };
}

/** A backup Job's spec: one dump of the server at `host` to the platform, an hour at most. */
function backupJobSpec(
  db: Database,
  settings: DatabaseSettings,
  backups: NonNullable<DatabaseSettings['backups']>,
  host: string,
  now: Date,
): k8s.V1JobSpec {
  const { name, namespace } = db.metadata as { name: string; namespace: string };
  const token = mintBackupCredential(backups.key, namespace, name, backupCredentialExpiry(now));
  return {
    ...dumpJobSpec(db, settings, 'backup', [
      ...credentialEnv(db),
      { name: 'SVC_BACKUP_HOST', value: host },
      { name: 'SVC_BACKUP_URL', value: `${db.spec.backupUrl ?? backups.backupBaseUrl}/${namespace}/${name}` },
      { name: 'SVC_BACKUP_TOKEN', value: token },
    ]),
    ttlSecondsAfterFinished: 3600,
  };
}

export function backupPlan(db: Database, observed: DatabaseObserved, settings: DatabaseSettings, now: Date): DatabasePlan['backup'] {
  const backups = settings.backups;
  const host = observed.service?.spec?.clusterIP;
  if (!backups || !host) return undefined;
  const name = db.metadata.name!;
  const spec = backupJobSpec(db, settings, backups, host, now);
  const cronJob: k8s.V1CronJob = {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: meta(db, `db-${name}-backup`),
    spec: {
      schedule: backups.schedule,
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 3600,
      successfulJobsHistoryLimit: 1,
      failedJobsHistoryLimit: 1,
      jobTemplate: { metadata: { labels: { [labels.backupOf]: name, [labels.managedBy]: managers.controllers } }, spec },
    },
  };
  const policy: k8s.V1NetworkPolicy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(db, `db-${name}-backup`),
    spec: {
      podSelector: { matchLabels: { [labels.backupOf]: name } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [
        { to: [{ podSelector: { matchLabels: { [labels.database]: name } } }], ports: [{ protocol: 'TCP', port: databasePort }] },
        toPlatform(settings, backups),
        // The platform's URL may be a Service name (the chart's default).
        ...(settings.clusterDns ? [clusterDnsEgress] : []),
      ],
    },
  };
  const request = db.metadata.annotations?.[backupRequestAnnotation];
  const jobName = request ? `db-${name}-backup-${createHash('sha256').update(request).digest('hex').slice(0, 8)}` : undefined;
  const requested: k8s.V1Job | undefined =
    jobName && !observed.backupJobs?.some((j) => j.metadata?.name === jobName)
      ? {
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: {
            ...meta(db, jobName),
            labels: { [labels.backupOf]: name, [labels.managedBy]: managers.controllers },
            annotations: { [backupRequestAnnotation]: request! },
          },
          spec,
        }
      : undefined;
  return { cronJob, policy, requested };
}

/** Why the server will not come up by waiting, if it will not. */
function serverProblem(pod: k8s.V1Pod): string | undefined {
  for (const s of pod.status?.containerStatuses ?? []) {
    const w = s.state?.waiting;
    if (w && hopelessWaiting.has(w.reason ?? '')) {
      const last = s.lastState?.terminated;
      return `${w.reason}${w.message ? `: ${w.message}` : ''}${last ? ` (last exit ${last.exitCode}${last.reason ? `, ${last.reason}` : ''})` : ''}`;
    }
  }
  return undefined;
}

export function plan(db: Database, observed: DatabaseObserved, settings: DatabaseSettings, now = new Date()): DatabasePlan {
  const name = db.metadata.name!;
  const o = databaseObjects(name);
  const ended =
    observed.pod && (observed.pod.status?.phase === 'Failed' || observed.pod.status?.phase === 'Succeeded') ? observed.pod : undefined;
  // A server on another image than the platform's is replaced (an upgrade restarts it once).
  const outdated =
    observed.pod &&
    !observed.pod.metadata?.deletionTimestamp &&
    observed.pod.spec?.containers.find((c) => c.name === 'postgres')?.image !== settings.image
      ? observed.pod
      : undefined;
  const attachedTo = observed.attachedApps.map((a) => a.metadata.name!).sort()[0];
  const host = observed.service?.spec?.clusterIP;
  const used = observed.claim && measuredBytes(observed.claim);
  const base: DatabaseStatusFields = {
    secretName: o.secret,
    port: databasePort,
    // A branch's data is its source's, database name included.
    databaseName: db.spec.branchOf ?? name,
    ...(host ? { host } : {}),
    ...(attachedTo ? { attachedTo } : {}),
    ...(used !== undefined ? { usedBytes: used } : {}),
  };
  const plan = {
    claim: dataClaim(db, settings),
    service: serverService(db),
    policy: serverPolicy(db, settings, observed),
    // A branch's server waits for its source's address to copy it from.
    createPod:
      (!observed.pod || ended || outdated) && (!db.spec.branchOf || observed.sourceHost)
        ? serverPod(db, settings, observed.sourceHost, now, observed.sourceProvider)
        : undefined,
    deletePod: ended ?? outdated,
    backup: backupPlan(db, observed, settings, now),
  };
  if (observed.pod && podReady(observed.pod) && host) {
    return {
      ...plan,
      status: { ...base, phase: 'Ready' },
      ready: { ok: true, reason: 'ServerReady', message: `PostgreSQL accepts connections at ${host}:${databasePort}` },
    };
  }
  const problem = observed.pod && serverProblem(observed.pod);
  if (problem) {
    const secretHint = /CreateContainerConfigError/.test(problem)
      ? `; is the Secret ${o.secret} there, with keys ${Object.values(credentialKeys).join(', ')}?`
      : '';
    return {
      ...plan,
      status: { ...base, phase: 'Failed' },
      ready: { ok: false, reason: 'ServerFailed', message: `the server cannot start: ${problem}${secretHint}` },
    };
  }
  const waiting =
    db.spec.branchOf && !observed.sourceHost && !observed.pod
      ? `waiting for database ${db.spec.branchOf}, which it copies`
      : db.spec.branchOf && observed.pod?.status?.containerStatuses?.some((c) => c.state?.running)
        ? `copying database ${db.spec.branchOf}, then starting from the copy`
        : !observed.claim || observed.claim.status?.phase !== 'Bound'
          ? 'its volume is being provisioned'
          : 'the server is starting';
  return { ...plan, status: { ...base, phase: 'Pending' }, ready: { ok: false, reason: 'Provisioning', message: waiting } };
}
