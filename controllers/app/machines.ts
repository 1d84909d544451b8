// Which machines each service of the App should have: which to make, which go, and how they stand.
import type * as k8s from '@kubernetes/client-node';
import type { ServiceView } from '../../lib/app-services.js';
import { annotations, containers, labels } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';
import { refusedImage } from '../../lib/images/registry-policy.js';
import type { AppSettings, Choice } from './desired.js';
import { machinePod } from './machine-pod.js';
import { artifactUrl, swappable } from './machine-spec.js';
import { broken, dependencyMet, done, hopelessMachine, machineState, podOfService } from './machine-state.js';
import { revisionOf } from './revision.js';
import type { AppStatusFields } from './rollout.js';
import { volumeClaim } from './volume-claims.js';

/** One service's part of the plan. */
export interface ServicePlan {
  want: number;
  ready: number;
  current: number;
  machines: NonNullable<AppStatusFields['machines']>;
  /** Why its machines are not made yet (dependencies, addresses). */
  waits?: string;
  /** Its machines to make, and the volume claims its wanted machines miss. */
  create: k8s.V1Pod[];
  claims: k8s.V1PersistentVolumeClaim[];
  /** Its machines that go (one may be named twice). */
  delete: k8s.V1Pod[];
  /** Its machines to serve another artifact in place, or to be marked with the deploy they serve. */
  swaps: Swap[];
  /**
   * For each ordinal, the deploy its machine serves (ready, routed to, and with its content known),
   * or undefined: what says a deploy was served by every machine, whatever the App says since.
   */
  served: Array<string | undefined>;
  /** Why machines of the current revision will not become ready (or finish). */
  hopeless: string[];
  /** Its machines of the current revision that are failing, and why. */
  problems: string[];
  /** Ms until the first of its machines still starting is past its deadline. */
  nextDeadline?: number;
}

/**
 * A running machine told to serve the App's artifact in place (controllers/app/content-swap.ts),
 * or, when it serves it already, only marked with the deploy that brought it.
 */
export interface Swap {
  pod: k8s.V1Pod;
  digest: string;
  url: string;
  deploy: string | undefined;
  markOnly: boolean;
}

/** How many times the machine container of `pod` restarted. */
export function machineRestarts(pod: k8s.V1Pod): number {
  return pod.status?.containerStatuses?.find((c) => c.name === containers.machine)?.restartCount ?? 0;
}

/**
 * The artifact a runtime machine serves: the one swapped to last, else the one its spec names.
 * Unknown (undefined) when its container restarted since the swap: it comes back on what it
 * served, unless that could not be restored; the swap is then ordered again (a no-op if it is).
 */
export function contentOf(pod: k8s.V1Pod): string | undefined {
  const a = pod.metadata?.annotations;
  if (a?.[annotations.content] !== undefined)
    return a[annotations.contentRestarts] === String(machineRestarts(pod)) ? a[annotations.content] : undefined;
  return pod.spec?.containers.find((c) => c.name === containers.machine)?.env?.find((e) => e.name === 'SVC_ARTIFACT_DIGEST')?.value;
}

/** Why the machine refused to serve `digest` for `deploy`, if it did (the annotation content-swap.ts writes). */
export function swapRefusal(pod: k8s.V1Pod, digest: string, deploy: string | undefined): string | undefined {
  const raw = pod.metadata?.annotations?.[annotations.contentFailed];
  if (!raw) return undefined;
  try {
    const failed = JSON.parse(raw) as { digest?: unknown; deploy?: unknown; reason?: unknown };
    return failed.digest === digest && (failed.deploy ?? undefined) === deploy && typeof failed.reason === 'string'
      ? failed.reason
      : undefined;
  } catch {
    return undefined;
  }
}

/** What every service's part of the plan is made from. */
interface Machines {
  app: App;
  choice: Choice;
  live: readonly k8s.V1Pod[];
  settings: AppSettings;
  now: Date;
  claimNames: ReadonlySet<string | undefined>;
  addressless: readonly string[];
  /** The addresses the App's Service routes to (its EndpointSlices); undefined: not checked. */
  routable: ReadonlySet<string> | undefined;
}

