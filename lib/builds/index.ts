// What the API, the controllers and the builder agree on about builds: names, the annotations the
// API writes on a Build (the builder's plan and output reach the API, which has the store and the
// registry; the controller puts them in the status), and the phases (docs/api/builds.md).
import { randomBytes } from 'node:crypto';
import type { Build } from '../resources/index.js';
import type { BuildPlan } from './plan.js';

export const buildAnnotations = {
  /** The plan the builder made (JSON of BuildPlan), written by the API when the builder sends it. */
  plan: 'svc.dev/build-plan',
  /** The output the builder sent, stored (JSON of BuildOutput), written by the API. */
  output: 'svc.dev/build-output',
  /** Any value: cancel the build (its Job is deleted; the Build stays, Canceled). */
  cancel: 'svc.dev/cancel-requested',
} as const;

export type BuildPhase = NonNullable<NonNullable<Build['status']>['phase']>;
export const terminalPhases: ReadonlySet<BuildPhase> = new Set(['Succeeded', 'Failed', 'Canceled']);

/** A build's output, stored: an artifact in the artifact store, and for services an image made of it. */
export interface BuildOutput {
  digest: string;
  bytes: number;
  /** The image pushed to the platform's registry (services). */
  image?: string;
}

/** `bld-` and 16 hex digits: the Build's name, its Job's and its id in the API. */
export const newBuildId = (): string => `bld-${randomBytes(8).toString('hex')}`;
export const buildIdPattern = /^bld-[0-9a-f]{16}$/;

/** The claim holding an app's dependency caches (its previews' builds use their parent's). */
export const buildCacheClaim = (app: string): string => `build-cache-${app}`.slice(0, 63).replace(/-+$/, '');

function parse<T>(text: string | undefined): T | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

export const planOf = (b: Build): BuildPlan | undefined => parse<BuildPlan>(b.metadata.annotations?.[buildAnnotations.plan]);
export const outputOf = (b: Build): BuildOutput | undefined => parse<BuildOutput>(b.metadata.annotations?.[buildAnnotations.output]);
