// The App reconciler's pure half: from an App and the machines (Pods) observed for it, what should
// exist (its Service and one Pod per machine ordinal at the current revision), what should go, and
// the status to report, with how the rollout stands (rollout.ts decides it). No I/O here;
// controllers/app/reconciler.ts applies the result and the frame writes the status.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { artifactCredentialTtlSeconds, mintArtifactCredential } from '../../lib/artifacts/credential.js';
import { servicesOf, type Restart, type ServiceView } from '../../lib/app-services.js';
import { annotations, apiVersion, appHost, appUrl, containers, labels, managers, type AppsSite } from '../../lib/contract.js';
import { credentialKeys, databaseObjects, databasePort } from '../../lib/databases.js';
import type { App } from '../../lib/resources/index.js';
import { policyEmails } from '../../lib/auth/identity.js';
import { policiesInForce } from '../../lib/policy/index.js';
import { defaultVolumeSize, podVolumeName, volumeClaimName } from '../../lib/volumes.js';
import { hopelessWaiting, podReady } from '../frame/pods.js';
import type { ConditionInput } from '../frame/status.js';
import { liveOutcomes, nextLive, nextRollout, serving, type AppStatusFields } from './rollout.js';
import { platformPeers } from '../../lib/kube/platform-peers.js';
import { refusedImage, tenantImages, type RegistryPolicyConfig } from '../../lib/images/registry-policy.js';
import { isTenantImage, pullSecretName } from '../../lib/registry/names.js';

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
  platform?:
    { cidrs: readonly string[]; namespace?: string | undefined; ports: ReadonlyArray<{ port: number; endPort?: number }> } | undefined;
  /**
   * The Database the App names (spec.database) and its server's address as its Service shows it
   * (observed, so set per App by the reconciler); undefined host: not known yet.
   */
  database?: { name: string; host: string | undefined } | undefined;
  /** The StorageClass of the App's volume claims; undefined: the cluster's default. */
  volumeStorageClass?: string | undefined;
  /**
   * The ClusterIP of each of the App's service Services, by service name (observed, so set per App
   * by the reconciler); undefined: not known yet. Only Apps with spec.services have them.
   */
  serviceAddresses?: ReadonlyMap<string, string | undefined> | undefined;
  /**
   * Which registries a tenant's images may come from (config.images); undefined: not checked (unit
   * tests of other things). An App applied with kubectl never passed the API's check, so its images
   * are judged here too: a refused one gets no machine (issue 30 finding 6).
   */
  images?: RegistryPolicyConfig | undefined;
}

/** The Service through which the app's machines reach service `service` by name (a DNS label of at most 63). */
export function serviceObjectName(app: string, service: string): string {
  const full = `${app}-${service}`;
  return full.length <= 63
    ? full
    : `${full.slice(0, 52).replace(/-+$/, '')}-${createHash('sha256').update(full).digest('hex').slice(0, 10)}`;
}

