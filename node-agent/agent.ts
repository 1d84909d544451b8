// The node agent: registers its Nodes, watches the pods bound to them, and runs each pod through
// a PodWorker. Each node talks to the apiserver with its own node identity (system:node:<name>),
// so the Node authorizer and NodeRestriction limit it exactly as they limit a kubelet.
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { Config } from '../lib/config.js';
import { kubeStatus } from '../lib/kube/client.js';
import { keepWatching } from '../lib/kube/keep-watching.js';
import { EventRecorder } from '../lib/kube/events.js';
import type { Logger } from '../lib/logger.js';
import type { EnvSources } from './env.js';
import { loadImageRules } from './images.js';
import { LoopbackNetwork, NetnsNetwork, type PodNetwork } from './network.js';
import { startKubeletServer, type KubeletServer } from './kubelet-server.js';
import { detectCgroups } from './limits.js';
import { reapOrphans } from './orphans.js';
import { LocalProvisioner } from './provisioner.js';
import type { VolumeSources } from './volumes.js';
import { NodeHeartbeat, type NodeIdentity } from './node.js';
import { PodWorker } from './pod-worker.js';

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
/** Longest grace period given to pods when the agent itself stops. */
const agentStopGraceMs = 10_000;

function nodeKubeConfig(config: Config, node: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  const pki = config.nodeAgent.pkiDir;
  kc.loadFromOptions({
    clusters: [{ name: 'local', server: config.nodeAgent.apiserverUrl, caFile: path.join(pki, 'ca.crt'), skipTLSVerify: false }],
    users: [{ name: node, certFile: path.join(pki, `node-${node}.crt`), keyFile: path.join(pki, `node-${node}.key`) }],
    contexts: [{ name: node, cluster: 'local', user: node }],
    currentContext: node,
  });
  return kc;
}

/** Secrets, config maps and tokens for the node's pods, read with the node's own identity. */
function podSources(core: k8s.CoreV1Api): VolumeSources {
  const missing = (err: unknown) => {
    if (kubeStatus(err) === 404) return undefined;
    throw err;
  };
  return {
    secret: async (namespace, name) => {
      const s = await core.readNamespacedSecret({ namespace, name }).catch(missing);
      return s && Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
    },
    configMap: async (namespace, name) => {
      const c = await core.readNamespacedConfigMap({ namespace, name }).catch(missing);
      if (!c) return undefined;
      return {
        ...Object.fromEntries(Object.entries(c.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'utf8')])),
        ...Object.fromEntries(Object.entries(c.binaryData ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
      };
    },
    claimPath: async (namespace, name) => {
      const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace, name }).catch(missing);
      if (!pvc?.spec?.volumeName || pvc.status?.phase !== 'Bound') return undefined;
      const pv = await core.readPersistentVolume({ name: pvc.spec.volumeName }).catch(missing);
      return pv?.spec?.local?.path ?? pv?.spec?.hostPath?.path;
    },
    token: async (pod, audience, expirationSeconds) => {
      const meta = pod.metadata!;
      const request = await core.createNamespacedServiceAccountToken({
        name: pod.spec?.serviceAccountName ?? 'default',
        namespace: meta.namespace!,
        body: {
          spec: {
            audiences: audience ? [audience] : [],
            expirationSeconds,
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: meta.name!, uid: meta.uid! },
          },
        },
      });
      return request.status!.token;
    },
  };
}

/** The same objects as environment values (text). */
function envSources(sources: VolumeSources): EnvSources {
  const text = (data: Record<string, Buffer> | undefined) => data && Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.toString('utf8')]));
  return {
    secret: async (ns, name) => text(await sources.secret(ns, name)),
    configMap: async (ns, name) => text(await sources.configMap(ns, name)),
  };
}

interface NodeRuntime {
  identity: NodeIdentity;
  heartbeat: NodeHeartbeat;
  informer: k8s.ListWatch<k8s.V1Pod>;
  server: KubeletServer;
}

