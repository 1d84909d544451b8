// The policy agent's pure half: from the NetworkPolicies, Pods and Namespaces it observes, the
// ipsets and iptables chains that enforce them on this host (NetworkPolicy v1 semantics). No I/O;
// policy-agent/apply.ts loads the result with `ipset restore` and `iptables-restore --noflush`.
//
// How a packet is judged (chain SVC-POLICY, reached from FORWARD, from OUTPUT towards the pod
// bridges, and from INPUT for what pods send the host): packets of established connections pass;
// a new connection passes if its source pod is not isolated for egress or an egress rule of a
// policy selecting it admits the destination (mark 0x10000), and its destination pod is not
// isolated for ingress or an ingress rule of a policy selecting it admits the source (0x20000).
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';

export const rootChain = 'SVC-POLICY';
const egressMark = '0x10000';
const ingressMark = '0x20000';
const marks = '0x30000';

export interface IpSet {
  name: string;
  type: 'hash:ip' | 'hash:net';
  /** `hash:net` entries may end in ` nomatch` (an ipBlock's `except`). */
  entries: string[];
}

export interface Program {
  sets: IpSet[];
  /** The chains this program owns, all declared (and so flushed) by the restore. */
  chains: string[];
  /** `-A ...` lines of the filter table. */
  rules: string[];
}

export interface Observed {
  policies: readonly k8s.V1NetworkPolicy[];
  pods: readonly k8s.V1Pod[];
  namespaces: readonly k8s.V1Namespace[];
}

type Selector = k8s.V1LabelSelector | undefined;

