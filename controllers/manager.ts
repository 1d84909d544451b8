// The controllers' manager: one shared informer per kind it reads, and a controller on the frame
// (controllers/frame/) per kind it owns: Apps (their machines, Services and NetworkPolicies),
// account Namespaces (their guardrails), Sandboxes (their pods) and the sandbox pool (the sandbox
// namespace's free pods and policies). It works only while it holds the leader Lease (main.ts).
import os from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { group, labels, managers, pluralOf, version } from '../lib/contract.js';
import { accountLabel, podSecurityLabels } from '../lib/accounts.js';
import { kubeStatus, mergePatch } from '../lib/kube/client.js';
import { EventRecorder } from '../lib/kube/events.js';
import type { Logger } from '../lib/logger.js';
import type { App, Build, Database, Sandbox } from '../lib/resources/index.js';
import { databaseObjects } from '../lib/databases.js';
import { keepWatching } from '../lib/kube/keep-watching.js';
import { cnpg, type CnpgCluster } from './database/cnpg.js';
import type { DatabaseSettings } from './database/desired.js';
import { DatabaseReconciler } from './database/reconciler.js';
import { defaultResources } from '../lib/sandbox/limits.js';
import { AccountReconciler } from './account/reconciler.js';
import type { AppSettings } from './app/desired.js';
import { AppReconciler } from './app/reconciler.js';
import { cacheAppOf, type BuildSettings } from './build/desired.js';
import { BuildReconciler } from './build/reconciler.js';
import { buildCacheClaim } from '../lib/builds/index.js';
import { Controller, customStatusWriter } from './frame/controller.js';
import { InformerFactory, targets } from './frame/informers.js';
import { poolKey } from './sandbox/pod.js';
import { PoolReconciler } from './sandbox/pool-reconciler.js';
import { SandboxReconciler } from './sandbox/reconciler.js';
import type { SandboxControllerSettings } from './sandbox/settings.js';

export interface ManagerOptions {
  /** Builds' Jobs; without settings (no artifact key) no Build is served. */
  builds?: BuildSettings | undefined;
  /** Databases' servers; without settings no Database is served. */
  databases?: DatabaseSettings | undefined;
  /** How often every object is reconciled again, changed or not (controllers/frame/controller.ts). */
  resyncMs?: number;
  /** Sandboxes and their pool; without settings (no agent key) no Sandbox is served. */
  sandboxes?: SandboxControllerSettings | undefined;
}

export class Manager {
  private readonly informers: InformerFactory;
  readonly apps: Controller<App, object>;
  readonly accounts: Controller<k8s.V1Namespace, never>;
  readonly sandboxes: Controller<Sandbox, object> | undefined;
  readonly databases: Controller<Database, object> | undefined;
  readonly builds: Controller<Build, object> | undefined;
  readonly pool: { controller: Controller<k8s.V1Namespace, never>; reconciler: PoolReconciler } | undefined;
  private sandboxReconciler: SandboxReconciler | undefined;
  private running = false;
  /** Informers started after the others, on first need (CloudNativePG Clusters). */
  private readonly stopExtra: Array<() => Promise<void>> = [];
  private readonly core: k8s.CoreV1Api;

  constructor(
    kc: k8s.KubeConfig,
    settings: AppSettings,
    private readonly log: Logger,
    private readonly opts: ManagerOptions = {},
  ) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    this.core = core;
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const networking = kc.makeApiClient(k8s.NetworkingV1Api);
    this.informers = new InformerFactory(kc, log);
    const ours = `${labels.managedBy}=${managers.controllers}`;
    const apps = this.informers.informer(targets.custom<App>(kc, group, version, pluralOf('App')));
    // Only the machines: a label selector bounds the cache to pods the App controller made.
    const pods = this.informers.informer(targets.pods(kc, labels.app));
    // What the controllers made (controller-runtime's Owns): one deleted or edited by hand is put back.
    const services = this.informers.informer(targets.services(kc, ours));
    const policies = this.informers.informer(targets.networkPolicies(kc, ours));
    const namespaces = this.informers.informer(targets.namespaces(kc, accountLabel));
    // Apps' volume claims (labelled with their volume), kept by the App controller.
    const appClaims = this.informers.informer(targets.claims(kc, labels.volume));

