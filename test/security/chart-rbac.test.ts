// The chart's RBAC against the real apiserver (authorization mode Node,RBAC): applied as Helm would
// render it, each component's ServiceAccount may make every call its code makes, and is refused
// what belongs to another component. The table below follows the calls in api/, controllers/,
// ingress-auth/ and lib/kube/ (charts/svc-platform/README.md lists them). The chart is rendered with
// its default issuer, then again with `certificates.issuer: cert-manager`, whose Roles only that one
// has (checked before it is applied: the default render gives none of them).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { accountLabel, bindApiToNamespace } from '../../lib/accounts.js';
import { group, version } from '../../lib/resources/index.js';
import { localValues, renderChart } from '../support/helm.js';
import { kubeConfig, kubectl, testNamespace } from '../support/kube.js';
import { eventually } from '../support/wait.js';

type Access = [verb: string, group: string, resource: string, subresource?: string, namespace?: string, name?: string];

/** An account namespace as createAccount makes it (labelled, with the API's RoleBinding): created in before(). */
const tenant = `svc-acct-rbac${Date.now().toString(36)}`;
const decoy = `svc-decoy-${Date.now().toString(36)}`;
/** The sandbox namespace (the controllers make it on the local platform; the chart on a cluster). */
const sandboxes = 'svc-sandboxes';
/** The certificates namespace (templates/certificates.yaml), made by the test as the chart would. */
const certificates = `svc-certs-rbac${Date.now().toString(36)}`;
/** The release's own namespace (the test's namespace, known once before() made it). */
const platform = '(release namespace)';
const needs: Record<string, Access[]> = {
  'svc-api': [
    ['get', '', 'secrets', undefined, platform, 'svc-acme-account'],
    ['patch', '', 'secrets', undefined, platform, 'svc-acme-account'],
    // The certificate issuer: certificates and HTTP-01 challenges, in their own namespace.
    ...(['create', 'get', 'list', 'watch', 'patch', 'delete'] as const).flatMap((verb): Access[] => [
      [verb, '', 'secrets', undefined, certificates],
      [verb, '', 'configmaps', undefined, certificates],
    ]),
    ['list', 'svc.dev', 'apps'],
    ['watch', 'svc.dev', 'apps'],
    ['get', 'svc.dev', 'apps', undefined, tenant],
    ['create', 'svc.dev', 'apps', undefined, tenant],
    ['patch', 'svc.dev', 'apps', undefined, tenant],
    ['delete', 'svc.dev', 'apps', undefined, tenant],
    ['create', '', 'namespaces'],
    ['delete', '', 'namespaces'],
    ['create', 'rbac.authorization.k8s.io', 'rolebindings', undefined, tenant],
    ['bind', 'rbac.authorization.k8s.io', 'clusterroles', undefined, undefined, 'svc-api-tenant'],
    ['get', '', 'secrets', undefined, tenant],
    ['list', '', 'secrets', undefined, tenant],
    ['create', '', 'secrets', undefined, tenant],
    ['patch', '', 'secrets', undefined, tenant],
    ['delete', '', 'secrets', undefined, tenant],
    ['list', '', 'pods', undefined, tenant],
    ['list', '', 'pods'],
    ['watch', '', 'pods'],
    ['get', '', 'pods', 'log', tenant],
    ['list', '', 'nodes'],
    ['get', '', 'nodes', 'proxy'],
    ['get', 'coordination.k8s.io', 'leases', undefined, 'kube-system', 'svc-mailer'],
    ['create', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
    ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system', 'svc-mailer'],
    ['get', 'coordination.k8s.io', 'leases', undefined, 'kube-system', 'svc-deploy-recorder'],
    ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system', 'svc-deploy-recorder'],
    ['list', 'svc.dev', 'sandboxes'],
    ['watch', 'svc.dev', 'sandboxes'],
    ['create', 'svc.dev', 'sandboxes', undefined, tenant],
    ['list', 'svc.dev', 'databases'],
    ['create', 'svc.dev', 'databases', undefined, tenant],
    ['delete', 'svc.dev', 'databases', undefined, tenant],
    ['list', 'svc.dev', 'domains'],
    ['watch', 'svc.dev', 'domains'],
    ['create', 'svc.dev', 'domains', undefined, tenant],
    ['delete', 'svc.dev', 'domains', undefined, tenant],
    ['patch', 'svc.dev', 'domains', 'status', tenant],
    ['list', 'svc.dev', 'builds'],
    ['watch', 'svc.dev', 'builds'],
    ['create', 'svc.dev', 'builds', undefined, tenant],
    ['patch', 'svc.dev', 'builds', undefined, tenant],
    ['list', '', 'persistentvolumeclaims'],
    ['watch', '', 'persistentvolumeclaims'],
    ['delete', '', 'persistentvolumeclaims', undefined, tenant],
    ['patch', 'svc.dev', 'sandboxes', undefined, tenant],
    ['get', '', 'configmaps', undefined, sandboxes, 'svc-sandbox-runtimes'],
    ['patch', '', 'secrets', undefined, platform, 'svc-owner-token'],
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
    // Content swaps mark the machine with what it serves (controllers/app/content-swap.ts).
    ['patch', '', 'pods', undefined, tenant],
    ['list', '', 'services'],
    ['watch', '', 'services'],
    ['patch', '', 'services', undefined, tenant],
    ['list', 'discovery.k8s.io', 'endpointslices'],
    ['watch', 'discovery.k8s.io', 'endpointslices'],
    ['create', '', 'events', undefined, tenant],
    ['list', '', 'namespaces'],
    ['watch', '', 'namespaces'],
    ['patch', '', 'namespaces', undefined, undefined, tenant],
    ['create', '', 'limitranges', undefined, tenant],
    ['patch', '', 'limitranges', undefined, tenant],
    ['create', '', 'resourcequotas', undefined, tenant],
    ['patch', '', 'resourcequotas', undefined, tenant],
    ['list', 'networking.k8s.io', 'networkpolicies'],
    ['watch', 'networking.k8s.io', 'networkpolicies'],
    ['create', 'networking.k8s.io', 'networkpolicies', undefined, tenant],
    ['patch', 'networking.k8s.io', 'networkpolicies', undefined, tenant],
    ['get', 'coordination.k8s.io', 'leases', undefined, 'kube-system', 'svc-controllers'],
    ['create', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
    ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system', 'svc-controllers'],
    ['list', 'svc.dev', 'sandboxes'],
    ['watch', 'svc.dev', 'sandboxes'],
    ['delete', 'svc.dev', 'sandboxes', undefined, tenant],
    ['patch', 'svc.dev', 'sandboxes', 'status', tenant],
    ['create', '', 'pods', undefined, sandboxes],
    ['patch', '', 'pods', undefined, sandboxes],
    ['delete', '', 'pods', undefined, sandboxes],
    ['patch', 'networking.k8s.io', 'networkpolicies', undefined, sandboxes, 'sandbox-isolation'],
    ['patch', '', 'configmaps', undefined, sandboxes, 'svc-sandbox-runtimes'],
    ['list', 'svc.dev', 'databases'],
    ['patch', 'svc.dev', 'databases', undefined, tenant],
    ['patch', 'svc.dev', 'databases', 'status', tenant],
    ['create', '', 'persistentvolumeclaims', undefined, tenant],
    ['delete', '', 'persistentvolumeclaims', undefined, tenant],
    ['list', 'batch', 'cronjobs'],
    ['watch', 'batch', 'cronjobs'],
    ['patch', 'batch', 'cronjobs', undefined, tenant],
    ['list', 'batch', 'jobs'],
    ['watch', 'batch', 'jobs'],
    ['create', 'batch', 'jobs', undefined, tenant],
    ['delete', 'batch', 'jobs', undefined, tenant],
    ['list', 'svc.dev', 'builds'],
    ['watch', 'svc.dev', 'builds'],
    ['patch', 'svc.dev', 'builds', 'status', tenant],
    ['list', 'postgresql.cnpg.io', 'clusters'],
    ['watch', 'postgresql.cnpg.io', 'clusters'],
    ['patch', 'postgresql.cnpg.io', 'clusters', undefined, tenant],
  ],
  'svc-ingress-auth': [
    // Certificates by SNI and HTTP-01 answers, from informers of the certificates namespace.
    ['list', '', 'secrets', undefined, certificates],
    ['watch', '', 'secrets', undefined, certificates],
    ['list', '', 'configmaps', undefined, certificates],
    ['watch', '', 'configmaps', undefined, certificates],
    ['list', 'svc.dev', 'apps'],
    ['watch', 'svc.dev', 'apps'],
    ['list', 'svc.dev', 'domains'],
    ['watch', 'svc.dev', 'domains'],
    ['list', 'discovery.k8s.io', 'endpointslices'],
    ['watch', 'discovery.k8s.io', 'endpointslices'],
  ],
};

/** What a component must not be able to do (least privilege): each row an attack the old chart allowed or a neighbour's right. */
const platformLeases = ['kube-controller-manager', 'kube-scheduler'];
const refused: Record<string, Access[]> = {
  'svc-api': [
    ['create', '', 'pods', undefined, tenant],
    // Sandboxes are opened as Sandbox objects; their pods, policies and status are the controllers'.
    ['create', '', 'pods', undefined, sandboxes],
    ['patch', '', 'pods', undefined, sandboxes],
    ['patch', 'svc.dev', 'sandboxes', 'status', tenant],
    ['patch', 'networking.k8s.io', 'networkpolicies', undefined, sandboxes],
    ['get', '', 'configmaps', undefined, sandboxes, 'kube-root-ca.crt'],
    ['patch', 'svc.dev', 'apps', 'status', tenant],
    ['patch', 'svc.dev', 'databases', 'status', tenant],
    // A Domain's spec is what the tenant asked (created and deleted, never changed).
    ['patch', 'svc.dev', 'domains', undefined, tenant],
    // A build's status is its controller's; the API writes only what builders sent, as annotations.
    ['patch', 'svc.dev', 'builds', 'status', tenant],
    ['create', '', 'persistentvolumeclaims', undefined, tenant],
    ['delete', '', 'persistentvolumeclaims', undefined, decoy],
    // Backups are the controllers' to run: the API asks on the Database.
    ['create', 'batch', 'jobs', undefined, tenant],
    ['update', 'coordination.k8s.io', 'leases', undefined, 'default'],
    // No Secret outside account namespaces that bound it: not cluster-wide, not kube-system, not another namespace.
    ['list', '', 'secrets'],
    ['get', '', 'secrets', undefined, 'kube-system'],
    ['list', '', 'secrets', undefined, 'kube-system'],
    ['delete', '', 'secrets', undefined, 'default'],
    ['get', '', 'secrets', undefined, decoy],
    // Its own namespace's Secrets: only the owner token's, and only patched (never read back).
    ['get', '', 'secrets', undefined, platform, 'svc-owner-token'],
    ['patch', '', 'secrets', undefined, platform, 'svc-keys'],
    ['patch', '', 'secrets', undefined, platform, 'svc-database'],
    ['create', '', 'secrets', undefined, platform],
    // The ACME account key's Secret: read and filled, nothing else of it.
    ['delete', '', 'secrets', undefined, platform, 'svc-acme-account'],
    // Not the control plane's leader leases.
    ...platformLeases.flatMap((name): Access[] => [
      ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system', name],
      ['delete', 'coordination.k8s.io', 'leases', undefined, 'kube-system', name],
    ]),
    ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system', 'svc-controllers-x'],
    // No binding of anything but svc-api-tenant, no cluster-wide binding.
    ['bind', 'rbac.authorization.k8s.io', 'clusterroles', undefined, undefined, 'cluster-admin'],
    ['escalate', 'rbac.authorization.k8s.io', 'clusterroles', undefined, undefined, 'svc-api-tenant'],
    ['create', 'rbac.authorization.k8s.io', 'clusterrolebindings'],
    ['update', '', 'namespaces', undefined, undefined, 'kube-system'],
  ],
  'svc-controllers': [
    ['get', '', 'secrets', undefined, tenant],
    ['get', '', 'secrets', undefined, sandboxes],
    ['patch', '', 'secrets', undefined, platform, 'svc-owner-token'],
    ['create', 'svc.dev', 'sandboxes', undefined, tenant],
    ['delete', '', 'namespaces'],
    ['create', 'svc.dev', 'apps', undefined, tenant],
    ...platformLeases.map((name): Access => ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system', name]),
  ],
  'svc-ingress-auth': [
    ['get', '', 'secrets', undefined, tenant],
    // Reads certificates; issuing them is the API's.
    ['create', '', 'secrets', undefined, certificates],
    ['patch', '', 'secrets', undefined, certificates],
    ['list', '', 'secrets', undefined, platform],
    // Not the ACME account key (the release namespace's, not the certificates namespace's).
    ['get', '', 'secrets', undefined, platform, 'svc-acme-account'],
    ['patch', 'svc.dev', 'apps', undefined, tenant],
    // It reads Domains; their status is the API's verifier's to write.
    ['patch', 'svc.dev', 'domains', 'status', tenant],
    ['update', 'coordination.k8s.io', 'leases', undefined, 'kube-system'],
  ],
};

/** With `certificates.issuer: cert-manager` (api/certificates/cert-manager.ts, ingress-auth/tls/challenges.ts). */
const certManagerNeeds: Record<string, Access[]> = {
  // Its Certificates: an informer (list, watch), server-side applied (patch; create for a new one), deleted.
  'svc-api': (['list', 'watch', 'create', 'patch', 'delete'] as const).map((verb): Access => [
    verb,
    'cert-manager.io',
    'certificates',
    undefined,
    certificates,
  ]),
  // cert-manager's HTTP-01 Challenges, from an informer.
  'svc-ingress-auth': [
    ['list', 'acme.cert-manager.io', 'challenges', undefined, certificates],
    ['watch', 'acme.cert-manager.io', 'challenges', undefined, certificates],
  ],
};
const certManagerRefused: Record<string, Access[]> = {
  'svc-api': [
    // No single read: the informer has them.
    ['get', 'cert-manager.io', 'certificates', undefined, certificates],
    // Nothing of cert-manager's in the release namespace, nor cluster-wide.
    ...(['get', 'list', 'create', 'patch', 'delete'] as const).map((verb): Access => [
      verb,
      'cert-manager.io',
      'certificates',
      undefined,
      platform,
    ]),
    ['list', 'cert-manager.io', 'certificates'],
    // Which CA signs is the team's: no Issuer, no CertificateRequest of its own, no Challenge.
    ['create', 'cert-manager.io', 'issuers', undefined, certificates],
    ['create', 'cert-manager.io', 'certificaterequests', undefined, certificates],
    ['create', 'acme.cert-manager.io', 'challenges', undefined, certificates],
  ],
  'svc-ingress-auth': [
    // It answers Challenges; making them, or Certificates, is cert-manager's and the API's.
    ['get', 'acme.cert-manager.io', 'challenges', undefined, certificates],
    ['create', 'acme.cert-manager.io', 'challenges', undefined, certificates],
    ['patch', 'acme.cert-manager.io', 'challenges', undefined, certificates],
    ['create', 'cert-manager.io', 'certificates', undefined, certificates],
    ['patch', 'cert-manager.io', 'certificates', undefined, certificates],
    ['list', 'acme.cert-manager.io', 'challenges', undefined, platform],
    ['list', 'acme.cert-manager.io', 'challenges'],
  ],
};

describe('chart RBAC (real apiserver)', () => {
  let authz: k8s.AuthorizationV1Api;
  let ns: Awaited<ReturnType<typeof testNamespace>>;
  let dir: string;
  let rendered: string;
  let renderedCertManager: string;

  before(async () => {
    const kc = kubeConfig();
    authz = kc.makeApiClient(k8s.AuthorizationV1Api);
    ns = await testNamespace(kc.makeApiClient(k8s.CoreV1Api), 'rbac');
    // Rendered by helm itself, as an install would, into the test's namespace.
    const core0 = kc.makeApiClient(k8s.CoreV1Api);
    await core0.createNamespace({ body: { metadata: { name: certificates } } });
    const render = (...set: string[]) =>
      renderChart(
        'svc',
        ns.name,
        '-f',
        localValues,
        '--set',
        [`certificates.namespace=${certificates}`, ...set].join(','),
        '--show-only',
        'templates/rbac.yaml',
      );
    dir = await mkdtemp(path.join(tmpdir(), 'svc-rbac-'));
    rendered = path.join(dir, 'rbac.yaml');
    await writeFile(rendered, await render());
    // Applied by its test, after the default render's are checked.
    renderedCertManager = path.join(dir, 'rbac-cert-manager.yaml');
    await writeFile(
      renderedCertManager,
      await render('certificates.issuer=cert-manager', 'certificates.certManager.issuerRef=ClusterIssuer/x'),
    );
    await kubectl('apply', '-f', rendered);
    // An account namespace as createAccount makes it on a cluster, and a namespace that is no account's.
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: tenant, labels: { [accountLabel]: 'acct_rbac' } } } });
    await bindApiToNamespace(kc.makeApiClient(k8s.RbacAuthorizationV1Api), tenant, { namespace: ns.name, name: 'svc-api' });
    await core.createNamespace({ body: { metadata: { name: decoy } } });
  });
  after(async () => {
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    for (const name of [tenant, decoy, certificates]) await core.deleteNamespace({ name }).catch(() => undefined);
    if (renderedCertManager) await kubectl('delete', '--ignore-not-found', '-f', renderedCertManager).catch(() => undefined);
    if (rendered) await kubectl('delete', '--ignore-not-found', '-f', rendered).catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
    await ns?.dispose();
  });

  const allowed = async (account: string, [verb, group, resource, subresource, asked, name]: Access): Promise<boolean> => {
    const namespace = asked === platform ? ns.name : asked;
    const review = await authz.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${ns.name}:${account}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${ns.name}`, 'system:authenticated'],
          resourceAttributes: {
            verb,
            group,
            resource,
            ...(subresource ? { subresource } : {}),
            ...(namespace ? { namespace } : {}),
            ...(name ? { name } : {}),
          },
        },
      },
    });
    return review.status?.allowed === true;
  };
  const show = (a: Access) =>
    `${a[0]} ${a[1] || 'core'}/${a[2]}${a[3] ? `/${a[3]}` : ''}${a[5] ? ` ${a[5]}` : ''}${a[4] ? ` in ${a[4]}` : ''}`;

  /** A kubeconfig that authenticates as the ServiceAccount, with a token from the TokenRequest API. */
  const asAccount = async (account: string): Promise<k8s.KubeConfig> => {
    const admin = kubeConfig();
    const { status } = await admin.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccountToken({
      name: account,
      namespace: ns.name,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
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
    await controllers.makeApiClient(k8s.DiscoveryV1Api).listEndpointSliceForAllNamespaces();
    await assert.rejects(controllers.makeApiClient(k8s.CoreV1Api).listSecretForAllNamespaces(), forbidden);
  });

  it("holds the API's namespace and RoleBinding rights to account namespaces (admission policy, real requests with its token)", async () => {
    const api = await asAccount('svc-api');
    const core = api.makeApiClient(k8s.CoreV1Api);
    const rbac = api.makeApiClient(k8s.RbacAuthorizationV1Api);
    const refusedBy = (text: RegExp) => (err: { code?: number; body?: unknown }) =>
      (err.code === 403 || err.code === 422) && text.test(JSON.stringify(err.body ?? ''));
    // The policy takes a moment to be in force after it is created: asked with dry runs (admission
    // runs, nothing is stored), so a try before that leaves no namespace behind.
    await eventually(
      'the admission policy in force',
      () =>
        core.createNamespace({ body: { metadata: { name: `evil-${Date.now().toString(36)}` } }, dryRun: 'All' }).then(
          () => false,
          (err: Error & { code?: number }) => (err.code === 403 || err.code === 422 ? true : Promise.reject(err)),
        ),
      { timeoutMs: 20_000 },
    );
    await assert.rejects(
      core.createNamespace({ body: { metadata: { name: `svc-acct-x${Date.now().toString(36)}` } } }),
      refusedBy(/account namespaces only/),
      'the right prefix but no account label',
    );
    await assert.rejects(
      core.createNamespace({ body: { metadata: { name: `other-${Date.now().toString(36)}`, labels: { [accountLabel]: 'acct_x' } } } }),
      refusedBy(/account namespaces only/),
      'the label but another name',
    );
    await assert.rejects(
      core.deleteNamespace({ name: decoy }),
      refusedBy(/account namespaces only/),
      "no deleting a namespace that is no account's",
    );
    const binding = (namespace: string, role: string) => ({
      namespace,
      body: {
        metadata: { name: `svc-test-${role}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'ServiceAccount', name: 'svc-api', namespace: ns.name }],
      },
    });
    await assert.rejects(
      rbac.createNamespacedRoleBinding(binding(decoy, 'svc-api-tenant')),
      refusedBy(/only in account namespaces/),
      'no Secret rights bound outside account namespaces',
    );
    await assert.rejects(
      rbac.createNamespacedRoleBinding(binding('kube-system', 'svc-api-tenant')),
      refusedBy(/only in account namespaces/),
    );
    await assert.rejects(
      rbac.createNamespacedRoleBinding(binding(tenant, 'cluster-admin')),
      (err: { code?: number }) => err.code === 403 || err.code === 422,
      'no other role bound, even in an account namespace',
    );
    await assert.rejects(core.listNamespacedSecret({ namespace: 'kube-system' }), (err: { code?: number }) => err.code === 403);
    // What createAccount does works with the token: a labelled account namespace, its binding, its Secrets.
    const mine = `svc-acct-y${Date.now().toString(36)}`;
    await core.createNamespace({ body: { metadata: { name: mine, labels: { [accountLabel]: 'acct_y' } } } });
    try {
      await bindApiToNamespace(rbac, mine, { namespace: ns.name, name: 'svc-api' });
      await eventually('Secrets of the new account namespace', async () => (await core.listNamespacedSecret({ namespace: mine }), true));
    } finally {
      await core.deleteNamespace({ name: mine });
    }
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

  it('with cert-manager as the issuer, lets the API write Certificates and ingress-auth read Challenges, in the certificates namespace only', async () => {
    const rows = (table: Record<string, Access[]>) =>
      Object.entries(table).flatMap(([account, as]) => as.map((a) => [account, a] as const));
    const given: string[] = [];
    for (const [account, a] of rows(certManagerNeeds)) if (await allowed(account, a)) given.push(`${account}: ${show(a)}`);
    assert.deepEqual(given, [], 'the default issuer gives none of it');
    await kubectl('apply', '-f', renderedCertManager);
    // The authorizer sees a new Role a moment after it is stored.
    const missing = async () => {
      const m: string[] = [];
      for (const [account, a] of rows(certManagerNeeds)) if (!(await allowed(account, a))) m.push(`${account}: ${show(a)}`);
      return m;
    };
    await eventually('the cert-manager Roles in force', async () => (await missing()).length === 0, { timeoutMs: 10_000 }).catch(
      () => undefined,
    );
    assert.deepEqual(await missing(), [], 'refused what it needs');
    const excess: string[] = [];
    // Nothing cert-manager's Roles must not give, and nothing the default render refuses.
    for (const [account, a] of [...rows(certManagerRefused), ...rows(refused)])
      if (await allowed(account, a)) excess.push(`${account}: ${show(a)}`);
    assert.deepEqual(excess, [], 'may do more than it should');
    // And what it gives is still given.
    const lost: string[] = [];
    for (const [account, a] of rows(needs)) if (!(await allowed(account, a))) lost.push(`${account}: ${show(a)}`);
    assert.deepEqual(lost, []);
  });
});
