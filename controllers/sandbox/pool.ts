// The sandbox pool's pure half: the sandbox namespace's NetworkPolicies, how many members to start
// and which pods to delete (members of an old template, members that broke, claimed pods whose
// Sandbox is gone). No I/O: controllers/sandbox/pool-reconciler.ts applies it.
import type * as k8s from '@kubernetes/client-node';
import { labels, managers } from '../../lib/contract.js';
import { agentPort } from '../../lib/sandbox/exec.js';
import { podBroken, podReady } from './pod.js';

export interface PoolObserved {
  /** Every sandbox pod in the sandbox namespace. */
  pods: readonly k8s.V1Pod[];
  /** The current template's pool key. */
  key: string;
  size: number;
  /** Whether a Sandbox with this uid exists (the cache). */
  sandboxExists: (uid: string) => boolean;
  /** Pods this process just claimed or created, not in the cache as such yet. */
  reserved: ReadonlySet<string>;
  /** Free members this process is deleting (not yet shown as deleting by the cache): gone already. */
  retiring?: ReadonlySet<string>;
  /** Members this process created that the cache does not show yet: counted as starting. */
  creating?: number;
}

export interface PoolPlan {
  create: number;
  delete: Array<{ name: string; why: string }>;
  /** Free members by state, for metrics and logs. */
  depth: { ready: number; starting: number };
}

export function planPool(o: PoolObserved): PoolPlan {
  const remove: PoolPlan['delete'] = [];
  let ready = 0;
  let starting = 0;
  for (const pod of o.pods) {
    const name = pod.metadata!.name!;
    if (pod.metadata?.deletionTimestamp || o.reserved.has(name) || o.retiring?.has(name)) continue;
    const l = pod.metadata?.labels ?? {};
    const claimedBy = l[labels.sandboxUid];
    if (claimedBy) {
      if (!o.sandboxExists(claimedBy)) remove.push({ name, why: 'its Sandbox is gone' });
      continue;
    }
    const pool = l[labels.sandboxPool];
    if (pool === undefined) continue;
    if (pool !== o.key) remove.push({ name, why: 'a member of an older template' });
    else if (podBroken(pod)) remove.push({ name, why: podBroken(pod)! });
    else if (podReady(pod)) ready += 1;
    else starting += 1;
  }
  // Members made but not yet in the cache count: without them every event before the cache
  // catches up would start another member, and the surplus would be deleted again after.
  const surplus = ready + starting + (o.creating ?? 0) - o.size;
  // More members than the pool holds (its size was lowered): the starting ones go first.
  if (surplus > 0) {
    const extra = o.pods
      .filter(
        (p) =>
          p.metadata?.labels?.[labels.sandboxPool] === o.key &&
          !p.metadata?.deletionTimestamp &&
          !o.reserved.has(p.metadata.name!) &&
          !o.retiring?.has(p.metadata.name!) &&
          !podBroken(p),
      )
      .sort((a, b) => Number(podReady(a)) - Number(podReady(b)))
      .slice(0, surplus);
    for (const p of extra) remove.push({ name: p.metadata!.name!, why: 'the pool is smaller now' });
  }
  return { create: Math.max(0, -surplus), delete: remove, depth: { ready, starting } };
}

/**
 * The sandbox namespace's policies: every sandbox pod accepts connections only from the platform,
 * on the agent's port, and opens none (deny-all egress); one labelled network=on may open any
 * connection except to the cloud metadata address and the platform's node addresses (the host's
 * ports; locally also the apiserver, which pods reach at the first node's address).
 */
export function sandboxPolicies(
  namespace: string,
  platform: readonly k8s.V1NetworkPolicyPeer[],
  platformCidrs: readonly string[],
): k8s.V1NetworkPolicy[] {
  const metadata = (name: string) => ({ name, namespace, labels: { [labels.managedBy]: managers.controllers } });
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: metadata('sandbox-isolation'),
      spec: {
        podSelector: {},
        policyTypes: ['Ingress', 'Egress'],
        // `from` on the wire: apply patches are sent as written, not renamed like the model's `_from`.
        ingress: [
          {
            from: platform,
            ports: [{ protocol: 'TCP', port: agentPort as unknown as k8s.IntOrString }],
          } as unknown as k8s.V1NetworkPolicyIngressRule,
        ],
        egress: [],
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: metadata('sandbox-network'),
      spec: {
        podSelector: { matchLabels: { [labels.network]: 'on' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.169.254/32', ...platformCidrs] } }] }],
      },
    },
  ];
}
