// GET /runtimes: what the sandbox image really has, as the controllers recorded it from a pool
// member's agent (lib/sandbox/runtimes-record.ts). Read from the apiserver at most every 10 s.
import type * as k8s from '@kubernetes/client-node';
import { kubeStatus } from '../../lib/kube/client.js';
import { runtimesConfigMap, runtimesKey } from '../../lib/sandbox/runtimes-record.js';
import { runtimeCatalogue, runtimeNamed, type InstalledRuntime } from '../../lib/sandbox/runtimes.js';
import { DomainError } from '../../lib/errors.js';

export class RuntimeList {
  private cached: { at: number; runtimes: InstalledRuntime[] | undefined } | undefined;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly namespace: string,
    private readonly ttlMs = 10_000,
  ) {}

  /** The installed runtimes, or undefined while no sandbox pod has reported them yet. */
  async installed(): Promise<InstalledRuntime[] | undefined> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < this.ttlMs && this.cached.runtimes) return this.cached.runtimes;
    let runtimes: InstalledRuntime[] | undefined;
    try {
      const cm = await this.core.readNamespacedConfigMap({ name: runtimesConfigMap, namespace: this.namespace });
      const raw = cm.data?.[runtimesKey];
      runtimes = raw ? (JSON.parse(raw) as InstalledRuntime[]) : undefined;
    } catch (err) {
      if (kubeStatus(err) !== 404) throw err;
    }
    this.cached = { at: now, runtimes };
    return runtimes;
  }

  /** The list GET /runtimes answers: 503 until the first sandbox pod has reported. */
  async list(): Promise<InstalledRuntime[]> {
    const runtimes = await this.installed();
    if (!runtimes)
      // Answered 503 with Retry-After: 5 (api/middleware/errors.ts).
      throw new DomainError(
        'unavailable',
        "the sandbox runtimes are not known yet: no sandbox pod has started (the controllers' log says why)",
      );
    return runtimes;
  }

  /**
   * The canonical name of a requested runtime (aliases accepted), or a 400 naming the known ones.
   * Before the first report, the catalogue stands in (the image holds every runtime of it).
   */
  async resolve(name: string): Promise<string> {
    const known = (await this.installed())?.map((r) => r.name) ?? runtimeCatalogue.map((r) => r.name);
    const def = runtimeNamed(name);
    if (!def || !known.includes(def.name))
      throw new DomainError('invalid', `unknown runtime "${name}"; known runtimes: ${known.join(', ')}`);
    return def.name;
  }
}
