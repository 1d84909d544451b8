// Which app a request's Host names. App hostnames are exactly one DNS label under the apps domain,
// `<app>.<apps domain>` (previews are Apps named `<app>--<ref>`, so they need nothing special); the
// port is ignored because locally the proxy listens on :8081 and on a cluster behind a balancer.
import { dnsLabel as appName } from '../lib/contract.js';

/** The app name a Host header value names under `appsDomain`, or undefined. */
export function appOfHost(host: string | undefined, appsDomain: string): string | undefined {
  if (!host) return undefined;
  let h = host.trim().toLowerCase();
  // An IPv6 literal is never an app hostname.
  if (h.startsWith('[')) return undefined;
  const colon = h.indexOf(':');
  if (colon !== -1) {
    if (!/^\d{1,5}$/.test(h.slice(colon + 1))) return undefined;
    h = h.slice(0, colon);
  }
  // The fully qualified spelling with a trailing dot is the same name.
  if (h.endsWith('.')) h = h.slice(0, -1);
  const suffix = `.${appsDomain.toLowerCase()}`;
  if (!h.endsWith(suffix)) return undefined;
  const label = h.slice(0, -suffix.length);
  return appName.test(label) ? label : undefined;
}
