// The local platform's volume provisioner (the default StorageClass `svc-local`), run on the host
// by hack/nodes.sh for every node there: PersistentVolumeClaims bind to directories of the nodes.
import path from 'node:path';
import { loadConfigOrExit } from '../lib/config.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { LocalProvisioner } from './provisioner.js';

const config = loadConfigOrExit('local-volumes');
const log = createLogger('local-volumes', config.logLevel);
const provisioner = new LocalProvisioner(loadKubeConfig(config.kubeconfig), config.nodes.names, path.join(config.stateDir, 'nodes'), log);
await provisioner.start();
log.info({ nodes: config.nodes.names }, 'Local volume provisioner started');
const stop = () => void provisioner.stop().finally(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
