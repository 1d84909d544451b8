// The App's machines' NetworkPolicy: what may reach them and what they may reach.
import type * as k8s from '@kubernetes/client-node';
import { labels } from '../../lib/contract.js';
import { databasePort } from '../../lib/databases.js';
import type { App } from '../../lib/resources/index.js';
import { clusterDnsEgress, platformPeers } from '../../lib/kube/platform-peers.js';
import type { AppSettings } from './desired.js';
import { managerName, ownerRef } from './owner.js';

/**
 * The App's machines' NetworkPolicy, on top of the account's deny-all: in, from the platform
 * (ingress-auth, probes) and from the app's own machines; out, to the app's own machines, to the
 * cluster DNS (where the platform allows it) and to the machine listener's ports (artifacts,
 * identity keys). Never to another app or account.
 */
export function machinePolicy(app: App, settings: AppSettings): k8s.V1NetworkPolicy | undefined {
  if (!settings.platform) return undefined;
  const name = app.metadata.name!;
  const own = { podSelector: { matchLabels: { [labels.app]: name } } };
  const platform = platformPeers(settings.platform.cidrs, settings.platform.namespace);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: `app-${name}`,
      namespace: app.metadata.namespace,
      labels: { [labels.app]: name, [labels.managedBy]: managerName },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      podSelector: own.podSelector,
      policyTypes: ['Ingress', 'Egress'],
      // `from` on the wire: apply patches are sent as written, not renamed like the model's `_from`.
      ingress: [{ from: [...platform, own] } as unknown as k8s.V1NetworkPolicyIngressRule],
      egress: [
        { to: [own] },
        // Out to its attached database's server (whose own policy lets the account's machines in).
        ...(settings.database
          ? [
              {
                to: [{ podSelector: { matchLabels: { [labels.database]: settings.database.name } } }],
                ports: [{ protocol: 'TCP', port: databasePort as unknown as k8s.IntOrString }],
              },
            ]
          : []),
        // Names: the cluster DNS, where every cluster runs it (kube-system, k8s-app=kube-dns: kubeadm,
        // kind, the managed clouds), where the platform says it answers for the cluster's names only
        // (docs/decisions/0037-cluster-dns.md).
        ...(settings.platform.clusterDns ? [clusterDnsEgress] : []),
        {
          to: platform,
          ports: settings.platform.ports.map((p) => ({ protocol: 'TCP', port: p.port, ...(p.endPort ? { endPort: p.endPort } : {}) })),
        },
      ],
    },
  };
}
