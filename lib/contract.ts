// What two processes of the platform must agree on, written once: the API, the controllers,
// ingress-auth, the runtime on the machines and the node daemons each import it from here, and no
// process imports another process's folder. A name changed here changes for all of them together.
import { kinds, type Kind } from './resources/index.js';

export { apiVersion, group, kinds, version, type App, type Kind } from './resources/index.js';

/** The plural of a kind, as its REST path and RBAC rules spell it. */
export function pluralOf(kind: Kind): (typeof kinds)[Kind]['plural'] {
  return kinds[kind].plural;
}

/**
 * The App spec fields a deploy owns, listed once: a deploy writes every one of them (removing those
 * it does not set, api/deploys/deployer.ts), forks and previews copy them from what an App serves,
 * and the App controller keeps them as the live revision's snapshot (controllers/app/rollout.ts).
 * The rest of an App's spec (machines, resources, volumes, placement) belongs to the App.
 * `DeploySpec` (lib/deploys.ts) has exactly these keys; a unit test fails otherwise.
 */
export const deployOwnedFields = [
  'kind',
  'image',
  'command',
  'args',
  'port',
  'source',
  'env',
  'auth',
  'data',
  'service',
  'ports',
  'healthcheck',
  'dependsOn',
  'aliases',
  'workingDir',
  'services',
] as const;
export type DeployOwnedField = (typeof deployOwnedFields)[number];

/** Labels the platform puts on what it makes, and selects by. */
export const labels = {
  /** On an App's machines, Service, NetworkPolicy and env Secrets: the App's name. */
  app: 'svc.dev/app',
  /** On a machine Pod of an App with services, its volume claims and its services' Services: the service's name. */
  service: 'svc.dev/service',
  /** On the machines of an App's public service (the one its hostname reaches): "true". What the App's Service selects. */
  public: 'svc.dev/public',
  /** On a machine Pod: its ordinal within its service, "0" to "machines - 1". */
  machine: 'svc.dev/machine',
  /** On a machine Pod: the hash of what shapes it (a change means a new machine). */
  revision: 'svc.dev/revision',
  /** On an App's env Secrets: the hash of the variables (api/repositories/env.ts). */
  env: 'svc.dev/env',
  /** On an account's namespace: the account's ID. */
  account: 'svc.dev/account',
  /** On a preview App: its parent App. */
  previewOf: 'svc.dev/preview-of',
  /** On a forked App: the App it was forked from. */
  forkedFrom: 'svc.dev/forked-from',
  /** On a local volume (PersistentVolume): the node it lives on. */
  node: 'svc.dev/node',
  managedBy: 'app.kubernetes.io/managed-by',
  /** On every sandbox pod (pool members and claimed ones): what the controllers' informer selects. */
  sandboxPod: 'svc.dev/sandbox-pod',
  /** On a pool member not claimed yet: the pool it belongs to (the hash of its template). */
  sandboxPool: 'svc.dev/sandbox-pool',
  /** On a claimed sandbox pod: the Sandbox it serves, its namespace and uid. */
  sandbox: 'svc.dev/sandbox',
  sandboxNamespace: 'svc.dev/sandbox-namespace',
  sandboxUid: 'svc.dev/sandbox-uid',
  /** On a sandbox pod: `on` when it may open connections (the sandbox namespace's policies select it). */
  network: 'svc.dev/network',
  /** On a Database's server Pod, Service, volume claim and policy: the Database's name. */
  database: 'svc.dev/database',
  /** On a Database's backup Jobs and their Pods: the Database they dump. */
  backupOf: 'svc.dev/backup-of',
  /** On a branch Database's server objects (a preview's copy): the Database it copies. */
  branchOf: 'svc.dev/branch-of',
  /** On an app's volume claim: the volume's name (with the app and machine labels). */
  volume: 'svc.dev/volume',
  /** On a Build's Job and Pod: the Build's name (never svc.dev/app: an app's Service selects that). */
  build: 'svc.dev/build',
  /** On an app's build cache claim: the app whose builds (and whose previews' builds) use it. */
  buildCache: 'svc.dev/build-cache',
} as const;