/** The machines that go whatever their service plans: those of a service the App no longer has, and those running a refused image. */
export function strayMachines(live: readonly k8s.V1Pod[], views: readonly ServiceView[], settings: AppSettings): k8s.V1Pod[] {
  // Machines of a service the App no longer has go.
  // And a machine running an image tenants may not use goes at once, not after its replacement is
  // ready: its node's containerd would keep pulling from that registry (the platform's runtime image
  // is the operator's, never judged).
  const refusedPod = (p: k8s.V1Pod) =>
    settings.images !== undefined &&
    [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].some(
      (c) => c.image !== undefined && c.image !== settings.runtimeImage && refusedImage([c.image], settings.images!) !== undefined,
    );
  return live.filter((p) => !views.some((v) => podOfService(p, v)) || refusedPod(p));
}

/**
 * Each service's part of the plan, in the order of the chosen App's services. A service's machines
 * are made once the services it depends on are as it asks, and, in an App with services, once every
 * service's address is known (each machine is given them all).
 */
export function planServices(
  app: App,
  choice: Choice,
  live: readonly k8s.V1Pod[],
  settings: AppSettings,
  now: Date,
  claims: readonly k8s.V1PersistentVolumeClaim[],
  routable?: ReadonlySet<string>,
): ServicePlan[] {
  const { views, withServices } = choice;
  const claimNames = new Set(claims.map((c) => c.metadata?.name));
  const addressless = withServices
    ? views.filter((v) => v.name !== undefined && v.ports.length && !settings.serviceAddresses?.get(v.name)).map((v) => v.name!)
    : [];
  return views.map((view) => planService(view, { app, choice, live, settings, now, claimNames, addressless, routable }));
}

/** Service `view`'s part of the plan: how many machines it wants, what it waits for, and each ordinal's machine. */
function planService(view: ServiceView, m: Machines): ServicePlan {
  const { app, live, settings } = m;
  const { target, servable, views } = m.choice;
  const want = app.spec.suspended || !servable ? 0 : view.machines;
  const mine = live.filter((p) => podOfService(p, view));
  const unmet = view.dependsOn
    .filter((d) => {
      const dep = views.find((v) => v.name === d.service);
      return dep !== undefined && !dependencyMet(dep, live, d.condition, (o) => revisionOf(target, settings, o, dep));
    })
    .map((d) => `${d.service} (${d.condition})`);
  const waits = m.addressless.length
    ? `waits for the address of ${m.addressless.join(', ')}`
    : unmet.length
      ? `waits for ${unmet.join(', ')}`
      : undefined;
  const out: ServicePlan = {
    want,
    ready: 0,
    current: 0,
    machines: [],
    ...(waits ? { waits } : {}),
    create: [],
    claims: [],
    delete: [],
    swaps: [],
    served: [],
    hopeless: [],
    problems: [],
  };
  for (const p of mine) {
    const ordinal = Number(p.metadata?.labels?.[labels.machine]);
    if (!Number.isInteger(ordinal) || ordinal >= want) out.delete.push(p);
  }
  for (let ordinal = 0; ordinal < want; ordinal++) planMachine(view, ordinal, mine, out, m);
  return out;
}

/**
 * Machine `ordinal` of `view`: a machine of the current revision is started next to an older one,
 * which goes only once the new one is Ready (or, in a service that does not restart, done).
 */