/** Whether a machine Pod belongs to `view` (the public service's machines made before services had names carry no service label). */
export function podOfService(pod: k8s.V1Pod, view: Pick<ServiceView, 'name' | 'public'>): boolean {
  const l = pod.metadata?.labels ?? {};
  if (view.public) return l[labels.public] === 'true' || l[labels.service] === undefined;
  return l[labels.public] !== 'true' && l[labels.service] === view.name;
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
function envOf(app: App, view: ServiceView, settings: AppSettings): k8s.V1EnvVar[] {
  return [
    ...(view.port !== undefined ? [{ name: 'PORT', value: String(view.port) }] : []),
    ...view.env.filter((e) => !e.name.startsWith('SVC_AUTH_')).map((e) => ({ name: e.name, value: e.value ?? '' })),
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
/**
 * The node disk a machine may take besides its volumes (docs/decisions/0023-disks.md): /tmp (256Mi),
 * the served site (an artifact is at most 256 MiB packed) and its logs, which the kubelet counts
 * together and evicts the machine past. Named on every container, not left to the account's
 * LimitRange, so a machine is bounded in any namespace.
 */
export const machineEphemeralStorage = { request: '64Mi', limit: '1Gi' } as const;

/** Machine `ordinal`'s persistent volumes (each its own claim) and where they are mounted. */
function persistentVolumes(app: App, view: ServiceView, ordinal: number): { volumes: k8s.V1Volume[]; mounts: k8s.V1VolumeMount[] } {
  const declared = view.volumes;
  return {
    volumes: declared.map((v) => ({
      name: podVolumeName(v.name),
      persistentVolumeClaim: { claimName: volumeClaimName(app.metadata.name!, v.name, ordinal) },
    })),
    mounts: declared.map((v) => ({ name: podVolumeName(v.name), mountPath: v.path })),
  };
}

/** How a machine of `view` is known ready: its healthcheck, else its port accepting connections, else running. */
function readinessOf(view: ServiceView): k8s.V1Probe | undefined {
  const h = view.healthcheck;
  if (h) {
    return {
      exec: { command: h.command },
      periodSeconds: h.intervalSeconds ?? 30,
      timeoutSeconds: h.timeoutSeconds ?? 30,
      failureThreshold: h.retries ?? 3,
    };
  }
  if (view.port === undefined) return undefined;
  return { tcpSocket: { port: view.port as unknown as k8s.IntOrString }, periodSeconds: 1, failureThreshold: 2 };
}

const restartPolicies: Record<Restart, string> = { always: 'Always', 'on-failure': 'OnFailure', no: 'Never' };

/**
 * The names the app's machines reach its services by (and their addresses), for every machine of an
 * App with services: the platform runs no cluster DNS it could rely on, and a Service's ClusterIP
 * lasts as long as the Service.
 */
function hostAliasesOf(app: App, settings: AppSettings): k8s.V1HostAlias[] | undefined {
  if (!app.spec.services?.length) return undefined;
  const aliases: k8s.V1HostAlias[] = [];
  for (const view of servicesOf(app.spec)) {
    const ip = view.name !== undefined && view.ports.length ? settings.serviceAddresses?.get(view.name) : undefined;
    if (ip) aliases.push({ ip, hostnames: [view.name!, ...view.aliases] });
  }
  return aliases.length ? aliases : undefined;
}

/** The machine's containers and volumes, as the App describes them. */
function machineSpec(
  app: App,
  settings: AppSettings,
  ordinal = 0,
  view: ServiceView = servicesOf(app.spec)[0]!,
): Pick<k8s.V1PodSpec, 'containers' | 'initContainers' | 'volumes' | 'securityContext' | 'hostAliases' | 'restartPolicy'> {
  const persistent = persistentVolumes(app, view, ordinal);
  const limits = Object.fromEntries(Object.entries(app.spec.resources ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>;
  const readiness = readinessOf(view);
  const hostAliases = hostAliasesOf(app, settings);
  const podLevel = {
    securityContext: machinePodSecurity,
    ...(hostAliases ? { hostAliases } : {}),
    // Always is what a machine had before services could say otherwise; named only when it differs.
    ...(view.restart !== 'always' ? { restartPolicy: restartPolicies[view.restart] } : {}),
  };
  const main: k8s.V1Container = {
    name: containers.machine,
    image: view.image,
    // A tenant's image in the platform's registry is asked for every time the machine starts: a
    // copy another account's machine left on the node is never run without this account's
    // credential being checked (docs/decisions/0025-registry-auth.md).
    ...(isTenantImage(view.image, settings.images?.platformRegistry) ? { imagePullPolicy: 'Always' } : {}),
    ...(view.command ? { command: view.command } : {}),
    ...(view.args ? { args: view.args } : {}),
    ...(view.workingDir ? { workingDir: view.workingDir } : {}),
    ...(view.public
      ? { ports: [{ name: 'http', containerPort: view.port! }] }
      : view.ports.length
        ? { ports: view.ports.map((p) => ({ name: `p${p}`, containerPort: p })) }
        : {}),
    env: envOf(app, view, settings),
    ...(app.spec.envSecretName ? { envFrom: [{ secretRef: { name: app.spec.envSecretName } }] } : {}),
    resources: {
      requests: { 'ephemeral-storage': machineEphemeralStorage.request },
      limits: { ...limits, 'ephemeral-storage': machineEphemeralStorage.limit },
    },
    ...(readiness ? { readinessProbe: readiness } : {}),
    securityContext: machineContainerSecurity,
    volumeMounts: [tmpMount, ...persistent.mounts],
  };
  const source = app.spec.source;
  if (!view.public || !runtimeKinds.has(app.spec.kind ?? '') || !source)
    return { ...podLevel, containers: [main], volumes: [tmpVolume, ...persistent.volumes] };
  // The runtime serves the artifact an init container fetched and verified into an emptyDir, so a
  // machine never serves bytes other than the digest the App names.
  const mount = { name: 'site', mountPath: siteRoot };
  return {
    ...podLevel,
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
        resources: {
          requests: { 'ephemeral-storage': machineEphemeralStorage.request },
          limits: { 'ephemeral-storage': machineEphemeralStorage.limit },
        },
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
        workingDir: undefined,
        env: [...envOf(app, view, settings), { name: 'SVC_APP_KIND', value: app.spec.kind! }, { name: 'SVC_SITE_ROOT', value: siteRoot }],
        volumeMounts: [{ ...mount, readOnly: true }, tmpMount, ...persistent.mounts],
      },
    ],
    volumes: [{ name: 'site', emptyDir: {} }, tmpVolume, ...persistent.volumes],
  };
}

function placementOf(app: App, ordinal: number, view?: ServiceView): string | undefined {
  // Placement (machine migration) pins the public service's machines.
  if (view && !view.public) return undefined;
  return (app.spec.placement ?? []).find((p) => p.ordinal === ordinal)?.node;
}

/**
 * The revision's JSON without the ephemeral-storage bounds (a JSON.stringify replacer): they are
 * the account LimitRange's defaults (controllers/account/desired.ts), which machines made before
 * they were named already had, so naming them replaces no running machine on upgrade.
 */
function withoutDiskBounds(key: string, value: unknown): unknown {
  if (key !== 'resources' || !value || typeof value !== 'object') return value;
  const r = value as k8s.V1ResourceRequirements;
  const strip = (m: Record<string, string> | undefined) => {
    const { 'ephemeral-storage': _, ...rest } = m ?? {};
    return Object.keys(rest).length ? rest : undefined;
  };
  const requests = strip(r.requests);
  const limits = strip(r.limits);
  return requests || limits ? { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) } : undefined;
}

/**
 * A short hash of everything that shapes machine `ordinal` of `view`: a change means a new machine.
 * A deploy replaces the machines of a one-service app (as Heroku and Fly.io restart on every deploy);
 * in an App with services only a service whose definition changed gets new machines (compose's `up`).
 */
export function revisionOf(app: App, settings: AppSettings, ordinal = 0, view: ServiceView = servicesOf(app.spec)[0]!): string {
  const deploy = app.spec.services?.length ? null : (app.spec.deployId ?? null);
  const shape = JSON.stringify(
    { m: machineSpec(app, settings, ordinal, view), d: deploy, n: placementOf(app, ordinal, view) ?? null },
    withoutDiskBounds,
  );
  return createHash('sha256').update(shape).digest('hex').slice(0, 10);
}

/** The labels every machine of `view` carries (the public one's are what the app's Service selects). */
function serviceLabels(view: ServiceView): Record<string, string> {
  return { ...(view.name !== undefined ? { [labels.service]: view.name } : {}), ...(view.public ? { [labels.public]: 'true' } : {}) };
}

/**
 * Machine `ordinal` of `view` as a Pod created at `now`. Its init container gets a fresh artifact
 * credential, which is not part of the revision: a machine is not replaced because its credential aged.
 */
export function machinePod(
  app: App,
  ordinal: number,
  settings: AppSettings,
  now = new Date(),
  view: ServiceView = servicesOf(app.spec)[0]!,
): k8s.V1Pod {
  const name = app.metadata.name!;
  const revision = revisionOf(app, settings, ordinal, view);
  const node = placementOf(app, ordinal, view);
  const spec = machineSpec(app, settings, ordinal, view);
  const fetch = spec.initContainers?.[0];
  if (fetch && settings.artifactKey && app.spec.source) {
    const expires = new Date(now.getTime() + artifactCredentialTtlSeconds * 1000);
    fetch.env = [
      ...(fetch.env ?? []),
      { name: 'SVC_ARTIFACT_TOKEN', value: mintArtifactCredential(settings.artifactKey, app.spec.source.digest, expires) },
    ];
  }
  const spread = { [labels.app]: name, ...(view.public ? {} : { [labels.service]: view.name! }) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: view.public ? `${name}-m${ordinal}-${revision}` : `${name}-${view.name}-m${ordinal}-${revision}`,
      namespace: app.metadata.namespace,
      labels: {
        [labels.app]: name,
        ...serviceLabels(view),
        [labels.machine]: String(ordinal),
        [labels.revision]: revision,
        [labels.managedBy]: managerName,
      },
      annotations: { ...(app.spec.deployId ? { [annotations.deploy]: app.spec.deployId } : {}) },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      ...spec,
      restartPolicy: spec.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: 10,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // The account's own pull credential (controllers/account/): its images and the platform's, no other account's.
      ...(settings.images?.platformRegistry ? { imagePullSecrets: [{ name: pullSecretName }] } : {}),
      // Machines of one service prefer different nodes.
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: spread } },
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

/** The app's Service, `<app>`: its public service's machines, which ingress-auth routes the app's hostname to. */
export function appService(app: App): k8s.V1Service {
  const name = app.metadata.name!;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: app.metadata.namespace,
      labels: { [labels.app]: name, [labels.managedBy]: managerName },
      ownerReferences: [ownerRef(app)],
    },
    spec: { selector: { [labels.app]: name, [labels.public]: 'true' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  };
}

/**
 * The Services the app's machines reach its services by name through (an App with spec.services;
 * one per service with ports), on the ports the service listens on. Never routed from outside:
 * ingress-auth routes only `<app>`, and their ports are not named http.
 */
export function serviceServices(app: App): k8s.V1Service[] {
  if (!app.spec.services?.length) return [];
  const name = app.metadata.name!;
  return servicesOf(app.spec)
    .filter((v) => v.name !== undefined && v.ports.length)
    .map((v) => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: serviceObjectName(name, v.name!),
        namespace: app.metadata.namespace,
        labels: { [labels.app]: name, [labels.service]: v.name!, [labels.managedBy]: managerName },
        ownerReferences: [ownerRef(app)],
      },
      spec: {
        selector: { [labels.app]: name, ...(v.public ? { [labels.public]: 'true' } : { [labels.service]: v.name! }) },
        ports: v.ports.map((p) => ({ name: `p${p}`, port: p, targetPort: p })),
      },
    }));
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
  const platform = platformPeers(settings.platform.cidrs, settings.platform.namespace);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: `app-${name}`,
      namespace: app.metadata.namespace,
      labels: { [labels.app]: name, [labels.managedBy]: managerName },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      podSelector: own.podSelector,
      policyTypes: ['Ingress', 'Egress'],
      // `from` on the wire: apply patches are sent as written, not renamed like the model's `_from`.
      ingress: [{ from: [...platform, own] } as unknown as k8s.V1NetworkPolicyIngressRule],
      egress: [
        { to: [own] },
        // Out to its attached database's server (whose own policy lets the account's machines in).
        ...(settings.database
          ? [
              {
                to: [{ podSelector: { matchLabels: { [labels.database]: settings.database.name } } }],
                ports: [{ protocol: 'TCP', port: databasePort as unknown as k8s.IntOrString }],
              },
            ]
          : []),
        {
          to: platform,
          ports: settings.platform.ports.map((p) => ({ protocol: 'TCP', port: p.port, ...(p.endPort ? { endPort: p.endPort } : {}) })),
        },
      ],
    },
  };
}