    const events = new EventRecorder(core, managers.controllers, os.hostname(), log);
    const appReconciler = new AppReconciler(
      core,
      custom,
      networking,
      {
        podsOf: (ns, app) => pods.list(ns).filter((p) => p.metadata?.labels?.[labels.app] === app),
        serviceOf: (ns, app) => services.get(app, ns),
        servicesOf: (ns, app) =>
          services.list(ns).filter((s) => s.metadata?.labels?.[labels.app] === app && s.metadata.labels[labels.service] !== undefined),
        claimsOf: (ns, app) => appClaims.list(ns).filter((c) => c.metadata?.labels?.[labels.app] === app),
      },
      settings,
      log,
      events,
    );
    this.apps = new Controller<App, object>({
      kind: 'App',
      primary: apps,
      reconciler: appReconciler,
      writeStatus: customStatusWriter<App>(custom, group, version, pluralOf('App'), mergePatch),
      log,
      // Reconciles mostly wait on the apiserver, not on CPU (bench/reconcile): more in flight helps.
      concurrency: 32,
      ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
    });
    // A change to a machine, Service or policy is a change to its App (korifi's buildToApp).
    const appOf = (child: k8s.KubernetesObject): string[] => {
      const app = child.metadata?.labels?.[labels.app];
      return app && child.metadata?.namespace ? [`${child.metadata.namespace}/${app}`] : [];
    };
    // Before the enqueueing handlers: the reconcile that follows must not trust the old apply.
    const ownerGone = (child: k8s.KubernetesObject) => {
      const owner = child.metadata?.ownerReferences?.find((o) => o.kind === 'App');
      if (owner) appReconciler.serviceGone(owner.uid);
    };
    services.on('delete', ownerGone);
    policies.on('delete', ownerGone);
    this.apps.watches(pods, appOf).watches(services, appOf).watches(policies, appOf).watches(appClaims, appOf);

    const accountReconciler = new AccountReconciler(core, networking, log, settings.images?.platformRegistry);
    this.accounts = new Controller<k8s.V1Namespace, never>({
      kind: 'Namespace',
      primary: namespaces,
      reconciler: accountReconciler,
      log,
      ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
    });
    // The account's deny-all deleted by hand is put back (an App's policy goes back with its App).
    policies.on('delete', (policy: k8s.V1NetworkPolicy) => {
      if (policy.metadata?.ownerReferences?.some((o) => o.kind === 'App')) return;
      if (policy.metadata?.namespace === opts.sandboxes?.pod.namespace) return;
      accountReconciler.forgetNamespace(policy.metadata!.namespace!);
      this.accounts.add(policy.metadata!.namespace!);
    });

