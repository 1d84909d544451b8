// The controllers' manager: the informers several kinds share, and a controller on the frame
// (controllers/frame/) per kind it owns, each declared by its kind's setup (controller-runtime's
// SetupWithManager): Apps (their machines, Services and NetworkPolicies), account Namespaces (their
// guardrails), Databases, Builds, Sandboxes and the sandbox pool (the sandbox namespace's free pods
// and policies). It works only while it holds the leader Lease (main.ts).
import os from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { group, labels, managers, pluralOf, version } from '../lib/contract.js';
import { EventRecorder } from '../lib/kube/events.js';
import type { Logger } from '../lib/logger.js';
import type { App } from '../lib/resources/index.js';
import { setupAccounts } from './account/setup.js';
import type { AppSettings } from './app/desired.js';
import { setupApp } from './app/setup.js';
import type { BuildSettings } from './build/desired.js';
import { setupBuilds } from './build/setup.js';
import type { DatabaseSettings } from './database/desired.js';
import { setupDatabases } from './database/setup.js';
import type { Controller } from './frame/controller.js';
import { InformerFactory, targets } from './frame/informers.js';
import { Kinds, type AnyController, type MetricWriter } from './frame/setup.js';
import type { SandboxControllerSettings } from './sandbox/settings.js';
import { setupSandboxes } from './sandbox/setup.js';

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

/** The order the controllers start in (the others after, as made). */
const startOrder = ['Namespace', 'App', 'Database', 'Build', 'SandboxPool', 'Sandbox'];

export class Manager {
  private readonly informers: InformerFactory;
  private readonly kinds: Kinds;
  private readonly apps: Controller<App, object>;
  private running = false;

  constructor(
    kc: k8s.KubeConfig,
    settings: AppSettings,
    private readonly log: Logger,
    opts: ManagerOptions = {},
  ) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const clients = {
      core,
      custom: kc.makeApiClient(k8s.CustomObjectsApi),
      networking: kc.makeApiClient(k8s.NetworkingV1Api),
      batch: kc.makeApiClient(k8s.BatchV1Api),
    };
    this.informers = new InformerFactory(kc, log);
    const ours = `${labels.managedBy}=${managers.controllers}`;
    const shared = {
      apps: this.informers.informer(targets.custom<App>(kc, group, version, pluralOf('App'))),
      // What the controllers made (controller-runtime's Owns): one deleted or edited by hand is put back.
      services: this.informers.informer(targets.services(kc, ours)),
      policies: this.informers.informer(targets.networkPolicies(kc, ours)),
    };
    const events = new EventRecorder(core, managers.controllers, os.hostname(), log);
    this.kinds = new Kinds(log, opts.resyncMs);
    const ctx = this.kinds.context({ kc, clients, informers: this.informers, shared, events });

    // The kinds, in the order /metrics lists them.
    this.apps = setupApp(ctx, settings, { databases: opts.databases !== undefined });
    setupAccounts(ctx, { registry: settings.images?.platformRegistry, sandboxNamespace: opts.sandboxes?.pod.namespace });
    if (opts.databases) setupDatabases(ctx, opts.databases);
    if (opts.builds) setupBuilds(ctx, opts.builds);
    if (opts.sandboxes) setupSandboxes(ctx, opts.sandboxes);
  }

  private ordered(): AnyController[] {
    const rank = (c: AnyController) => {
      const i = startOrder.indexOf(c.kind);
      return i === -1 ? startOrder.length : i;
    };
    return [...this.kinds.controllers].sort((a, b) => rank(a) - rank(b));
  }

  async start(): Promise<void> {
    for (const work of this.kinds.beforeStart) await work();
    await this.informers.start();
    for (const controller of this.ordered()) controller.start();
    this.running = true;
    this.log.info({ apps: this.apps.stats().waiting }, 'Controllers started');
  }

  /** Prometheus text: each controller's work and the kinds' own (the sandbox pool's depth); controllers/metrics.ts serves it. */
  metrics(): string {
    const lines: string[] = [];
    const metric: MetricWriter = (name, help, type, samples) => {
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
    const stats = this.kinds.controllers.map((c) => [{ kind: c.kind }, c.stats()] as const);
    metric(
      'svc_controller_reconciles_total',
      'Reconciles done, by kind.',
      'counter',
      stats.map(([kind, st]) => [kind, st.reconciles]),
    );
    metric(
      'svc_controller_status_writes_total',
      'Status writes, by kind.',
      'counter',
      stats.map(([kind, st]) => [kind, st.statusWrites]),
    );
    metric(
      'svc_controller_status_conflicts_total',
      'Status writes refused as stale (reconciled again), by kind.',
      'counter',
      stats.map(([kind, st]) => [kind, st.conflicts]),
    );
    metric(
      'svc_controller_queue_waiting',
      'Keys waiting in the work queue, by kind.',
      'gauge',
      stats.map(([kind, st]) => [kind, st.waiting]),
    );
    metric(
      'svc_controller_queue_failing',
      'Keys whose last reconcile failed (retried with back-off), by kind.',
      'gauge',
      stats.map(([kind, st]) => [kind, st.failing]),
    );
    for (const write of this.kinds.metrics) write(metric);
    return `${lines.join('\n')}\n`;
  }

  async stop(): Promise<void> {
    this.running = false;
    for (const controller of this.ordered().reverse()) controller.stop();
    await this.informers.stop();
    await Promise.all(this.kinds.stops.map((stop) => stop()));
  }
}
