// Leader election through a coordination.k8s.io Lease: of the replicas campaigning for one Lease,
// one leads; the others wait and take over when the leader gives the Lease up (release) or does not
// renew it within its duration. The controllers campaign for kube-system/svc-controllers, the API's
// mail sender for kube-system/svc-mailer.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../logger.js';
import { kubeStatus } from './client.js';

export interface LeaseTiming {
  /** How long the Lease holds without a renewal. */
  readonly durationSeconds: number;
  /** How often the leader renews it. */
  readonly renewMs: number;
  /** How often a follower tries to take it. */
  readonly retryMs: number;
}

export const defaultLeaseTiming: LeaseTiming = { durationSeconds: 15, renewMs: 5000, retryMs: 2000 };

export class LeaderElection {
  readonly identity = `${os.hostname()}_${randomUUID().slice(0, 8)}`;
  private readonly timing: LeaseTiming;
  private renewTimer: NodeJS.Timeout | undefined;
  private leading = false;
  /** performance.now() of the last acquisition or renewal the apiserver accepted. */
  private renewedAt = 0;
  private released = false;
  private wakeCampaign: (() => void) | undefined;
  /** The Lease call in flight, so release() acts after it rather than racing it. */
  private inFlight: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly api: k8s.CoordinationV1Api,
    private readonly namespace: string,
    private readonly name: string,
    private readonly log: Logger,
    timing: Partial<LeaseTiming> = {},
  ) {
    this.timing = { ...defaultLeaseTiming, ...timing };
  }

  /**
   * Whether this replica may act as the leader now. Besides holding the Lease, its last renewal must
   * be younger than the Lease's duration: past that another replica may have taken the Lease over
   * although no failed renewal has said so yet (the apiserver being unreachable, say).
   */
  get isLeader(): boolean {
    return this.leading && performance.now() - this.renewedAt < this.timing.durationSeconds * 1000;
  }

  /**
   * Campaigns until this replica leads (resolves true) or release() is called first (resolves false).
   * While leading it renews the Lease; when another replica takes it, renewal stops and onLost is
   * called once. A replica that wants to lead again after that calls run again.
   */
  async run(onLost: () => void): Promise<boolean> {
    for (;;) {
      if (this.released) return false;
      if (await this.renew().catch(() => false)) break;
      if (this.released) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.timing.retryMs);
        this.wakeCampaign = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeCampaign = undefined;
    }
    if (this.released) return false; // release() ran during the winning call and gave the Lease back
    this.leading = true;
    this.log.info({ lease: `${this.namespace}/${this.name}`, identity: this.identity }, 'Became leader');
    this.scheduleRenewal(onLost);
    return true;
  }

  /** Stops campaigning and renewing, and gives the Lease up at once if this replica holds it. */
  async release(): Promise<void> {
    this.released = true;
    this.leading = false;
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.wakeCampaign?.();
    await this.inFlight;
    // Give the lease up at once so a successor need not wait for it to expire.
    const lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace }).catch(() => undefined);
    if (lease?.spec?.holderIdentity === this.identity) {
      lease.spec.holderIdentity = undefined;
      await this.api.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body: lease }).catch(() => undefined);
    }
  }

  private scheduleRenewal(onLost: () => void): void {
    // A timeout chain, not an interval: a slow apiserver never has two renewals in flight.
    this.renewTimer = setTimeout(() => {
      this.renew().then(
        (ok) => {
          if (this.released) return;
          if (ok) return this.scheduleRenewal(onLost);
          this.leading = false;
          this.log.error({ lease: `${this.namespace}/${this.name}`, identity: this.identity }, 'Lost leadership');
          onLost();
        },
        (err: unknown) => {
          this.log.warn({ err, lease: `${this.namespace}/${this.name}` }, 'Lease renewal failed');
          if (!this.released) this.scheduleRenewal(onLost);
        },
      );
    }, this.timing.renewMs);
  }

  private renew(): Promise<boolean> {
    const call = this.tryAcquire();
    this.inFlight = call.catch(() => undefined);
    return call;
  }

  private async tryAcquire(): Promise<boolean> {
    const started = performance.now();
    const now = new k8s.V1MicroTime();
    let lease: k8s.V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
    } catch (err) {
      if (kubeStatus(err) !== 404) throw err;
      await this.api.createNamespacedLease({
        namespace: this.namespace,
        body: {
          metadata: { name: this.name },
          spec: { holderIdentity: this.identity, leaseDurationSeconds: this.timing.durationSeconds, acquireTime: now, renewTime: now },
        },
      });
      this.renewedAt = started;
      return true;
    }
    const spec = lease.spec ?? {};
    const expired =
      !spec.renewTime ||
      new Date(spec.renewTime).getTime() + (spec.leaseDurationSeconds ?? this.timing.durationSeconds) * 1000 < Date.now();
    if (spec.holderIdentity && spec.holderIdentity !== this.identity && !expired) return false;
    const taking = spec.holderIdentity !== this.identity;
    lease.spec = {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: this.timing.durationSeconds,
      renewTime: now,
      ...(taking ? { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
    };
    // resourceVersion makes this a compare-and-swap: of two replicas racing, one gets 409.
    await this.api.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body: lease });
    // Counted from before the read: the Lease's clock may have started any time after that.
    this.renewedAt = started;
    return true;
  }
}
