// Revision identity: the hashes that say when a machine, or the App as applied, is a new one.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { servicesOf, type ServiceView } from '../../lib/app-services.js';
import type { App } from '../../lib/resources/index.js';
import type { AppSettings } from './desired.js';
import { machineSpec, placementOf, swappable } from './machine-spec.js';

/** The artifact a content-swapping machine's revision is computed with: any, the same for all. */
const anyContent = `sha256:${'0'.repeat(64)}`;

/**
 * The revision's JSON without the ephemeral-storage bounds (a JSON.stringify replacer): they are
 * the account LimitRange's defaults (controllers/account/desired.ts), which machines made before
 * they were named already had, so naming them replaces no running machine on upgrade.
 */
function withoutDiskBounds(key: string, value: unknown): unknown {
  if (key !== 'resources' || !value || typeof value !== 'object') return value;
  const r = value as k8s.V1ResourceRequirements;
  const strip = (m: Record<string, string> | undefined) => {
    const { 'ephemeral-storage': _, ...rest } = m ?? {};
    return Object.keys(rest).length ? rest : undefined;
  };
  const requests = strip(r.requests);
  const limits = strip(r.limits);
  return requests || limits ? { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) } : undefined;
}

/**
 * A short hash of everything that shapes machine `ordinal` of `view`: a change means a new machine.
 * A deploy replaces the machines of a one-service app (as Heroku and Fly.io restart on every deploy);
 * in an App with services only a service whose definition changed gets new machines (compose's `up`).
 */
export function revisionOf(app: App, settings: AppSettings, ordinal = 0, view: ServiceView = servicesOf(app.spec)[0]!): string {
  // Machines that swap content in place are the same machines whatever artifact they serve, and
  // whichever deploy brought it: neither is part of what they are made of.
  const inPlace = swappable(app, view, settings);
  const shaped = inPlace ? { ...app, spec: { ...app.spec, source: { digest: anyContent } } } : app;
  const deploy = app.spec.services?.length || inPlace ? null : (app.spec.deployId ?? null);
  const shape = JSON.stringify(
    { m: machineSpec(shaped, settings, ordinal, view), d: deploy, n: placementOf(app, ordinal, view) ?? null },
    withoutDiskBounds,
  );
  return createHash('sha256').update(shape).digest('hex').slice(0, 10);
}

/** A short hash of what shapes every machine of the App as applied (placement aside), and the deploy. */
export function specRevision(app: App, settings: AppSettings): string {
  // Not the services' addresses: they are observed, not applied, and a rollout must not restart when they become known.
  const applied = { ...settings, serviceAddresses: undefined };
  const m = app.spec.services?.length ? servicesOf(app.spec).map((v) => machineSpec(app, applied, 0, v)) : machineSpec(app, applied);
  return createHash('sha256')
    .update(JSON.stringify({ m, d: app.spec.deployId ?? null }))
    .digest('hex')
    .slice(0, 10);
}
