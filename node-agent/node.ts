// A Node as a kubelet keeps it: registered with capacity, addresses and its kubelet endpoint,
// its Lease in kube-node-lease renewed every 10 s (the heartbeat the node lifecycle controller
// watches), and its Ready condition refreshed. When the agent stops, renewals stop and the
// controller-manager marks the node NotReady, as on a cluster.
import os from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { kubeStatus } from '../lib/kube/client.js';
import type { Logger } from '../lib/logger.js';

export const leaseDurationSeconds = 40;
const renewIntervalMs = 10_000;
const statusIntervalMs = 30_000;

export interface NodeIdentity {
  name: string;
  /** The node's InternalIP, where its kubelet endpoint is reached. */
  address: string;
  kubeletPort: number;
  core: k8s.CoreV1Api;
  coordination: k8s.CoordinationV1Api;
}

export function desiredNode(n: NodeIdentity): k8s.V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: n.name,
      labels: {
        'kubernetes.io/hostname': n.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch,
        'svc.dev/node-agent': 'true',
      },
    },
  };
}

export function nodeStatus(n: NodeIdentity, now = new Date()): k8s.V1NodeStatus {
  const resources = { cpu: String(os.cpus().length), memory: `${Math.floor(os.totalmem() / 1024)}Ki`, pods: '250' };
  return {
    capacity: resources,
    allocatable: resources,
    addresses: [{ type: 'InternalIP', address: n.address }],
    daemonEndpoints: { kubeletEndpoint: { Port: n.kubeletPort } },
    nodeInfo: {
      architecture: process.arch === 'x64' ? 'amd64' : process.arch,
      bootID: '',
      containerRuntimeVersion: 'node-agent://1',
      kernelVersion: os.release(),
      kubeProxyVersion: '',
      // Semver, as tools that compare kubelet versions expect; the suffix says what it really is.
      kubeletVersion: `${process.env.K8S_VERSION ?? 'v1.36.3'}-node-agent`,
      machineID: '',
      operatingSystem: 'linux',
      osImage: `node-agent on ${os.type()}`,
      systemUUID: '',
    },
    conditions: [
      { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'node-agent is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now },
      { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: '', lastHeartbeatTime: now, lastTransitionTime: now },
      { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: '', lastHeartbeatTime: now, lastTransitionTime: now },
      { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: '', lastHeartbeatTime: now, lastTransitionTime: now },
    ],
  };
}

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

export class NodeHeartbeat {
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly n: NodeIdentity,
    private readonly log: Logger,
  ) {}

  async register(): Promise<void> {
    try {
      await this.n.core.createNode({ body: desiredNode(this.n) });
      this.log.info({ node: this.n.name }, 'Registered node');
    } catch (err) {
      if (kubeStatus(err) !== 409) throw err;
      await this.n.core.patchNode({ name: this.n.name, body: { metadata: desiredNode(this.n).metadata } }, mergePatch);
    }
    await this.postStatus();
    await this.renewLease();
    this.timers.push(setInterval(() => void this.renewLease().catch((err: unknown) => this.log.warn({ err, node: this.n.name }, 'Lease renewal failed')), renewIntervalMs));
    this.timers.push(setInterval(() => void this.postStatus().catch((err: unknown) => this.log.warn({ err, node: this.n.name }, 'Node status update failed')), statusIntervalMs));
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  private async postStatus(): Promise<void> {
    const status = nodeStatus(this.n);
    // Keep transition times of conditions that did not change.
    const current = await this.n.core.readNode({ name: this.n.name });
    for (const c of status.conditions ?? []) {
      const before = current.status?.conditions?.find((x) => x.type === c.type);
      if (before?.status === c.status && before.lastTransitionTime) c.lastTransitionTime = before.lastTransitionTime;
    }
    await this.n.core.patchNodeStatus({ name: this.n.name, body: { status } }, mergePatch);
  }

  private async renewLease(): Promise<void> {
    const body: k8s.V1Lease = {
      metadata: { name: this.n.name, namespace: 'kube-node-lease' },
      spec: { holderIdentity: this.n.name, leaseDurationSeconds, renewTime: new k8s.V1MicroTime() },
    };
    try {
      await this.n.coordination.replaceNamespacedLease({ name: this.n.name, namespace: 'kube-node-lease', body: await this.withVersion(body) });
    } catch (err) {
      if (kubeStatus(err) !== 404) throw err;
      await this.n.coordination.createNamespacedLease({ namespace: 'kube-node-lease', body });
    }
  }

  private async withVersion(body: k8s.V1Lease): Promise<k8s.V1Lease> {
    const current = await this.n.coordination.readNamespacedLease({ name: this.n.name, namespace: 'kube-node-lease' });
    return { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } };
  }
}
