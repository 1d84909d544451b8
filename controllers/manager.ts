// The controllers' manager: informers (Apps, the Pods that are their machines, their Services), a
// keyed work queue, and the App reconciler; it works only while it holds the leader Lease.
// Reconcilers read from the informers' caches, not from the apiserver per change.
import * as k8s from '@kubernetes/client-node';
import { keepWatching } from '../lib/kube/keep-watching.js';
import type { Logger } from '../lib/logger.js';
import { group, version, type App } from '../lib/resources/index.js';
import { labels, managerName, type AppSettings } from './app/desired.js';
import { AppReconciler } from './app/reconciler.js';
import { accountLabel } from './account/desired.js';
import { AccountReconciler } from './account/reconciler.js';
import { WorkQueue } from './queue.js';
import { EventRecorder } from '../lib/kube/events.js';
import os from 'node:os';

const key = (namespace: string, name: string) => `${namespace}/${name}`;

export class Manager {
  private readonly apps: k8s.ListWatch<App>;
  private readonly pods: k8s.ListWatch<k8s.V1Pod>;
  private readonly services: k8s.ListWatch<k8s.V1Service>;
  private readonly namespaces: k8s.ListWatch<k8s.V1Namespace>;
  private readonly policies: k8s.ListWatch<k8s.V1NetworkPolicy>;
  private readonly queue: WorkQueue;
  private readonly accountQueue: WorkQueue;

  constructor(kc: k8s.KubeConfig, settings: AppSettings, private readonly log: Logger) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.apps = new k8s.ListWatch<App>(
      `/apis/${group}/${version}/apps`,
      new k8s.Watch(kc),
      () => custom.listClusterCustomObject({ group, version, plural: 'apps' }) as Promise<k8s.KubernetesListObject<App>>,
      false,
    );
    // Only the machines: a label selector bounds the cache to pods the App controller made.
    this.pods = new k8s.ListWatch<k8s.V1Pod>(
      '/api/v1/pods',
      new k8s.Watch(kc),
      () => core.listPodForAllNamespaces({ labelSelector: labels.app }),
      false,
      labels.app,
    );
    // The Services it made (controller-runtime's Owns): one deleted or edited by hand is put back.
    const ours = `${labels.managedBy}=${managerName}`;
    this.services = new k8s.ListWatch<k8s.V1Service>(
      '/api/v1/services',
      new k8s.Watch(kc),
      () => core.listServiceForAllNamespaces({ labelSelector: ours }),
      false,
      ours,
    );
    // Account namespaces, and the NetworkPolicies the controllers made in them (deny-all, each App's).
    this.namespaces = new k8s.ListWatch<k8s.V1Namespace>(
      '/api/v1/namespaces',
      new k8s.Watch(kc),
      () => core.listNamespace({ labelSelector: accountLabel }),
      false,
      accountLabel,
    );
    const networking = kc.makeApiClient(k8s.NetworkingV1Api);
    this.policies = new k8s.ListWatch<k8s.V1NetworkPolicy>(
      '/apis/networking.k8s.io/v1/networkpolicies',
      new k8s.Watch(kc),
      () => networking.listNetworkPolicyForAllNamespaces({ labelSelector: ours }),
      false,
      ours,
    );
    const accounts = new AccountReconciler(core, networking, log);
    this.accountQueue = new WorkQueue(
      async (name) => {
        const ns = this.namespaces.get(name);
        return ns ? accounts.reconcile(ns) : {};
      },
      (name, err, retryMs) => log.warn({ err, kind: 'Namespace', key: name, retryMs }, 'Reconcile failed; retrying'),
    );
    for (const verb of ['add', 'update'] as const) this.namespaces.on(verb, (ns: k8s.V1Namespace) => this.accountQueue.add(ns.metadata!.name!));
    this.namespaces.on('delete', (ns: k8s.V1Namespace) => accounts.forget(ns.metadata!.name!));
    const events = new EventRecorder(core, managerName, os.hostname(), log);
    const observed = {
      podsOf: (ns: string, app: string) => this.pods.list(ns).filter((p) => p.metadata?.labels?.[labels.app] === app),
      serviceOf: (ns: string, app: string) => this.services.get(app, ns),
    };
    const reconciler = new AppReconciler(core, custom, networking, observed, settings, log, events);
    this.queue = new WorkQueue(
      async (k) => {
        const [namespace, name] = k.split('/') as [string, string];
        const app = this.apps.get(name, namespace);
        return app ? reconciler.reconcile(app) : {};
      },
      (k, err, retryMs) => log.warn({ err, kind: 'App', key: k, retryMs }, 'Reconcile failed; retrying'),
      // Reconciles mostly wait on the apiserver, not on CPU (bench/reconcile): more in flight helps.
      16,
    );
    const enqueueApp = (app: App) => this.queue.add(key(app.metadata.namespace!, app.metadata.name!));
    // A change to a machine is a change to its App (korifi's buildToApp, here podToApp).
    const enqueueOwner = (child: k8s.V1Pod | k8s.V1Service) => {
      const app = child.metadata?.labels?.[labels.app];
      if (app && child.metadata?.namespace) this.queue.add(key(child.metadata.namespace, app));
    };
    // Before the enqueueing handlers: the reconcile that follows must not trust the old apply.
    this.services.on('delete', (svc: k8s.V1Service) => {
      const owner = svc.metadata?.ownerReferences?.find((o) => o.kind === 'App');
      if (owner) reconciler.serviceGone(owner.uid);
    });
    for (const verb of ['add', 'update', 'delete'] as const) {
      this.apps.on(verb, enqueueApp);
      this.pods.on(verb, enqueueOwner);
      this.services.on(verb, enqueueOwner);
    }
    this.apps.on('delete', (app: App) => reconciler.forget(app.metadata.uid!));
    // A policy deleted by hand is put back: the account's deny-all, or an App's (with its Service).
    this.policies.on('delete', (policy: k8s.V1NetworkPolicy) => {
      const namespace = policy.metadata!.namespace!;
      const owner = policy.metadata?.ownerReferences?.find((o) => o.kind === 'App');
      if (owner) {
        reconciler.serviceGone(owner.uid);
        this.queue.add(key(namespace, owner.name));
      } else {
        accounts.forget(namespace);
        this.accountQueue.add(namespace);
      }
    });
    keepWatching(this.apps, 'apps', log);
    keepWatching(this.pods, 'machine pods', log);
    keepWatching(this.services, 'app services', log);
    keepWatching(this.namespaces, 'account namespaces', log);
    keepWatching(this.policies, 'network policies', log);
  }

  async start(): Promise<void> {
    await this.pods.start();
    await this.services.start();
    await this.policies.start();
    await this.namespaces.start();
    await this.apps.start();
    this.log.info({ apps: this.apps.list().length }, 'Controllers started');
  }

  async stop(): Promise<void> {
    this.queue.stop();
    this.accountQueue.stop();
    await this.namespaces.stop();
    await this.policies.stop();
    await this.apps.stop();
    await this.pods.stop();
    await this.services.stop();
  }
}
