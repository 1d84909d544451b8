// Starting a build, one way for every caller (POST /builds, an import, a push or a poll): its record
// first (with build.queued), then its Build object, owned by its App, whose controller runs it.
import { newBuildId } from '../../lib/builds/index.js';
import type { BuildSource } from '../../lib/builds/store.js';
import type { Build, BuildSpec } from '../../lib/resources/index.js';
import type { AppRecord } from '../repositories/app-record.js';
import type { Services } from '../services.js';

export interface StartBuild {
  accountId: string;
  namespace: string;
  app: AppRecord;
  source:
    | { artifact: { digest: string } }
    | { git: { url: string; ref: string; commit: string; path?: string | undefined; secretName?: string | undefined } };
  deploy: boolean;
  createdBy: string | null;
  timeoutSeconds?: number | undefined;
}

export async function startBuild(s: Pick<Services, 'builds' | 'config' | 'clock'>, b: StartBuild): Promise<{ id: string; build: Build }> {
  const id = newBuildId();
  const base = s.config.deploys.artifactBaseUrl;
  const spec: BuildSpec = {
    app: b.app.name,
    source:
      'artifact' in b.source
        ? { artifact: { digest: b.source.artifact.digest, url: `${base}/${b.source.artifact.digest}` } }
        : {
            git: {
              url: b.source.git.url,
              ref: b.source.git.ref,
              commit: b.source.git.commit,
              ...(b.source.git.path ? { path: b.source.git.path } : {}),
              ...(b.source.git.secretName ? { secretName: b.source.git.secretName } : {}),
            },
          },
    deploy: b.deploy,
    // Results come back to this API's machine listener (any replica's: they share the store).
    resultsUrl: `${new URL(base).origin}/builds`,
    ...(b.timeoutSeconds ? { timeoutSeconds: b.timeoutSeconds } : {}),
  };
  // The record never names the token's Secret: it is the clone's business.
  const source: BuildSource =
    'artifact' in b.source
      ? { artifact: { digest: b.source.artifact.digest } }
      : {
          git: {
            url: b.source.git.url,
            ref: b.source.git.ref,
            commit: b.source.git.commit,
            ...(b.source.git.path ? { path: b.source.git.path } : {}),
          },
        };
  await s.builds.store.create({
    id,
    accountId: b.accountId,
    app: b.app.name,
    source,
    deploy: b.deploy,
    createdBy: b.createdBy,
    createdAt: s.clock(),
  });
  const build = await s.builds.repo.create(b.namespace, id, b.app, spec);
  return { id, build };
}
