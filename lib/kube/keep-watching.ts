// @kubernetes/client-node informers relist by themselves on 410 Gone but stop on any other error.
// This restarts one with back-off (1 s doubling to 30 s) and says so loudly while it stays down.
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../logger.js';

/** The part of an informer this needs. */
export type Restartable<T extends k8s.KubernetesObject = k8s.KubernetesObject> = Pick<k8s.ListWatch<T>, 'on' | 'start'>;

/**
 * Whether the informer was stopped on purpose. ListWatch.stop() aborts its request, which it then
 * reports as an error like any other; restarting on that would start a watch nobody stops again
 * (it kept a test process alive after its last test). `stopped` is ListWatch's own flag.
 */
function stoppedOnPurpose(informer: object): boolean {
  return (informer as { stopped?: unknown }).stopped === true;
}

export function keepWatching<T extends k8s.KubernetesObject>(informer: Restartable<T>, what: string, log: Logger): void {
  let delay = 1000;
  let downSince: number | undefined;
  informer.on('connect', () => {
    if (downSince !== undefined) log.info({ watch: what, downMs: Date.now() - downSince }, 'Watch resumed');
    downSince = undefined;
    delay = 1000;
  });
  informer.on('error', (err: unknown) => {
    if (stoppedOnPurpose(informer)) return;
    downSince ??= Date.now();
    const downMs = Date.now() - downSince;
    (downMs > 30_000 ? log.error : log.warn).call(log, { err, watch: what, downMs, retryInMs: delay }, 'Watch failed; restarting it');
    setTimeout(() => {
      if (!stoppedOnPurpose(informer)) informer.start().catch(() => undefined);
    }, delay).unref();
    delay = Math.min(delay * 2, 30_000);
  });
}
