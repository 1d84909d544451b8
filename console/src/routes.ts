// The console's pages and their addresses under /console/: what a path names, and the path of a
// page. Pure (no DOM): unit-tested.

export const base = '/console';

export type Route =
  | { page: 'apps' }
  | { page: 'app'; name: string }
  | { page: 'app-env'; name: string }
  /** An app's deploys; `deploy`: the one whose details (and build log) are open. */
  | { page: 'app-deploys'; name: string; deploy?: string }
  | { page: 'app-previews'; name: string }
  | { page: 'app-domains'; name: string }
  | { page: 'app-logs'; name: string }
  | { page: 'app-metrics'; name: string }
  | { page: 'app-access'; name: string }
  /** The account's webhooks; `webhook`: the one whose deliveries are open. */
  | { page: 'webhooks'; webhook?: string }
  | { page: 'usage' }
  | { page: 'databases' }
  /** The account's sandboxes; one, where commands run in it. */
  | { page: 'sandboxes' }
  | { page: 'sandbox'; id: string }
  /** An app's builds; `build`: the one whose log is open. */
  | { page: 'app-builds'; name: string; build?: string }
  /** Importing a Git repository as an app. */
  | { page: 'import' }
  | { page: 'volumes' }
  | { page: 'tokens' }
  /** The owner's console passkeys. */
  | { page: 'passkeys' }
  | { page: 'events' }
  | { page: 'sign-in' }
  /** Where a mailed sign-in link lands: the page presents its code to the API. */
  | { page: 'auth'; code: string }
  /** Where the identity provider sends the browser back: the page presents the query (`search`) to the API. */
  | { page: 'idp-callback'; search: string }
  /** Approving a `svc login`: `code` is the user code its terminal shows, as given (empty: none yet). */
  | { page: 'cli-login'; code: string }
  | { page: 'not-found'; path: string };

/** The route of a location's path and query (pure: unit-tested). */
export function routeOf(pathname: string, search = ''): Route {
  const rest = pathname.startsWith(base) ? pathname.slice(base.length) : pathname;
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'apps')) return { page: 'apps' };
  if (parts.length === 2 && parts[0] === 'apps') return { page: 'app', name: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'env') return { page: 'app-env', name: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'deploys') return { page: 'app-deploys', name: parts[1]! };
  if (parts.length === 4 && parts[0] === 'apps' && parts[2] === 'deploys')
    return { page: 'app-deploys', name: parts[1]!, deploy: parts[3]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'previews') return { page: 'app-previews', name: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'domains') return { page: 'app-domains', name: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'logs') return { page: 'app-logs', name: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'metrics') return { page: 'app-metrics', name: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'access') return { page: 'app-access', name: parts[1]! };
  if (parts.length === 1 && parts[0] === 'webhooks') return { page: 'webhooks' };
  if (parts.length === 2 && parts[0] === 'webhooks') return { page: 'webhooks', webhook: parts[1]! };
  if (parts.length === 1 && parts[0] === 'usage') return { page: 'usage' };
  if (parts.length === 1 && parts[0] === 'databases') return { page: 'databases' };
  if (parts.length === 1 && parts[0] === 'sandboxes') return { page: 'sandboxes' };
  if (parts.length === 2 && parts[0] === 'sandboxes') return { page: 'sandbox', id: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'builds') return { page: 'app-builds', name: parts[1]! };
  if (parts.length === 4 && parts[0] === 'apps' && parts[2] === 'builds') return { page: 'app-builds', name: parts[1]!, build: parts[3]! };
  if (parts.length === 1 && parts[0] === 'import') return { page: 'import' };
  if (parts.length === 1 && parts[0] === 'volumes') return { page: 'volumes' };
  if (parts.length === 1 && parts[0] === 'tokens') return { page: 'tokens' };
  if (parts.length === 1 && parts[0] === 'passkeys') return { page: 'passkeys' };
  if (parts.length === 2 && parts[0] === 'idp' && parts[1] === 'callback') return { page: 'idp-callback', search };
  if (parts.length === 1 && parts[0] === 'events') return { page: 'events' };
  if (parts.length === 1 && parts[0] === 'auth') return { page: 'auth', code: new URLSearchParams(search).get('code') ?? '' };
  if (parts.length === 1 && parts[0] === 'sign-in') return { page: 'sign-in' };
  if (parts.length === 1 && parts[0] === 'cli-login') return { page: 'cli-login', code: new URLSearchParams(search).get('code') ?? '' };
  return { page: 'not-found', path: pathname };
}

export function hrefOf(route: Route): string {
  switch (route.page) {
    case 'apps':
      return `${base}/`;
    case 'app':
      return `${base}/apps/${encodeURIComponent(route.name)}`;
    case 'app-env':
      return `${base}/apps/${encodeURIComponent(route.name)}/env`;
    case 'app-deploys':
      return `${base}/apps/${encodeURIComponent(route.name)}/deploys${route.deploy ? `/${encodeURIComponent(route.deploy)}` : ''}`;
    case 'app-previews':
      return `${base}/apps/${encodeURIComponent(route.name)}/previews`;
    case 'app-logs':
      return `${base}/apps/${encodeURIComponent(route.name)}/logs`;
    case 'app-metrics':
      return `${base}/apps/${encodeURIComponent(route.name)}/metrics`;
    case 'app-domains':
      return `${base}/apps/${encodeURIComponent(route.name)}/domains`;
    case 'app-access':
      return `${base}/apps/${encodeURIComponent(route.name)}/access`;
    case 'webhooks':
      return `${base}/webhooks${route.webhook ? `/${encodeURIComponent(route.webhook)}` : ''}`;
    case 'usage':
      return `${base}/usage`;
    case 'databases':
      return `${base}/databases`;
    case 'sandboxes':
      return `${base}/sandboxes`;
    case 'sandbox':
      return `${base}/sandboxes/${encodeURIComponent(route.id)}`;
    case 'app-builds':
      return `${base}/apps/${encodeURIComponent(route.name)}/builds${route.build ? `/${encodeURIComponent(route.build)}` : ''}`;
    case 'import':
      return `${base}/import`;
    case 'volumes':
      return `${base}/volumes`;
    case 'tokens':
      return `${base}/tokens`;
    case 'passkeys':
      return `${base}/passkeys`;
    case 'idp-callback':
      return `${base}/idp/callback${route.search}`;
    case 'events':
      return `${base}/events`;
    case 'sign-in':
      return `${base}/sign-in`;
    case 'auth':
      return `${base}/auth?code=${encodeURIComponent(route.code)}`;
    case 'cli-login':
      return `${base}/cli-login${route.code ? `?code=${encodeURIComponent(route.code)}` : ''}`;
    case 'not-found':
      return route.path;
  }
}
