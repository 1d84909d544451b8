// The platform registry's token service (its `realm`), run on the host beside the registry by
// hack/nodes.sh: it starts and stops with the registry, so every pull and push has it, whether or not
// the API runs (hack/images.sh pushes before the API starts; `make test` runs no API of its own).
// It reads what it checks credentials against from Kubernetes at each request (account namespaces,
// Builds): a token is asked once per pull or push, and a rotated credential counts at once.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { terminalPhases } from '../lib/builds/index.js';
import { loadConfigOrExit } from '../lib/config.js';
import { group, labels, pluralOf, version } from '../lib/contract.js';
import { kubeStatus, loadKubeConfig } from '../lib/kube/client.js';
import { createLogger } from '../lib/logger.js';
import { pullCredentialAnnotation } from '../lib/registry/names.js';
import type { Build } from '../lib/resources/index.js';
import { ClientsFile, type PrincipalSources } from './principals.js';
import { tokenHandler } from './server.js';
import { TokenSigner } from './token.js';

const config = loadConfigOrExit('registry-auth');
const log = createLogger('registry-auth', config.logLevel);
const r = config.registryAuth;
const signer = TokenSigner.fromPem(readFileSync(r.keyFile, 'utf8'), readFileSync(r.certFile, 'utf8'), {
  issuer: r.issuer,
  service: r.service,
  ttlSeconds: r.tokenSeconds,
});
const kc = loadKubeConfig(config.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const clients = new ClientsFile(r.clientsFile);

/** The object, or undefined when the apiserver says it is not there. */
async function unlessMissing<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (kubeStatus(err) === 404) return undefined;
    throw err;
  }
}

const sources: PrincipalSources = {
  platformHash: (user) => clients.hashOf(user),
  async accountHash(namespace) {
    const ns = await unlessMissing(core.readNamespace({ name: namespace }));
    // Only an account's namespace: a hash someone put on another namespace opens nothing.
    if (!ns?.metadata?.labels?.[labels.account]) return undefined;
    return ns.metadata.annotations?.[pullCredentialAnnotation];
  },
  async build(namespace, name) {
    const build = (await unlessMissing(
      custom.getNamespacedCustomObject({ group, version, plural: pluralOf('Build'), namespace, name }),
    )) as Build | undefined;
    if (!build?.spec?.app) return undefined;
    return { app: build.spec.app, ended: build.status?.phase !== undefined && terminalPhases.has(build.status.phase) };
  },
  artifactKey: config.deploys.artifactKey,
  clock: () => new Date(),
};
if (!sources.artifactKey) log.warn('No artifact key (SVC_ARTIFACT_KEY or SVC_ARTIFACT_KEY_FILE): builds cannot push their images');

const server = http.createServer(tokenHandler({ signer, service: r.service, sources, log }));
server.requestTimeout = 30_000;
server.listen(r.port, r.host, () =>
  log.info({ host: r.host, port: r.port, service: r.service }, `Registry token service listening on http://${r.host}:${r.port}/token`),
);

const stop = () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 5000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
