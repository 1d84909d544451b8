// What a kind's setup gets from the manager (controller-runtime's SetupWithManager): the API
// clients, the shared informer factory and the informers several kinds read, the Event recorder,
// and a way to make its controllers so that the manager starts, stops and counts them with the
// others. A kind's setup (controllers/<kind>/setup.ts) declares what it watches: its own informer,
// what it owns, and what maps back to one of its keys.
import type * as k8s from '@kubernetes/client-node';
import type { EventRecorder } from '../../lib/kube/events.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { Controller, type ControllerOptions } from './controller.js';
import type { InformerFactory } from './informers.js';

export interface Clients {
  core: k8s.CoreV1Api;
  custom: k8s.CustomObjectsApi;
  networking: k8s.NetworkingV1Api;
  batch: k8s.BatchV1Api;
}

/** The informers more than one kind reads (every one of them is the factory's, shared). */
export interface SharedInformers {
  apps: k8s.ListWatch<App>;
  /** Services the controllers made (managed-by label). */
  services: k8s.ListWatch<k8s.V1Service>;
  /** NetworkPolicies the controllers made (managed-by label). */
  policies: k8s.ListWatch<k8s.V1NetworkPolicy>;
}

/** Writes one Prometheus metric family. */
export type MetricWriter = (
  name: string,
  help: string,
  type: 'gauge' | 'counter',
  samples: Array<[Record<string, string>, number]>,
) => void;

type WithStatus = k8s.KubernetesObject & { status?: object };

/** Any kind's controller, as the manager starts, stops and counts them. */
export type AnyController = Controller<WithStatus, object>;

export interface SetupContext {
  readonly kc: k8s.KubeConfig;
  readonly clients: Clients;
  readonly informers: InformerFactory;
  readonly shared: SharedInformers;
  /** Where the kinds' Events go (controllers/frame/events.ts builds their references). */
  readonly events: EventRecorder;
  readonly log: Logger;
  /** A controller on the frame, with the manager's log and resync, started, stopped and counted with the others. */
  controller<T extends WithStatus, S extends object>(opts: Omit<ControllerOptions<T, S>, 'log' | 'resyncMs'>): Controller<T, S>;
  /** Work before the informers start (a namespace the kind's objects live in). */
  beforeStart(work: () => Promise<void>): void;
  /** What to stop with the manager, beside the controllers and the factory's informers (one started later). */
  onStop(stop: () => Promise<void>): void;
  /** The kind's own metrics, after the controllers'. */
  metrics(write: (metric: MetricWriter) => void): void;
}

/** The controllers a manager made through its setup context, and the hooks the kinds gave it. */
export class Kinds {
  readonly controllers: AnyController[] = [];
  readonly beforeStart: Array<() => Promise<void>> = [];
  readonly stops: Array<() => Promise<void>> = [];
  readonly metrics: Array<(metric: MetricWriter) => void> = [];

  constructor(
    private readonly log: Logger,
    private readonly resyncMs: number | undefined,
  ) {}

  context(base: Pick<SetupContext, 'kc' | 'clients' | 'informers' | 'shared' | 'events'>): SetupContext {
    return {
      ...base,
      log: this.log,
      controller: <T extends WithStatus, S extends object>(opts: Omit<ControllerOptions<T, S>, 'log' | 'resyncMs'>) => {
        const controller = new Controller<T, S>({
          ...opts,
          log: this.log,
          ...(this.resyncMs !== undefined ? { resyncMs: this.resyncMs } : {}),
        });
        this.controllers.push(controller as unknown as AnyController);
        return controller;
      },
      beforeStart: (work) => void this.beforeStart.push(work),
      onStop: (stop) => void this.stops.push(stop),
      metrics: (write) => void this.metrics.push(write),
    };
  }
}
