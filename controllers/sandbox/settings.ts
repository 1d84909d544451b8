// The Sandbox controller's settings, from the controllers' configuration.
import type { Config } from '../../lib/config.js';
import type { SandboxPodSettings } from './pod.js';

export interface SandboxControllerSettings {
  pod: SandboxPodSettings;
  poolSize: number;
  retentionMs: number;
  /** A sandbox whose pod is not serving by then fails (StartTimeout). */
  startDeadlineMs: number;
  /** Where the platform is as pods see it: the only source the agent's port admits. */
  platformCidrs: readonly string[];
  platformNamespace?: string | undefined;
}

/** Undefined without an agent key (the artifact key): no sandbox could be reached safely. */
export function sandboxSettings(
  config: Pick<Config, 'sandboxes' | 'deploys' | 'machineNetwork' | 'userNamespaces'>,
): SandboxControllerSettings | undefined {
  const key = config.deploys.artifactKey;
  if (!key) return undefined;
  return {
    pod: {
      image: config.sandboxes.image,
      namespace: config.sandboxes.namespace,
      runtimeClass: config.sandboxes.runtimeClass,
      agentKey: key,
      userNamespaces: config.userNamespaces,
    },
    poolSize: config.sandboxes.poolSize,
    retentionMs: config.sandboxes.retentionMs,
    startDeadlineMs: 120_000,
    platformCidrs: config.machineNetwork.platformCidrs,
    platformNamespace: config.machineNetwork.platformNamespace,
  };
}
