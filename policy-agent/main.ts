// The local platform's NetworkPolicy agent: watches NetworkPolicies, Pods and Namespaces and keeps
// this host's iptables and ipsets enforcing them (policy-agent/program.ts). One agent serves every
// node on the host: the nodes share its kernel. It stands in for kube-router's policy controller,
// which the Go module proxy does not serve here (docs/decisions/0014-real-nodes.md).
import * as k8s from '@kubernetes/client-node';
import { loadConfigOrExit } from '../lib/config.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { keepWatching } from '../lib/kube/keep-watching.js';
import { createLogger } from '../lib/logger.js';
import { applyProgram } from './apply.js';
import { buildProgram } from './program.js';

const config = loadConfigOrExit('policy-agent');
const log = createLogger('policy-agent', config.logLevel);
const kc = loadKubeConfig(config.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const networking = kc.makeApiClient(k8s.NetworkingV1Api);

const policies = new k8s.ListWatch<k8s.V1NetworkPolicy>(
  '/apis/networking.k8s.io/v1/networkpolicies',
  new k8s.Watch(kc),
  () => networking.listNetworkPolicyForAllNamespaces(),
  false,
);
const pods = new k8s.ListWatch<k8s.V1Pod>('/api/v1/pods', new k8s.Watch(kc), () => core.listPodForAllNamespaces(), false);
const namespaces = new k8s.ListWatch<k8s.V1Namespace>('/api/v1/namespaces', new k8s.Watch(kc), () => core.listNamespace(), false);

let started = false;
let running: Promise<void> | undefined;
let again = false;
let last = '';

/** One sync at a time; changes during a sync cause exactly one more. */
function sync(): void {
  if (!started) return;
  if (running) {
    again = true;
    return;
  }
  running = (async () => {
    const t0 = performance.now();
    const program = buildProgram({ policies: policies.list(), pods: pods.list(), namespaces: namespaces.list() });
    const shape = JSON.stringify(program);
    if (shape === last) return;
    const removed = await applyProgram(program);
    last = shape;
    log.info(
      {
        policies: policies.list().length,
        sets: program.sets.length,
        rules: program.rules.length,
        ...removed,
        ms: Math.round(performance.now() - t0),
      },
      'Policies applied',
    );
  })()
    .catch((err: unknown) => {
      last = '';
      log.error({ err }, 'Applying policies failed; retrying in 1 s');
      setTimeout(sync, 1000).unref();
    })
    .finally(() => {
      running = undefined;
      if (again) {
        again = false;
        sync();
      }
    });
}

let timer: NodeJS.Timeout | undefined;
/** Changes come in bursts (a pod's status several times at start): sync once per 50 ms. */
function soon(): void {
  timer ??= setTimeout(() => {
    timer = undefined;
    sync();
  }, 50);
}

for (const informer of [policies, pods, namespaces] as Array<k8s.ListWatch<k8s.KubernetesObject>>) {
  for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, soon);
}
keepWatching(policies, 'network policies', log);
keepWatching(pods, 'pods', log);
keepWatching(namespaces, 'namespaces', log);
await Promise.all([policies.start(), pods.start(), namespaces.start()]);
started = true;
sync();
// Rules changed behind the agent's back (a restart of kube-proxy, a hand edit) are put back. The
// timer also keeps this process alive while its watches restart: their retry timers do not, and
// with all three watches cut at once (the apiserver restarted) the agent used to exit, leaving the
// host's rules as they were, pods of new policies refused.
setInterval(() => {
  last = '';
  sync();
}, 30_000);
log.info('Policy agent started');

const stop = () => {
  void Promise.all([policies.stop(), pods.stop(), namespaces.stop()]).finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
