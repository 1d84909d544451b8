// An App as the API's handlers and actions see it: the custom resource read once into named,
// typed fields (no `metadata.x!` in handlers), with the controller's conditions by type.
import type { App } from '../../lib/resources/index.js';

export type AppStatus = NonNullable<App['status']>;
export type AppCondition = NonNullable<AppStatus['conditions']>[number];

export interface AppRecord {
  /** The App's uid: its ID in the API. */
  readonly id: string;
  readonly name: string;
  readonly namespace: string;
  readonly generation: number;
  /** For writes that decide from what they read (409 when the App changed since). */
  readonly resourceVersion: string | undefined;
  readonly createdAt: Date | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly spec: App['spec'];
  readonly status: AppStatus | undefined;
  /** The controller's conditions, by type. */
  readonly conditions: Readonly<Partial<Record<'Ready' | 'Progressing' | 'Degraded', AppCondition>>>;
  /** Whether the controller has reported on this spec (status.observedGeneration caught up). */
  readonly observed: boolean;
}

const records = new WeakMap<App, AppRecord>();

/** The record of a custom resource as read (informer objects are immutable: one record each). */
export function appRecord(app: App): AppRecord {
  const known = records.get(app);
  if (known) return known;
  const m = app.metadata;
  const generation = m.generation ?? 0;
  const record: AppRecord = Object.freeze({
    id: m.uid ?? '',
    name: m.name ?? '',
    namespace: m.namespace ?? '',
    generation,
    resourceVersion: m.resourceVersion,
    createdAt: m.creationTimestamp ? new Date(m.creationTimestamp) : undefined,
    labels: m.labels ?? {},
    spec: app.spec,
    status: app.status,
    conditions: Object.fromEntries((app.status?.conditions ?? []).map((c) => [c.type, c])),
    observed: (app.status?.observedGeneration ?? -1) >= generation,
  });
  records.set(app, record);
  return record;
}
