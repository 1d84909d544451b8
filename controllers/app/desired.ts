// The App reconciler's pure half: from an App and the machines (Pods) observed for it, what should
// exist (its Service and one Pod per machine ordinal at the current revision), what should go, and
// the status to report, with how the rollout stands (rollout.ts decides it). No I/O here;
// controllers/app/reconciler.ts applies the result and the frame writes the status. Here: `plan`,
// its settings and its result; what it decides is in the files next to it (machine-spec.ts,
// machine-pod.ts, revision.ts, machines.ts, status.ts, services.ts, network-policy.ts, ...).
import type * as k8s from '@kubernetes/client-node';
import { servicesOf, type ServiceView } from '../../lib/app-services.js';
import { labels, type AppsSite } from '../../lib/contract.js';
import type { ControlKeys } from '../../lib/machine-control.js';
import type { App } from '../../lib/resources/index.js';
import type { ConditionInput } from '../frame/status.js';
import { nextLive, nextRollout, serving, type AppStatusFields, type DeployOutcome, type Live, type Rollout } from './rollout.js';
import { refusedImage, tenantImages, type RegistryPolicyConfig } from '../../lib/images/registry-policy.js';
import { runtimeKinds } from './machine-spec.js';
import { podOfService } from './machine-state.js';
import { planServices, strayMachines, type ServicePlan, type Swap } from './machines.js';
import { specRevision } from './revision.js';
import { statusOf } from './status.js';

export { machinePod } from './machine-pod.js';
export { machinePolicy } from './network-policy.js';
export { revisionOf, specRevision } from './revision.js';
export { appService, serviceObjectName, serviceServices } from './services.js';

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
   * Signs the swap orders that have a machine serve another artifact in place (lib/machine-control.ts);
   * its public half is in the machines. Undefined: content deploys replace machines.
   */
  control?: ControlKeys | undefined;
  /**
   * Where the platform is, as machines see it (each App's NetworkPolicy): the addresses ingress-auth
   * and kubelet probes come from and the machine listener is on, and that listener's ports.
   * Undefined: no policy is written (a cluster without a policy agent, some unit tests). clusterDns:
   * whether machines may ask the cluster DNS (config SVC_MACHINE_CLUSTER_DNS).
   */
  platform?:
    | {
        cidrs: readonly string[];
        namespace?: string | undefined;
        ports: ReadonlyArray<{ port: number; endPort?: number }>;
        clusterDns?: boolean | undefined;
      }
    | undefined;
  /**
   * The Database the App names (spec.database) and its server's address as its Service shows it
   * (observed, so set per App by the reconciler); undefined host: not known yet.
   */
  database?: { name: string; host: string | undefined } | undefined;
  /** The StorageClass of the App's volume claims; undefined: the cluster's default. */
  volumeStorageClass?: string | undefined;
  /** Machines in a user namespace of their own (hostUsers: false; config.userNamespaces). */
  userNamespaces?: boolean | undefined;
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

export interface Plan {
  /** Machines of the public service made before it was labelled as such: labelled before the Service selects by it. */
  relabel: k8s.V1Pod[];
  /** Volume claims missing for machines that are wanted: made before the machines that mount them. */
  claims: k8s.V1PersistentVolumeClaim[];
  create: k8s.V1Pod[];
  delete: k8s.V1Pod[];
  /** Running machines to serve the App's artifact in place (content-swap.ts). */
  swaps: Swap[];
  /** The App's own status fields (the frame adds observedGeneration and conditions). */
  status: AppStatusFields;
  ready: Omit<ConditionInput, 'type'>;
  conditions: ConditionInput[];
  /** Re-check after this many ms even without a change (expiry, waits). */
  requeueMs?: number;
  /** The App's expiry passed: delete it. */
  expired: boolean;
}

/**
 * Which revision the App's machines run: the App's as applied, or while that spec's rollout has
 * failed (or it names an image tenants may not use), the last live one (rollout.ts).
 */
export interface Choice {
  /** The revision of the App as applied. */
  applied: string;
  /** The applied spec's rollout, failed before any machine of it is made: it names a refused image. */
  refusedRollout: Rollout | undefined;
  /** The App whose machines should run, and its services. */
  target: App;
  views: ServiceView[];
  withServices: boolean;
  /** The rollout of the App as applied has failed: the last live revision runs instead. */
  halted: boolean;
  /** Why the target's images may not run, if they may not: then no machine. */
  targetRefused: string | undefined;
  /** Whether the target can have machines at all. */
  servable: boolean;
}

function chooseRevision(app: App, settings: AppSettings, now: Date): Choice {
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
  return { applied, refusedRollout, target, views, withServices, halted, targetRefused, servable };
}