function statusesOf(pod: k8s.V1Pod): k8s.V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

/** A machine that has done what it is for: ready, or, in a service that does not restart, ended with exit 0. */
function done(pod: k8s.V1Pod, view: ServiceView): boolean {
  return podReady(pod) || (view.restart !== 'always' && pod.status?.phase === 'Succeeded');
}

function broken(pod: k8s.V1Pod, view: ServiceView): string | undefined {
  if (pod.status?.phase === 'Succeeded' && view.restart !== 'always') return undefined;
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded')
    return `machine ${pod.metadata?.name} ended (${pod.status.phase})`;
  const waiting = statusesOf(pod).find(
    (s) => s.state?.waiting && !['ContainerCreating', 'PodInitializing'].includes(s.state.waiting.reason ?? ''),
  );
  return waiting ? `${waiting.name}: ${waiting.state!.waiting!.reason}: ${waiting.state!.waiting!.message ?? ''}`.trim() : undefined;
}

/** Why a machine of the current revision will not become ready (or finish), if it will not. */
function hopelessMachine(pod: k8s.V1Pod, view: ServiceView, now: Date, deadlineMs: number): string | undefined {
  if (done(pod, view)) return undefined;
  for (const s of statusesOf(pod)) {
    const last = s.lastState?.terminated ?? s.state?.terminated;
    const ended = last
      ? ` (last exit ${last.exitCode}${last.reason ? `, ${last.reason}` : ''}${last.message ? `: ${last.message.trim().slice(-300)}` : ''})`
      : '';
    if (s.state?.waiting && hopelessWaiting.has(s.state.waiting.reason ?? ''))
      return `container ${s.name}: ${s.state.waiting.reason}${s.state.waiting.message ? `: ${s.state.waiting.message}` : ''}${ended}`;
    if (s.restartCount >= 2) return `container ${s.name} restarted ${s.restartCount} times${ended}`;
  }
  if (pod.status?.phase === 'Failed') {
    const exit = statusesOf(pod)
      .map((c) => c.state?.terminated)
      .find((t) => t && t.exitCode !== 0);
    return exit
      ? `machine ended with exit code ${exit.exitCode}${exit.reason ? ` (${exit.reason})` : ''}`
      : `machine ended (${pod.status.reason ?? 'Failed'})`;
  }
  const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : now.getTime();
  // A healthcheck's start period is time the service said it may need before it is healthy.
  const deadline = deadlineMs + (view.healthcheck?.startPeriodSeconds ?? 0) * 1000;
  if (now.getTime() - created >= deadline) return `not ready after ${Math.round(deadline / 1000)} s`;
  return undefined;
}