/** Kubernetes label-selector semantics; an empty selector matches everything. */
export function matches(selector: Selector, labels: Record<string, string> | undefined): boolean {
  const have = labels ?? {};
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (have[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const present = Object.hasOwn(have, e.key);
    const value = have[e.key];
    switch (e.operator) {
      case 'In':
        if (!present || !e.values?.includes(value!)) return false;
        break;
      case 'NotIn':
        if (present && e.values?.includes(value!)) return false;
        break;
      case 'Exists':
        if (!present) return false;
        break;
      case 'DoesNotExist':
        if (present) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** Pods that hold an address of their own and may still send or receive. */
function livePods(pods: readonly k8s.V1Pod[]): k8s.V1Pod[] {
  return pods.filter((p) => p.status?.podIP && !p.spec?.hostNetwork && p.status.phase !== 'Succeeded' && p.status.phase !== 'Failed');
}

const short = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 12);

interface Peer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: k8s.V1IPBlock;
}
interface PortSpec {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

/**
 * An ipBlock CIDR as `hash:net` entries: a set cannot hold a /0 (prefixes run 1 to 32), so the
 * whole address space is its two halves, and the IPv4 sets skip IPv6 blocks (the nodes' pod network
 * is IPv4): either, written as it is, would fail the whole restore and with it every policy.
 */
export function netEntries(cidr: string): string[] {
  if (cidr.includes(':')) return [];
  if (cidr.endsWith('/0')) return ['0.0.0.0/1', '128.0.0.0/1'];
  return [cidr];
}

/** The addresses a rule's peers stand for, as `hash:net` entries. */
function peerEntries(peers: Peer[], policyNs: string, o: Observed): string[] {
  const nsLabels = new Map(
    o.namespaces.map((n) => [n.metadata!.name!, n.metadata?.labels ?? { 'kubernetes.io/metadata.name': n.metadata!.name! }]),
  );
  const entries = new Set<string>();
  for (const peer of peers) {
    if (peer.ipBlock) {
      for (const net of netEntries(peer.ipBlock.cidr)) entries.add(net);
      for (const ex of peer.ipBlock.except ?? []) for (const net of netEntries(ex)) entries.add(`${net} nomatch`);
      continue;
    }
    for (const pod of livePods(o.pods)) {
      const ns = pod.metadata!.namespace!;
      const inNamespace = peer.namespaceSelector ? matches(peer.namespaceSelector, nsLabels.get(ns)) : ns === policyNs;
      if (inNamespace && matches(peer.podSelector, pod.metadata?.labels)) entries.add(`${pod.status!.podIP!}/32`);
    }
  }
  // A peer admitted by name wins over another peer's `except` of the same address (peers are a union;
  // in a hash:net set the most specific entry decides, and one entry cannot be both).
  for (const e of entries) if (e.endsWith(' nomatch') && entries.has(e.slice(0, -' nomatch'.length))) entries.delete(e);
  return [...entries].sort();
}

/** A named port resolved on the pods it names: every number it stands for there. */
function portNumbers(spec: PortSpec, pods: k8s.V1Pod[]): number[] {
  if (typeof spec.port === 'number') return [spec.port];
  if (spec.port === undefined) return [];
  if (/^\d+$/.test(spec.port)) return [Number(spec.port)];
  const protocol = spec.protocol ?? 'TCP';
  const found = new Set<number>();
  for (const pod of pods)
    for (const c of pod.spec?.containers ?? [])
      for (const p of c.ports ?? []) if (p.name === spec.port && (p.protocol ?? 'TCP') === protocol) found.add(p.containerPort);
  return [...found];
}

/** The match part of one rule line per port of `ports` (one line without ports when there are none). */
function portMatches(ports: PortSpec[] | undefined, namedOn: k8s.V1Pod[]): string[] {
  if (!ports?.length) return [''];
  const out: string[] = [];
  for (const spec of ports) {
    const proto = (spec.protocol ?? 'TCP').toLowerCase();
    if (spec.port === undefined) {
      out.push(`-p ${proto}`);
      continue;
    }
    // A named port no pod declares opens nothing.
    for (const n of portNumbers(spec, namedOn)) out.push(`-p ${proto} -m ${proto} --dport ${n}${spec.endPort ? `:${spec.endPort}` : ''}`);
  }
  return out;
}

/** One direction of a policy: which end of a packet is the selected pod, which end the peer. */
interface Direction {
  type: 'Ingress' | 'Egress';
  /** The chain suffix and the peer-set letter. */
  suffix: 'IN' | 'OUT';
  letter: 'i' | 'e';
  /** The selected pod is the packet's destination (ingress) or source (egress). */
  selected: 'dst' | 'src';
  peer: 'src' | 'dst';
  mark: string;
  rulesOf(spec: k8s.V1NetworkPolicySpec | undefined): Array<{ peers: Peer[] | undefined; ports: PortSpec[] | undefined }>;
}

const directions: Direction[] = [
  {
    type: 'Ingress',
    suffix: 'IN',
    letter: 'i',
    selected: 'dst',
    peer: 'src',
    mark: ingressMark,
    // The model names it `_from`; objects read from the apiserver may carry either.
    rulesOf: (spec) =>
      (spec?.ingress ?? []).map((r) => ({ peers: (r as { _from?: Peer[] })._from ?? (r as { from?: Peer[] }).from, ports: r.ports })),
  },
  {
    type: 'Egress',
    suffix: 'OUT',
    letter: 'e',
    selected: 'src',
    peer: 'dst',
    mark: egressMark,
    rulesOf: (spec) => (spec?.egress ?? []).map((r) => ({ peers: r.to, ports: r.ports })),
  },
];

export function buildProgram(o: Observed): Program {
  const sets: IpSet[] = [];
  const chains = [rootChain, `${rootChain}-IN`, `${rootChain}-OUT`];
  const rules: string[] = [];
  const isolated = { IN: new Set<string>(), OUT: new Set<string>() };
  const jumps: string[] = [];
  const live = livePods(o.pods);
  const policies = [...o.policies].sort((a, b) =>
    `${a.metadata!.namespace}/${a.metadata!.name}`.localeCompare(`${b.metadata!.namespace}/${b.metadata!.name}`),
  );

  for (const policy of policies) {
    const ns = policy.metadata!.namespace!;
    const id = short(`${ns}/${policy.metadata!.name}`);
    const selected = live.filter((p) => p.metadata!.namespace === ns && matches(policy.spec?.podSelector, p.metadata?.labels));
    const types = policy.spec?.policyTypes ?? ['Ingress', ...(policy.spec?.egress ? ['Egress'] : [])];
    const selSet = `svc-${id}-sel`;
    sets.push({ name: selSet, type: 'hash:ip', entries: selected.map((p) => p.status!.podIP!).sort() });
    for (const d of directions) {
      if (!types.includes(d.type)) continue;
      for (const p of selected) isolated[d.suffix].add(p.status!.podIP!);
      const chain = `SVC-P-${id}-${d.suffix}`;
      chains.push(chain);
      jumps.push(`-A ${rootChain}-${d.suffix} -m set --match-set ${selSet} ${d.selected} -j ${chain}`);
      d.rulesOf(policy.spec).forEach((rule, i) => {
        let peer = '';
        // A named port is resolved on the destination: the selected pods in, the peers out.
        let namedOn = d.type === 'Ingress' ? selected : live;
        if (rule.peers?.length) {
          const set = `svc-${id}-${d.letter}${i}`;
          const entries = peerEntries(rule.peers, ns, o);
          sets.push({ name: set, type: 'hash:net', entries });
          peer = `-m set --match-set ${set} ${d.peer} `;
          if (d.type === 'Egress') namedOn = live.filter((p) => entries.includes(`${p.status!.podIP!}/32`));
        }
        for (const port of portMatches(rule.ports, namedOn)) {
          rules.push(`-A ${chain} ${peer}${port ? `${port} ` : ''}-j MARK --set-xmark ${d.mark}/${d.mark}`.replace(/ +/g, ' '));
        }
      });
    }
  }

  const isolatedIn = isolated.IN;
  const isolatedOut = isolated.OUT;
  sets.push({ name: 'svc-isolated-in', type: 'hash:ip', entries: [...isolatedIn].sort() });
  sets.push({ name: 'svc-isolated-out', type: 'hash:ip', entries: [...isolatedOut].sort() });
  const reject = (m: string) => [
    `-A ${rootChain} ${m} -p tcp -j REJECT --reject-with tcp-reset`,
    `-A ${rootChain} ${m} -j REJECT --reject-with icmp-port-unreachable`,
  ];
  return {
    sets,
    chains,
    rules: [
      `-A ${rootChain} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`,
      `-A ${rootChain} -j MARK --set-xmark 0x0/${marks}`,
      `-A ${rootChain} -m set --match-set svc-isolated-out src -j ${rootChain}-OUT`,
      ...reject(`-m set --match-set svc-isolated-out src -m mark ! --mark ${egressMark}/${egressMark}`),
      `-A ${rootChain} -m set --match-set svc-isolated-in dst -j ${rootChain}-IN`,
      ...reject(`-m set --match-set svc-isolated-in dst -m mark ! --mark ${ingressMark}/${ingressMark}`),
      ...jumps,
      ...rules,
    ],
  };
}

export const isolationSets = ['svc-isolated-in', 'svc-isolated-out'] as const;

/** Which pods the kernel holds isolated now, per isolation set (read back before each apply). */
export type Isolation = Record<(typeof isolationSets)[number], readonly string[]>;

/**
 * The order a program is loaded in, so that no connection is refused for want of a rule that
 * admits it: a pod becomes isolated only once the rules of the policies selecting it are in
 * place, and a rule goes only once the pods it admitted are no longer isolated by it. So:
 * first every set but the isolation sets, with those holding only the pods isolated both before
 * and after (a pod leaving isolation leaves it now); then the chains (one atomic iptables-restore);
 * then the isolation sets as the program has them (a new pod enters isolation now). Loading the
 * isolation sets with the rest, as one restore did before, isolated a new pod before its policy's
 * chain existed: its first connections were reset (a build's first PUT, issue 30).
 */
export function stages(p: Program, current: Isolation): { sets: IpSet[]; isolate: IpSet[] } {
  const isolating = new Set<string>(isolationSets);
  const sets = p.sets.map((s) => {
    if (!isolating.has(s.name)) return s;
    const before = new Set(current[s.name as keyof Isolation]);
    return { ...s, entries: s.entries.filter((e) => before.has(e)) };
  });
  return { sets, isolate: p.sets.filter((s) => isolating.has(s.name)) };
}

/** The input of `iptables-restore --noflush`: declaring a chain flushes it, the rest is left alone. */
export function iptablesRestoreInput(p: Program): string {
  return ['*filter', ...p.chains.map((c) => `:${c} - [0:0]`), ...p.rules, 'COMMIT', ''].join('\n');
}

/**
 * The input of `ipset restore`: each set is filled under a temporary name and swapped in, so a
 * packet never meets a half-filled set.
 */
export function ipsetRestoreInput(p: Pick<Program, 'sets'>): string {
  const lines: string[] = [];
  for (const s of p.sets) {
    const tmp = `${s.name.slice(0, 26)}-next`;
    lines.push(`create ${s.name} ${s.type} family inet -exist`, `create ${tmp} ${s.type} family inet -exist`, `flush ${tmp}`);
    for (const e of s.entries) lines.push(`add ${tmp} ${e}`);
    lines.push(`swap ${tmp} ${s.name}`, `destroy ${tmp}`);
  }
  return lines.join('\n') + '\n';
}
