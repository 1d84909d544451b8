// How an App's rollouts end, decided by the App controller alone (pure functions; desired.ts plans
// with them). A rollout of the spec as applied is Progressing until every machine serves it (Live),
// or Failed as soon as one of its machines cannot become ready. A failed rollout is not retried
// until the spec changes, and the machines go back to what last served (`status.live`, a snapshot
// of the spec fields that made them): the spec stays exactly as it was applied, so a GitOps tool
// sees no drift it did not cause. docs/decisions/0015-controllers-own-the-lifecycle.md.
import { deployOwnedFields } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';

export type AppStatusFields = Omit<NonNullable<App['status']>, 'conditions' | 'observedGeneration'>;
export type Live = NonNullable<AppStatusFields['live']>;
export type Rollout = NonNullable<AppStatusFields['rollout']>;
export type DeployOutcome = NonNullable<AppStatusFields['deploys']>[number];

/**
 * The spec fields that make a machine what it is (besides the App-wide settings: machines,
 * resources, identity, placement), and the policy its pages were deployed with: ingress-auth keeps
 * enforcing that policy while these machines serve (ingress-auth/gate.ts). Besides what a deploy
 * owns, the env Secret it was deployed with and the deploy's id.
 */
const snapshotFields = [...deployOwnedFields, 'envSecretName', 'deployId'] as const;
type Snapshot = Pick<App['spec'], (typeof snapshotFields)[number]>;

/** How many deploy outcomes status keeps for the API to record (the CRD's maxItems). */
export const keptOutcomes = 10;

export function snapshotOf(app: App): Snapshot {
  return Object.fromEntries(snapshotFields.filter((f) => app.spec[f] !== undefined).map((f) => [f, app.spec[f]] as const));
}

/**
 * The App whose machines should run now: the App as applied, or, while the rollout of exactly this
 * spec has failed, its last live snapshot under today's App-wide settings.
 */
export function serving(app: App, revision: string): { app: App; halted: boolean } {
  const rollout = app.status?.rollout;
  const halted = rollout?.revision === revision && rollout.state === 'Failed';
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- the generated type of status.live.spec is {} (the CRD keeps it schemaless); the rule takes {} for the same type
  const snapshot = app.status?.live?.spec as Snapshot | undefined;
  if (!halted || !snapshot?.kind) return { app, halted };
  const spec: App['spec'] = { ...app.spec };
  for (const f of snapshotFields) delete spec[f];
  return { app: { ...app, spec: { ...spec, ...snapshot } }, halted };
}

/** The rollout of `revision` after what was observed now. */
export function nextRollout(
  previous: Rollout | undefined,
  revision: string,
  deploy: string | undefined,
  observed: { failed?: string | undefined; complete: boolean },
  now: Date,
): Rollout {
  const same = previous?.revision === revision;
  // A revision that went live stays so: a machine of it failing later is the app being Degraded
  // (and replaced), not its rollout failing, and must not latch the App onto its last live revision.
  if (same && previous.state === 'Live') return previous;
  const startedAt = same ? previous.startedAt : now.toISOString();
  const base = { revision, ...(deploy ? { deploy } : {}), startedAt };
  if (observed.failed !== undefined)
    return {
      ...base,
      state: 'Failed',
      reason: observed.failed,
      finishedAt: same && previous.state === 'Failed' && previous.finishedAt ? previous.finishedAt : now.toISOString(),
    };
  if (observed.complete)
    return {
      ...base,
      state: 'Live',
      finishedAt: same && previous.state === 'Live' && previous.finishedAt ? previous.finishedAt : now.toISOString(),
    };
  return { ...base, state: 'Progressing' };
}

/** What status.live says once every machine serves `revision` of `app`. */
export function nextLive(previous: Live | undefined, app: App, revision: string, now: Date): Live {
  return {
    revision,
    ...(app.spec.deployId ? { deploy: app.spec.deployId } : {}),
    since: previous?.revision === revision ? previous.since : now.toISOString(),
    spec: snapshotOf(app),
  };
}

/**
 * The deploy outcomes after `rollout`, newest first, at most keptOutcomes: a deploy's end is added
 * once, when it ends.
 */
export function liveOutcomes(previous: readonly DeployOutcome[] | undefined, rollout: Rollout | undefined): DeployOutcome[] {
  const kept = (previous ?? []).slice(0, keptOutcomes);
  if (!rollout?.deploy || rollout.state === 'Progressing' || kept.some((o) => o.id === rollout.deploy)) return kept;
  const ended: DeployOutcome = {
    id: rollout.deploy,
    state: rollout.state === 'Live' ? 'live' : 'failed',
    ...(rollout.state === 'Failed' && rollout.reason ? { reason: rollout.reason } : {}),
    at: rollout.finishedAt ?? rollout.startedAt,
  };
  return [ended, ...kept].slice(0, keptOutcomes);
}
