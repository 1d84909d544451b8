// A machine's Pod spec as the App describes it: containers, security context, volumes, env, probes, restart, and its node.
import type * as k8s from '@kubernetes/client-node';
import { servicesOf, type Restart, type ServiceView } from '../../lib/app-services.js';
import { appHost, containers } from '../../lib/contract.js';
import { credentialKeys, databaseObjects, databasePort } from '../../lib/databases.js';
import type { App } from '../../lib/resources/index.js';
import { podVolumeName, volumeClaimName } from '../../lib/volumes.js';
import { isTenantImage } from '../../lib/registry/names.js';
import { controlPortFor } from '../../lib/machine-control.js';
import type { AppSettings } from './desired.js';

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
export const runtimeKinds = new Set(['static', 'html', 'markdown', 'handlers']);

/** Whether the machines of `view` are the platform's runtime fetching the App's artifact (else the app's own image). */
export function servedByRuntime(app: App, view: ServiceView): boolean {
  return view.public && runtimeKinds.has(app.spec.kind ?? '') && app.spec.source !== undefined;
}
/**
 * Whether a content deploy has the machines of `view` swap what they serve in place rather than
 * be replaced (docs/decisions/0036-deploys-under-a-second.md): every kind the runtime serves. A
 * handler tree's revision runs in a process of its own that the swap starts and the revision
 * after it ends (runtime/handler-process.ts), so no module graph outlives its revision.
 */
export function swappable(app: App, view: ServiceView, settings: Pick<AppSettings, 'control'>): boolean {
  return settings.control !== undefined && servedByRuntime(app, view);
}

const siteRoot = '/srv/site';

/** Where a machine fetches the App's artifact: the URL the App names, else the platform's store. */
export function artifactUrl(source: NonNullable<App['spec']['source']>, settings: Pick<AppSettings, 'artifactBaseUrl'>): string {
  return source.url ?? `${settings.artifactBaseUrl}/${source.digest}`;
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
 * App with services: a compose name (`db`) is no DNS name in a namespace an account's Apps share
 * (the Services' own names, `<app>-<service>`, resolve through the cluster DNS;
 * docs/decisions/0037-cluster-dns.md), and a Service's ClusterIP lasts as long as the Service.
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
export function machineSpec(
  app: App,
  settings: AppSettings,
  ordinal = 0,
  view: ServiceView = servicesOf(app.spec)[0]!,
): Pick<k8s.V1PodSpec, 'containers' | 'initContainers' | 'volumes' | 'securityContext' | 'hostUsers' | 'hostAliases' | 'restartPolicy'> {
  const persistent = persistentVolumes(app, view, ordinal);
  const limits = Object.fromEntries(Object.entries(app.spec.resources ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>;
  const readiness = readinessOf(view);
  const hostAliases = hostAliasesOf(app, settings);
  const podLevel = {
    securityContext: machinePodSecurity,
    // Its uid 1000 (and any uid it could reach) is an unprivileged high ID on the node: a process
    // that escaped its container owns nothing of the host's nor of another pod's.
    ...(settings.userNamespaces ? { hostUsers: false } : {}),
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
  if (!servedByRuntime(app, view) || !source) return { ...podLevel, containers: [main], volumes: [tmpVolume, ...persistent.volumes] };
  // One container (issue 36: a machine was two runc starts and two Node.js starts): the runtime
  // fetches the artifact into an emptyDir and verifies it against the digest the App names before
  // it listens, so a machine never serves other bytes than those; then it is ready the moment it
  // listens (runtimeProbes), not a probe period later.
  const { readinessProbe: _tcp, ...served } = main;
  return {
    ...podLevel,
    containers: [
      {
        ...served,
        image: settings.runtimeImage,
        command: undefined,
        args: ['serve'],
        workingDir: undefined,
        env: [
          ...envOf(app, view, settings),
          { name: 'SVC_APP_KIND', value: app.spec.kind! },
          { name: 'SVC_SITE_ROOT', value: siteRoot },
          { name: 'SVC_ARTIFACT_URL', value: artifactUrl(source, settings) },
          { name: 'SVC_ARTIFACT_DIGEST', value: source.digest },
          { name: 'SVC_CONTROL_PORT', value: String(controlPortFor(view.port!)) },
          ...(swappable(app, view, settings) ? controlEnv(settings.control!.publicKey) : []),
          // Where the platform routes and probes, whatever the app's own variables say (the last wins).
          { name: 'HOST', value: '0.0.0.0' },
          { name: 'PORT', value: String(view.port!) },
        ],
        ports: [...(served.ports ?? []), { name: 'control', containerPort: controlPortFor(view.port!) }],
        ...runtimeProbes(view.port!),
        // A fetch that failed says why in the container's last state, where the controller reads it.
        terminationMessagePolicy: 'FallbackToLogsOnError',
        volumeMounts: [{ name: 'site', mountPath: siteRoot }, tmpMount, ...persistent.mounts],
      },
    ],
    volumes: [{ name: 'site', emptyDir: {} }, tmpVolume, ...persistent.volumes],
  };
}

/** What has the runtime take swap orders on its machine port (runtime/control.ts): the key orders are signed with, and the Pod it is. */
function controlEnv(publicKey: string): k8s.V1EnvVar[] {
  return [
    { name: 'SVC_CONTROL_KEY', value: publicKey },
    { name: 'SVC_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'SVC_POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
  ];
}

/**
 * The runtime's probes. Ready as soon as it serves its site: the readiness probe asks the machine's
 * own port (runtime/machine-port.ts), the first thing the runtime opens, which holds the probe until
 * the site is fetched, verified, loaded and listened for, and then answers. The kubelet runs a
 * readiness probe as soon as it sees the container running, so the Pod is ready as the site comes
 * up, rather than a probe period later (1 s, the least Kubernetes allows) for a TCP probe whose
 * first try failed (docs/decisions/0036-deploys-under-a-second.md). An older runtime image, without
 * that port, is never ready. The hold is shorter than the probe's timeout; a site not up by then is
 * asked again a period later. A liveness probe on the same port restarts a runtime whose event loop
 * stopped turning.
 */
export function runtimeProbes(port: number): Pick<k8s.V1Container, 'readinessProbe' | 'livenessProbe'> {
  return {
    readinessProbe: {
      httpGet: { port: controlPortFor(port) as unknown as k8s.IntOrString, path: '/ready' },
      timeoutSeconds: 10,
      periodSeconds: 1,
      // Not ready at first whatever this says; once ready, a probe lost on a busy node does not take
      // the machine out of its Service.
      failureThreshold: 3,
    },
    // The runtime's event loop turning, on the same port (answered from the first moment): a start
    // is not cut short however long its fetch takes.
    livenessProbe: {
      httpGet: { port: controlPortFor(port) as unknown as k8s.IntOrString, path: '/live' },
      timeoutSeconds: 5,
      periodSeconds: 10,
      failureThreshold: 3,
    },
  };
}

/** The node machine `ordinal` is pinned to (spec.placement, machine migration), if any. */
export function placementOf(app: App, ordinal: number, view?: ServiceView): string | undefined {
  // Placement (machine migration) pins the public service's machines.
  if (view && !view.public) return undefined;
  return (app.spec.placement ?? []).find((p) => p.ordinal === ordinal)?.node;
}
