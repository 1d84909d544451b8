// Leader election through a coordination.k8s.io Lease: one controllers replica works, the others
// wait and take over when the leader's lease is not renewed within its duration.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { kubeStatus } from '../lib/kube/client.js';
import type { Logger } from '../lib/logger.js';

const durationSeconds = 15;
const renewMs = 5000;

export class LeaderElection {
  readonly identity = `${os.hostname()}_${randomUUID().slice(0, 8)}`;
  private timer: NodeJS.Timeout | undefined;
  private leading = false;

  constructor(
    private readonly api: k8s.CoordinationV1Api,
    private readonly namespace: string,
    private readonly name: string,
    private readonly log: Logger,
  ) {}

  /** Resolves once this replica leads; calls onLost if it ever stops leading. */
  async run(onLost: () => void): Promise<void> {
    for (;;) {
      if (await this.tryAcquire().catch(() => false)) break;
      await new Promise((r) => setTimeout(r, 2000));
    }
    this.leading = true;
    this.log.info({ lease: `${this.namespace}/${this.name}`, identity: this.identity }, 'Became leader');
    this.timer = setInterval(() => {
      this.tryAcquire().then(
        (ok) => {
          if (!ok && this.leading) {
            this.leading = false;
            this.log.error({ identity: this.identity }, 'Lost leadership');
            onLost();
          }
        },
        (err: unknown) => this.log.warn({ err }, 'Lease renewal failed'),
      );
    }, renewMs);
  }

  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (!this.leading) return;
    // Give the lease up at once so a successor need not wait for it to expire.
    const lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace }).catch(() => undefined);
    if (lease?.spec?.holderIdentity === this.identity) {
      lease.spec.holderIdentity = undefined;
      await this.api.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body: lease }).catch(() => undefined);
    }
  }

  private async tryAcquire(): Promise<boolean> {
    const now = new k8s.V1MicroTime();
    let lease: k8s.V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
    } catch (err) {
      if (kubeStatus(err) !== 404) throw err;
      await this.api.createNamespacedLease({
        namespace: this.namespace,
        body: { metadata: { name: this.name }, spec: { holderIdentity: this.identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now } },
      });
      return true;
    }
    const spec = lease.spec ?? {};
    const expired = !spec.renewTime || new Date(spec.renewTime).getTime() + (spec.leaseDurationSeconds ?? durationSeconds) * 1000 < Date.now();
    if (spec.holderIdentity && spec.holderIdentity !== this.identity && !expired) return false;
    const taking = spec.holderIdentity !== this.identity;
    lease.spec = {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: now,
      ...(taking ? { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
    };
    // resourceVersion makes this a compare-and-swap: of two replicas racing, one gets 409.
    await this.api.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body: lease });
    return true;
  }
}