export class NodeAgent {
  private readonly workers = new Map<string, PodWorker>();
  private readonly byName = new Map<string, PodWorker>();
  private readonly nodes: NodeRuntime[] = [];
  private readonly network: PodNetwork;
  private provisioner: LocalProvisioner | undefined;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
  ) {
    const { network, podSubnetPrefix } = config.nodeAgent;
    this.network = network === 'netns' ? new NetnsNetwork(podSubnetPrefix) : new LoopbackNetwork(podSubnetPrefix);
  }

  async start(): Promise<void> {
    const rules = loadImageRules(this.config.nodeAgent.imageMapFile);
    const reaped = reapOrphans(path.join(this.config.nodeAgent.dataDir, 'pods'));
    if (reaped) this.log.warn({ processGroups: reaped }, 'Ended container processes a previous node-agent left running');
    if (this.network instanceof NetnsNetwork) await this.network.init();
    const cgroups = detectCgroups();
    this.log.info({ cgroups }, cgroups === 'none' ? 'No writable cgroup hierarchy: CPU and memory limits will not be enforced' : 'Limits enforced with cgroups');
    this.log.info({ network: this.config.nodeAgent.network, subnet: `${this.config.nodeAgent.podSubnetPrefix}.0.0/16` }, 'Pod network ready');
    // The apiserver's node proxy (/api/v1/nodes/<node>/proxy/..., how usage is read) refuses
    // loopback addresses, so with a pod bridge the nodes are known by the host's address on it.
    const address = this.network instanceof NetnsNetwork ? `${this.config.nodeAgent.podSubnetPrefix}.0.1` : '127.0.0.1';
    for (const [i, name] of this.config.nodeAgent.nodes.entries()) {
      const kc = nodeKubeConfig(this.config, name);
      const identity: NodeIdentity = {
        name,
        address,
        kubeletPort: this.config.nodeAgent.kubeletPort + i,
        core: kc.makeApiClient(k8s.CoreV1Api),
        coordination: kc.makeApiClient(k8s.CoordinationV1Api),
      };
      const events = new EventRecorder(identity.core, 'node-agent', name, this.log);
      const heartbeat = new NodeHeartbeat(identity, this.log);
      await heartbeat.register();
      const server = startKubeletServer({
        port: identity.kubeletPort,
        addresses: ['127.0.0.1', address],
        pkiDir: this.config.nodeAgent.pkiDir,
        nodeName: name,
        findPod: (ns, pod) => this.byName.get(`${ns}/${pod}`),
        pods: () => [...this.workers.values()].filter((w) => w.nodeName === name),
        log: this.log,
      });
      const fieldSelector = `spec.nodeName=${name}`;
      const informer = new k8s.ListWatch<k8s.V1Pod>(
        '/api/v1/pods',
        new k8s.Watch(kc),
        () => identity.core.listPodForAllNamespaces({ fieldSelector }),
        false,
        undefined,
        fieldSelector,
      );
      const sources = podSources(identity.core);
      const deps = {
        hostIP: '127.0.0.1',
        rules,
        network: this.network,
        dataDir: this.config.nodeAgent.dataDir,
        logMaxBytes: this.config.nodeAgent.logMaxBytes,
        envSources: envSources(sources),
        volumeSources: sources,
        cgroups,
        log: this.log,
        reportStatus: async (pod: k8s.V1Pod, status: k8s.V1PodStatus) => {
          await identity.core.patchNamespacedPodStatus(
            { name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, body: { status } },
            mergePatch,
          );
        },
        recordEvent: (pod: k8s.V1Pod, type: 'Normal' | 'Warning', reason: string, message: string) => {
          const meta = pod.metadata!;
          events.record({ apiVersion: 'v1', kind: 'Pod', name: meta.name!, namespace: meta.namespace!, uid: meta.uid! }, type, reason, message);
        },
        deletePod: async (pod: k8s.V1Pod) => {
          await identity.core
            .deleteNamespacedPod({
              name: pod.metadata!.name!,
              namespace: pod.metadata!.namespace!,
              // With a body, the apiserver reads the options from it, not from the query.
              body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata!.uid! } },
            })
            .catch((err: unknown) => {
              if (kubeStatus(err) !== 404 && kubeStatus(err) !== 409) throw err;
            });
        },
      };
      const upsert = (pod: k8s.V1Pod) => {
        const uid = pod.metadata?.uid;
        if (!uid) return;
        const existing = this.workers.get(uid);
        if (existing) return existing.update(pod);
        // A pod that finished before this agent started is history, not work.
        if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return;
        const worker = new PodWorker(pod, deps);
        this.workers.set(uid, worker);
        this.byName.set(`${pod.metadata!.namespace}/${pod.metadata!.name}`, worker);
        this.log.info({ node: name, pod: worker.name }, 'Starting pod');
        worker.start();
        if (pod.metadata?.deletionTimestamp) worker.update(pod);
      };
      informer.on('add', upsert);
      informer.on('update', upsert);
      informer.on('delete', (pod) => {
        const worker = pod.metadata?.uid ? this.workers.get(pod.metadata.uid) : undefined;
        if (!worker) return;
        this.workers.delete(pod.metadata!.uid!);
        if (this.byName.get(worker.name) === worker) this.byName.delete(worker.name);
        void worker.terminate(0, false);
      });
      keepWatching(informer, `pods of ${name}`, this.log);
      await informer.start();
      this.nodes.push({ identity, heartbeat, informer, server });
      this.log.info({ node: name, kubeletPort: identity.kubeletPort }, 'Node ready');
    }
    const [first] = this.config.nodeAgent.nodes;
    this.provisioner = new LocalProvisioner(nodeKubeConfig(this.config, first!), this.config.nodeAgent.nodes, this.config.nodeAgent.dataDir, this.log);
    await this.provisioner.start();
  }

  /** Stops every pod (no process is left behind), the watches, heartbeats and kubelet endpoints. */
  async stop(): Promise<void> {
    await this.provisioner?.stop();
    for (const n of this.nodes) {
      await n.informer.stop();
      n.heartbeat.stop();
      n.server.close();
    }
    await Promise.all([...this.workers.values()].map((w) => w.terminate(agentStopGraceMs, false)));
    this.workers.clear();
    this.byName.clear();
  }
}
