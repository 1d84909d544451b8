// The policy agent's pure half: NetworkPolicy semantics turned into ipsets and iptables rules.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  buildProgram,
  ipsetRestoreInput,
  iptablesRestoreInput,
  matches,
  stages,
  type IpSet,
  type Isolation,
  type Observed,
  type Program,
} from '../../policy-agent/program.js';

const pod = (
  ns: string,
  name: string,
  ip: string,
  labels: Record<string, string> = {},
  extra: Partial<k8s.V1PodSpec> = {},
  phase = 'Running',
): k8s.V1Pod => ({
  metadata: { namespace: ns, name, labels },
  spec: { containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }] }], ...extra },
  status: { podIP: ip, phase },
});
const nsOf = (name: string, labels: Record<string, string> = {}): k8s.V1Namespace => ({
  metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } },
});
const policy = (ns: string, name: string, spec: Record<string, unknown>): k8s.V1NetworkPolicy => ({
  metadata: { namespace: ns, name },
  spec: spec,
});
const set = (o: Observed, suffix: string) => buildProgram(o).sets.find((s) => s.name.endsWith(suffix))!;

describe('policy agent program', () => {
  it('matches label selectors as Kubernetes does', () => {
    assert.ok(matches(undefined, {}));
    assert.ok(matches({}, { a: '1' }));
    assert.ok(matches({ matchLabels: { a: '1' } }, { a: '1', b: '2' }));
    assert.ok(!matches({ matchLabels: { a: '1' } }, { a: '2' }));
    assert.ok(matches({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1', '2'] }] }, { a: '2' }));
    assert.ok(!matches({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1'] }] }, {}));
    assert.ok(matches({ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }, {}));
    assert.ok(!matches({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }, {}));
    assert.ok(matches({ matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] }, { b: '1' }));
    assert.ok(!matches({ matchExpressions: [{ key: 'a', operator: 'Bogus' }] }, { a: '1' }), 'an unknown operator matches nothing');
  });

  it('isolates the pods a deny-all selects, both ways, and nothing else', () => {
    const o: Observed = {
      namespaces: [nsOf('a'), nsOf('b')],
      pods: [
        pod('a', 'x', '10.244.0.2'),
        pod('b', 'y', '10.244.1.2'),
        pod('a', 'done', '10.244.0.9', {}, {}, 'Succeeded'),
        pod('a', 'host', '10.244.0.1', {}, { hostNetwork: true }),
      ],
      policies: [policy('a', 'deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })],
    };
    assert.deepEqual(set(o, 'isolated-in').entries, ['10.244.0.2']);
    assert.deepEqual(set(o, 'isolated-out').entries, ['10.244.0.2']);
    const rules = buildProgram(o).rules;
    assert.ok(!rules.some((r) => r.includes('--set-xmark 0x20000/0x20000')), 'no rule admits anything');
  });

  it('admits by pod selector, namespace selector and ipBlock with except; a rule without peers admits all', () => {
    const o: Observed = {
      namespaces: [nsOf('a'), nsOf('b', { team: 'blue' })],
      pods: [
        pod('a', 'web', '10.244.0.2', { app: 'web' }),
        pod('a', 'api', '10.244.0.3', { app: 'api' }),
        pod('b', 'client', '10.244.1.4', { role: 'client' }),
      ],
      policies: [
        policy('a', 'web', {
          podSelector: { matchLabels: { app: 'web' } },
          ingress: [
            {
              from: [
                { podSelector: { matchLabels: { app: 'api' } } },
                { namespaceSelector: { matchLabels: { team: 'blue' } }, podSelector: { matchLabels: { role: 'client' } } },
                { ipBlock: { cidr: '10.244.0.0/24', except: ['10.244.0.3/32'] } },
              ],
              ports: [{ port: 'http' }, { protocol: 'UDP', port: 53, endPort: 60 }],
            },
            { ports: [{ port: 9090 }] },
          ],
        }),
      ],
    };
    const p = buildProgram(o);
    assert.deepEqual(set(o, '-sel').entries, ['10.244.0.2']);
    // The api pod is admitted by its selector although the ipBlock excepts its address.
    assert.deepEqual(set(o, '-i0').entries, ['10.244.0.0/24', '10.244.0.3/32', '10.244.1.4/32']);
    const except = buildProgram({
      ...o,
      policies: [
        policy('a', 'web', { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.244.0.0/16'] } }] }] }),
      ],
    });
    assert.deepEqual(except.sets.find((x) => x.name.endsWith('-i0'))!.entries, ['10.0.0.0/8', '10.244.0.0/16 nomatch']);
    const chain = p.chains.find((c) => c.endsWith('-IN') && c.startsWith('SVC-P-'))!;
    const own = p.rules.filter((r) => r.startsWith(`-A ${chain} `));
    assert.equal(own.length, 3);
    assert.match(
      own[0]!,
      /-m set --match-set svc-\w+-i0 src -p tcp -m tcp --dport 8080 -j MARK/,
      'the named port resolved on the selected pod',
    );
    assert.match(own[1]!, /-p udp -m udp --dport 53:60 -j MARK/);
    assert.doesNotMatch(own[2]!, /match-set/, 'no peers: any source');
    assert.match(own[2]!, /--dport 9090/);
    assert.deepEqual(set(o, 'isolated-out').entries, [], 'Ingress only: egress stays open');
  });

  it('treats a policy with only egress rules and no policyTypes as Ingress and Egress', () => {
    const o: Observed = {
      namespaces: [nsOf('a')],
      pods: [pod('a', 'x', '10.244.0.2')],
      policies: [
        policy('a', 'p', { podSelector: {}, egress: [{ to: [{ ipBlock: { cidr: '10.244.0.1/32' } }], ports: [{ port: 8079 }] }] }),
      ],
    };
    assert.deepEqual(set(o, 'isolated-in').entries, ['10.244.0.2']);
    assert.deepEqual(set(o, 'isolated-out').entries, ['10.244.0.2']);
    assert.ok(
      buildProgram(o).rules.some((r) =>
        /--match-set svc-\w+-e0 dst -p tcp -m tcp --dport 8079 -j MARK --set-xmark 0x10000\/0x10000/.test(r),
      ),
    );
  });

  it('writes "anywhere" (0.0.0.0/0) as the two halves a hash:net set can hold, and leaves IPv6 blocks out of the IPv4 sets', () => {
    const o: Observed = {
      namespaces: [nsOf('a')],
      pods: [pod('a', 'x', '10.244.0.2')],
      policies: [
        policy('a', 'open', {
          podSelector: {},
          policyTypes: ['Egress'],
          egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.169.254/32'] } }, { ipBlock: { cidr: '::/0' } }] }],
        }),
      ],
    };
    assert.deepEqual(set(o, '-e0').entries, ['0.0.0.0/1', '128.0.0.0/1', '169.254.169.254/32 nomatch']);
  });

  it('renders restore inputs: chains declared (flushed) then rules; sets swapped in whole', () => {
    const o: Observed = {
      namespaces: [nsOf('a')],
      pods: [pod('a', 'x', '10.244.0.2')],
      policies: [policy('a', 'deny', { podSelector: {}, policyTypes: ['Ingress'] })],
    };
    const p = buildProgram(o);
    const ipt = iptablesRestoreInput(p).split('\n');
    assert.equal(ipt[0], '*filter');
    assert.ok(ipt.includes(':SVC-POLICY - [0:0]'));
    assert.equal(ipt.at(-2), 'COMMIT');
    assert.equal(ipt[ipt.indexOf(':SVC-POLICY - [0:0]') + p.chains.length], p.rules[0]);
    const ips = ipsetRestoreInput(p);
    assert.match(
      ips,
      /create svc-isolated-in hash:ip family inet -exist\ncreate svc-isolated-in-next hash:ip family inet -exist\nflush svc-isolated-in-next\nadd svc-isolated-in-next 10\.244\.0\.2\nswap svc-isolated-in-next svc-isolated-in\ndestroy svc-isolated-in-next/,
    );
    for (const s of p.sets) assert.ok(`${s.name.slice(0, 26)}-next`.length <= 31, s.name);
  });

  it('never isolates a pod while the rules of the policy selecting it are missing, on the way in or out', () => {
    const y = pod('b', 'y', '10.244.1.2', { build: 'b1' });
    const open: Observed = { namespaces: [nsOf('b')], pods: [y], policies: [] };
    const guarded: Observed = {
      ...open,
      policies: [
        policy('b', 'builds', {
          podSelector: { matchLabels: { build: 'b1' } },
          policyTypes: ['Ingress', 'Egress'],
          egress: [{ to: [{ ipBlock: { cidr: '10.244.1.1/32' } }] }],
        }),
      ],
    };
    const isolationOf = (p: Program): Isolation => ({
      'svc-isolated-in': p.sets.find((s) => s.name === 'svc-isolated-in')!.entries,
      'svc-isolated-out': p.sets.find((s) => s.name === 'svc-isolated-out')!.entries,
    });
    // Every pod an isolation set holds is in a selector set that a jump of the rules names.
    const covered = (sets: Map<string, IpSet>, rules: string[]) => {
      for (const [iso, dir] of [
        ['svc-isolated-in', 'IN'],
        ['svc-isolated-out', 'OUT'],
      ] as const) {
        for (const ip of sets.get(iso)?.entries ?? []) {
          const ok = rules.some((r) => {
            const m = new RegExp(`^-A SVC-POLICY-${dir} -m set --match-set (\\S+) \\S+ -j `).exec(r);
            return m && sets.get(m[1]!)?.entries.includes(ip);
          });
          assert.ok(ok, `${ip} is in ${iso} with no rule for it`);
        }
      }
    };
    for (const [from, to] of [
      [open, guarded],
      [guarded, open],
    ] as const) {
      const before = buildProgram(from);
      const after = buildProgram(to);
      const staged = stages(after, isolationOf(before));
      const kernel = new Map(before.sets.map((s) => [s.name, s]));
      let rules = before.rules;
      covered(kernel, rules);
      for (const s of staged.sets) kernel.set(s.name, s);
      covered(kernel, rules);
      rules = after.rules;
      covered(kernel, rules);
      for (const s of staged.isolate) kernel.set(s.name, s);
      covered(kernel, rules);
      assert.deepEqual(kernel.get('svc-isolated-out')!.entries, to === guarded ? ['10.244.1.2'] : []);
    }
    // Loading every set before the rules, as the agent did, isolates the pod with no rule for it.
    const kernel = new Map(buildProgram(open).sets.map((s) => [s.name, s]));
    for (const s of buildProgram(guarded).sets) kernel.set(s.name, s);
    assert.throws(() => covered(kernel, buildProgram(open).rules), /no rule for it/);
  });
});
