// What the App's status and its Ready, Progressing and Degraded conditions say, once its machines are planned.
import { appUrl } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';
import { policyEmails } from '../../lib/auth/identity.js';
import { policiesInForce } from '../../lib/policy/index.js';
import type { AppSettings, Choice, Plan, Progress } from './desired.js';
import type { ServicePlan } from './machines.js';
import { revisionOf } from './revision.js';
import { liveOutcomes, type AppStatusFields } from './rollout.js';

/** The App's status fields and conditions, from its services' plans and how the rollout stands. */
export function statusOf(
  app: App,
  settings: AppSettings,
  choice: Choice,
  planned: readonly ServicePlan[],
  progress: Progress,
): Pick<Plan, 'status' | 'ready' | 'conditions'> {
  const { target, views, withServices, targetRefused, servable } = choice;
  const { want, ready, current, complete, rollout, failed, lastLive, progressing, superseded } = progress;
  const isReady = ready === want && want > 0;
  const servingNote =
    failed && lastLive?.deploy
      ? `; deploy ${lastLive.deploy} keeps serving`
      : failed && lastLive
        ? '; the last live revision keeps serving'
        : '';
  const outcomes = liveOutcomes(superseded ? [superseded, ...(app.status?.deploys ?? [])] : app.status?.deploys, rollout);
  const perService = withServices
    ? ` (${views.map((v, i) => `${v.name} ${planned[i]!.ready}/${planned[i]!.want}${planned[i]!.waits ? ` ${planned[i]!.waits}` : ''}`).join(', ')})`
    : '';
  const problems = planned.flatMap((p) => p.problems);
  const services = withServices ? servicesStatus(choice, planned, settings) : undefined;
  return {
    status: {
      url: appUrl(settings.site, app.metadata.name!),
      ready: `${ready}/${want}`,
      readyMachines: ready,
      ...(complete && target.spec.deployId
        ? { currentDeploy: target.spec.deployId }
        : app.status?.currentDeploy
          ? { currentDeploy: app.status.currentDeploy }
          : {}),
      ...(lastLive ? { live: lastLive } : {}),
      ...(rollout ? { rollout } : {}),
      ...(outcomes.length ? { deploys: outcomes } : {}),
      machines: planned[0]!.machines,
      ...(services ? { services } : {}),
      // Always written, even empty: its absence means no controller has decided yet.
      policyEmails: invitedBy(app, progress),
    },
    ready: !app.spec.kind
      ? { ok: false, reason: 'NotDeployed', message: 'the app has no deploy yet' }
      : targetRefused
        ? { ok: false, reason: 'ImageRefused', message: targetRefused }
        : servable
          ? {
              ok: isReady,
              reason: isReady ? 'MachinesReady' : want === 0 ? 'NoMachines' : 'MachinesNotReady',
              message: `${ready} of ${want} machines ready${perService}${servingNote}`,
            }
          : { ok: false, reason: 'NoSource', message: `a ${app.spec.kind} app names no artifact (spec.source) to serve` },
    conditions: [
      failed
        ? { type: 'Progressing', ok: false, reason: 'RolloutFailed', message: `${rollout?.reason ?? 'the rollout failed'}${servingNote}` }
        : {
            type: 'Progressing',
            ok: progressing,
            reason: progressing ? 'RollingOut' : 'UpToDate',
            message: progressing ? `${current} of ${want} machines current${perService}` : `all ${want} machines current`,
          },
      {
        type: 'Degraded',
        ok: problems.length > 0,
        reason: problems.length ? 'MachinesFailing' : 'AsExpected',
        message: problems.join('; ') || 'no machine is failing',
      },
    ],
  };
}

/**
 * The addresses the policies in force list, as this status will leave them: one that leaves the
 * list loses its sign-in links and app sessions (the API carries that out), whatever changed the policy.
 */
function invitedBy(app: App, { rollout, lastLive }: Progress): string[] {
  return [
    ...new Set(
      policiesInForce({ spec: app.spec, status: { ...(rollout ? { rollout } : {}), ...(lastLive ? { live: lastLive } : {}) } }).flatMap(
        (p) => [...policyEmails(p)],
      ),
    ),
  ].sort();
}

/** Each service's status, in an App with services. */
function servicesStatus(choice: Choice, planned: readonly ServicePlan[], settings: AppSettings): AppStatusFields['services'] {
  const { target, views } = choice;
  return views.map((v, i) => {
    const p = planned[i]!;
    const address = settings.serviceAddresses?.get(v.name!);
    const deploy = p.machines.find((m) => m.deploy)?.deploy;
    return {
      name: v.name!,
      public: v.public,
      ready: `${p.ready}/${p.want}`,
      readyMachines: p.ready,
      revision: revisionOf(target, settings, 0, v),
      ...(deploy ? { deploy } : {}),
      ...(address ? { address } : {}),
      machines: p.machines,
    };
  });
}