function planMachine(view: ServiceView, ordinal: number, mine: readonly k8s.V1Pod[], out: ServicePlan, m: Machines): void {
  const { settings, now } = m;
  const { target, withServices } = m.choice;
  const { create, claims: missingClaims, delete: del, hopeless: hopelessOnes, problems } = out;
  const who = withServices ? `${view.name} machine ${ordinal}` : `machine ${ordinal}`;
  const revision = revisionOf(target, settings, ordinal, view);
  const forOrdinal = mine.filter((p) => Number(p.metadata?.labels?.[labels.machine]) === ordinal);
  const fresh = forOrdinal.find((p) => p.metadata?.labels?.[labels.revision] === revision);
  const old = forOrdinal.filter((p) => p !== fresh);
  for (const v of view.volumes) {
    const claim = volumeClaim(target, v, ordinal, settings, view);
    if (!m.claimNames.has(claim.metadata!.name)) missingClaims.push(claim);
  }
  // Ready, and routed to: only then does the machine it replaces go, or its content count.
  const ready = fresh !== undefined && done(fresh, view);
  const reachable = ready && routed(fresh, view, m);
  if (!fresh && !out.waits) create.push(machinePod(target, ordinal, settings, now, view));
  else if (reachable) del.push(...old);
  if (fresh) {
    const why = hopelessMachine(fresh, view, now, settings.rolloutDeadlineMs);
    if (why) hopelessOnes.push(`${who}: ${why}`);
    else if (!done(fresh, view)) {
      const created = fresh.metadata?.creationTimestamp ? new Date(fresh.metadata.creationTimestamp).getTime() : now.getTime();
      const left = created + settings.rolloutDeadlineMs + (view.healthcheck?.startPeriodSeconds ?? 0) * 1000 - now.getTime();
      out.nextDeadline = Math.min(out.nextDeadline ?? left, left);
    }
  }
  // A running machine that swaps content serves the App's artifact before it counts as current.
  if (ready && !reachable) awaitedByDeadline(out, m, `${who}: ready but not routed to (its Service's EndpointSlices)`);
  const contentCurrent = reachable ? planSwap(view, fresh, who, out, m) : false;
  // A failed machine of the current revision is replaced, unless its service says not to restart.
  if (fresh && view.restart === 'always' && (fresh.status?.phase === 'Failed' || fresh.status?.phase === 'Succeeded')) {
    del.push(fresh);
  }
  const serving = [fresh, ...old].find((p) => p && done(p, view));
  if (serving) out.ready += 1;
  out.served.push(serving && routed(serving, view, m) ? servedDeploy(serving, view, m) : undefined);
  if (contentCurrent) out.current += 1;
  const problem = fresh && broken(fresh, view);
  if (problem) problems.push(`${who}: ${problem}`);
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

/** The deploy `pod` serves, when what it serves is known (a swapping machine restarted since its last swap is not). */
function servedDeploy(pod: k8s.V1Pod, view: ServiceView, m: Machines): string | undefined {
  if (swappable(m.choice.target, view, m.settings) && contentOf(pod) === undefined) return undefined;
  return pod.metadata?.annotations?.[annotations.deploy];
}

/**
 * Whether ingress-auth can route to `pod`: the public service's machine is listed ready in the
 * App's EndpointSlices (when they are watched). A machine Ready a moment before it is listed would
 * otherwise make the rollout Live, and its predecessor go, before a request can reach it.
 */
function routed(pod: k8s.V1Pod, view: ServiceView, m: Machines): boolean {
  if (!view.public || view.port === undefined || m.routable === undefined) return true;
  const ip = pod.status?.podIP;
  return ip !== undefined && m.routable.has(ip);
}

/**
 * Ms left of the rollout's deadline for a ready machine still to be routed to or to take the new
 * content (a machine that never becomes ready has its own: hopelessMachine); undefined when the
 * rollout of the App as applied is not in progress (halted, or not started in status yet).
 */
function rolloutLeft(m: Machines): number | undefined {
  const r = m.app.status?.rollout;
  if (m.choice.halted || r?.revision !== m.choice.applied || r.state !== 'Progressing') return undefined;
  return new Date(r.startedAt).getTime() + m.settings.rolloutDeadlineMs - m.now.getTime();
}

/** Counts `why` against the rollout: hopeless past its deadline, else looked at again by then. */
function awaitedByDeadline(out: ServicePlan, m: Machines, why: string): void {
  const left = rolloutLeft(m);
  if (left === undefined) return;
  if (left <= 0) out.hopeless.push(`${why} within ${Math.round(m.settings.rolloutDeadlineMs / 1000)} s`);
  else out.nextDeadline = Math.min(out.nextDeadline ?? left, left);
}

/**
 * Whether `fresh` (running and ready) serves what the target says, and if it does not, the swap
 * that makes it, or why it cannot: the machine refused this very artifact for this very deploy.
 */
function planSwap(view: ServiceView, fresh: k8s.V1Pod, who: string, out: ServicePlan, m: Machines): boolean {
  const { target } = m.choice;
  const source = target.spec.source;
  if (!swappable(target, view, m.settings) || !source) return true;
  const deploy = target.spec.deployId;
  const url = artifactUrl(source, m.settings);
  if (contentOf(fresh) === source.digest) {
    if (deploy && fresh.metadata?.annotations?.[annotations.deploy] !== deploy)
      out.swaps.push({ pod: fresh, digest: source.digest, url, deploy, markOnly: true });
    return true;
  }
  const refused = swapRefusal(fresh, source.digest, deploy);
  if (refused) out.hopeless.push(`${who}: ${refused}`);
  else {
    out.swaps.push({ pod: fresh, digest: source.digest, url, deploy, markOnly: false });
    awaitedByDeadline(out, m, `${who}: did not serve ${source.digest}`);
  }
  return false;
}
