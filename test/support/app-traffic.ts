// Reaching an app the way an ingress does: through the ready endpoints of its Service's
// EndpointSlices, re-read for every request; and a poller that keeps requesting while something
// changes and records every answer, so a test can say "no request failed".
import * as k8s from '@kubernetes/client-node';
import { kubeConfig } from './kube.js';

const discovery = () => kubeConfig().makeApiClient(k8s.DiscoveryV1Api);

export async function readyAddresses(namespace: string, service: string, api = discovery()): Promise<string[]> {
  const slices = await api.listNamespacedEndpointSlice({ namespace, labelSelector: `kubernetes.io/service-name=${service}` });
  return slices.items
    .flatMap((s) => s.endpoints ?? [])
    .filter((e) => e.conditions?.ready)
    .flatMap((e) => e.addresses);
}

/** GET path on one ready endpoint of the app (port 8080), or undefined when none is ready. */
export async function getFromApp(
  namespace: string,
  app: string,
  path = '/',
  api = discovery(),
): Promise<{ status: number; body: string; address: string } | undefined> {
  const addresses = await readyAddresses(namespace, app, api);
  const address = addresses[Math.floor(Math.random() * addresses.length)];
  if (!address) return undefined;
  const res = await fetch(`http://${address}:8080${path}`, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.text(), address };
}

/**
 * GET path on every ready endpoint of the app: their answer when each says the same with a 200, else
 * undefined (none ready, one failing, or machines of two specs answering during a rollout, which a
 * request to one endpoint picked at random would mix up).
 */
export async function getFromEveryMachine(namespace: string, app: string, path = '/', api = discovery()): Promise<string | undefined> {
  const addresses = await readyAddresses(namespace, app, api);
  if (!addresses.length) return undefined;
  const answers = await Promise.all(
    addresses.map(async (a) => {
      const res = await fetch(`http://${a}:8080${path}`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      return res?.status === 200 ? res.text() : undefined;
    }),
  );
  return answers.every((b) => b !== undefined && b === answers[0]) ? answers[0] : undefined;
}

export interface Sample {
  at: number;
  ok: boolean;
  body?: string;
  error?: string;
}

/** Requests the app continuously until stop(); every answer (or failure) is a sample. */
export class Poller {
  readonly samples: Sample[] = [];
  private running = true;
  private readonly done: Promise<void>;

  /** Stops by itself after maxMs, so a test that fails before stop() does not keep the process alive. */
  constructor(namespace: string, app: string, path = '/', intervalMs = 25, maxMs = 180_000) {
    const api = discovery();
    const until = Date.now() + maxMs;
    this.done = (async () => {
      while (this.running && Date.now() < until) {
        const at = Date.now();
        try {
          const r = await getFromApp(namespace, app, path, api);
          if (!r) this.samples.push({ at, ok: false, error: 'no ready endpoint' });
          else this.samples.push({ at, ok: r.status === 200, body: r.body, ...(r.status === 200 ? {} : { error: `status ${r.status}` }) });
        } catch (err) {
          this.samples.push({
            at,
            ok: false,
            error: err instanceof Error ? `${err.message} ${err.cause instanceof Error ? String(err.cause) : ''}` : String(err),
          });
        }
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    })();
  }

  failures(): Sample[] {
    return this.samples.filter((s) => !s.ok);
  }

  /** Resolves once `n` more samples have been taken (polling on past a change, by count, not by time). */
  async more(n: number): Promise<void> {
    const want = this.samples.length + n;
    while (this.running && this.samples.length < want) await new Promise((r) => setTimeout(r, 10));
  }

  async stop(): Promise<Sample[]> {
    this.running = false;
    await this.done;
    return this.samples;
  }
}
