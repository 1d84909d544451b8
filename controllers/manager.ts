// The controllers' manager: one shared informer per kind it reads, and a controller on the frame
// (controllers/frame/) per kind it owns: Apps (their machines, Services and NetworkPolicies) and
// account Namespaces (their guardrails). It works only while it holds the leader Lease (main.ts).
import os from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { group, labels, managers, pluralOf, version } from '../lib/contract.js';
import { accountLabel } from '../lib/accounts.js';
import { mergePatch } from '../lib/kube/client.js';
import { EventRecorder } from '../lib/kube/events.js';
import type { Logger } from '../lib/logger.js';
import type { App } from '../lib/resources/index.js';
import { AccountReconciler } from './account/reconciler.js';
import type { AppSettings } from './app/desired.js';
import { AppReconciler } from './app/reconciler.js';
import { Controller, customStatusWriter } from './frame/controller.js';
import { InformerFactory, targets } from './frame/informers.js';

export interface ManagerOptions {
  /** How often every object is reconciled again, changed or not (controllers/frame/controller.ts). */
  resyncMs?: number;
}

export class Manager {
  private readonly informers: InformerFactory;
  readonly apps: Controller<App, object>;
  readonly accounts: Controller<k8s.V1Namespace, never>;

  constructor(kc: k8s.KubeConfig, settings: AppSettings, private readonly log: Logger, opts: ManagerOptions = {}) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
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

    const events = new EventRecorder(core, managers.controllers, os.hostname(), log);
    const appReconciler = new AppReconciler(
      core,
      custom,
      networking,
      {
        podsOf: (ns, app) => pods.list(ns).filter((p) => p.metadata?.labels?.[labels.app] === app),
        serviceOf: (ns, app) => services.get(app, ns),
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
    this.apps.watches(pods, appOf).watches(services, appOf).watches(policies, appOf);

    const accountReconciler = new AccountReconciler(core, networking, log);
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
      accountReconciler.forgetNamespace(policy.metadata!.namespace!);
      this.accounts.add(policy.metadata!.namespace!);
    });
  }

  async start(): Promise<void> {
    await this.informers.start();
    this.accounts.start();
    this.apps.start();
    this.log.info({ apps: this.apps.stats().waiting }, 'Controllers started');
  }

  async stop(): Promise<void> {
    this.apps.stop();
    this.accounts.stop();
    await this.informers.stop();
  }
}
