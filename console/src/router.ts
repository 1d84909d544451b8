// The console's small router: a page per path under /console/, History API navigation, and links
// that navigate without reloading. Paths are the addresses a person can bookmark or share.
import { useEffect, useState } from 'preact/hooks';
import { base, routeOf, type Route } from './routes.js';

export { base, hrefOf, routeOf, type Route } from './routes.js';

const listeners = new Set<() => void>();

export function navigate(href: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  for (const listener of listeners) listener();
}

/** The current route, re-rendered on navigation and on the browser's back and forward. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(location.pathname, location.search));
  useEffect(() => {
    const update = () => setRoute(routeOf(location.pathname, location.search));
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** A click on a console link navigates in place (a modified click still opens a new tab). */
export function onLinkClick(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = (event.target as Element | null)?.closest('a');
  if (!anchor || anchor.target || anchor.origin !== location.origin || !anchor.pathname.startsWith(`${base}/`)) return;
  event.preventDefault();
  navigate(anchor.pathname + anchor.search);
}
