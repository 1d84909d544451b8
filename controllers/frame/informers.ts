// One shared informer per kind (and label selector), as controller-runtime's cache: every
// controller that watches Pods with the same selector reads the same cache and watch. Informers
// restart themselves on errors (lib/kube/keep-watching.ts); start() resolves once every cache has
// listed, so no reconcile reads an empty cache.
import * as k8s from '@kubernetes/client-node';
import { keepWatching } from '../../lib/kube/keep-watching.js';
import type { Logger } from '../../lib/logger.js';

/** What to watch: the collection's path, how to list it, and the label selector bounding it. */
export interface WatchTarget<T extends k8s.KubernetesObject> {
  /** Shown in logs (`machine pods`). */
  readonly what: string;
  /** The cluster-wide collection, `/api/v1/pods` or `/apis/<group>/<version>/<plural>`. */
  readonly path: string;
  readonly list: (labelSelector: string | undefined) => Promise<k8s.KubernetesListObject<T>>;
  readonly labelSelector?: string;
}

export class InformerFactory {
  private readonly informers = new Map<string, k8s.ListWatch<k8s.KubernetesObject>>();
  private started = false;

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly log: Logger,
  ) {}

  /** The informer of `target`, made on first use; every caller of the same target shares it. */
  informer<T extends k8s.KubernetesObject>(target: WatchTarget<T>): k8s.ListWatch<T> {
    const key = `${target.path}?${target.labelSelector ?? ''}`;
    let informer = this.informers.get(key) as k8s.ListWatch<T> | undefined;
    if (!informer) {
      if (this.started) throw new Error(`informer for ${target.what} asked for after start()`);
      informer = new k8s.ListWatch<T>(
        target.path,
        new k8s.Watch(this.kc),
        () => target.list(target.labelSelector),
        false,
        target.labelSelector,
      );
      keepWatching(informer, target.what, this.log);
      this.informers.set(key, informer);
    }
    return informer;
  }

  /** Lists and watches every informer asked for; resolves once all caches are filled. */
  async start(): Promise<void> {
    this.started = true;
    await Promise.all([...this.informers.values()].map((i) => i.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }
}

/** Typed watch targets of the kinds the controllers use. */
export const targets = {
  pods: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1Pod> => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    return {
      what: `pods (${labelSelector})`,
      path: '/api/v1/pods',
      labelSelector,
      list: (s) => core.listPodForAllNamespaces(s ? { labelSelector: s } : {}),
    };
  },
  claims: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1PersistentVolumeClaim> => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    return {
      what: `volume claims (${labelSelector})`,
      path: '/api/v1/persistentvolumeclaims',
      labelSelector,
      list: (s) => core.listPersistentVolumeClaimForAllNamespaces(s ? { labelSelector: s } : {}),
    };
  },
  services: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1Service> => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    return {
      what: `services (${labelSelector})`,
      path: '/api/v1/services',
      labelSelector,
      list: (s) => core.listServiceForAllNamespaces(s ? { labelSelector: s } : {}),
    };
  },
  endpointSlices: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1EndpointSlice> => {
    const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
    return {
      what: `endpoint slices (${labelSelector})`,
      path: '/apis/discovery.k8s.io/v1/endpointslices',
      labelSelector,
      list: (s) => discovery.listEndpointSliceForAllNamespaces(s ? { labelSelector: s } : {}),
    };
  },
  namespaces: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1Namespace> => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    return {
      what: `namespaces (${labelSelector})`,
      path: '/api/v1/namespaces',
      labelSelector,
      list: (s) => core.listNamespace(s ? { labelSelector: s } : {}),
    };
  },
  networkPolicies: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1NetworkPolicy> => {
    const net = kc.makeApiClient(k8s.NetworkingV1Api);
    return {
      what: `network policies (${labelSelector})`,
      path: '/apis/networking.k8s.io/v1/networkpolicies',
      labelSelector,
      list: (s) => net.listNetworkPolicyForAllNamespaces(s ? { labelSelector: s } : {}),
    };
  },
  cronJobs: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1CronJob> => {
    const batch = kc.makeApiClient(k8s.BatchV1Api);
    return {
      what: `cron jobs (${labelSelector})`,
      path: '/apis/batch/v1/cronjobs',
      labelSelector,
      list: (s) => batch.listCronJobForAllNamespaces(s ? { labelSelector: s } : {}),
    };
  },
  jobs: (kc: k8s.KubeConfig, labelSelector: string): WatchTarget<k8s.V1Job> => {
    const batch = kc.makeApiClient(k8s.BatchV1Api);
    return {
      what: `jobs (${labelSelector})`,
      path: '/apis/batch/v1/jobs',
      labelSelector,
      list: (s) => batch.listJobForAllNamespaces(s ? { labelSelector: s } : {}),
    };
  },
  custom: <T extends k8s.KubernetesObject>(kc: k8s.KubeConfig, group: string, version: string, plural: string): WatchTarget<T> => {
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    return {
      what: plural,
      path: `/apis/${group}/${version}/${plural}`,
      list: (s) =>
        custom.listClusterCustomObject({ group, version, plural, ...(s ? { labelSelector: s } : {}) }) as Promise<
          k8s.KubernetesListObject<T>
        >,
    };
  },
};