/**
 * Whether every machine of service `dep` is as `condition` asks (compose depends_on): started
 * (running), healthy (ready) or completed (ended with exit 0 at its current revision).
 */
function dependencyMet(
  dep: ServiceView,
  pods: readonly k8s.V1Pod[],
  condition: 'started' | 'healthy' | 'completed',
  revisionAt: (ordinal: number) => string,
): boolean {
  const mine = pods.filter((p) => podOfService(p, dep));
  for (let o = 0; o < dep.machines; o++) {
    const ps = mine.filter((p) => Number(p.metadata?.labels?.[labels.machine]) === o);
    const met =
      condition === 'started'
        ? ps.some((p) => podReady(p) || p.status?.phase === 'Running' || p.status?.phase === 'Succeeded')
        : condition === 'healthy'
          ? ps.some((p) => podReady(p))
          : ps.some((p) => p.status?.phase === 'Succeeded' && p.metadata?.labels?.[labels.revision] === revisionAt(o));
    if (!met) return false;
  }
  return true;
}

function machineState(pod: k8s.V1Pod): NonNullable<AppStatusFields['machines']>[number]['state'] {
  const phase = pod.status?.phase;
  if (podReady(pod)) return 'running';
  return phase === 'Succeeded' ? 'exited' : phase === 'Failed' ? 'failed' : phase === 'Running' ? 'starting' : 'pending';
}