/** How the App's machines and the rollout of the spec as applied stand, once each service is planned. */
export interface Progress {
  want: number;
  ready: number;
  current: number;
  /** Every wanted machine is of the target revision and done. */
  complete: boolean;
  rollout: Rollout | undefined;
  /** The rollout of the spec as applied has failed. */
  failed: boolean;
  lastLive: Live | undefined;
  /** Machines are still to become current, or to go. */
  progressing: boolean;
  /**
   * A deploy every machine served before status said so, the App since moved on to another (a
   * deploy superseded moments after it was served): it went live. Only its outcome is recorded:
   * the current deploy and the live snapshot move with the next rollout that goes Live (the
   * snapshot of this one is not known any more).
   */
  superseded: DeployOutcome | undefined;
}

function progressOf(app: App, choice: Choice, planned: readonly ServicePlan[], live: readonly k8s.V1Pod[], now: Date): Progress {
  const { applied, refusedRollout, halted } = choice;
  const sum = (f: (p: ServicePlan) => number) => planned.reduce((n, p) => n + f(p), 0);
  const want = sum((p) => p.want);
  const ready = sum((p) => p.ready);
  const current = sum((p) => p.current);
  const complete = current === want && want > 0;
  const hopelessOnes = planned.flatMap((p) => p.hopeless);
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
  const lastLive = complete && !halted ? nextLive(app.status?.live, app, applied, now) : app.status?.live;
  const progressing = current < want || live.length > want;
  return { want, ready, current, complete, rollout, failed, lastLive, progressing, superseded: supersededLive(app, choice, planned, now) };
}

/**
 * The outcome of a deploy every public machine serves that status has no word on, when the App
 * as applied is another: it was served by all of them before a reconcile could say Live (a content
 * swap answers, and the next deploy lands, within the same few ms: the status write that said Live,
 * or even Progressing, conflicted). Without it that deploy would never end in status, its row would
 * be marked replaced, and a rollback would step back past what was served. Not the deploy status
 * calls current or live (a failed rollout's machines going back to it), nor one it has an outcome
 * for. Apps with services are left out: their public machines serving is not the whole deploy.
 */
function supersededLive(app: App, choice: Choice, planned: readonly ServicePlan[], now: Date): DeployOutcome | undefined {
  const publicPlan = planned[0];
  if (choice.halted || choice.withServices || !publicPlan || publicPlan.want === 0) return undefined;
  const [served] = publicPlan.served;
  if (!served || publicPlan.served.length !== publicPlan.want || publicPlan.served.some((d) => d !== served)) return undefined;
  const status = app.status;
  if (served === app.spec.deployId || served === status?.currentDeploy || served === status?.live?.deploy) return undefined;
  if (status?.deploys?.some((o) => o.id === served)) return undefined;
  return { id: served, state: 'live', at: now.toISOString() };
}

/** When to look again without a change: at the App's expiry, or a starting machine's deadline while the rollout has not failed. */
function requeueOf(expiresAt: Date | undefined, planned: readonly ServicePlan[], failed: boolean, now: Date): number | undefined {
  const deadlines = planned.flatMap((p) => (p.nextDeadline !== undefined ? [p.nextDeadline] : []));
  const nextDeadline = deadlines.length ? Math.min(...deadlines) : undefined;
  const waits = [
    expiresAt && expiresAt.getTime() > now.getTime() ? expiresAt.getTime() - now.getTime() : undefined,
    nextDeadline !== undefined && !failed ? Math.max(nextDeadline, 100) : undefined,
  ].filter((w): w is number => w !== undefined);
  return waits.length ? Math.min(...waits) : undefined;
}

/**
 * For each service and ordinal, a machine of the current revision is started next to an older one,
 * which goes only once the new one is Ready (or, in a service that does not restart, done), and,
 * for the public service, listed ready in its Service's EndpointSlices (`routable`: what ingress-auth
 * routes by; undefined: not checked): a one-machine app keeps serving through a deploy. The revision is the App's as applied, or while
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
  routable?: ReadonlySet<string>,
): Plan {
  const expiresAt = app.spec.expiresAt ? new Date(app.spec.expiresAt) : undefined;
  const choice = chooseRevision(app, settings, now);
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const planned = planServices(app, choice, live, settings, now, claims, routable);
  const progress = progressOf(app, choice, planned, live, now);
  const requeueMs = requeueOf(expiresAt, planned, progress.failed, now);
  return {
    relabel: live.filter((p) => podOfService(p, choice.views[0]!) && p.metadata?.labels?.[labels.public] !== 'true'),
    claims: planned.flatMap((p) => p.claims),
    create: planned.flatMap((p) => p.create),
    swaps: planned.flatMap((p) => p.swaps),
    delete: [...new Set([...strayMachines(live, choice.views, settings), ...planned.flatMap((p) => p.delete)])],
    expired: expiresAt !== undefined && expiresAt.getTime() <= now.getTime(),
    ...(requeueMs !== undefined ? { requeueMs } : {}),
    ...statusOf(app, settings, choice, planned, progress),
  };
}
