// How a route finds the App a request names, by name or by ID, within the caller's namespace and
// the token's apps restriction. Every route under /apps/{appID} goes through resolveApp; it lives
// outside api/operations/ so operations files share it without importing one another.
import { servicesOf } from '../lib/app-services.js';
import type { AppRecord } from './repositories/app-record.js';
import { ApiError, invalid, notFound } from './errors.js';
import type { Caller } from './operation.js';
import type { ApiDeps } from './deps.js';

/** What finding an app needs: the apps repository's lookup by name or ID. */
export interface AppLookup {
  apps: Pick<ApiDeps['apps'], 'find'>;
}

const uidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A token restricted to apps may only touch those apps. */
export function allowedApp(caller: Caller, name: string): boolean {
  const apps = caller.principal.authority.apps;
  return !apps || apps.has(name);
}

export function requireApp(caller: Caller, name: string): void {
  if (!allowedApp(caller, name)) throw new ApiError('forbidden', `token lacks app "${name}"`);
}

export async function resolveApp(s: AppLookup, caller: Caller, idOrName: string): Promise<AppRecord> {
  // By name, the restriction is checked before looking (whether the app exists is no business of
  // a token that lacks it); by ID, once the ID is resolved to its name.
  if (!uidPattern.test(idOrName)) requireApp(caller, idOrName);
  const app = await s.apps.find(caller.account.namespace, idOrName);
  if (!app) throw notFound(`app ${idOrName}`);
  // An ID must not get around an apps restriction that names the app.
  requireApp(caller, app.name);
  return app;
}

/** The app's service named `name` (an app deployed from a compose file with several services), or a 400 naming those it has. */
export function serviceOrInvalid(app: AppRecord, name: string): string {
  const known = app.spec.services?.length ? servicesOf(app.spec).flatMap((v) => v.name ?? []) : [];
  if (known.includes(name)) return name;
  throw invalid(
    known.length
      ? `service: app ${app.name} has no service ${name} (it has ${known.join(', ')})`
      : `service: app ${app.name} has one unnamed service; service applies to apps deployed with several`,
  );
}
