// The local registry's token authentication as tests meet it (docs/decisions/0025-registry-auth.md):
// its token service, the operator's credential hack/nodes.sh made, and calls to the registry with a
// token, as docker, skopeo and containerd make them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../lib/paths.js';
import { fetchRegistryToken, parseBearerChallenge, type RegistryCredential } from '../../lib/registry/bearer.js';
import { platformUsers } from '../../lib/registry/names.js';
import { images } from './images.js';

const stateDir = process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc');

/** The token service of the local registry (hack/lib.sh: REGISTRY_AUTH_PORT). */
export const registryAuth = {
  realm: `http://127.0.0.1:${process.env.SVC_REGISTRY_AUTH_PORT ?? '5001'}/token`,
  service: process.env.SVC_REGISTRY_SERVICE ?? 'svc-registry',
  issuer: process.env.SVC_REGISTRY_TOKEN_ISSUER ?? 'svc-registry-auth',
} as const;

/** The operator's credential (push and pull anywhere). */
export function operatorCredential(): RegistryCredential {
  return { username: platformUsers.operator, password: readFileSync(path.join(stateDir, 'registry-auth', 'operator'), 'utf8').trim() };
}

/** The auth file skopeo reads the operator's credential from (REGISTRY_AUTH_FILE). */
export const operatorAuthFile = path.join(stateDir, 'registry-auth', 'operator-auth.json');

/** A token for `scopes` from the local token service, asked with `credential`. */
export function registryToken(scopes: string[], credential: RegistryCredential = operatorCredential()): Promise<string> {
  return fetchRegistryToken({ realm: registryAuth.realm, service: registryAuth.service }, scopes, credential);
}

/** A call to the local registry (`path` under /v2/), with `token` when given. */
export function registryCall(pathUnderV2: string, init: RequestInit & { token?: string } = {}): Promise<Response> {
  const { token, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (token) headers.set('authorization', `Bearer ${token}`);
  return fetch(`http://${images.registry}/v2/${pathUnderV2}`, { ...rest, headers, signal: AbortSignal.timeout(15_000) });
}

/** The challenge of a 401 from the registry: where tokens come from. */
export { parseBearerChallenge };
