// Where the platform is, as the NetworkPolicies of tenants' pods name it: by address, the nodes
// (the kubelet's probes; on the local platform also the parts that run on the host), and on a
// cluster by namespace, the release's (ingress-auth and the API run there as pods, whose
// addresses change with every rollout).
import type * as k8s from '@kubernetes/client-node';

export function platformPeers(cidrs: readonly string[], namespace: string | undefined): k8s.V1NetworkPolicyPeer[] {
  return [
    ...cidrs.map((cidr) => ({ ipBlock: { cidr } })),
    ...(namespace ? [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } }] : []),
  ];
}

/**
 * Out to the cluster DNS, where every cluster runs it (kube-system, k8s-app=kube-dns: kubeadm, kind,
 * the managed clouds), for pods the platform lets ask it (docs/decisions/0037-cluster-dns.md).
 */
export const clusterDnsEgress: k8s.V1NetworkPolicyEgressRule = {
  to: [
    {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
      podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
    },
  ],
  ports: [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ],
};
