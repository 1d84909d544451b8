// The App controller's setup (controller-runtime's SetupWithManager): the Apps, and what it owns
// and reads: its machines (Pods labelled with their App), its Services and NetworkPolicies (a
// deleted one's apply is forgotten first, so it is applied again), its volume claims, and, with
// Databases served, the Service of the database an App names (its address).
import type * as k8s from '@kubernetes/client-node';
import { group, labels, pluralOf, version } from '../../lib/contract.js';
import { mergePatch } from '../../lib/kube/client.js';
import type { App } from '../../lib/resources/index.js';
import { customStatusWriter, type Controller } from '../frame/controller.js';
import { targets } from '../frame/informers.js';
import type { SetupContext } from '../frame/setup.js';
import type { AppSettings } from './desired.js';
import { AppReconciler } from './reconciler.js';

export function setupApp(ctx: SetupContext, settings: AppSettings, opts: { databases: boolean }): Controller<App, object> {
  const { kc, clients, informers, shared } = ctx;
  const { apps, services, policies } = shared;
  // Only the machines: a label selector bounds the cache to pods the App controller made.
  const pods = informers.informer(targets.pods(kc, labels.app));
  // Apps' volume claims (labelled with their volume), kept by the App controller.
  const appClaims = informers.informer(targets.claims(kc, labels.volume));
  // The slices of Apps' Services (the endpoint controller copies the Service's labels): a new
  // machine counts once ingress-auth, which routes by them, can reach it.
  const slices = informers.informer(targets.endpointSlices(kc, labels.app));
  const reconciler = new AppReconciler(
    clients.core,
    clients.custom,
    clients.networking,
    {
      podsOf: (ns, app) => pods.list(ns).filter((p) => p.metadata?.labels?.[labels.app] === app),
      serviceOf: (ns, app) => services.get(app, ns),
      servicesOf: (ns, app) =>
        services.list(ns).filter((s) => s.metadata?.labels?.[labels.app] === app && s.metadata.labels[labels.service] !== undefined),
      claimsOf: (ns, app) => appClaims.list(ns).filter((c) => c.metadata?.labels?.[labels.app] === app),
      routableOf: (ns, app) =>
        new Set(
          slices
            .list(ns)
            .filter((s) => s.metadata?.labels?.['kubernetes.io/service-name'] === app)
            .flatMap((s) => (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses)),
        ),
    },
    settings,
    ctx.log,
    ctx.events,
  );
  const controller = ctx.controller<App, object>({
    kind: 'App',
    primary: apps,
    reconciler,
    applier: reconciler.applier,
    appliedKeyOf: (app) => app.metadata.uid!,
    writeStatus: customStatusWriter<App>(clients.custom, group, version, pluralOf('App'), mergePatch),
    // Reconciles mostly wait on the apiserver, not on CPU (bench/reconcile): more in flight helps.
    concurrency: 32,
  });
  // A change to a machine, Service or policy is a change to its App (korifi's buildToApp).
  const appOf = (child: k8s.KubernetesObject): string[] => {
    const app = child.metadata?.labels?.[labels.app];
    return app && child.metadata?.namespace ? [`${child.metadata.namespace}/${app}`] : [];
  };
  // A Service or policy of an App's deleted (by hand, or with its App): its apply is forgotten
  // before the App is looked at again, which applies it again.
  const ownerUid = (child: k8s.KubernetesObject): string[] => {
    const owner = child.metadata?.ownerReferences?.find((o) => o.kind === 'App');
    return owner ? [owner.uid] : [];
  };
  controller
    .watches(pods, appOf)
    .watches(services, appOf, { forget: ownerUid })
    .watches(policies, appOf, { forget: ownerUid })
    .watches(appClaims, appOf)
    .watches(slices, appOf);
  // An App naming a database learns its server's address from the Database's Service.
  if (opts.databases)
    controller.watches(services, (svc: k8s.V1Service) => {
      const db = svc.metadata?.labels?.[labels.database];
      const ns = svc.metadata?.namespace;
      return db && ns
        ? apps
            .list(ns)
            .filter((a) => a.spec.database === db)
            .map((a) => `${ns}/${a.metadata.name}`)
        : [];
    });
  return controller;
}
