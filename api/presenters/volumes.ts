// A volume and the account's storage as the API shows them: the response schemas and their presenters.
import { z } from 'zod';
import type { StorageUse } from '../storage/account-storage.js';
import type { VolumeRecord } from '../repositories/volumes.js';

export const volumeSchema = z.object({
  ref: z.string(),
  kind: z.enum(['machine', 'database']),
  app: z.string().nullable(),
  service: z.string().nullable().describe("The app's service whose machine it is, in an app with several; null otherwise."),
  machine: z.number().nullable(),
  volume: z.string().nullable(),
  database: z.string().nullable(),
  path: z.string().nullable(),
  size_bytes: z.number(),
  used_bytes: z.number().nullable(),
  attached: z.boolean(),
  mounted_by: z.string().nullable(),
  node: z.string().nullable(),
  created_at: z.string(),
});

/** A volume as GET /volumes answers it. */
export type Volume = z.infer<typeof volumeSchema>;

export const storageSchema = z
  .object({
    used_bytes: z.number().describe('What the storage limit counts now: the sum of the three below'),
    limit_bytes: z.number().describe("The account's storage limit (SVC_STORAGE_MAX_BYTES_PER_ACCOUNT)"),
    database_bytes: z.number().describe("Its databases' volumes (branches included), by size"),
    volume_bytes: z
      .number()
      .describe("Its apps' volumes by size: the claims that exist, attached or not, and those its apps declare that are not made yet"),
    artifact_bytes: z.number().describe('The stored artifacts it holds (deploy uploads, build sources and outputs, backups), each once'),
  })
  .describe("The account's storage as its limit counts it (docs/api/data.md#storage)");

/** A volume as GET /volumes answers it (its keys in the order the API has always sent them). */
export function presentVolume(v: VolumeRecord): Volume {
  const machine = v.kind === 'machine' ? v : undefined;
  return {
    ref: v.ref,
    size_bytes: v.sizeBytes,
    used_bytes: v.usedBytes ?? null,
    node: v.node ?? null,
    created_at: v.createdAt.toISOString(),
    kind: v.kind,
    app: machine?.app ?? null,
    service: machine?.service ?? null,
    machine: machine?.machine ?? null,
    volume: machine?.volume ?? null,
    database: v.kind === 'database' ? v.database : null,
    path: machine?.path ?? null,
    attached: v.attached,
    mounted_by: machine?.mountedBy ?? null,
  };
}

export const presentStorage = (use: StorageUse): z.infer<typeof storageSchema> => ({
  used_bytes: use.usedBytes,
  limit_bytes: use.limitBytes,
  database_bytes: use.databaseBytes,
  volume_bytes: use.volumeBytes,
  artifact_bytes: use.artifactBytes,
});
