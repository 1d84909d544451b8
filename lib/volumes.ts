// An app's volumes, named once for the controllers (which make a claim per machine and volume) and
// the API (which lists and deletes them): docs/decisions/0018-volumes.md.
import { annotations } from './contract.js';
import type { App } from './resources/index.js';

export type VolumeSpec = NonNullable<App['spec']['volumes']>[number];

export const defaultVolumeSize = '1Gi';
/** Volumes an app may declare (the CRD's maxItems). */
export const maxVolumes = 4;
export const volumeNamePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const maxVolumeName = 20;
/** Paths a volume may not hide: the machine's scratch space and the site the runtime serves. */
export const reservedVolumePaths = ['/tmp', '/srv/site'];

/** Why `path` cannot be a volume's mount path, if it cannot. */
export function volumePathProblem(path: string): string | undefined {
  if (!/^\/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$/.test(path) || path.length > 200)
    return 'must be an absolute path of letters, digits, . _ - and /, not ending in /';
  if (path.split('/').some((p) => p === '..' || p === '.')) return 'must not contain . or .. segments';
  const hit = reservedVolumePaths.find((r) => path === r || path.startsWith(`${r}/`));
  return hit ? `cannot be ${hit} or under it (the machine's ${hit === '/tmp' ? 'scratch space' : 'served site'})` : undefined;
}

/** Bytes of a Kubernetes quantity in bytes or binary units (`1073741824`, `512Mi`, `1Gi`); undefined for any other form. */
export function quantityBytes(quantity: string): number | undefined {
  const m = /^(\d+)(Ki|Mi|Gi|Ti)?$/.exec(quantity);
  if (!m) return undefined;
  return Number(m[1]) * 1024 ** (m[2] ? { Ki: 1, Mi: 2, Gi: 3, Ti: 4 }[m[2] as 'Ki' | 'Mi' | 'Gi' | 'Ti'] : 0);
}

/** Bytes of a size the CRD accepts (`512Mi`, `1Gi`, `2Ti`). */
export function volumeBytes(size: string | undefined): number {
  const bytes = /^\d+(Mi|Gi|Ti)$/.test(size ?? defaultVolumeSize) ? quantityBytes(size ?? defaultVolumeSize) : undefined;
  if (bytes === undefined) throw new Error(`not a volume size: ${size}`);
  return bytes;
}

/**
 * Machine `ordinal`'s claim for volume `volume` of `app`. One name per machine and volume whatever
 * node the machine runs on: a machine placed where its (node-local) volume cannot follow stays
 * pending and says why, rather than starting on an empty volume.
 */
export const volumeClaimName = (app: string, volume: string, ordinal: number): string => `${app}-${volume}-m${ordinal}`;

/** The mount's name inside the machine Pod (Pod volume names are DNS labels of at most 63). */
export const podVolumeName = (volume: string) => `vol-${volume}`;

/** The bytes a claim's files take, as its provisioner last measured them (annotation svc.dev/used-bytes), if it did. */
export function measuredBytes(claim: { metadata?: { annotations?: Record<string, string> | undefined } | undefined }): number | undefined {
  const v = claim.metadata?.annotations?.[annotations.usedBytes];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}
