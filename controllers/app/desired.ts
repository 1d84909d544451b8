// The App reconciler's pure half: from an App and the machines (Pods) observed for it, what should
// exist (its Service and one Pod per machine ordinal at the current revision), what should go, and
// the status to report, with how the rollout stands (rollout.ts decides it). No I/O here;
// controllers/app/reconciler.ts applies the result and the frame writes the status.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { artifactCredentialTtlSeconds, mintArtifactCredential } from '../../lib/artifacts/credential.js';
import { annotations, apiVersion, appHost, appUrl, containers, labels, managers, type AppsSite } from '../../lib/contract.js';
import { credentialKeys, databaseObjects, databasePort } from '../../lib/databases.js';
import type { App } from '../../lib/resources/index.js';
import { defaultVolumeSize, podVolumeName, volumeClaimName } from '../../lib/volumes.js';
import { hopelessWaiting, podReady } from '../frame/pods.js';
import type { ConditionInput } from '../frame/status.js';
import { liveOutcomes, nextLive, nextRollout, serving, type AppStatusFields } from './rollout.js';

const managerName = managers.controllers;

export interface AppSettings {
  /** Where apps are served: status.url. */
  site: AppsSite;
  /** The image that serves static, HTML, Markdown and handler-tree apps from their artifact. */
  runtimeImage: string;
  /** Where machines fetch an artifact that names no URL: `<base>/sha256:<hex>`. */
  artifactBaseUrl: string;
  /** New machines not ready by then fail the rollout (Progressing=False, RolloutFailed). */
  rolloutDeadlineMs: number;
  /** `iss` of identity assertions and where machines fetch their keys, unless the App says (spec.identity). */
  assertionIssuer: string;
  jwksUrl: string;
  /** Mints the credential a new machine fetches its artifact with (lib/artifacts/credential.ts). */
  artifactKey?: Buffer | undefined;
  /**
   * Where the platform is, as machines see it (each App's NetworkPolicy): the addresses ingress-auth
   * and kubelet probes come from and the machine listener is on, and that listener's ports.
   * Undefined: no policy is written (a cluster without a policy agent, some unit tests).
   */
  platform?: { cidrs: readonly string[]; ports: ReadonlyArray<{ port: number; endPort?: number }> } | undefined;
  /**
   * The Database the App names (spec.database) and its server's address as its Service shows it
   * (observed, so set per App by the reconciler); undefined host: not known yet.
   */
  database?: { name: string; host: string | undefined } | undefined;
  /** The StorageClass of the App's volume claims; undefined: the cluster's default. */
  volumeStorageClass?: string | undefined;
}

/**
 * An attached database's variables, Heroku's and libpq's: the address as observed, the credentials
 * from the API's Secret through the kubelet (the controllers never read it), and DATABASE_URL
 * composed by Kubernetes' $(VAR) expansion of the variables before it. After the app's own: an
 * attachment wins over a variable of the same name.
 */
function databaseEnv(db: NonNullable<AppSettings['database']>): k8s.V1EnvVar[] {
  if (!db.host) return [];
  const secret = databaseObjects(db.name).secret;
  const key = (name: string, k: string): k8s.V1EnvVar => ({ name, valueFrom: { secretKeyRef: { name: secret, key: k } } });
  return [
    { name: 'PGHOST', value: db.host },
    { name: 'PGPORT', value: String(databasePort) },
    key('PGUSER', credentialKeys.username),
    key('PGPASSWORD', credentialKeys.password),
    key('PGDATABASE', credentialKeys.database),
    { name: 'DATABASE_URL', value: 'postgres://$(PGUSER):$(PGPASSWORD)@$(PGHOST):$(PGPORT)/$(PGDATABASE)' },
  ];
}

/** Kinds the platform's runtime image serves from a fetched artifact. */
const runtimeKinds = new Set(['static', 'html', 'markdown', 'handlers']);
const siteRoot = '/srv/site';

