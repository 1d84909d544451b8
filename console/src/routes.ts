// The console's pages and their addresses under /console/: what a path names, and the path of a
// page. Pure (no DOM): unit-tested.

export const base = '/console';

export type Route =
  | { page: 'apps' }
  | { page: 'app'; name: string }
  | { page: 'app-env'; name: string }
  | { page: 'tokens' }
  | { page: 'events' }
  | { page: 'sign-in'; linkInvalid: boolean }
  | { page: 'not-found'; path: string };

/** The route of a location's path and query (pure: unit-tested). */
export function routeOf(pathname: string, search = ''): Route {
  const rest = pathname.startsWith(base) ? pathname.slice(base.length) : pathname;
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'apps')) return { page: 'apps' };
  if (parts.length === 2 && parts[0] === 'apps') return { page: 'app', name: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apps' && parts[2] === 'env') return { page: 'app-env', name: parts[1]! };
  if (parts.length === 1 && parts[0] === 'tokens') return { page: 'tokens' };
  if (parts.length === 1 && parts[0] === 'events') return { page: 'events' };
  if (parts.length === 1 && parts[0] === 'sign-in')
    return { page: 'sign-in', linkInvalid: new URLSearchParams(search).get('link') === 'invalid' };
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
    case 'tokens':
      return `${base}/tokens`;
    case 'events':
      return `${base}/events`;
    case 'sign-in':
      return `${base}/sign-in`;
    case 'not-found':
      return route.path;
  }
}
