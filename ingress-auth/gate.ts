// The gate: one pure function decides what happens to a request on an app hostname, for plain
// requests and WebSocket upgrades alike, from what the app's policy says about the path and who
// the visitor is (their session, if any). The callers only carry the verdict out.
import type { IncomingHttpHeaders } from 'node:http';
import { admitsAll } from '../lib/auth/identity.js';
import { decide, policiesInForce, type Decision } from '../lib/policy/index.js';
import type { App } from '../lib/resources/index.js';
import { isNavigation } from './auth/navigation.js';
import { safeNext } from './auth/next.js';
import type { CurrentSession } from './auth/routes.js';

/**
 * What the policies in force (lib/policy policiesInForce) say about a path (none: public). Decided
 * once per App object and path: the informer replaces the App object whenever it changes, so a
 * cached decision never outlives the policy it was made from. At most `decisionsPerApp` paths are
 * kept per App (then the cache starts over), so paths a client invents cannot grow it.
 */
export function decisionsFor(app: App, url: string): readonly Decision[] {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  let known = decided.get(app);
  if (!known) decided.set(app, (known = new Map<string, Decision[]>()));
  let out = known.get(path);
  if (out) return out;
  out = policiesInForce(app)
    .map((p) => decide(p, path))
    .filter((d): d is Decision => d !== undefined);
  if (known.size >= decisionsPerApp) known.clear();
  known.set(path, out);
  return out;
}

const decisionsPerApp = 4096;
const decided = new WeakMap<App, Map<string, Decision[]>>();

export interface GateRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The canonical request target (origin-form). */
  url: string;
  /** The App's namespace (an account owner is admitted as `owner`). */
  namespace: string;
  /** A WebSocket upgrade: a script opened it, so it is never redirected to a page. */
  upgrade: boolean;
}

export type Verdict =
  /** To the app; `identity`: with the visitor's identity headers; `personal`: the answer is theirs (not cached). */
  | { kind: 'forward'; identity: boolean; personal: boolean }
  /** 303 to the sign-in page, for a person navigating without a session. */
  | { kind: 'sign-in'; next: string }
  /** 401: no session, and not a person navigating (a script, an API call, a WebSocket). */
  | { kind: 'unauthenticated'; next: string }
  /** 403: signed in, as someone the path does not admit. */
  | { kind: 'forbidden'; navigation: boolean; next: string };

/** Every decision's gate: the first that does not forward answers; identity goes when any admits. */
export function gateAll(decisions: readonly Decision[], current: CurrentSession | undefined, r: GateRequest): Verdict {
  let forward: Verdict & { kind: 'forward' } = { kind: 'forward', identity: false, personal: false };
  for (const d of decisions) {
    const v = gate(d, current, r);
    if (v.kind !== 'forward') return v;
    forward = { kind: 'forward', identity: forward.identity || v.identity, personal: forward.personal || v.personal };
  }
  return forward;
}

export function gate(decision: Decision | undefined, current: CurrentSession | undefined, r: GateRequest): Verdict {
  if (!decision) return { kind: 'forward', identity: false, personal: false };
  const admitted = current !== undefined && admitsAll(decision.admits, current.session.identity, { namespace: r.namespace });
  if (decision.mode === 'auth' && !admitted) {
    const next = safeNext(r.url);
    const navigation = !r.upgrade && isNavigation(r.method, r.headers);
    if (current) return { kind: 'forbidden', navigation, next };
    return navigation ? { kind: 'sign-in', next } : { kind: 'unauthenticated', next };
  }
  return { kind: 'forward', identity: admitted, personal: decision.mode === 'auth' || admitted };
}