    // Databases: each one's server Pod, volume claim, Service and policy (selected by its label),
    // and the Apps that name it (attachedTo).
    if (opts.databases) {
      const databases = this.informers.informer(targets.custom<Database>(kc, group, version, pluralOf('Database')));
      const dbPods = this.informers.informer(targets.pods(kc, labels.database));
      const claims = this.informers.informer(targets.claims(kc, labels.database));
      const cronJobs = this.informers.informer(targets.cronJobs(kc, labels.database));
      const backupJobs = this.informers.informer(targets.jobs(kc, labels.backupOf));
      const ofDb = <T extends k8s.KubernetesObject>(list: readonly T[], db: Database) =>
        list.filter((o) => o.metadata?.labels?.[labels.database] === db.metadata.name);
      // CloudNativePG Clusters, watched from the first Database that needs them (most installations never do).
      let clusters: k8s.ListWatch<CnpgCluster> | undefined;
      const watchClusters = () => {
        if (clusters) return;
        const selector = labels.database;
        const informer = new k8s.ListWatch<CnpgCluster>(
          `/apis/${cnpg.group}/${cnpg.version}/${cnpg.plural}`,
          new k8s.Watch(kc),
          () =>
            custom.listClusterCustomObject({
              group: cnpg.group,
              version: cnpg.version,
              plural: cnpg.plural,
              labelSelector: selector,
            }) as Promise<k8s.KubernetesListObject<CnpgCluster>>,
          false,
          selector,
        );
        keepWatching(informer, `CloudNativePG clusters (${selector})`, log);
        this.databases!.watches(informer, dbOf);
        clusters = informer;
        this.stopExtra.push(() => informer.stop());
        informer.start().catch((err: unknown) => log.warn({ err }, 'Watching CloudNativePG Clusters failed; retrying'));
      };
      const reconciler = new DatabaseReconciler(
        core,
        custom,
        networking,
        kc.makeApiClient(k8s.BatchV1Api),
        {
          clusters: watchClusters,
          observe: (db) => {
            const ns = db.metadata.namespace!;
            const o = databaseObjects(db.metadata.name!);
            return {
              pod: dbPods.get(o.pod, ns),
              claim: claims.get(o.claim, ns),
              claims: ofDb(claims.list(ns), db),
              cluster: clusters?.get(o.service, ns),
              service: services.get(o.service, ns),
              policy: policies.get(o.policy, ns),
              attachedApps: apps.list(ns).filter((a) => a.spec.database === db.metadata.name),
              sourceHost: db.spec.branchOf ? services.get(databaseObjects(db.spec.branchOf).service, ns)?.spec?.clusterIP : undefined,
              cronJob: cronJobs.get(`${o.service}-backup`, ns),
              backupJobs: backupJobs.list(ns).filter((j) => j.metadata?.labels?.[labels.backupOf] === db.metadata.name),
            };
          },
        },
        opts.databases,
        log,
        events,
      );
      this.databases = new Controller<Database, object>({
        kind: 'Database',
        primary: databases,
        reconciler,
        writeStatus: customStatusWriter<Database>(custom, group, version, pluralOf('Database'), mergePatch),
        log,
        concurrency: 8,
        ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
      });
      const dbOf = (child: k8s.KubernetesObject): string[] => {
        const db = child.metadata?.labels?.[labels.database];
        return db && child.metadata?.namespace ? [`${child.metadata.namespace}/${db}`] : [];
      };
      const attachedOf = (app: App): string[] => (app.spec.database ? [`${app.metadata.namespace}/${app.spec.database}`] : []);
      // A source server's Service is its branches' too (the address they copy from).
      const withBranches = (svc: k8s.V1Service): string[] => {
        const db = svc.metadata?.labels?.[labels.database];
        const ns = svc.metadata?.namespace;
        if (!db || !ns) return [];
        return [
          `${ns}/${db}`,
          ...databases
            .list(ns)
            .filter((d) => d.spec.branchOf === db)
            .map((d) => `${ns}/${d.metadata.name}`),
        ];
      };
      const backupOf = (job: k8s.V1Job): string[] => {
        const db = job.metadata?.labels?.[labels.backupOf];
        return db && job.metadata?.namespace ? [`${job.metadata.namespace}/${db}`] : [];
      };
      this.databases
        .watches(dbPods, dbOf)
        .watches(claims, dbOf)
        .watches(services, withBranches)
        .watches(policies, dbOf)
        .watches(apps, attachedOf)
        .watches(cronJobs, dbOf)
        .watches(backupJobs, backupOf);
      // An App naming a database learns its server's address from the Database's Service.
      this.apps.watches(services, (svc: k8s.V1Service) => {
        const db = svc.metadata?.labels?.[labels.database];
        const ns = svc.metadata?.namespace;
        return db && ns
          ? apps
              .list(ns)
              .filter((a) => a.spec.database === db)
              .map((a) => `${ns}/${a.metadata.name}`)
          : [];
      });
    } else this.databases = undefined;

    // Builds: each one's Job and Pod (labelled with it), the app's cache claim, the namespace's policy.
    if (opts.builds) {
      const builds = this.informers.informer(targets.custom<Build>(kc, group, version, pluralOf('Build')));
      const buildJobs = this.informers.informer(targets.jobs(kc, labels.build));
      const buildPods = this.informers.informer(targets.pods(kc, labels.build));
      const cacheClaims = this.informers.informer(targets.claims(kc, labels.buildCache));
      const buildReconciler = new BuildReconciler(
        core,
        kc.makeApiClient(k8s.BatchV1Api),
        networking,
        {
          observe: (b) => {
            const ns = b.metadata.namespace!;
            const name = b.metadata.name!;
            return {
              job: buildJobs.get(name, ns),
              pod: buildPods.list(ns).find((p) => p.metadata?.labels?.[labels.build] === name),
              cacheClaim: cacheClaims.get(buildCacheClaim(cacheAppOf(b)), ns),
              cacheOwner: apps.get(cacheAppOf(b), ns),
              policy: policies.get('svc-builds', ns),
              builds: builds.list(ns),
            };
          },
        },
        opts.builds,
        log,
        events,
      );
      this.builds = new Controller<Build, object>({
        kind: 'Build',
        primary: builds,
        reconciler: buildReconciler,
        writeStatus: customStatusWriter<Build>(custom, group, version, pluralOf('Build'), mergePatch),
        log,
        concurrency: 8,
        ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
      });
      const buildOf = (child: k8s.KubernetesObject): string[] => {
        const b = child.metadata?.labels?.[labels.build];
        return b && child.metadata?.namespace ? [`${child.metadata.namespace}/${b}`] : [];
      };
      this.builds.watches(buildJobs, buildOf).watches(buildPods, buildOf);
      policies.on('delete', (policy: k8s.V1NetworkPolicy) => {
        if (policy.metadata?.name === 'svc-builds') buildReconciler.forgetPolicy(policy.metadata.namespace!);
      });
    } else this.builds = undefined;

