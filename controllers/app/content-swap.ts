// The apply step of a content swap (machines.ts plans it): each running machine is sent a signed
// order to serve the App's artifact (lib/machine-control.ts, runtime/control.ts) on its control
// port, and marked with what it serves once it says so (the annotations machines.ts reads back:
// the caches, not this process's memory, decide what is current). A machine that cannot fetch or
// verify the artifact keeps serving what it did; it is marked with its reason, which fails the
// rollout (the old revision goes on serving). A machine that cannot be reached, or does not answer,
// is tried again a second later, until the rollout's deadline fails it.
import * as k8s from '@kubernetes/client-node';
import { artifactCredentialTtlSeconds, mintArtifactCredential } from '../../lib/artifacts/credential.js';
import { annotations, containers } from '../../lib/contract.js';
import { ignoreStatus } from '../../lib/kube/client.js';
import type { Logger } from '../../lib/logger.js';
import { signSwapOrder, swapOrderTtlMs } from '../../lib/machine-control.js';
import type { App } from '../../lib/resources/index.js';
import type { KindEvents } from '../frame/events.js';
import type { AppSettings } from './desired.js';
import { machineRestarts, type Swap } from './machines.js';

/** How long a machine has to fetch, verify and switch (its fetch retries transient failures for 30 s). */
const swapTimeoutMs = 45_000;

export class ContentSwapper {
  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly settings: AppSettings,
    private readonly log: Logger,
    private readonly events: KindEvents<App>,
  ) {}

  /**
   * Sends the orders and marks the machines. Returns the machines as marked (what the caches will
   * show next), and whether an order is to be sent again: a machine not reached or that did not
   * answer is tried again shortly, until the rollout's deadline (machines.ts) fails it.
   */
  async apply(app: App, swaps: readonly Swap[], now: Date): Promise<{ marked: k8s.V1Pod[]; retry: boolean }> {
    const results = await Promise.allSettled(swaps.map((s) => (s.markOnly ? this.mark(s, {}) : this.swap(app, s, now))));
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    let retry = false;
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      retry = true;
      const error = r.reason instanceof Error ? r.reason.message : String(r.reason);
      this.log.warn(
        { kind: 'App', namespace, name, pod: swaps[i]!.pod.metadata?.name, digest: swaps[i]!.digest, error },
        'Content swap not done; trying again',
      );
    }
    return { marked: results.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value] : [])), retry };
  }

  private async swap(app: App, s: Swap, now: Date): Promise<k8s.V1Pod | undefined> {
    const { namespace, name } = app.metadata as { namespace: string; name: string };
    const pod = s.pod.metadata!.name!;
    const address = s.pod.status?.podIP;
    const port = s.pod.spec?.containers.find((c) => c.name === containers.machine)?.ports?.find((p) => p.name === 'control')?.containerPort;
    const { control, artifactKey } = this.settings;
    if (!address || !port || !control) throw new Error(`machine ${pod} has no control address yet`);
    const order = signSwapOrder(control.privateKey, {
      pod,
      uid: s.pod.metadata!.uid!,
      digest: s.digest,
      url: s.url,
      ...(artifactKey
        ? { token: mintArtifactCredential(artifactKey, s.digest, new Date(now.getTime() + artifactCredentialTtlSeconds * 1000)) }
        : {}),
      issuedAt: now.getTime(),
      expiresAt: now.getTime() + swapOrderTtlMs,
    });
    const started = Date.now();
    const res = await fetch(`http://${address.includes(':') ? `[${address}]` : address}:${port}/swap`, {
      method: 'POST',
      body: order,
      headers: { 'content-type': 'text/plain' },
      signal: AbortSignal.timeout(swapTimeoutMs),
    });
    const answer = (await res.json().catch(() => ({}))) as { error?: string; how?: string };
    const ms = Date.now() - started;
    if (res.status === 200) {
      this.log.info(
        { kind: 'App', namespace, name, pod, digest: s.digest, deploy: s.deploy, how: answer.how, ms },
        'Machine swapped content',
      );
      return this.mark(s, {
        [annotations.content]: s.digest,
        [annotations.contentRestarts]: String(machineRestarts(s.pod)),
        [annotations.contentFailed]: null,
      });
    }
    if (res.status === 422) {
      const reason = `cannot serve ${s.digest}: ${answer.error ?? 'the machine refused it'}`;
      this.log.warn({ kind: 'App', namespace, name, pod, digest: s.digest, deploy: s.deploy, reason }, 'Machine refused a content swap');
      this.events.record(app, 'Warning', 'SwapFailed', `${pod}: ${reason}`);
      return this.mark(
        { ...s, deploy: undefined },
        {
          [annotations.contentFailed]: JSON.stringify({ digest: s.digest, ...(s.deploy ? { deploy: s.deploy } : {}), reason }),
        },
      );
    }
    throw new Error(`machine ${pod} answered a swap order ${res.status}: ${answer.error ?? ''}`.trim());
  }

  /** Writes `extra` and the deploy the machine serves (when there is one) onto its Pod. */
  private async mark(s: Swap, extra: Record<string, string | null>): Promise<k8s.V1Pod | undefined> {
    const body = { metadata: { annotations: { ...extra, ...(s.deploy ? { [annotations.deploy]: s.deploy } : {}) } } };
    return this.core
      .patchNamespacedPod(
        { namespace: s.pod.metadata!.namespace!, name: s.pod.metadata!.name!, body },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )
      .catch((err: unknown) => {
        ignoreStatus(404)(err);
        return undefined;
      });
  }
}
