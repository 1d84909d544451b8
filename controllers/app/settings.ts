// The App reconciler's settings, from the controllers' configuration.
import type { Config } from '../../lib/config.js';
import { controlKeys } from '../../lib/machine-control.js';
import type { AppSettings } from './desired.js';

export function appSettings(
  config: Pick<Config, 'site' | 'deploys' | 'assertion' | 'machineNetwork' | 'images' | 'userNamespaces'>,
): AppSettings {
  return {
    site: config.site,
    runtimeImage: config.deploys.runtimeImage,
    artifactBaseUrl: config.deploys.artifactBaseUrl,
    assertionIssuer: config.assertion.issuer,
    jwksUrl: config.assertion.jwksUrl,
    artifactKey: config.deploys.artifactKey,
    control: config.deploys.artifactKey ? controlKeys(config.deploys.artifactKey) : undefined,
    rolloutDeadlineMs: config.deploys.rolloutDeadlineSeconds * 1000,
    volumeStorageClass: config.deploys.volumeStorageClass,
    images: config.images,
    userNamespaces: config.userNamespaces,
    platform: {
      cidrs: config.machineNetwork.platformCidrs,
      namespace: config.machineNetwork.platformNamespace,
      ports: config.machineNetwork.platformPorts,
      clusterDns: config.machineNetwork.clusterDns,
    },
  };
}
