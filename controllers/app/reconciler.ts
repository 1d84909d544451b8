// The App reconciler on the frame (controllers/frame/controller.ts): observes an App's machines in
// the informers' caches, plans with desired.ts, and applies the plan (the NetworkPolicy and Service
// by server-side apply, machine Pods created and deleted); it deletes an expired App. It returns the
// status to report and the frame writes it. Safe to run twice or after a crash: every step is
// idempotent, and nothing is decided from memory that the caches do not also show.
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, labels, pluralOf, version } from '../../lib/contract.js';
import { ignoreStatus, kubeStatus } from '../../lib/kube/client.js';
import type { EventRecorder } from '../../lib/kube/events.js';
import { isAtLeast } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import { databaseObjects } from '../../lib/databases.js';
import type { App } from '../../lib/resources/index.js';
import { Applier } from '../frame/apply.js';
import type { Outcome, Reconciler } from '../frame/controller.js';
import { KindEvents } from '../frame/events.js';
import { ContentSwapper } from './content-swap.js';
import { servicesOf } from '../../lib/app-services.js';
import { appService, machinePolicy, plan, serviceObjectName, serviceServices, type AppSettings, type Plan } from './desired.js';
import type { AppStatusFields } from './rollout.js';

/** How soon a swap order that did not get an answer is sent again. */
const swapRetryMs = 1000;

/** The namespace is being deleted, or is gone: its Apps go too, so there is nothing left to make. */
function namespaceGone(err: unknown): boolean {
  // The client hands over the apiserver's reply as text.
  const reply = (err as { body?: unknown }).body;
  const body = typeof reply === 'string' ? reply : '';
  return (
    (kubeStatus(err) === 403 && /because it is being terminated/.test(body)) ||
    (kubeStatus(err) === 404 && /"kind":"namespaces"/.test(body))
  );
}

/** What the informers show of an App's children. */
export interface Observed {
  podsOf(namespace: string, app: string): k8s.V1Pod[];
  serviceOf(namespace: string, app: string): k8s.V1Service | undefined;
  /** The Services of an App's services (labelled with the App and a service). */
  servicesOf(namespace: string, app: string): k8s.V1Service[];
  /** The App's volume claims (attached or not). */
  claimsOf(namespace: string, app: string): k8s.V1PersistentVolumeClaim[];
  /** The addresses the App's Service routes to now (its EndpointSlices' ready endpoints); undefined: not watched. */
  routableOf?(namespace: string, app: string): ReadonlySet<string>;
}

