// The Sandbox controllers' setup: the Sandboxes of every account and the sandbox pods (one
// namespace) they are served by; and the sandbox pool, whose primary object is the sandbox
// namespace and which every sandbox pod's change, a Sandbox's deletion (its claimed pod goes) and a
// policy of the namespace deleted (its policies are applied again) bring back.
import * as k8s from '@kubernetes/client-node';
import { podSecurityLabels } from '../../lib/accounts.js';
import { group, labels, managers, pluralOf, version } from '../../lib/contract.js';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import type { Sandbox } from '../../lib/resources/index.js';
import { defaultResources } from '../../lib/sandbox/limits.js';
import { customStatusWriter, type Controller } from '../frame/controller.js';
import { targets } from '../frame/informers.js';
import type { SetupContext } from '../frame/setup.js';
import { poolKey } from './pod.js';
import { PoolReconciler } from './pool-reconciler.js';
import { SandboxReconciler } from './reconciler.js';
import type { SandboxControllerSettings } from './settings.js';

export function setupSandboxes(
  ctx: SetupContext,
  sbx: SandboxControllerSettings,
): { sandboxes: Controller<Sandbox, object>; pool: Controller<k8s.V1Namespace, never> } {
  const { kc, clients, informers, log } = ctx;
  const sandboxes = informers.informer(targets.custom<Sandbox>(kc, group, version, pluralOf('Sandbox')));
  const sandboxPods = informers.informer(targets.pods(kc, labels.sandboxPod));
  const sandboxNamespace = informers.informer(targets.namespaces(kc, `kubernetes.io/metadata.name=${sbx.pod.namespace}`));
  const key = poolKey(sbx.pod, { ...defaultResources });
  const podsHere = () => sandboxPods.list(sbx.pod.namespace);
  const sandboxReconciler = new SandboxReconciler(
    clients.core,
    clients.custom,
    {
      servingOf: (uid) => podsHere().find((p) => p.metadata?.labels?.[labels.sandboxUid] === uid),
      membersOf: (k) =>
        podsHere().filter((p) => p.metadata?.labels?.[labels.sandboxPool] === k && !p.metadata?.labels?.[labels.sandboxUid]),
    },
    { pod: sbx.pod, timing: { retentionMs: sbx.retentionMs, startDeadlineMs: sbx.startDeadlineMs }, poolKey: key },
    log,
    ctx.events,
    () => pool.add(sbx.pod.namespace),
  );
  const sandboxOf = (pod: k8s.V1Pod): string[] => {
    const l = pod.metadata?.labels ?? {};
    return l[labels.sandbox] && l[labels.sandboxNamespace] ? [`${l[labels.sandboxNamespace]}/${l[labels.sandbox]}`] : [];
  };
  const controller = ctx
    .controller<Sandbox, object>({
      kind: 'Sandbox',
      primary: sandboxes,
      reconciler: sandboxReconciler,
      writeStatus: customStatusWriter<Sandbox>(clients.custom, group, version, pluralOf('Sandbox'), mergePatch),
      concurrency: 16,
    })
    .watches(sandboxPods, sandboxOf);

  const poolReconciler = new PoolReconciler(
    clients.core,
    clients.networking,
    {
      pods: podsHere,
      sandboxExists: (uid) => sandboxes.list().some((s) => s.metadata?.uid === uid),
      reserved: sandboxReconciler.reserved,
      retiring: sandboxReconciler.retiring,
    },
    { pod: sbx.pod, key, size: sbx.poolSize, platformCidrs: sbx.platformCidrs, platformNamespace: sbx.platformNamespace },
    log,
  );
  const pool = ctx
    .controller<k8s.V1Namespace, never>({
      kind: 'SandboxPool',
      primary: sandboxNamespace,
      reconciler: poolReconciler,
      applier: poolReconciler.applier,
      concurrency: 1,
    })
    .watches(sandboxPods, () => [sbx.pod.namespace])
    // A policy of the sandbox namespace deleted: the pool's next pass (now) applies them again.
    .forgets(
      ctx.shared.policies,
      (policy: k8s.V1NetworkPolicy) => (policy.metadata?.namespace === sbx.pod.namespace ? [sbx.pod.namespace] : []),
      {
        requeue: true,
      },
    );
  // A claimed pod whose Sandbox was deleted (kubectl delete) goes with the pool's next pass.
  sandboxes.on('delete', () => pool.add(sbx.pod.namespace));

  ctx.beforeStart(() => ensureSandboxNamespace(clients.core, sbx.pod.namespace, ctx));
  ctx.metrics((metric) => {
    const depth = poolReconciler.depth;
    metric('svc_sandbox_pool_size', 'Free pool members the controllers keep (SVC_SANDBOX_POOL_SIZE).', 'gauge', [[{}, sbx.poolSize]]);
    metric('svc_sandbox_pool_members', 'Free pool members by state.', 'gauge', [
      [{ state: 'ready' }, depth.ready],
      [{ state: 'starting' }, depth.starting],
    ]);
    metric('svc_sandbox_launches_total', 'Sandboxes served, by launch (warm: a ready pool member).', 'counter', [
      [{ launch: 'warm' }, sandboxReconciler.launches.warm],
      [{ launch: 'cold' }, sandboxReconciler.launches.cold],
    ]);
  });
  return { sandboxes: controller, pool };
}

/** The sandbox namespace, made on first start: restricted Pod Security, like account namespaces. */
async function ensureSandboxNamespace(core: k8s.CoreV1Api, name: string, ctx: Pick<SetupContext, 'log'>): Promise<void> {
  try {
    await core.createNamespace({
      body: { metadata: { name, labels: { ...podSecurityLabels, [labels.managedBy]: managers.controllers } } },
    });
    ctx.log.info({ namespace: name }, 'Created the sandbox namespace');
  } catch (err) {
    // 409: there already. 403: not ours to make (a chart install makes it: templates/sandboxes.yaml).
    if (kubeStatus(err) === 403)
      ctx.log.info({ namespace: name }, 'Not allowed to create the sandbox namespace; using the one the installation made');
    else if (kubeStatus(err) !== 409) throw err;
  }
}
