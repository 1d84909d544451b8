// The event kinds the platform records, each documented in docs/api/events.md with an example.
// Webhook filters accept exactly these and `prefix.*` of their prefixes (and `*`); a test keeps
// this list and the document equal.
export const eventKinds = [
  'account.created',
  'token.created',
  'token.revoked',
  'webhook.created',
  'webhook.deleted',
  'webhook.disabled',
  'app.created',
  'app.deleted',
  'app.expired',
  'env.changed',
  'preview.created',
  'preview.deleted',
  'deploy.created',
  'deploy.live',
  'deploy.failed',
  'deploy.rolled_back',
  'machine.started',
  'machine.stopped',
  'machine.crashed',
  'machine.migrated',
  'app_user.signed_in',
  'app_user.disabled',
  'app_user.enabled',
  'database.created',
  'database.deleted',
  'database.ready',
  'database.attached',
  'database.detached',
  'database.backup_done',
  'database.backup_failed',
  'domain.added',
  'domain.verified',
  'domain.misconfigured',
  'domain.failed',
  'domain.removed',
  'domain.registered',
  'domain.renewed',
  'domain.renewal_failed',
  'domain.expiring',
  'certificate.issued',
  'certificate.renewed',
  'certificate.failed',
  'volume.created',
  'volume.deleted',
  'build.queued',
  'build.started',
  'build.succeeded',
  'build.failed',
  'build.canceled',
  'sandbox.opened',
  'sandbox.destroyed',
  'sandbox.expired',
  'sandbox.failed',
  'data.limit_reached',
] as const;
export type EventKind = (typeof eventKinds)[number];

const prefixes = new Set(eventKinds.map((k) => k.slice(0, k.indexOf('.'))));

/** Whether a filter names a known kind, `prefix.*` of a known prefix, or `*`. */
export function knownFilter(filter: string): boolean {
  if (filter === '*') return true;
  if (filter.endsWith('.*')) return prefixes.has(filter.slice(0, -2));
  return (eventKinds as readonly string[]).includes(filter);
}

/** Whether an event of `kind` passes `filters` (none: every event). */
export function matchesFilters(kind: string, filters: readonly string[] | undefined): boolean {
  if (!filters?.length) return true;
  return filters.some((f) => f === '*' || f === kind || (f.endsWith('.*') && kind.startsWith(f.slice(0, -1))));
}

/** The 400 message for unknown filters. */
export function unknownFiltersMessage(filters: readonly string[]): string | undefined {
  const unknown = filters.filter((f) => !knownFilter(f));
  if (!unknown.length) return undefined;
  return `unknown event kind${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u}"`).join(', ')}; known: ${eventKinds.join(', ')}, or prefix.* of ${[...prefixes].join(', ')}, or *`;
}