export class AppReconciler implements Reconciler<App, AppStatusFields> {
  /**
   * What applies the NetworkPolicy and Services, and remembers per App uid the shape last applied
   * and the Service's resourceVersion the apply returned: re-applying an unchanged one is a wasted
   * apiserver write, but one deleted (the frame forgets the uid) or edited by hand is applied again.
   */
  readonly applier: Applier;
  private readonly events: KindEvents<App>;
  private readonly swapper: ContentSwapper;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly custom: k8s.CustomObjectsApi,
    networking: k8s.NetworkingV1Api,
    private readonly observed: Observed,
    private readonly settings: AppSettings,
    private readonly log: Logger,
    events?: EventRecorder,
  ) {
    this.applier = new Applier({ core, networking, custom });
    this.events = new KindEvents(events, 'App', apiVersion);
    this.swapper = new ContentSwapper(core, settings, log, this.events);
  }

  async reconcile(app: App, now: Date): Promise<Outcome<AppStatusFields>> {
    if (app.metadata.deletionTimestamp) return { deleted: true };
    const settings = this.settingsFor(app);
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    const claims = this.observed.claimsOf(namespace, name);
    const pods = this.observed.podsOf(namespace, name);
    const routable = this.observed.routableOf?.(namespace, name);
    let p = plan(app, pods, settings, now, claims, routable);
    if (p.expired) {
      await this.expire(app);
      return { deleted: true };
    }
    try {
      // Machines of the public service labelled as such before the Service selects by the label.
      await this.relabel(app, p);
      // The policy first (a machine is never reachable by more than it allows), then the Service
      // and the machines at once: one apiserver round trip fewer for a new App.
      const service = await this.applyPolicy(app, settings);
      const [, , { marked, retry }] = await Promise.all([service?.(), this.applyMachines(app, p), this.swapper.apply(app, p.swaps, now)]);
      // Machines that swapped serve the new content now: the status says so in this reconcile, not
      // the next (a rollback right after reads what went live from it). Only the status is taken
      // from the plan again: its actions were just applied.
      if (marked.length) {
        const seen = new Map(marked.map((m) => [m.metadata!.name, m]));
        const again = plan(
          app,
          pods.map((pod) => seen.get(pod.metadata!.name) ?? pod),
          settings,
          now,
          claims,
          routable,
        );
        p = { ...again, relabel: [], claims: [], create: [], delete: [], swaps: [] };
      }
      // An order not answered is sent again shortly.
      if (retry) p = { ...p, requeueMs: Math.min(p.requeueMs ?? swapRetryMs, swapRetryMs) };
    } catch (err) {
      if (namespaceGone(err)) return { deleted: true };
      throw err;
    }
    this.recordRollout(app, p);
    return { status: p.status, ready: p.ready, conditions: p.conditions, ...(p.requeueMs !== undefined ? { requeueMs: p.requeueMs } : {}) };
  }

  /**
   * The settings with what the caches show of the App's surroundings: its attached database's
   * address, and the addresses of its services' Services (those of this App only).
   */
  private settingsFor(app: App): AppSettings {
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    const db = app.spec.database;
    const database = db ? { name: db, host: this.observed.serviceOf(namespace, databaseObjects(db).service)?.spec?.clusterIP } : undefined;
    const serviceAddresses = app.spec.services?.length
      ? new Map(
          servicesOf(app.spec)
            .filter((v) => v.name !== undefined)
            .map((v) => {
              const svc = this.observed.serviceOf(namespace, serviceObjectName(name, v.name!));
              return [v.name!, this.ownedBy(svc, app) ? svc?.spec?.clusterIP : undefined] as const;
            }),
        )
      : undefined;
    if (!database && !serviceAddresses) return this.settings;
    return { ...this.settings, ...(database ? { database } : {}), ...(serviceAddresses ? { serviceAddresses } : {}) };
  }

  /** Whether `obj` is this App's (its controller owner), so never another App's object of the same name. */
  private ownedBy(obj: k8s.KubernetesObject | undefined, app: App): boolean {
    return obj?.metadata?.ownerReferences?.some((o) => o.controller && o.uid === app.metadata.uid) ?? false;
  }

  private async relabel(app: App, p: Plan): Promise<void> {
    const namespace = app.metadata.namespace!;
    await Promise.all(
      p.relabel.map((pod) =>
        this.core
          .patchNamespacedPod(
            { namespace, name: pod.metadata!.name!, body: { metadata: { labels: { [labels.public]: 'true' } } } },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          )
          .catch(ignoreStatus(404)),
      ),
    );
  }

  private async expire(app: App): Promise<void> {
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    await this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural: pluralOf('App'), name }).catch(ignoreStatus(404));
    this.log.info({ kind: 'App', namespace, name, expiresAt: app.spec.expiresAt }, 'Deleted expired App');
    this.events.record(app, 'Normal', 'Expired', `expiry ${app.spec.expiresAt} passed; deleting the app`);
  }

  /**
   * Applies the NetworkPolicy when it or the Service changed since the last apply (or was edited or
   * deleted by hand), and returns the Service's apply to run next; nothing when both are as applied.
   */
  private async applyPolicy(app: App, settings: AppSettings): Promise<(() => Promise<void>) | undefined> {
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    const service = appService(app);
    const policy = machinePolicy(app, settings);
    const byName = serviceServices(app);
    // Services of services the App no longer has go (only this App's).
    const wanted = new Set(byName.map((s) => s.metadata!.name));
    const stale = this.observed.servicesOf(namespace, name).filter((s) => !wanted.has(s.metadata!.name) && this.ownedBy(s, app));
    // A name another App's object already has is left alone, and said (never two writers).
    const taken = byName.filter((s) => {
      const seen = this.observed.serviceOf(namespace, s.metadata!.name!);
      return seen !== undefined && !this.ownedBy(seen, app);
    });
    const shape = [service, policy, byName, stale.map((s) => s.metadata!.name), taken.map((s) => s.metadata!.name)];
    const uid = app.metadata.uid!;
    const last = this.applier.last(uid);
    const seen = this.observed.serviceOf(namespace, name)?.metadata?.resourceVersion;
    // Edited since our apply: the cache shows a later version than the apply returned (the cache
    // may also still be behind it, which is no reason to apply again). Deleted: the frame forgets the uid.
    const edited =
      seen !== undefined && last?.resourceVersion !== undefined && seen !== last.resourceVersion && isAtLeast(seen, last.resourceVersion);
    const same = this.applier.unchanged(uid, shape);
    if (same && !edited) return undefined;
    const since = this.applier.mark();
    if (policy) await this.applier.apply(namespace, policy);
    return async () => {
      for (const t of taken)
        this.events.record(
          app,
          'Warning',
          'ServiceNameTaken',
          `Service ${t.metadata!.name} belongs to another object; service ${t.metadata!.labels?.[labels.service]} is not reachable by name until it goes`,
        );
      await Promise.all([
        ...byName.filter((s) => !taken.includes(s)).map((s) => this.applier.apply(namespace, s)),
        ...stale.map((s) => this.core.deleteNamespacedService({ namespace, name: s.metadata!.name! }).catch(ignoreStatus(404))),
      ]);
      const result = await this.applier.apply(namespace, service);
      this.applier.remember(uid, shape, result.metadata?.resourceVersion, since);
      if (edited && same) this.log.info({ kind: 'App', namespace, name }, 'Restored the Service changed by hand');
    };
  }

  private async applyMachines(app: App, p: Plan): Promise<void> {
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    // Claims before the machines that mount them (a machine whose claim is missing waits unscheduled).
    await Promise.all(
      p.claims.map(async (claim) => {
        await this.core.createNamespacedPersistentVolumeClaim({ namespace, body: claim }).catch(ignoreStatus(409));
        this.log.info({ kind: 'App', namespace, name, claim: claim.metadata!.name }, 'Created volume claim');
        this.events.record(
          app,
          'Normal',
          'VolumeCreated',
          `machine ${claim.metadata!.labels?.[labels.machine]}: created volume ${claim.metadata!.name} (${claim.spec?.resources?.requests?.storage})`,
        );
      }),
    );
    await Promise.all(
      p.create.map(async (pod) => {
        await this.core.createNamespacedPod({ namespace, body: pod }).catch(ignoreStatus(409));
        this.log.info({ kind: 'App', namespace, name, pod: pod.metadata!.name }, 'Created machine');
        this.events.record(
          app,
          'Normal',
          'MachineCreated',
          `machine ${pod.metadata!.labels?.[labels.machine]}: created ${pod.metadata!.name}`,
        );
      }),
    );
    // Only machines the plan no longer needs (replaced by a ready one, or beyond the count).
    await Promise.all(
      p.delete.map(async (pod) => {
        await this.core.deleteNamespacedPod({ namespace, name: pod.metadata!.name! }).catch(ignoreStatus(404));
        this.log.info({ kind: 'App', namespace, name, pod: pod.metadata!.name }, 'Deleted machine');
        this.events.record(
          app,
          'Normal',
          'MachineDeleted',
          `machine ${pod.metadata!.labels?.[labels.machine]}: deleted ${pod.metadata!.name}`,
        );
      }),
    );
  }

  /** Events and logs for a rollout that ended in this reconcile. */
  private recordRollout(app: App, p: Plan): void {
    const before = app.status?.rollout;
    const after = p.status.rollout;
    if (!after || (before?.revision === after.revision && before.state === after.state)) return;
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    const what = after.deploy ? `deploy ${after.deploy}` : `revision ${after.revision}`;
    if (after.state === 'Failed') {
      this.log.warn(
        {
          kind: 'App',
          namespace,
          name,
          deploy: after.deploy,
          revision: after.revision,
          reason: after.reason,
          serving: p.status.live?.deploy ?? p.status.live?.revision,
        },
        'Rollout failed',
      );
      this.events.record(app, 'Warning', 'RolloutFailed', `${what}: ${after.reason ?? 'failed'}`);
    } else if (after.state === 'Live') {
      this.log.info({ kind: 'App', namespace, name, deploy: after.deploy, revision: after.revision }, 'Rollout live');
      this.events.record(app, 'Normal', 'DeployServed', `all ${p.status.readyMachines} machines serve ${what}`);
    }
  }
}
