// What the platform's registry, its token service (registry-auth/), the controllers and the API must
// agree on about who may pull and push what (docs/decisions/0025-registry-auth.md): the user names
// each credential goes by at the token service, where tenants' images live, and the Secret and
// annotation an account's pull credential is kept in.

/** Repositories under this root are tenants': `builds/<account namespace>/<app>`. Every other one is the platform's. */
export const tenantRoot = 'builds/';

/** The repository a build of `app` in `namespace` pushes its image to (api/builds/image.ts). */
export function appRepository(namespace: string, app: string): string {
  return `${tenantRoot}${namespace}/${app}`;
}

/** Whether `repository` belongs to a tenant (only its account pulls it) rather than to the platform. */
export function isTenantRepository(repository: string): boolean {
  return repository.startsWith(tenantRoot);
}

/**
 * Whether `image` is a tenant's image in the platform's registry `registry` (`host[:port]`): what a
 * pod must pull every time (imagePullPolicy Always), so that a copy another account's pod left on
 * the node is never started without this account's credential being asked.
 */
export function isTenantImage(image: string | undefined, registry: string | undefined): boolean {
  return (
    image !== undefined &&
    registry !== undefined &&
    image.startsWith(`${registry}/`) &&
    isTenantRepository(image.slice(registry.length + 1))
  );
}

/** The Secret (kubernetes.io/dockerconfigjson) in each account namespace that its pods pull with. */
export const pullSecretName = 'svc-registry-pull';

/** On the account namespace: the SHA-256 (hex) of its pull credential's password, what the token service checks. */
export const pullCredentialAnnotation = 'svc.dev/registry-pull-sha256';

/**
 * The user names credentials go by at the token service. Slashes keep them apart: a namespace or
 * a build name has none, so no account can be named like a build or a platform principal.
 */
export const platformUsers = { operator: 'platform/operator', node: 'platform/node' } as const;

export function accountUser(namespace: string): string {
  return `accounts/${namespace}`;
}

export function buildUser(namespace: string, build: string): string {
  return `builds/${namespace}/${build}`;
}

const dnsLabel = '[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?';
const accountUserPattern = new RegExp(`^accounts/(${dnsLabel})$`);
const buildUserPattern = new RegExp(`^builds/(${dnsLabel})/(${dnsLabel})$`);

export type RegistryUser =
  { kind: 'operator' } | { kind: 'node' } | { kind: 'account'; namespace: string } | { kind: 'build'; namespace: string; build: string };

/** Who a user name claims to be (before its password is checked); undefined for no one. */
export function parseRegistryUser(name: string): RegistryUser | undefined {
  if (name === platformUsers.operator) return { kind: 'operator' };
  if (name === platformUsers.node) return { kind: 'node' };
  const account = accountUserPattern.exec(name);
  if (account) return { kind: 'account', namespace: account[1]! };
  const build = buildUserPattern.exec(name);
  if (build) return { kind: 'build', namespace: build[1]!, build: build[2]! };
  return undefined;
}