    const sbx = opts.sandboxes;
    if (!sbx) {
      this.sandboxes = undefined;
      this.pool = undefined;
      return;
    }
    // Sandboxes: the Sandbox objects of every account, and the sandbox pods (one namespace).
    const sandboxes = this.informers.informer(targets.custom<Sandbox>(kc, group, version, pluralOf('Sandbox')));
    const sandboxPods = this.informers.informer(targets.pods(kc, labels.sandboxPod));
    const sandboxNamespace = this.informers.informer(targets.namespaces(kc, `kubernetes.io/metadata.name=${sbx.pod.namespace}`));
    const key = poolKey(sbx.pod, { ...defaultResources });
    const podsHere = () => sandboxPods.list(sbx.pod.namespace);
    const sandboxReconciler = new SandboxReconciler(
      core,
      custom,
      {
        servingOf: (uid) => podsHere().find((p) => p.metadata?.labels?.[labels.sandboxUid] === uid),
        membersOf: (k) =>
          podsHere().filter((p) => p.metadata?.labels?.[labels.sandboxPool] === k && !p.metadata?.labels?.[labels.sandboxUid]),
      },
      { pod: sbx.pod, timing: { retentionMs: sbx.retentionMs, startDeadlineMs: sbx.startDeadlineMs }, poolKey: key },
      log,
      events,
      () => this.pool?.controller.add(sbx.pod.namespace),
    );
    this.sandboxReconciler = sandboxReconciler;
    this.sandboxes = new Controller<Sandbox, object>({
      kind: 'Sandbox',
      primary: sandboxes,
      reconciler: sandboxReconciler,
      writeStatus: customStatusWriter<Sandbox>(custom, group, version, pluralOf('Sandbox'), mergePatch),
      log,
      concurrency: 16,
      ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
    });
    const sandboxOf = (pod: k8s.V1Pod): string[] => {
      const l = pod.metadata?.labels ?? {};
      return l[labels.sandbox] && l[labels.sandboxNamespace] ? [`${l[labels.sandboxNamespace]}/${l[labels.sandbox]}`] : [];
    };
    this.sandboxes.watches(sandboxPods, sandboxOf);
    const poolReconciler = new PoolReconciler(
      core,
      networking,
      {
        pods: podsHere,
        sandboxExists: (uid) => sandboxes.list().some((s) => s.metadata?.uid === uid),
        reserved: sandboxReconciler.reserved,
        retiring: sandboxReconciler.retiring,
      },
      { pod: sbx.pod, key, size: sbx.poolSize, platformCidrs: sbx.platformCidrs, platformNamespace: sbx.platformNamespace },
      log,
    );
    const poolController = new Controller<k8s.V1Namespace, never>({
      kind: 'SandboxPool',
      primary: sandboxNamespace,
      reconciler: poolReconciler,
      log,
      concurrency: 1,
      ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
    });
    poolController.watches(sandboxPods, () => [sbx.pod.namespace]);
    // A claimed pod whose Sandbox was deleted (kubectl delete) goes with the pool's next pass.
    sandboxes.on('delete', () => poolController.add(sbx.pod.namespace));
    policies.on('delete', (policy: k8s.V1NetworkPolicy) => {
      if (policy.metadata?.namespace !== sbx.pod.namespace) return;
      poolReconciler.forgetPolicies();
      poolController.add(sbx.pod.namespace);
    });
    this.pool = { controller: poolController, reconciler: poolReconciler };
  }

  /** The sandbox namespace, made on first start: restricted Pod Security, like account namespaces. */
  private async ensureSandboxNamespace(name: string): Promise<void> {
    try {
      await this.core.createNamespace({
        body: { metadata: { name, labels: { ...podSecurityLabels, [labels.managedBy]: managers.controllers } } },
      });
      this.log.info({ namespace: name }, 'Created the sandbox namespace');
    } catch (err) {
      // 409: there already. 403: not ours to make (a chart install makes it: templates/sandboxes.yaml).
      if (kubeStatus(err) === 403)
        this.log.info({ namespace: name }, 'Not allowed to create the sandbox namespace; using the one the installation made');
      else if (kubeStatus(err) !== 409) throw err;
    }
  }

  async start(): Promise<void> {
    if (this.pool) await this.ensureSandboxNamespace(this.opts.sandboxes!.pod.namespace);
    await this.informers.start();
    this.accounts.start();
    this.apps.start();
    this.databases?.start();
    this.builds?.start();
    this.pool?.controller.start();
    this.sandboxes?.start();
    this.running = true;
    this.log.info({ apps: this.apps.stats().waiting }, 'Controllers started');
  }

  /** Prometheus text: each controller's work and the sandbox pool's depth (controllers/metrics.ts serves it). */
  metrics(): string {
    const lines: string[] = [];
    const metric = (name: string, help: string, type: 'gauge' | 'counter', samples: Array<[Record<string, string>, number]>) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, value] of samples) {
        const l = Object.entries(labels)
          .map(([k, v]) => `${k}="${v}"`)
          .join(',');
        lines.push(`${name}${l ? `{${l}}` : ''} ${value}`);
      }
    };
    metric('svc_controllers_leading', 'Whether this replica leads (holds the Lease) and reconciles.', 'gauge', [
      [{}, this.running ? 1 : 0],
    ]);
    const controllers = [
      this.apps,
      this.accounts,
      ...(this.databases ? [this.databases] : []),
      ...(this.builds ? [this.builds] : []),
      ...(this.sandboxes ? [this.sandboxes] : []),
      ...(this.pool ? [this.pool.controller] : []),
    ];
    const kinds = [
      'App',
      'Namespace',
      ...(this.databases ? ['Database'] : []),
      ...(this.builds ? ['Build'] : []),
      ...(this.sandboxes ? ['Sandbox'] : []),
      ...(this.pool ? ['SandboxPool'] : []),
    ];
    const stats = controllers.map((c) => c.stats());
    metric(
      'svc_controller_reconciles_total',
      'Reconciles done, by kind.',
      'counter',
      stats.map((st, i) => [{ kind: kinds[i]! }, st.reconciles]),
    );
    metric(
      'svc_controller_status_writes_total',
      'Status writes, by kind.',
      'counter',
      stats.map((st, i) => [{ kind: kinds[i]! }, st.statusWrites]),
    );
    metric(
      'svc_controller_status_conflicts_total',
      'Status writes refused as stale (reconciled again), by kind.',
      'counter',
      stats.map((st, i) => [{ kind: kinds[i]! }, st.conflicts]),
    );
    metric(
      'svc_controller_queue_waiting',
      'Keys waiting in the work queue, by kind.',
      'gauge',
      stats.map((st, i) => [{ kind: kinds[i]! }, st.waiting]),
    );
    metric(
      'svc_controller_queue_failing',
      'Keys whose last reconcile failed (retried with back-off), by kind.',
      'gauge',
      stats.map((st, i) => [{ kind: kinds[i]! }, st.failing]),
    );
    if (this.pool && this.sandboxReconciler) {
      const depth = this.pool.reconciler.depth;
      metric('svc_sandbox_pool_size', 'Free pool members the controllers keep (SVC_SANDBOX_POOL_SIZE).', 'gauge', [
        [{}, this.opts.sandboxes!.poolSize],
      ]);
      metric('svc_sandbox_pool_members', 'Free pool members by state.', 'gauge', [
        [{ state: 'ready' }, depth.ready],
        [{ state: 'starting' }, depth.starting],
      ]);
      metric('svc_sandbox_launches_total', 'Sandboxes served, by launch (warm: a ready pool member).', 'counter', [
        [{ launch: 'warm' }, this.sandboxReconciler.launches.warm],
        [{ launch: 'cold' }, this.sandboxReconciler.launches.cold],
      ]);
    }
    return `${lines.join('\n')}\n`;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.sandboxes?.stop();
    this.pool?.controller.stop();
    this.apps.stop();
    this.databases?.stop();
    this.builds?.stop();
    this.accounts.stop();
    await this.informers.stop();
    await Promise.all(this.stopExtra.map((stop) => stop()));
  }
}
