// A build as the API shows it: the response schema and its presenter, shared by every route that answers with a build (builds, imports).
import { z } from 'zod';
import { shownUrl } from '../../lib/builds/git.js';
import type { BuildRecord as StoredBuild } from '../../lib/builds/store.js';
import type { BuildRecord } from '../builds/repository.js';

export const buildSchema = z.object({
  id: z.string(),
  app: z.string(),
  status: z.enum(['queued', 'building', 'succeeded', 'failed', 'canceled']),
  reason: z
    .string()
    .nullable()
    .describe(
      'Why it is in its state: Queued, Building, Built, Reused, CommandFailed, NothingToBuild, NoOutput, SourceFailed, DeadlineExceeded, OutOfMemory, Canceled, ...',
    ),
  message: z.string().nullable(),
  source: z.union([
    z.object({ type: z.literal('upload'), digest: z.string() }),
    z.object({
      type: z.literal('git'),
      url: z.string(),
      ref: z.string().nullable(),
      commit: z.string().nullable(),
      path: z.string().nullable(),
    }),
  ]),
  deploy: z.boolean().describe('Whether its output is deployed to the app when it succeeds'),
  plan: z.record(z.string(), z.unknown()).nullable().describe('The build plan (docs/api/builds.md#the-plan), once made'),
  artifact: z.object({ digest: z.string(), bytes: z.number().nullable() }).nullable(),
  image: z.string().nullable(),
  reused_from: z.string().nullable().describe('The earlier build of the same source whose output this is (nothing was run)'),
  deploy_id: z.string().nullable(),
  deploy_error: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
  duration_seconds: z.number().nullable(),
});
export type BuildBody = z.infer<typeof buildSchema>;

const lower = (phase: string) => phase.toLowerCase() as BuildBody['status'];
const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

/** The stored record, with what the Build's status says now (`live`) when it is fresher. */
export function presentBuild(r: StoredBuild, live: BuildRecord | undefined): BuildBody {
  const phase = live?.phase ?? r.phase;
  const started = live?.startedAt ?? r.startedAt;
  const completed = live?.completedAt ?? r.completedAt;
  const digest = live?.artifactDigest ?? r.artifactDigest;
  const source: BuildBody['source'] =
    'artifact' in r.source
      ? { type: 'upload', digest: r.source.artifact.digest }
      : {
          type: 'git',
          url: shownUrl(r.source.git.url),
          ref: r.source.git.ref ?? null,
          commit: r.source.git.commit ?? null,
          path: r.source.git.path ?? null,
        };
  return {
    id: r.id,
    app: r.app,
    status: lower(phase),
    reason: live?.reason ?? r.reason,
    message: live?.message ?? r.message,
    source,
    deploy: r.deploy,
    plan: (live?.plan ?? r.plan ?? null) as Record<string, unknown> | null,
    artifact: digest ? { digest, bytes: live?.artifactBytes ?? r.artifactBytes } : null,
    image: live?.image ?? r.image,
    reused_from: live?.reusedFrom ?? r.reusedFrom,
    deploy_id: r.deployId,
    deploy_error: r.deployError,
    created_at: r.createdAt.toISOString(),
    started_at: iso(started),
    completed_at: iso(completed),
    duration_seconds: started && completed ? Math.round((new Date(completed).getTime() - new Date(started).getTime()) / 100) / 10 : null,
  };
}
