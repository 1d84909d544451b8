// What each credential may do in the platform's registry: the pure half of the token service.
// The platform's repositories (its runtime, builder, base and tool images) are pulled by everyone
// the platform lets pull at all; a tenant's (`builds/<namespace>/...`) only with that account's
// pull credential, and pushed only by a build of that very app (docs/decisions/0025-registry-auth.md).
import { appRepository, isTenantRepository, tenantRoot } from '../lib/registry/names.js';

export type Action = 'pull' | 'push';

/** One entry of a token's `access` claim (distribution's token spec). */
export interface Access {
  type: 'repository';
  name: string;
  actions: Action[];
}

/** Who a checked credential is. */
export type Principal =
  | { kind: 'operator' }
  | { kind: 'node' }
  | { kind: 'account'; namespace: string }
  | { kind: 'build'; namespace: string; build: string; app: string };

/** distribution's repository name grammar (path components of lowercase alphanumerics and separators). */
const component = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const repositoryName = new RegExp(`^${component}(?:/${component})*$`);

/**
 * The repository scopes asked for (`scope` parameters, each one or several space-separated
 * `repository:<name>:<actions>`), their actions cut to pull and push. Anything else (another type,
 * a malformed name, an action such as `delete` or `*`) is left out: it is never granted.
 */
export function parseScopes(params: readonly string[]): Access[] {
  const out: Access[] = [];
  for (const scope of params.flatMap((p) => p.split(' ')).filter(Boolean)) {
    const first = scope.indexOf(':');
    const last = scope.lastIndexOf(':');
    if (first < 0 || last === first) continue;
    const type = scope.slice(0, first);
    const name = scope.slice(first + 1, last);
    if (type !== 'repository' || name.length > 255 || !repositoryName.test(name)) continue;
    const actions = [...new Set(scope.slice(last + 1).split(','))].filter((a): a is Action => a === 'pull' || a === 'push');
    if (actions.length) out.push({ type: 'repository', name, actions });
  }
  return out;
}

/** What `principal` may do to repository `name`. */
export function allowedActions(principal: Principal, name: string): Action[] {
  const platform = !isTenantRepository(name);
  switch (principal.kind) {
    // The operator (hack/images.sh's pushes, a person with the operator's credential) may do anything.
    case 'operator':
      return ['pull', 'push'];
    // The nodes' own credential (containerd's, for pods that name no pull Secret, and the pause image).
    case 'node':
      return platform ? ['pull'] : [];
    case 'account':
      return platform || name.startsWith(`${tenantRoot}${principal.namespace}/`) ? ['pull'] : [];
    // A build pulls the base image and pushes its app's image (api/builds/image.ts, on its behalf).
    case 'build':
      if (name === appRepository(principal.namespace, principal.app)) return ['pull', 'push'];
      return platform ? ['pull'] : [];
  }
}

/** The access a token for `principal` carries: what was asked, cut to what it may do; nothing asked beyond it. */
export function grant(principal: Principal, requested: readonly Access[]): Access[] {
  const byName = new Map<string, Set<Action>>();
  for (const r of requested) {
    const may = allowedActions(principal, r.name);
    const actions = r.actions.filter((a) => may.includes(a));
    if (!actions.length) continue;
    const set = byName.get(r.name) ?? new Set<Action>();
    for (const a of actions) set.add(a);
    byName.set(r.name, set);
  }
  return [...byName].map(([name, actions]) => ({
    type: 'repository',
    name,
    actions: (['pull', 'push'] as const).filter((a) => actions.has(a)),
  }));
}
