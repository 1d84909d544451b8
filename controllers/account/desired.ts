// The account-namespace reconciler's pure half: what every account namespace holds besides the
// tenant's own objects. Pod Security Admission `restricted` (enforced), a ResourceQuota and a
// LimitRange, and a NetworkPolicy that denies all traffic to and from its pods; each App then opens
// what its machines need (controllers/app/network-policy.ts, machinePolicy). And the account's registry
// pull Secret, whose credential pulls the account's images and the platform's, no one else's. No I/O here.
import type * as k8s from '@kubernetes/client-node';
import { accountLabel, podSecurityLabels } from '../../lib/accounts.js';
import { labels, managers } from '../../lib/contract.js';
import { accountUser, pullCredentialAnnotation, pullSecretName } from '../../lib/registry/names.js';
import { credentialOf, dockerConfigJson, matchesHash } from '../../lib/registry/pull-credential.js';

export { accountLabel, podSecurityLabels };
const managedBy = { [labels.managedBy]: managers.controllers };

/** The bounds of one account (the defaults of a new one; docs/security.md, tenant isolation). */
export const accountQuota: Readonly<Record<string, string>> = {
  pods: '50',
  'requests.cpu': '8',
  'limits.cpu': '16',
  'requests.memory': '16Gi',
  'limits.memory': '32Gi',
  'requests.storage': '50Gi',
  persistentvolumeclaims: '20',
  services: '50',
  'services.nodeports': '0',
  'services.loadbalancers': '0',
};

export interface AccountObjects {
  quota: k8s.V1ResourceQuota;
  limits: k8s.V1LimitRange;
  denyAll: k8s.V1NetworkPolicy;
}

export function accountObjects(namespace: string): AccountObjects {
  const metadata = (name: string) => ({ name, namespace, labels: { ...managedBy } });
  return {
    quota: { apiVersion: 'v1', kind: 'ResourceQuota', metadata: metadata('svc-account'), spec: { hard: { ...accountQuota } } },
    // The quota counts requests and limits, so every container needs some: these are the defaults
    // of one that names none, and the largest one container may ask for.
    limits: {
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: metadata('svc-defaults'),
      spec: {
        limits: [
          {
            type: 'Container',
            // `default` on the wire: patch bodies are sent as written (the typed model's `_default`
            // is only renamed for create and replace).
            ...({ default: { cpu: '1', memory: '512Mi', 'ephemeral-storage': '1Gi' } } as object),
            defaultRequest: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '64Mi' },
            max: { cpu: '4', memory: '8Gi', 'ephemeral-storage': '8Gi' },
          },
        ],
      },
    },
    denyAll: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: metadata('svc-deny-all'),
      spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'] },
    },
  };
}

/**
 * The account's pull Secret: the credential its pods pull with from the platform's registry
 * `registry` (`host[:port]`), under the user name the token service knows the account by.
 */
export function pullSecret(namespace: string, registry: string, password: string): k8s.V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: pullSecretName, namespace, labels: { ...managedBy } },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(dockerConfigJson(registry, accountUser(namespace), password)).toString('base64') },
  };
}

/**
 * Whether `secret` holds the account's current pull credential for `registry`: the account's user
 * name, and a password whose hash is the one on the namespace (what the token service checks).
 * Anything else (no Secret, another registry, a hand edit, a removed annotation: a rotation) is
 * replaced by a new credential.
 */
export function pullSecretCurrent(ns: k8s.V1Namespace, secret: k8s.V1Secret | undefined, registry: string): boolean {
  const data = secret?.type === 'kubernetes.io/dockerconfigjson' ? secret.data?.['.dockerconfigjson'] : undefined;
  if (!data) return false;
  const credential = credentialOf(Buffer.from(data, 'base64').toString('utf8'), registry);
  const namespace = ns.metadata!.name!;
  return (
    credential?.username === accountUser(namespace) &&
    matchesHash(credential.password, ns.metadata?.annotations?.[pullCredentialAnnotation])
  );
}

/** The labels to add to the namespace (none when it carries them all already). */
export function missingLabels(ns: k8s.V1Namespace): Record<string, string> {
  const have = ns.metadata?.labels ?? {};
  return Object.fromEntries(Object.entries(podSecurityLabels).filter(([k, v]) => have[k] !== v));
}
