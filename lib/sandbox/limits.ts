// The resources of a sandbox: what one gets by default (pool members are made with exactly these,
// so only a sandbox asking for others needs a pod of its own) and the most one may ask for.
// Quantities as Kubernetes writes them.

export interface SandboxResources {
  cpu: string;
  memory: string;
  /** The writable home and /tmp, each a memory-backed volume of this size (counted in memory). */
  disk: string;
}

export const defaultResources: Readonly<SandboxResources> = Object.freeze({ cpu: '1', memory: '512Mi', disk: '256Mi' });
export const maxResources: Readonly<SandboxResources> = Object.freeze({ cpu: '2', memory: '2Gi', disk: '2Gi' });
/** What a sandbox pod asks the scheduler for: small, so a pool of them fits a node. */
export const requests = Object.freeze({ cpu: '50m', memory: '64Mi' });

const units: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, m: 0.001 };

/** A quantity in base units (cores, bytes): `500m` → 0.5, `512Mi` → 536870912. */
export function quantity(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|m)?$/.exec(q);
  if (!m) throw new Error(`not a quantity: ${q}`);
  return Number(m[1]) * units[m[2] ?? '']!;
}

/** A sandbox's resources with the defaults filled in. */
export function resourcesOf(spec: Partial<SandboxResources> | undefined): SandboxResources {
  return {
    cpu: spec?.cpu ?? defaultResources.cpu,
    memory: spec?.memory ?? defaultResources.memory,
    disk: spec?.disk ?? defaultResources.disk,
  };
}

export function sameResources(a: SandboxResources, b: SandboxResources): boolean {
  return quantity(a.cpu) === quantity(b.cpu) && quantity(a.memory) === quantity(b.memory) && quantity(a.disk) === quantity(b.disk);
}

/** What exceeds the maximum, named (`cpu 4 > 2`), or undefined. */
export function overLimits(r: SandboxResources): string | undefined {
  const over = (['cpu', 'memory', 'disk'] as const).filter((k) => quantity(r[k]) > quantity(maxResources[k]));
  return over.length ? over.map((k) => `${k} ${r[k]} > ${maxResources[k]}`).join(', ') : undefined;
}
