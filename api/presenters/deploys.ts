// A deploy as the API shows it: the response schema and its presenter, shared by every route that answers with a deploy.
import { z } from 'zod';
import type { Deploy } from '../../lib/deploys.js';
import type { AppRecord } from '../repositories/app-record.js';

export const deploySchema = z.object({
  id: z.string(),
  app: z.string(),
  app_id: z.string(),
  status: z.enum(['pending', 'building', 'deploying', 'live', 'failed']),
  reason: z.string().nullable(),
  current: z.boolean().describe('Whether the app serves this deploy now'),
  kind: z.string(),
  digest: z.string().nullable(),
  image: z.string().nullable(),
  origin: z.string(),
  origin_deploy: z.string().nullable(),
  summary: z.record(z.string(), z.unknown()),
  created_by: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  live_at: z.string().nullable(),
});

/**
 * A deploy as the API shows it. Its outcome is the App controller's (App.status.deploys); the row
 * catches up when the deploy recorder writes it, and until then the App's status is what is shown.
 */
export function presentDeploy(d: Deploy, app: AppRecord | undefined): z.infer<typeof deploySchema> {
  const inFlight = d.status === 'pending' || d.status === 'building' || d.status === 'deploying';
  const decided = inFlight && app?.id === d.appUid ? app.status?.deploys?.find((o) => o.id === d.id) : undefined;
  return {
    id: d.id,
    app: d.appName,
    app_id: d.appUid,
    status: decided?.state ?? d.status,
    reason: decided ? (decided.reason ?? null) : d.reason,
    current: app?.id === d.appUid && app.status?.currentDeploy === d.id,
    kind: d.kind,
    digest: d.digest,
    image: d.image,
    origin: d.origin,
    origin_deploy: d.originDeploy,
    summary: d.summary,
    created_by: d.createdBy,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
    live_at: decided?.state === 'live' ? new Date(decided.at).toISOString() : (d.liveAt?.toISOString() ?? null),
  };
}