function ownerRef(app: App): k8s.V1OwnerReference {
  return { apiVersion, kind: 'App', name: app.metadata.name!, uid: app.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

/**
 * The app's environment: PORT, the app's own variables, then what a machine needs to verify identity
 * assertions (the runtime does; a container service may, docs/api/identity-assertion.md). Those come
 * last so they win over an app variable of the same name (Kubernetes keeps the last duplicate).
 */
function envOf(app: App, port: number, settings: AppSettings): k8s.V1EnvVar[] {
  return [
    { name: 'PORT', value: String(port) },
    ...(app.spec.env ?? []).filter((e) => !e.name.startsWith('SVC_AUTH_')).map((e) => ({ name: e.name, value: e.value ?? '' })),
    ...(settings.database ? databaseEnv(settings.database) : []),
    { name: 'SVC_AUTH_JWKS_URL', value: app.spec.identity?.jwksUrl ?? settings.jwksUrl },
    { name: 'SVC_AUTH_ISSUER', value: app.spec.identity?.issuer ?? settings.assertionIssuer },
    { name: 'SVC_AUTH_AUDIENCE', value: appHost(settings.site, app.metadata.name!) },
  ];
}

/**
 * Every machine runs as this uid and gid (the `app` user of the platform's images), never as root,
 * whatever user the image names: tenant code is hostile (docs/security.md, tenant isolation).
 */
export const machineUid = 1000;
/** Pod Security Admission's `restricted` profile, which account namespaces enforce, and more. */
const machinePodSecurity: k8s.V1PodSecurityContext = {
  runAsNonRoot: true,
  runAsUser: machineUid,
  runAsGroup: machineUid,
  fsGroup: machineUid,
  seccompProfile: { type: 'RuntimeDefault' },
};
const machineContainerSecurity: k8s.V1SecurityContext = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
};
/** The root filesystem is read-only: /tmp is the one writable place a machine has (bounded). */
const tmpVolume: k8s.V1Volume = { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } };
const tmpMount: k8s.V1VolumeMount = { name: 'tmp', mountPath: '/tmp' };

/** Machine `ordinal`'s persistent volumes (each its own claim) and where they are mounted. */
function persistentVolumes(app: App, ordinal: number): { volumes: k8s.V1Volume[]; mounts: k8s.V1VolumeMount[] } {
  const declared = app.spec.volumes ?? [];
  return {
    volumes: declared.map((v) => ({ name: podVolumeName(v.name), persistentVolumeClaim: { claimName: volumeClaimName(app.metadata.name!, v.name, ordinal) } })),
    mounts: declared.map((v) => ({ name: podVolumeName(v.name), mountPath: v.path })),
  };
}

