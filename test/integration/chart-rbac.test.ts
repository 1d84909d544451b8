// The chart's RBAC against the real apiserver (authorization mode Node,RBAC): applied as Helm would
// render it, each component's ServiceAccount may make every call its code makes, and is refused
// what belongs to another component. The table below follows the calls in api/, controllers/,
// ingress-auth/ and lib/kube/ (charts/svc-platform/README.md lists them).
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { repoRoot } from '../../lib/paths.js';
import { group, version } from '../../lib/resources/index.js';
import { kubeConfig, kubectl, testNamespace } from '../support/kube.js';

type Access = [verb: string, group: string, resource: string, subresource?: string, namespace?: string];

const tenant = 'svc-acct-someone';
const needs: Record<string, Access[]> = {
  'svc-api': [
    ['list', 'svc.dev', 'apps'],
    ['watch', 'svc.dev', 'apps'],
    ['get', 'svc.dev', 'apps', undefined, tenant],
    ['create', 'svc.dev', 'apps', undefined, tenant],
    ['patch', 'svc.dev', 'apps', undefined, tenant],
    ['delete', 'svc.dev', 'apps', undefined, tenant],
    ['create', '', 'namespaces'],
    ['delete', '', 'namespaces'],
    ['get', '', 'secrets', undefined, tenant],
    ['list', '', 'secrets', undefined, tenant],
    ['create', '', 'secrets', undefined, tenant],
    ['patch', '', 'secrets', undefined, tenant],
    ['delete', '', 'secrets', undefined, tenant],
    ['list', '', 'pods', undefined, tenant],
    ['get', '', 'pods', 'log', tenant],
    ['list', '', 'nodes'],
    ['get', '', 'nodes', 'proxy'],
    ['get', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
    ['create', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
    ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
  ],
  'svc-controllers': [
    ['list', 'svc.dev', 'apps'],
    ['watch', 'svc.dev', 'apps'],
    ['delete', 'svc.dev', 'apps', undefined, tenant],
    ['patch', 'svc.dev', 'apps', 'status', tenant],
    ['list', '', 'pods'],
    ['watch', '', 'pods'],
    ['create', '', 'pods', undefined, tenant],
    ['delete', '', 'pods', undefined, tenant],
    ['list', '', 'services'],
    ['watch', '', 'services'],
    ['patch', '', 'services', undefined, tenant],
    ['create', '', 'events', undefined, tenant],
    ['get', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
    ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
  ],
  'svc-ingress-auth': [
    ['list', 'svc.dev', 'apps'],
    ['watch', 'svc.dev', 'apps'],
    ['list', 'discovery.k8s.io', 'endpointslices'],
    ['watch', 'discovery.k8s.io', 'endpointslices'],
  ],
};

/** What a component must not be able to do (least privilege). */
const refused: Record<string, Access[]> = {
  'svc-api': [['create', '', 'pods', undefined, tenant], ['patch', 'svc.dev', 'apps', 'status', tenant], ['update', 'coordination.k8s.io', 'leases', undefined, 'default']],
  'svc-controllers': [['get', '', 'secrets', undefined, tenant], ['delete', '', 'namespaces'], ['create', 'svc.dev', 'apps', undefined, tenant]],
  'svc-ingress-auth': [['get', '', 'secrets', undefined, tenant], ['patch', 'svc.dev', 'apps', undefined, tenant], ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system']],
};

describe('chart RBAC (real apiserver)', () => {
  let authz: k8s.AuthorizationV1Api;
  let ns: Awaited<ReturnType<typeof testNamespace>>;
  let dir: string;
  let rendered: string;

  before(async () => {
    const kc = kubeConfig();
    authz = kc.makeApiClient(k8s.AuthorizationV1Api);
    ns = await testNamespace(kc.makeApiClient(k8s.CoreV1Api), 'rbac');
    const template = await readFile(path.join(repoRoot, 'charts/svc-platform/templates/rbac.yaml'), 'utf8');
    const text = template.replaceAll('{{ .Release.Namespace }}', ns.name);
    // The one template expression it has; anything else would need Helm itself to render.
    assert.doesNotMatch(text, /\{\{/);
    dir = await mkdtemp(path.join(tmpdir(), 'svc-rbac-'));
    rendered = path.join(dir, 'rbac.yaml');
    await writeFile(rendered, text);
    await kubectl('apply', '-f', rendered);
  });
  after(async () => {
    if (rendered) await kubectl('delete', '--ignore-not-found', '-f', rendered).catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
    await ns?.dispose();
  });

  const allowed = async (account: string, [verb, group, resource, subresource, namespace]: Access): Promise<boolean> => {
    const review = await authz.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${ns.name}:${account}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${ns.name}`, 'system:authenticated'],
          resourceAttributes: { verb, group, resource, ...(subresource ? { subresource } : {}), ...(namespace ? { namespace } : {}) },
        },
      },
    });
    return review.status?.allowed === true;
  };
  const show = (a: Access) => `${a[0]} ${a[1] || 'core'}/${a[2]}${a[3] ? `/${a[3]}` : ''}${a[4] ? ` in ${a[4]}` : ''}`;

  /** A kubeconfig that authenticates as the ServiceAccount, with a token from the TokenRequest API. */
  const asAccount = async (account: string): Promise<k8s.KubeConfig> => {
    const admin = kubeConfig();
    const { status } = await admin.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccountToken({ name: account, namespace: ns.name, body: { spec: { audiences: [], expirationSeconds: 600 } } });
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [admin.getCurrentCluster()!],
      users: [{ name: account, token: status!.token }],
      contexts: [{ name: account, cluster: admin.getCurrentCluster()!.name, user: account }],
      currentContext: account,
    });
    return kc;
  };

  it('lets a ServiceAccount token list what its informers list, and answers 403 past its rules', async () => {
    const ingress = await asAccount('svc-ingress-auth');
    await ingress.makeApiClient(k8s.CustomObjectsApi).listClusterCustomObject({ group, version, plural: 'apps' });
    await ingress.makeApiClient(k8s.DiscoveryV1Api).listEndpointSliceForAllNamespaces();
    const forbidden = (err: { code?: number }) => err.code === 403;
    await assert.rejects(ingress.makeApiClient(k8s.CoreV1Api).listNamespacedSecret({ namespace: ns.name }), forbidden);
    const controllers = await asAccount('svc-controllers');
    await controllers.makeApiClient(k8s.CoreV1Api).listServiceForAllNamespaces();
    await assert.rejects(controllers.makeApiClient(k8s.DiscoveryV1Api).listEndpointSliceForAllNamespaces(), forbidden);
  });

  for (const account of Object.keys(needs)) {
    it(`lets ${account} make every call its code makes, and nothing of the others'`, async () => {
      const missing: string[] = [];
      for (const a of needs[account]!) if (!(await allowed(account, a))) missing.push(show(a));
      assert.deepEqual(missing, [], `${account} is refused what it needs`);
      const excess: string[] = [];
      for (const a of refused[account]!) if (await allowed(account, a)) excess.push(show(a));
      assert.deepEqual(excess, [], `${account} may do more than it should`);
    });
  }
});