export interface Plan {
  /** Machines of the public service made before it was labelled as such: labelled before the Service selects by it. */
  relabel: k8s.V1Pod[];
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

/** A short hash of what shapes every machine of the App as applied (placement aside), and the deploy. */
export function specRevision(app: App, settings: AppSettings): string {
  // Not the services' addresses: they are observed, not applied, and a rollout must not restart when they become known.
  const applied = { ...settings, serviceAddresses: undefined };
  const m = app.spec.services?.length ? servicesOf(app.spec).map((v) => machineSpec(app, applied, 0, v)) : machineSpec(app, applied);
  return createHash('sha256')
    .update(JSON.stringify({ m, d: app.spec.deployId ?? null }))
    .digest('hex')
    .slice(0, 10);
}

/** One service's part of the plan. */
interface ServicePlan {
  want: number;
  ready: number;
  current: number;
  machines: NonNullable<AppStatusFields['machines']>;
  /** Why its machines are not made yet (dependencies, addresses). */
  waits?: string;
}

/**
 * For each service and ordinal, a machine of the current revision is started next to an older one,
 * which goes only once the new one is Ready (or, in a service that does not restart, done): a
 * one-machine app keeps serving through a deploy. The revision is the App's as applied, or while
 * that spec's rollout has failed, the last live one (rollout.ts). A service's machines are made once
 * the services it depends on are as it asks, and, in an App with services, once every service's
 * address is known (each machine is given them all).
 */
export function plan(
  app: App,
  pods: k8s.V1Pod[],
  settings: AppSettings,
  now: Date,
  claims: readonly k8s.V1PersistentVolumeClaim[] = [],
): Plan {
  const expiresAt = app.spec.expiresAt ? new Date(app.spec.expiresAt) : undefined;
  const applied = specRevision(app, settings);
  // An image from a registry tenants may not use fails the spec's rollout at once, before any
  // machine of it is made: the last live revision (if any) keeps serving, as for any failed rollout.
  const refused = settings.images ? refusedImage(tenantImages(app.spec), settings.images) : undefined;
  const refusedRollout = refused
    ? nextRollout(app.status?.rollout, applied, app.spec.deployId, { failed: refused, complete: false }, now)
    : undefined;
  const { app: target, halted } = serving(refusedRollout ? { ...app, status: { ...app.status, rollout: refusedRollout } } : app, applied);
  // What would run instead must pass too (a live snapshot from before the rule).
  const targetRefused =
    refused && target === app ? refused : settings.images ? refusedImage(tenantImages(target.spec), settings.images) : undefined;
  // Container services run their image; static, HTML, Markdown and handler-tree apps the runtime
  // image, which needs the artifact the App names (the CRD requires one): without it, no machine.
  const servable =
    !targetRefused && (target.spec.kind === 'container' || (runtimeKinds.has(target.spec.kind ?? '') && target.spec.source !== undefined));
  const views = servicesOf(target.spec);
  const withServices = (target.spec.services?.length ?? 0) > 0;
  const hopelessOnes: string[] = [];
  let nextDeadline: number | undefined;
  const create: k8s.V1Pod[] = [];
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  // Machines of a service the App no longer has go.
  // And a machine running an image tenants may not use goes at once, not after its replacement is
  // ready: its node's containerd would keep pulling from that registry (the platform's runtime image
  // is the operator's, never judged).
  const refusedPod = (p: k8s.V1Pod) =>
    settings.images !== undefined &&
    [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].some(
      (c) => c.image !== undefined && c.image !== settings.runtimeImage && refusedImage([c.image], settings.images!) !== undefined,
    );
  const del: k8s.V1Pod[] = live.filter((p) => !views.some((v) => podOfService(p, v)) || refusedPod(p));
  const claimNames = new Set(claims.map((c) => c.metadata?.name));
  const missingClaims: k8s.V1PersistentVolumeClaim[] = [];
  const problems: string[] = [];
  const addressless = withServices
    ? views.filter((v) => v.name !== undefined && v.ports.length && !settings.serviceAddresses?.get(v.name)).map((v) => v.name!)
    : [];
  const planned = views.map((view): ServicePlan => {
    const want = app.spec.suspended || !servable ? 0 : view.machines;
    const mine = live.filter((p) => podOfService(p, view));
    const revisionAt = (o: number) => revisionOf(target, settings, o, view);
    const unmet = view.dependsOn
      .filter((d) => {
        const dep = views.find((v) => v.name === d.service);
        return dep !== undefined && !dependencyMet(dep, live, d.condition, (o) => revisionOf(target, settings, o, dep));
      })
      .map((d) => `${d.service} (${d.condition})`);
    const waits = addressless.length
      ? `waits for the address of ${addressless.join(', ')}`
      : unmet.length
        ? `waits for ${unmet.join(', ')}`
        : undefined;
    const out: ServicePlan = { want, ready: 0, current: 0, machines: [], ...(waits ? { waits } : {}) };
    for (const p of mine) {
      const ordinal = Number(p.metadata?.labels?.[labels.machine]);
      if (!Number.isInteger(ordinal) || ordinal >= want) del.push(p);
    }
    const who = (ordinal: number) => (withServices ? `${view.name} machine ${ordinal}` : `machine ${ordinal}`);
    for (let ordinal = 0; ordinal < want; ordinal++) {
      const revision = revisionAt(ordinal);
      const forOrdinal = mine.filter((p) => Number(p.metadata?.labels?.[labels.machine]) === ordinal);
      const fresh = forOrdinal.find((p) => p.metadata?.labels?.[labels.revision] === revision);
      const old = forOrdinal.filter((p) => p !== fresh);
      for (const v of view.volumes) {
        const claim = volumeClaim(target, v, ordinal, settings, view);
        if (!claimNames.has(claim.metadata!.name)) missingClaims.push(claim);
      }
      if (!fresh && !waits) create.push(machinePod(target, ordinal, settings, now, view));
      else if (fresh && done(fresh, view)) del.push(...old);
      if (fresh) {
        const why = hopelessMachine(fresh, view, now, settings.rolloutDeadlineMs);
        if (why) hopelessOnes.push(`${who(ordinal)}: ${why}`);
        else if (!done(fresh, view)) {
          const created = fresh.metadata?.creationTimestamp ? new Date(fresh.metadata.creationTimestamp).getTime() : now.getTime();
          const left = created + settings.rolloutDeadlineMs + (view.healthcheck?.startPeriodSeconds ?? 0) * 1000 - now.getTime();
          nextDeadline = Math.min(nextDeadline ?? left, left);
        }
      }
      // A failed machine of the current revision is replaced, unless its service says not to restart.
      if (fresh && view.restart === 'always' && (fresh.status?.phase === 'Failed' || fresh.status?.phase === 'Succeeded')) {
        del.push(fresh);
      }
      const serving = [fresh, ...old].find((p) => p && done(p, view));
      if (serving) out.ready += 1;
      if (fresh && done(fresh, view)) out.current += 1;
      const problem = fresh && broken(fresh, view);
      if (problem) problems.push(`${who(ordinal)}: ${problem}`);
      const shown = serving ?? fresh;
      if (shown) {
        out.machines.push({
          ordinal,
          pod: shown.metadata!.name!,
          ...(shown.spec?.nodeName ? { node: shown.spec.nodeName } : {}),
          ...(shown.status?.podIP ? { address: shown.status.podIP } : {}),
          state: machineState(shown),
          ...(shown.metadata?.annotations?.[annotations.deploy] ? { deploy: shown.metadata.annotations[annotations.deploy] } : {}),
          ...(shown.status?.startTime ? { startedAt: new Date(shown.status.startTime).toISOString() } : {}),
        });
      }
    }
    return out;
  });
  const sum = (f: (p: ServicePlan) => number) => planned.reduce((n, p) => n + f(p), 0);
  const want = sum((p) => p.want);
  const ready = sum((p) => p.ready);
  const current = sum((p) => p.current);
  const complete = current === want && want > 0;
  // The rollout of the spec as applied moves only while its own machines run: while halted, or
  // while nothing runs (suspended, not deployed), it stays as it was.
  const rollout = refusedRollout
    ? refusedRollout
    : halted || want === 0
      ? app.status?.rollout
      : nextRollout(
          app.status?.rollout,
          applied,
          app.spec.deployId,
          { failed: hopelessOnes.length ? hopelessOnes.join('; ') : undefined, complete },
          now,
        );
  const failed = rollout?.revision === applied && rollout.state === 'Failed';
  const isReady = ready === want && want > 0;
  const lastLive = complete && !halted ? nextLive(app.status?.live, app, applied, now) : app.status?.live;
  const waits = [
    expiresAt && expiresAt.getTime() > now.getTime() ? expiresAt.getTime() - now.getTime() : undefined,
    nextDeadline !== undefined && !failed ? Math.max(nextDeadline, 100) : undefined,
  ].filter((w): w is number => w !== undefined);
  const servingNote =
    failed && lastLive?.deploy
      ? `; deploy ${lastLive.deploy} keeps serving`
      : failed && lastLive
        ? '; the last live revision keeps serving'
        : '';
  const progressing = current < want || live.length > want;
  const outcomes = liveOutcomes(app.status?.deploys, rollout);
  const perService = withServices
    ? ` (${views.map((v, i) => `${v.name} ${planned[i]!.ready}/${planned[i]!.want}${planned[i]!.waits ? ` ${planned[i]!.waits}` : ''}`).join(', ')})`
    : '';
  // The addresses the policies in force list, as this status will leave them: one that leaves the
  // list loses its sign-in links and app sessions (the API carries that out), whatever changed the policy.
  const invited = [
    ...new Set(
      policiesInForce({ spec: app.spec, status: { ...(rollout ? { rollout } : {}), ...(lastLive ? { live: lastLive } : {}) } }).flatMap(
        (p) => [...policyEmails(p)],
      ),
    ),
  ].sort();
  const services: AppStatusFields['services'] = withServices
    ? views.map((v, i) => {
        const p = planned[i]!;
        const address = settings.serviceAddresses?.get(v.name!);
        const deploy = p.machines.find((m) => m.deploy)?.deploy;
        return {
          name: v.name!,
          public: v.public,
          ready: `${p.ready}/${p.want}`,
          readyMachines: p.ready,
          revision: revisionOf(target, settings, 0, v),
          ...(deploy ? { deploy } : {}),
          ...(address ? { address } : {}),
          machines: p.machines,
        };
      })
    : undefined;
  return {
    relabel: live.filter((p) => podOfService(p, views[0]!) && p.metadata?.labels?.[labels.public] !== 'true'),
    claims: missingClaims,
    create,
    delete: [...new Set(del)],
    expired: expiresAt !== undefined && expiresAt.getTime() <= now.getTime(),
    ...(waits.length ? { requeueMs: Math.min(...waits) } : {}),
    status: {
      url: appUrl(settings.site, app.metadata.name!),
      ready: `${ready}/${want}`,
      readyMachines: ready,
      ...(complete && target.spec.deployId
        ? { currentDeploy: target.spec.deployId }
        : app.status?.currentDeploy
          ? { currentDeploy: app.status.currentDeploy }
          : {}),
      ...(lastLive ? { live: lastLive } : {}),
      ...(rollout ? { rollout } : {}),
      ...(outcomes.length ? { deploys: outcomes } : {}),
      machines: planned[0]!.machines,
      ...(services ? { services } : {}),
      // Always written, even empty: its absence means no controller has decided yet.
      policyEmails: invited,
    },
    ready: !app.spec.kind
      ? { ok: false, reason: 'NotDeployed', message: 'the app has no deploy yet' }
      : targetRefused
        ? { ok: false, reason: 'ImageRefused', message: targetRefused }
        : servable
          ? {
              ok: isReady,
              reason: isReady ? 'MachinesReady' : want === 0 ? 'NoMachines' : 'MachinesNotReady',
              message: `${ready} of ${want} machines ready${perService}${servingNote}`,
            }
          : { ok: false, reason: 'NoSource', message: `a ${app.spec.kind} app names no artifact (spec.source) to serve` },
    conditions: [
      failed
        ? { type: 'Progressing', ok: false, reason: 'RolloutFailed', message: `${rollout.reason ?? 'the rollout failed'}${servingNote}` }
        : {
            type: 'Progressing',
            ok: progressing,
            reason: progressing ? 'RollingOut' : 'UpToDate',
            message: progressing ? `${current} of ${want} machines current${perService}` : `all ${want} machines current`,
          },
      {
        type: 'Degraded',
        ok: problems.length > 0,
        reason: problems.length ? 'MachinesFailing' : 'AsExpected',
        message: problems.join('; ') || 'no machine is failing',
      },
    ],
  };
}