/** The machine's containers and volumes, as the App describes them. */
function machineSpec(app: App, settings: AppSettings, ordinal = 0): Pick<k8s.V1PodSpec, 'containers' | 'initContainers' | 'volumes' | 'securityContext'> {
  const port = app.spec.port ?? 8080;
  const persistent = persistentVolumes(app, ordinal);
  const limits = Object.fromEntries(Object.entries(app.spec.resources ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>;
  const main: k8s.V1Container = {
    name: containers.machine,
    image: app.spec.image,
    ...(app.spec.command ? { command: app.spec.command } : {}),
    ...(app.spec.args ? { args: app.spec.args } : {}),
    ports: [{ name: 'http', containerPort: port }],
    env: envOf(app, port, settings),
    ...(app.spec.envSecretName ? { envFrom: [{ secretRef: { name: app.spec.envSecretName } }] } : {}),
    ...(Object.keys(limits).length ? { resources: { limits } } : {}),
    readinessProbe: { tcpSocket: { port: port as unknown as k8s.IntOrString }, periodSeconds: 1, failureThreshold: 2 },
    securityContext: machineContainerSecurity,
    volumeMounts: [tmpMount, ...persistent.mounts],
  };
  const source = app.spec.source;
  if (!runtimeKinds.has(app.spec.kind ?? '') || !source) return { securityContext: machinePodSecurity, containers: [main], volumes: [tmpVolume, ...persistent.volumes] };
  // The runtime serves the artifact an init container fetched and verified into an emptyDir, so a
  // machine never serves bytes other than the digest the App names.
  const mount = { name: 'site', mountPath: siteRoot };
  return {
    securityContext: machinePodSecurity,
    initContainers: [
      {
        name: containers.fetch,
        image: settings.runtimeImage,
        args: ['fetch'],
        env: [
          { name: 'SVC_ARTIFACT_URL', value: source.url ?? `${settings.artifactBaseUrl}/${source.digest}` },
          { name: 'SVC_ARTIFACT_DIGEST', value: source.digest },
          { name: 'SVC_SITE_ROOT', value: siteRoot },
        ],
        securityContext: machineContainerSecurity,
        volumeMounts: [mount, tmpMount],
      },
    ],
    containers: [
      {
        ...main,
        image: settings.runtimeImage,
        command: undefined,
        args: ['serve'],
        env: [...envOf(app, port, settings), { name: 'SVC_APP_KIND', value: app.spec.kind! }, { name: 'SVC_SITE_ROOT', value: siteRoot }],
        volumeMounts: [{ ...mount, readOnly: true }, tmpMount, ...persistent.mounts],
      },
    ],
    volumes: [{ name: 'site', emptyDir: {} }, tmpVolume, ...persistent.volumes],
  };
}

function placementOf(app: App, ordinal: number): string | undefined {
  return (app.spec.placement ?? []).find((p) => p.ordinal === ordinal)?.node;
}

/** A short hash of everything that shapes machine `ordinal`: a change means a new machine. */
export function revisionOf(app: App, settings: AppSettings, ordinal = 0): string {
  const shape = JSON.stringify({ m: machineSpec(app, settings, ordinal), d: app.spec.deployId ?? null, n: placementOf(app, ordinal) ?? null });
  return createHash('sha256').update(shape).digest('hex').slice(0, 10);
}

/**
 * Machine `ordinal` as a Pod created at `now`. Its init container gets a fresh artifact credential,
 * which is not part of the revision: a machine is not replaced because its credential aged.
 */
export function machinePod(app: App, ordinal: number, settings: AppSettings, now = new Date()): k8s.V1Pod {
  const name = app.metadata.name!;
  const revision = revisionOf(app, settings, ordinal);
  const node = placementOf(app, ordinal);
  const spec = machineSpec(app, settings, ordinal);
  const fetch = spec.initContainers?.[0];
  if (fetch && settings.artifactKey && app.spec.source) {
    const expires = new Date(now.getTime() + artifactCredentialTtlSeconds * 1000);
    fetch.env = [...(fetch.env ?? []), { name: 'SVC_ARTIFACT_TOKEN', value: mintArtifactCredential(settings.artifactKey, app.spec.source.digest, expires) }];
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${name}-m${ordinal}-${revision}`,
      namespace: app.metadata.namespace,
      labels: { [labels.app]: name, [labels.machine]: String(ordinal), [labels.revision]: revision, [labels.managedBy]: managerName },
      annotations: { ...(app.spec.deployId ? { [annotations.deploy]: app.spec.deployId } : {}) },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      ...spec,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 10,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // Machines of one app prefer different nodes.
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { [labels.app]: name } } },
      ],
      ...(node
        ? {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }],
                },
              },
            },
          }
        : {}),
    },
  };
}

/**
 * Machine `ordinal`'s claim for volume `volume`. Owned by the App but not its controller's to
 * delete: a volume dropped from the spec or a machine scaled away keeps its data, detached, until
 * DELETE /volumes/{ref} (docs/decisions/0018-volumes.md). Its size is fixed when it is made.
 */
export function volumeClaim(app: App, volume: NonNullable<App['spec']['volumes']>[number], ordinal: number, settings: AppSettings): k8s.V1PersistentVolumeClaim {
  const name = app.metadata.name!;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: volumeClaimName(name, volume.name, ordinal),
      namespace: app.metadata.namespace,
      labels: { [labels.app]: name, [labels.machine]: String(ordinal), [labels.volume]: volume.name, [labels.managedBy]: managerName },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: volume.size ?? defaultVolumeSize } },
      ...(settings.volumeStorageClass ? { storageClassName: settings.volumeStorageClass } : {}),
    },
  };
}

export function appService(app: App): k8s.V1Service {
  const name = app.metadata.name!;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: app.metadata.namespace, labels: { [labels.app]: name, [labels.managedBy]: managerName }, ownerReferences: [ownerRef(app)] },
    spec: { selector: { [labels.app]: name }, ports: [{ name: 'http', port: 80, targetPort: 'http' as unknown as k8s.IntOrString }] },
  };
}

/**
 * The App's machines' NetworkPolicy, on top of the account's deny-all: in, from the platform
 * (ingress-auth, probes) and from the app's own machines; out, to the app's own machines and to
 * the machine listener's ports (artifacts, identity keys). Never to another app or account.
 */
export function machinePolicy(app: App, settings: AppSettings): k8s.V1NetworkPolicy | undefined {
  if (!settings.platform) return undefined;
  const name = app.metadata.name!;
  const own = { podSelector: { matchLabels: { [labels.app]: name } } };
  const platform = settings.platform.cidrs.map((cidr) => ({ ipBlock: { cidr } }));
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `app-${name}`, namespace: app.metadata.namespace, labels: { [labels.app]: name, [labels.managedBy]: managerName }, ownerReferences: [ownerRef(app)] },
    spec: {
      podSelector: own.podSelector,
      policyTypes: ['Ingress', 'Egress'],
      // `from` on the wire: apply patches are sent as written, not renamed like the model's `_from`.
      ingress: [{ from: [...platform, own] } as unknown as k8s.V1NetworkPolicyIngressRule],
      egress: [
        { to: [own] },
        // Out to its attached database's server (whose own policy lets the account's machines in).
        ...(settings.database ? [{ to: [{ podSelector: { matchLabels: { [labels.database]: settings.database.name } } }], ports: [{ protocol: 'TCP', port: databasePort as unknown as k8s.IntOrString }] }] : []),
        { to: platform, ports: settings.platform.ports.map((p) => ({ protocol: 'TCP', port: p.port as unknown as k8s.IntOrString, ...(p.endPort ? { endPort: p.endPort } : {}) })) },
      ],
    },
  };
}

function statusesOf(pod: k8s.V1Pod): k8s.V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

function broken(pod: k8s.V1Pod): string | undefined {
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') return `machine ${pod.metadata?.name} ended (${pod.status.phase})`;
  const waiting = statusesOf(pod).find((s) => s.state?.waiting && !['ContainerCreating', 'PodInitializing'].includes(s.state.waiting.reason ?? ''));
  return waiting ? `${waiting.name}: ${waiting.state!.waiting!.reason}: ${waiting.state!.waiting!.message ?? ''}`.trim() : undefined;
}

/** Why a machine of the current revision will not become ready, if it will not. */
function hopelessMachine(pod: k8s.V1Pod, now: Date, deadlineMs: number): string | undefined {
  if (podReady(pod)) return undefined;
  for (const s of statusesOf(pod)) {
    const last = s.lastState?.terminated ?? s.state?.terminated;
    const ended = last ? ` (last exit ${last.exitCode}${last.reason ? `, ${last.reason}` : ''}${last.message ? `: ${last.message.trim().slice(-300)}` : ''})` : '';
    if (s.state?.waiting && hopelessWaiting.has(s.state.waiting.reason ?? '')) return `container ${s.name}: ${s.state.waiting.reason}${s.state.waiting.message ? `: ${s.state.waiting.message}` : ''}${ended}`;
    if (s.restartCount >= 2) return `container ${s.name} restarted ${s.restartCount} times${ended}`;
  }
  if (pod.status?.phase === 'Failed') return `machine ended (${pod.status.reason ?? 'Failed'})`;
  const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : now.getTime();
  if (now.getTime() - created >= deadlineMs) return `not ready after ${Math.round(deadlineMs / 1000)} s`;
  return undefined;
}

export interface Plan {
  /** Volume claims missing for machines that are wanted: made before the machines that mount them. */
  claims: k8s.V1PersistentVolumeClaim[];
  create: k8s.V1Pod[];
  delete: k8s.V1Pod[];
  /** The App's own status fields (the frame adds observedGeneration and conditions). */
  status: AppStatusFields;
  ready: Omit<ConditionInput, 'type'>;
  conditions: ConditionInput[];
  /** Re-check after this many ms even without a change (expiry, waits). */
  requeueMs?: number;
  /** The App's expiry passed: delete it. */
  expired: boolean;
}

/** A short hash of what shapes every machine of the App as applied (placement aside). */
export function specRevision(app: App, settings: AppSettings): string {
  return createHash('sha256')
    .update(JSON.stringify({ m: machineSpec(app, settings), d: app.spec.deployId ?? null }))
    .digest('hex')
    .slice(0, 10);
}

/**
 * For each ordinal, a machine of the current revision is started next to an older one, which goes
 * only once the new one is Ready: a one-machine app keeps serving through a deploy. The revision
 * is the App's as applied, or while that spec's rollout has failed, the last live one (rollout.ts).
 */
export function plan(app: App, pods: k8s.V1Pod[], settings: AppSettings, now: Date, claims: readonly k8s.V1PersistentVolumeClaim[] = []): Plan {
  const expiresAt = app.spec.expiresAt ? new Date(app.spec.expiresAt) : undefined;
  const applied = specRevision(app, settings);
  const { app: target, halted } = serving(app, applied);
  // Container services run their image; static, HTML, Markdown and handler-tree apps the runtime
  // image, which needs the artifact the App names (the CRD requires one): without it, no machine.
  const servable = target.spec.kind === 'container' || (runtimeKinds.has(target.spec.kind ?? '') && target.spec.source !== undefined);
  const hopelessOnes: string[] = [];
  let nextDeadline: number | undefined;
  const want = app.spec.suspended || !servable ? 0 : (app.spec.machines ?? 1);
  const create: k8s.V1Pod[] = [];
  const del: k8s.V1Pod[] = [];
  const claimNames = new Set(claims.map((c) => c.metadata?.name));
  const missingClaims: k8s.V1PersistentVolumeClaim[] = [];
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const problems: string[] = [];
  const machines: NonNullable<AppStatusFields['machines']> = [];
  let ready = 0;
  let current = 0;
  for (const p of live) {
    const ordinal = Number(p.metadata?.labels?.[labels.machine]);
    if (!Number.isInteger(ordinal) || ordinal >= want) del.push(p);
  }
  for (let ordinal = 0; ordinal < want; ordinal++) {
    const revision = revisionOf(target, settings, ordinal);
    const mine = live.filter((p) => Number(p.metadata?.labels?.[labels.machine]) === ordinal);
    const fresh = mine.find((p) => p.metadata?.labels?.[labels.revision] === revision);
    const old = mine.filter((p) => p !== fresh);
    for (const v of target.spec.volumes ?? []) {
      const claim = volumeClaim(target, v, ordinal, settings);
      if (!claimNames.has(claim.metadata!.name)) missingClaims.push(claim);
    }
    if (!fresh) create.push(machinePod(target, ordinal, settings, now));
    else if (podReady(fresh)) del.push(...old);
    if (fresh) {
      const why = hopelessMachine(fresh, now, settings.rolloutDeadlineMs);
      if (why) hopelessOnes.push(`machine ${ordinal}: ${why}`);
      else if (!podReady(fresh)) {
        const created = fresh.metadata?.creationTimestamp ? new Date(fresh.metadata.creationTimestamp).getTime() : now.getTime();
        const left = created + settings.rolloutDeadlineMs - now.getTime();
        nextDeadline = Math.min(nextDeadline ?? left, left);
      }
    }
    // A failed machine of the current revision is replaced.
    if (fresh && (fresh.status?.phase === 'Failed' || fresh.status?.phase === 'Succeeded')) {
      del.push(fresh);
    }
    const serving = [fresh, ...old].find((p) => p && podReady(p));
    if (serving) ready += 1;
    if (fresh && podReady(fresh)) current += 1;
    const problem = fresh && broken(fresh);
    if (problem) problems.push(`machine ${ordinal}: ${problem}`);
    const shown = serving ?? fresh;
    if (shown) {
      const phase = shown.status?.phase;
      machines.push({
        ordinal,
        pod: shown.metadata!.name!,
        ...(shown.spec?.nodeName ? { node: shown.spec.nodeName } : {}),
        ...(shown.status?.podIP ? { address: shown.status.podIP } : {}),
        state: podReady(shown) ? 'running' : phase === 'Failed' ? 'failed' : phase === 'Running' ? 'starting' : 'pending',
        ...(shown.metadata?.annotations?.[annotations.deploy] ? { deploy: shown.metadata.annotations[annotations.deploy] } : {}),
        ...(shown.status?.startTime ? { startedAt: new Date(shown.status.startTime).toISOString() } : {}),
      });
    }
  }
  const complete = current === want && want > 0;
  // The rollout of the spec as applied moves only while its own machines run: while halted, or
  // while nothing runs (suspended, not deployed), it stays as it was.
  const rollout =
    halted || want === 0
      ? app.status?.rollout
      : nextRollout(app.status?.rollout, applied, app.spec.deployId, { failed: hopelessOnes.length ? hopelessOnes.join('; ') : undefined, complete }, now);
  const failed = rollout?.revision === applied && rollout.state === 'Failed';
  const isReady = ready === want && want > 0;
  const lastLive = complete && !halted ? nextLive(app.status?.live, app, applied, now) : app.status?.live;
  const waits = [expiresAt && expiresAt.getTime() > now.getTime() ? expiresAt.getTime() - now.getTime() : undefined, nextDeadline !== undefined && !failed ? Math.max(nextDeadline, 100) : undefined].filter(
    (w): w is number => w !== undefined,
  );
  const servingNote = failed && lastLive?.deploy ? `; deploy ${lastLive.deploy} keeps serving` : failed && lastLive ? '; the last live revision keeps serving' : '';
  const progressing = current < want || live.length > want;
  const outcomes = liveOutcomes(app.status?.deploys, rollout);
  return {
    claims: missingClaims,
    create,
    delete: [...new Set(del)],
    expired: expiresAt !== undefined && expiresAt.getTime() <= now.getTime(),
    ...(waits.length ? { requeueMs: Math.min(...waits) } : {}),
    status: {
      url: appUrl(settings.site, app.metadata.name!),
      ready: `${ready}/${want}`,
      readyMachines: ready,
      ...(complete && target.spec.deployId ? { currentDeploy: target.spec.deployId } : app.status?.currentDeploy ? { currentDeploy: app.status.currentDeploy } : {}),
      ...(lastLive ? { live: lastLive } : {}),
      ...(rollout ? { rollout } : {}),
      ...(outcomes.length ? { deploys: outcomes } : {}),
      machines,
    },
    ready: !app.spec.kind
      ? { ok: false, reason: 'NotDeployed', message: 'the app has no deploy yet' }
      : servable
        ? { ok: isReady, reason: isReady ? 'MachinesReady' : want === 0 ? 'NoMachines' : 'MachinesNotReady', message: `${ready} of ${want} machines ready${servingNote}` }
        : { ok: false, reason: 'NoSource', message: `a ${app.spec.kind} app names no artifact (spec.source) to serve` },
    conditions: [
      failed
        ? { type: 'Progressing', ok: false, reason: 'RolloutFailed', message: `${rollout.reason ?? 'the rollout failed'}${servingNote}` }
        : { type: 'Progressing', ok: progressing, reason: progressing ? 'RollingOut' : 'UpToDate', message: progressing ? `${current} of ${want} machines current` : `all ${want} machines current` },
      { type: 'Degraded', ok: problems.length > 0, reason: problems.length ? 'MachinesFailing' : 'AsExpected', message: problems.join('; ') || 'no machine is failing' },
    ],
  };
}
