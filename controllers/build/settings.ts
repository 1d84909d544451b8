// The Build reconciler's settings, from the controllers' configuration. Builds need the artifact
// key (the credentials their Jobs fetch sources and send results with are minted with it): without
// it, no Build is served.
import type { Config } from '../../lib/config.js';
import { pullSecretName } from '../../lib/registry/names.js';
import type { BuildSettings } from './desired.js';

export function buildSettings(
  config: Pick<Config, 'builds' | 'deploys' | 'machineNetwork' | 'databases' | 'userNamespaces'>,
): BuildSettings | undefined {
  const key = config.deploys.artifactKey;
  if (!key) return undefined;
  return {
    builderImage: config.builds.builderImage,
    runtimeImage: config.deploys.runtimeImage,
    reportBaseUrl: `${new URL(config.deploys.artifactBaseUrl).origin}/builds`,
    artifactBaseUrl: config.deploys.artifactBaseUrl,
    key,
    cacheBytes: config.builds.cacheBytes,
    storageClass: config.deploys.volumeStorageClass,
    platformCidrs: config.machineNetwork.platformCidrs,
    platformNamespace: config.machineNetwork.platformNamespace,
    platformPorts: config.machineNetwork.platformPorts,
    privateCidrs: config.builds.privateCidrs,
    resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { cpu: config.builds.cpu, memory: config.builds.memory } },
    pullSecret: config.builds.registry ? pullSecretName : undefined,
    userNamespaces: config.userNamespaces,
    clusterDns: config.machineNetwork.clusterDns,
  };
}
