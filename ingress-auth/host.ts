// Which app a request's Host names. App hostnames are exactly one DNS label under the apps domain,
// `<app>.<apps domain>` (previews are Apps named `<app>--<ref>`, so they need nothing special); the
// port is ignored because locally the proxy listens on :8081 and on a cluster behind a balancer.
// A verified custom domain (docs/decisions/0027-app-domains.md) names the App its Domain says, and
// is then served exactly as that App's own hostname: appAtHost is the one place that decides.
import { dnsLabel as appName, type AppsSite } from '../lib/contract.js';
import type { App } from '../lib/resources/index.js';
import type { RouteSource } from './routes.js';

/**
 * A Host header value as a hostname: lowercased, the port (digits only) dropped, one trailing dot
 * dropped (the fully qualified spelling is the same name). Undefined for an IPv6 literal, which is
 * never an app's name, or a port that is not one.
 */
export function hostnameOf(host: string | undefined): string | undefined {
  if (!host) return undefined;
  return remembered(hostnames, host, parseHostname);
}

function parseHostname(host: string): string | undefined {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[')) return undefined;
  const colon = h.indexOf(':');
  if (colon !== -1) {
    if (!/^\d{1,5}$/.test(h.slice(colon + 1))) return undefined;
    h = h.slice(0, colon);
  }
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h || undefined;
}

/** The app name a Host header value names under `appsDomain`, or undefined. */
export function appOfHost(host: string | undefined, appsDomain: string): string | undefined {
  if (!host) return undefined;
  let names = appNames.get(appsDomain);
  if (!names) appNames.set(appsDomain, (names = new Map<string, string | undefined>()));
  return remembered(names, host, parseAppName, appsDomain);
}

function parseAppName(host: string, appsDomain: string): string | undefined {
  const h = hostnameOf(host);
  if (h === undefined) return undefined;
  const suffix = `.${appsDomain.toLowerCase()}`;
  if (!h.endsWith(suffix)) return undefined;
  const label = h.slice(0, -suffix.length);
  return appName.test(label) ? label : undefined;
}

// Every request parses its Host two or three times (SNI check, app, audience), and a keep-alive
// connection sends the same one each time: what a Host value means is kept, as it depends on the
// value (and the apps domain) only. Bounded: Host values a client invents start the memo over, and
// one longer than any hostname with a port is parsed each time rather than kept.
const memoMax = 4096;
const memoKeyMax = 260;
const hostnames = new Map<string, string | undefined>();
const appNames = new Map<string, Map<string, string | undefined>>();

function remembered(
  memo: Map<string, string | undefined>,
  key: string,
  parse: (key: string, arg: string) => string | undefined,
  arg = '',
): string | undefined {
  if (key.length > memoKeyMax) return parse(key, arg);
  const known = memo.get(key);
  if (known !== undefined || memo.has(key)) return known;
  const value = parse(key, arg);
  if (memo.size >= memoMax) memo.clear();
  memo.set(key, value);
  return value;
}

/** What appAtHost reads of the configuration. */
export interface HostRules {
  appsDomain: string;
  /** The platform's sign-in host (config.auth.host): never an app's. */
  auth: { host: string };
}

/**
 * The App a request's Host is served by: `<app>.<apps domain>` is the oldest App of that name (as
 * before custom domains); any other name is the App of the verified Domain naming it, looked up in
 * that Domain's own namespace. The apps domain and every name under it belong to the platform, so a
 * Domain there (the API refuses one) never routes: it could otherwise serve a name no App holds yet,
 * which would move to the App of that name once it is created. Nor does the sign-in host.
 */
export function appAtHost(host: string | undefined, routes: Pick<RouteSource, 'app' | 'domainApp'>, rules: HostRules): App | undefined {
  const name = appOfHost(host, rules.appsDomain);
  if (name !== undefined) return routes.app(name);
  if (!routes.domainApp) return undefined;
  const h = hostnameOf(host);
  if (h === undefined || h === rules.auth.host.toLowerCase()) return undefined;
  const apps = rules.appsDomain.toLowerCase();
  if (h === apps || h.endsWith(`.${apps}`)) return undefined;
  return routes.domainApp(h);
}

/**
 * The origin of a hostname the request was resolved on (appAtHost): where links in mail, passkeys
 * and the same-origin checks point, and where a provider's sign-in comes back to. From the
 * configuration (scheme, the port suffix) and a hostname already normalized and checked to route to
 * the App, never from the raw Host header, which may name any port or spelling. For an app hostname
 * this is appUrl (lib/contract.ts).
 */
export function originOf(site: AppsSite, hostname: string): string {
  return `${site.secure ? 'https' : 'http'}://${hostname}${site.appsUrlSuffix}`;
}

/**
 * The app hostname `app` holds (`<name>.<apps domain>`), if it is the App that holds it: the oldest
 * App of its name. Another namespace's App of the same name holds nothing.
 */
export function heldHostname(app: App, routes: Pick<RouteSource, 'app'>, appsDomain: string): string | undefined {
  const name = app.metadata.name;
  if (!name || !app.metadata.uid || routes.app(name)?.metadata.uid !== app.metadata.uid) return undefined;
  return `${name}.${appsDomain.toLowerCase()}`;
}
