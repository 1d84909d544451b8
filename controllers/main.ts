// Starts the controllers: waits for the leader Lease, then reconciles.
import * as k8s from '@kubernetes/client-node';
import { loadConfigOrExit } from '../lib/config.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { LeaderElection } from '../lib/kube/leader.js';
import { appSettings } from './app/settings.js';
import { Manager } from './manager.js';
import { serveMetrics } from './metrics.js';
import { buildSettings } from './build/settings.js';
import { databaseSettings } from './database/settings.js';
import { sandboxSettings } from './sandbox/settings.js';

const config = loadConfigOrExit('controllers');
const log = createLogger('controllers', config.logLevel);
const kc = loadKubeConfig(config.kubeconfig);
if (!config.deploys.artifactKey)
  log.error(
    'No artifact key (SVC_ARTIFACT_KEY or SVC_ARTIFACT_KEY_FILE): machines of static, HTML, Markdown and handler apps cannot fetch their artifact',
  );
const election = new LeaderElection(kc.makeApiClient(k8s.CoordinationV1Api), 'kube-system', 'svc-controllers', log);
const sandboxes = sandboxSettings(config);
if (!sandboxes)
  log.error("No artifact key (SVC_ARTIFACT_KEY or SVC_ARTIFACT_KEY_FILE): sandboxes are not served (their agents' tokens derive from it)");
const manager = new Manager(kc, appSettings(config), log, {
  sandboxes,
  databases: databaseSettings(config),
  builds: buildSettings(config),
});
await serveMetrics(config.controllersMetrics.host, config.controllersMetrics.port, () => manager.metrics());
log.info({ address: `http://${config.controllersMetrics.host}:${config.controllersMetrics.port}/metrics` }, 'Serving metrics');

async function shutdown(signal: string): Promise<void> {
  log.info({ signal }, 'Stopping controllers');
  await manager.stop();
  await election.release();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

const leading = await election.run(() => {
  // Another replica leads now: stop working at once; the supervisor restarts this one as a follower.
  process.exit(1);
});
// Not leading means shutdown released the Lease before this replica ever led: nothing to start.
if (leading) await manager.start();
