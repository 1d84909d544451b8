// node-agent: the development kubelet of the local platform (docs/node-agent.md).
import { loadConfigOrExit } from '../lib/config.js';
import { createLogger } from '../lib/logger.js';
import { NodeAgent } from './agent.js';

const config = loadConfigOrExit('node-agent');
const log = createLogger('node-agent', config.logLevel);
const agent = new NodeAgent(config, log);
try {
  await agent.start();
} catch (err) {
  log.fatal({ err }, 'node-agent could not start');
  await agent.stop();
  process.exit(1);
}
log.info({ nodes: config.nodeAgent.nodes }, 'node-agent running');

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'Stopping node-agent and every pod process');
  await agent.stop();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
