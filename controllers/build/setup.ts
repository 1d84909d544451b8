// The Build controller's setup: the Builds, each one's Job and Pod (labelled with it), and what it
// reads: the app's cache claim, the cache's owner App, and the namespace's build policy (one
// deleted by hand is forgotten, and applied again on the namespace's next build's reconcile).
import type * as k8s from '@kubernetes/client-node';
import { buildCacheClaim } from '../../lib/builds/index.js';
import { group, labels, pluralOf, version } from '../../lib/contract.js';
import { mergePatch } from '../../lib/kube/client.js';
import type { Build } from '../../lib/resources/index.js';
import { customStatusWriter, type Controller } from '../frame/controller.js';
import { targets } from '../frame/informers.js';
import type { SetupContext } from '../frame/setup.js';
import { cacheAppOf, type BuildSettings } from './desired.js';
import { BuildReconciler } from './reconciler.js';

export function setupBuilds(ctx: SetupContext, settings: BuildSettings): Controller<Build, object> {
  const { kc, clients, informers } = ctx;
  const { apps, policies } = ctx.shared;
  const builds = informers.informer(targets.custom<Build>(kc, group, version, pluralOf('Build')));
  const buildJobs = informers.informer(targets.jobs(kc, labels.build));
  const buildPods = informers.informer(targets.pods(kc, labels.build));
  const cacheClaims = informers.informer(targets.claims(kc, labels.buildCache));
  const reconciler = new BuildReconciler(
    clients.core,
    clients.batch,
    clients.networking,
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
    settings,
    ctx.log,
    ctx.events,
  );
  const buildOf = (child: k8s.KubernetesObject): string[] => {
    const b = child.metadata?.labels?.[labels.build];
    return b && child.metadata?.namespace ? [`${child.metadata.namespace}/${b}`] : [];
  };
  return ctx
    .controller<Build, object>({
      kind: 'Build',
      primary: builds,
      reconciler,
      applier: reconciler.applier,
      writeStatus: customStatusWriter<Build>(clients.custom, group, version, pluralOf('Build'), mergePatch),
      concurrency: 8,
    })
    .watches(buildJobs, buildOf)
    .watches(buildPods, buildOf)
    .forgets(policies, (policy: k8s.V1NetworkPolicy) => (policy.metadata?.name === 'svc-builds' ? [policy.metadata.namespace!] : []));
}