export const annotations = {
  /** On a machine Pod: the deploy it serves. */
  deploy: 'svc.dev/deploy',
  /**
   * On a runtime machine Pod: the artifact digest it serves since a content swap (without it, the
   * one its spec was made with), and a swap it refused (`{"digest","deploy","reason"}`).
   */
  content: 'svc.dev/content',
  /** The machine container's restart count when `content` was written: a restart since makes it unknown. */
  contentRestarts: 'svc.dev/content-restarts',
  contentFailed: 'svc.dev/content-failed',
  /** On a claimed sandbox pod: `warm` or `cold`, and why cold. */
  launch: 'svc.dev/launch',
  launchReason: 'svc.dev/launch-reason',
  /**
   * On a volume claim: the bytes its files take on disk, as the volume's provisioner measures them
   * where the kubelet cannot (a directory volume shares its node's filesystem, whose figures are
   * the node's, not the volume's).
   */
  usedBytes: 'svc.dev/used-bytes',
  /** On a Sandbox: when the API last saw it used, and until when an exec may still run (lib/sandbox/activity.ts). */
  activity: 'svc.dev/activity',
  /** On a Domain added because its App's `spec.domains` names it (api/domains/declared.ts): removed when the spec no longer does. */
  declared: 'svc.dev/declared',
} as const;

/** Field managers and `managed-by` values: who wrote an object. */
export const managers = {
  controllers: 'svc-controllers',
  api: 'svc-api',
  /** Objects made by the platform's set-up (account namespaces, their roles). */
  platform: 'svc',
} as const;

/**
 * Written into a runtime machine's site root by runtime/fetch.ts once an artifact is fully
 * extracted, holding its digest: what a restarted machine finds in place (runtime/revisions.ts).
 */
export const artifactMarker = '.svc-artifact';

/** Container names in a machine Pod (logs and metrics name them). */
export const containers = {
  /** The app itself: the tenant's image, or the runtime serving the artifact. */
  machine: 'app',
  /** The one container of a sandbox pod: the agent, and what it runs. */
  sandbox: 'sandbox',
} as const;

/** The identity headers ingress-auth adds to a proxied request, as sent (lowercase on arrival). */
export const identityHeaders = {
  subject: 'X-Svc-Auth-Subject',
  email: 'X-Svc-Auth-Email',
  provider: 'X-Svc-Auth-Provider',
  assertion: 'X-Svc-Auth-Assertion',
  name: 'X-Svc-Auth-Name',
  verified: 'X-Svc-Auth-Verified',
  owner: 'X-Svc-Auth-Owner',
} as const;
/** Every identity header starts with this (lowercased): ingress-auth strips them from visitors. */
export const identityHeaderPrefix = 'x-svc-auth-';

/** The platform's paths on every app hostname. */
export const platformPaths = {
  root: '/_svc',
  auth: '/_svc/auth',
  login: '/_svc/auth/login',
  logout: '/_svc/auth/logout',
  jwks: '/_svc/auth/jwks.json',
  health: '/_svc/health',
} as const;

/** A DNS label: an App's name is one, because it becomes its hostname's first label. */
export const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** `<app>--<ref>` names a preview of `<app>`: an app's own name never holds "--". */
export const previewSeparator = '--';

/** Where the apps are served: `<app>.<appsDomain><appsUrlSuffix>`, over https when `secure`. */
export interface AppsSite {
  readonly appsDomain: string;
  /** Empty, or `:<port>` (the proxy's port locally). */
  readonly appsUrlSuffix: string;
  /** App hostnames are served over https (then cookies are Secure too). */
  readonly secure: boolean;
}

export function appHost(site: Pick<AppsSite, 'appsDomain'>, app: string): string {
  return `${app}.${site.appsDomain}`;
}

/** An app's URL: what status.url says, links in mail point at, and sign-in returns to. */
export function appUrl(site: AppsSite, app: string): string {
  return `${site.secure ? 'https' : 'http'}://${appHost(site, app)}${site.appsUrlSuffix}`;
}

/**
 * The sign-in page of an app: absolute under `origin` (an app URL) or relative when none. `next`
 * is where to go after (a path); `fragment` carries a one-time token the page redeems (`token=`,
 * `handoff=`), which a fragment keeps out of logs and Referer headers.
 */
export function loginUrl(next: string, opts: { origin?: string; fragment?: string } = {}): string {
  const origin = opts.origin ? opts.origin.replace(/\/+$/, '') : '';
  return `${origin}${platformPaths.login}?next=${encodeURIComponent(next)}${opts.fragment ? `#${opts.fragment}` : ''}`;
}
