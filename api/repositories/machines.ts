// An app's machines as the API reads them: the Pods the App controller made (by their label), the
// nodes they may move to, a node's resource summary (kubelet stats through the apiserver) and a
// machine's log stream (as `kubectl logs`). The one place the API reads Pods, nodes and logs; a
// cluster that cannot be asked right now is a DomainError('unavailable'), never a raw client error.
import type { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { labels } from '../../lib/contract.js';
import { DomainError } from '../../lib/errors.js';

export interface LogOptions {
  follow: boolean;
  timestamps: boolean;
  tailLines?: number;
  sinceTime?: string;
}

export class MachineRepository {
  private readonly core: k8s.CoreV1Api;
  private readonly logClient: k8s.Log;

  constructor(kc: k8s.KubeConfig) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.logClient = new k8s.Log(kc);
  }

  /** The machine Pods of app `app` in `namespace` (of any App of that name: filter by owner uid where it matters). */
  async list(namespace: string, app: string): Promise<k8s.V1Pod[]> {
    try {
      return (await this.core.listNamespacedPod({ namespace, labelSelector: `${labels.app}=${app}` })).items;
    } catch (err) {
      throw new DomainError('unavailable', 'cannot list the machines of the app right now; retry later', err);
    }
  }

  /** Schedulable nodes whose Ready condition is True, by name. */
  async readyNodes(): Promise<string[]> {
    let nodes: k8s.V1Node[];
    try {
      nodes = (await this.core.listNode()).items;
    } catch (err) {
      throw new DomainError('unavailable', 'cannot list the nodes right now; retry later', err);
    }
    return nodes
      .filter((n) => !n.spec?.unschedulable && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
      .map((n) => n.metadata!.name!)
      .sort();
  }

  /** The kubelet's stats summary of `node` (the Summary API), parsed. */
  async nodeSummary(node: string): Promise<unknown> {
    const body: unknown = await this.core.connectGetNodeProxyWithPath({ name: node, path: 'stats/summary' });
    return typeof body === 'string' ? JSON.parse(body) : body;
  }

  /** Streams a container's log into `sink`; the controller aborts it. */
  logs(namespace: string, pod: string, container: string, sink: Writable, opts: LogOptions): Promise<AbortController> {
    return this.logClient.log(namespace, pod, container, sink, opts);
  }
}
