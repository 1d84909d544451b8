// The Database controller's setup: the Databases, and what each one owns or reads, selected by its
// label: its server Pod, volume claims, Service (a source server's is its branches' too), policy,
// backup CronJob and Jobs; the Apps that name it (attachedTo); and its CloudNativePG Cluster,
// watched from the first Database that needs one (most installations never do).
import * as k8s from '@kubernetes/client-node';
import { group, labels, pluralOf, version } from '../../lib/contract.js';
import { databaseObjects } from '../../lib/databases.js';
import { mergePatch } from '../../lib/kube/client.js';
import { keepWatching } from '../../lib/kube/keep-watching.js';
import type { App, Database } from '../../lib/resources/index.js';
import { customStatusWriter, type Controller } from '../frame/controller.js';
import { targets } from '../frame/informers.js';
import type { SetupContext } from '../frame/setup.js';
import { cnpg, providerOf, type CnpgCluster } from './cnpg.js';
import type { DatabaseSettings } from './desired.js';
import { DatabaseReconciler } from './reconciler.js';

export function setupDatabases(ctx: SetupContext, settings: DatabaseSettings): Controller<Database, object> {
  const { kc, clients, informers, log } = ctx;
  const { apps, services, policies } = ctx.shared;
  const databases = informers.informer(targets.custom<Database>(kc, group, version, pluralOf('Database')));
  const dbPods = informers.informer(targets.pods(kc, labels.database));
  const claims = informers.informer(targets.claims(kc, labels.database));
  const cronJobs = informers.informer(targets.cronJobs(kc, labels.database));
  const backupJobs = informers.informer(targets.jobs(kc, labels.backupOf));
  const ofDb = <T extends k8s.KubernetesObject>(list: readonly T[], db: Database) =>
    list.filter((o) => o.metadata?.labels?.[labels.database] === db.metadata.name);
  const dbOf = (child: k8s.KubernetesObject): string[] => {
    const db = child.metadata?.labels?.[labels.database];
    return db && child.metadata?.namespace ? [`${child.metadata.namespace}/${db}`] : [];
  };
  // CloudNativePG Clusters, watched from the first Database that needs them.
  let clusters: k8s.ListWatch<CnpgCluster> | undefined;
  const watchClusters = () => {
    if (clusters) return;
    const selector = labels.database;
    const informer = new k8s.ListWatch<CnpgCluster>(
      `/apis/${cnpg.group}/${cnpg.version}/${cnpg.plural}`,
      new k8s.Watch(kc),
      () =>
        clients.custom.listClusterCustomObject({
          group: cnpg.group,
          version: cnpg.version,
          plural: cnpg.plural,
          labelSelector: selector,
        }) as Promise<k8s.KubernetesListObject<CnpgCluster>>,
      false,
      selector,
    );
    keepWatching(informer, `CloudNativePG clusters (${selector})`, log);
    controller.watches(informer, dbOf);
    clusters = informer;
    ctx.onStop(() => informer.stop());
    informer.start().catch((err: unknown) => log.warn({ err }, 'Watching CloudNativePG Clusters failed; retrying'));
  };
  const reconciler = new DatabaseReconciler(
    clients.core,
    clients.custom,
    clients.networking,
    clients.batch,
    {
      clusters: watchClusters,
      observe: (db) => {
        const ns = db.metadata.namespace!;
        const o = databaseObjects(db.metadata.name!);
        const source = db.spec.branchOf ? databases.get(db.spec.branchOf, ns) : undefined;
        return {
          pod: dbPods.get(o.pod, ns),
          claim: claims.get(o.claim, ns),
          claims: ofDb(claims.list(ns), db),
          cluster: clusters?.get(o.service, ns),
          service: services.get(o.service, ns),
          policy: policies.get(o.policy, ns),
          attachedApps: apps.list(ns).filter((a) => a.spec.database === db.metadata.name),
          // A Cluster is copied by a dump: not before it is Ready (a restore's dump in), or the copy is of nothing.
          sourceHost:
            db.spec.branchOf && (!source || providerOf(source, settings) !== 'cloudnative-pg' || source.status?.phase === 'Ready')
              ? services.get(databaseObjects(db.spec.branchOf).service, ns)?.spec?.clusterIP
              : undefined,
          sourceProvider: source && providerOf(source, settings),
          cronJob: cronJobs.get(`${o.service}-backup`, ns),
          backupJobs: backupJobs.list(ns).filter((j) => j.metadata?.labels?.[labels.backupOf] === db.metadata.name),
        };
      },
    },
    settings,
    log,
    ctx.events,
  );
  const controller = ctx.controller<Database, object>({
    kind: 'Database',
    primary: databases,
    reconciler,
    applier: reconciler.applier,
    appliedKeyOf: (db) => db.metadata.uid!,
    writeStatus: customStatusWriter<Database>(clients.custom, group, version, pluralOf('Database'), mergePatch),
    concurrency: 8,
  });
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
  return controller
    .watches(dbPods, dbOf)
    .watches(claims, dbOf)
    .watches(services, withBranches)
    .watches(policies, dbOf)
    .watches(apps, attachedOf)
    .watches(cronJobs, dbOf)
    .watches(backupJobs, backupOf);
}
