// The Database reconciler's settings, from the controllers' configuration. Backups and restores
// need the artifact key (their credentials are minted with it): without it, neither.
import type { Config } from '../../lib/config.js';
import type { DatabaseSettings } from './desired.js';

export function databaseSettings(config: Pick<Config, 'databases' | 'deploys' | 'machineNetwork' | 'userNamespaces'>): DatabaseSettings {
  const key = config.deploys.artifactKey;
  return {
    image: config.databases.image,
    storageClass: config.databases.storageClass,
    defaultBytes: config.databases.defaultBytes,
    platformCidrs: config.machineNetwork.platformCidrs,
    platformNamespace: config.machineNetwork.platformNamespace,
    provider: config.databases.provider,
    cnpg: config.databases.cnpg,
    userNamespaces: config.userNamespaces,
    clusterDns: config.machineNetwork.clusterDns,
    backups: key
      ? {
          key,
          schedule: config.databases.backupSchedule,
          platformPorts: config.machineNetwork.platformPorts,
          artifactBaseUrl: config.deploys.artifactBaseUrl,
          backupBaseUrl: `${new URL(config.deploys.artifactBaseUrl).origin}/backups`,
        }
      : undefined,
  };
}
