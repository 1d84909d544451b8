// The Helm chart (charts/svc-platform) with the real helm (hack/build-helm.sh) against the local
// cluster: it lints with both example values files, its schema refuses bad values with a message
// naming them, it renders the availability defaults (2 replicas each, probes, disruption budgets,
// spread, no root), the apiserver accepts every object it renders, and a release installs,
// upgrades to another image tag keeping its generated key, and uninstalls leaving the CRDs and the
// custom resources.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { pluralOf } from '../../lib/contract.js';
import { apiVersion, group, version } from '../../lib/resources/index.js';
import { chartDir, helm, localValues, renderChart } from '../support/helm.js';
import { images } from '../support/images.js';
import { kubeConfig, kubectl, statusOf, testNamespace, uniqueName } from '../support/kube.js';
import { eventually } from '../support/wait.js';

const chart = chartDir;

type Obj = k8s.KubernetesObject & Record<string, unknown>;
const render = async (...args: string[]): Promise<Obj[]> => (k8s.loadAllYaml(await renderChart('svc', 'default', ...args)) as Obj[]).filter(Boolean);
const ofKind = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);

/** The registry and tag of the platform's images in the local registry (hack/images.sh). */
const [registry, tag] = (() => {
  const ref = images.api;
  return [ref.slice(0, ref.indexOf('/svc/')), ref.slice(ref.lastIndexOf(':') + 1)];
})();

describe('chart: lint, schema and what it renders', () => {
  it('passes helm lint with the local and the production values', async () => {
    for (const values of [localValues, path.join(chart, 'examples/production.yaml')]) {
      const out = await helm('lint', chart, '--strict', '-f', values);
      assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/, out);
    }
  });

  it('refuses bad values with a message naming them', async () => {
    const refused = async (why: RegExp, ...args: string[]) => assert.rejects(render(...args), (err: Error) => why.test(err.message), args.join(' '));
    await refused(/appsDomain/, '--set', 'database.url=postgres://x/y');
    await refused(/database/, '--set', 'appsDomain=apps.example.com');
    await refused(/additional properties 'replica' not allowed|replica/, '-f', localValues, '--set', 'api.replica=3');
    await refused(/replicas/, '-f', localValues, '--set', 'api.replicas=two');
    await refused(/appsDomain/, '-f', localValues, '--set', 'appsDomain=Not_A_Domain');
    await refused(/logLevel/, '-f', localValues, '--set', 'logLevel=chatty');
    await refused(/clientSecret is required/, '-f', localValues, '--set', 'identityProviders.oidc.clientId=x');
  });

  it('renders two replicas of each component, probes, budgets, spread and no root', async () => {
    const objs = await render('-f', localValues, '--set', `image.registry=${registry}`, '--set', `image.tag=${tag}`);
    const deployments = ofKind(objs, 'Deployment') as unknown as k8s.V1Deployment[];
    assert.deepEqual(deployments.map((d) => [d.metadata!.name, d.spec!.replicas]).sort(), [['svc-api', 2], ['svc-controllers', 2], ['svc-ingress-auth', 2]]);
    for (const d of deployments) {
      const pod = d.spec!.template.spec!;
      const c = pod.containers[0]!;
      assert.ok(c.readinessProbe && c.livenessProbe, `${d.metadata!.name}: probes`);
      assert.ok(c.resources?.requests && c.resources.limits, `${d.metadata!.name}: requests and limits`);
      assert.equal(pod.securityContext?.runAsNonRoot, true);
      assert.deepEqual([c.securityContext?.readOnlyRootFilesystem, c.securityContext?.allowPrivilegeEscalation, c.securityContext?.capabilities?.drop], [true, false, ['ALL']]);
      assert.equal(pod.topologySpreadConstraints?.[0]?.whenUnsatisfiable, 'ScheduleAnyway');
      assert.match(c.image!, new RegExp(`^${registry}/svc/[a-z-]+:${tag}$`));
      assert.ok(c.env?.some((e) => e.name === 'SVC_DATABASE_URL' && e.valueFrom?.secretKeyRef?.name === 'svc-database'));
    }
    const budgets = ofKind(objs, 'PodDisruptionBudget') as unknown as k8s.V1PodDisruptionBudget[];
    assert.deepEqual(budgets.map((b) => [b.metadata!.name, b.spec!.maxUnavailable]).sort(), [['svc-api', 1], ['svc-controllers', 1], ['svc-ingress-auth', 1]]);
    assert.equal(ofKind(objs, 'NetworkPolicy').length, 1);
    const keys = ofKind(objs, 'Secret').find((s) => s.metadata!.name === 'svc-keys') as unknown as k8s.V1Secret;
    assert.equal(Buffer.from(keys.data!['artifact-key']!, 'base64').length, 48);
    assert.equal(ofKind(objs, 'RuntimeClass').length, 0, 'the local platform has its own');
    const full = await render('-f', path.join(chart, 'examples/production.yaml'));
    assert.deepEqual(ofKind(full, 'HorizontalPodAutoscaler').map((h) => h.metadata!.name), ['svc-ingress-auth']);
    assert.ok(!ofKind(full, 'Secret').some((s) => s.metadata!.name === 'svc-database'), 'an existing Secret is used, none made');
  });
});

describe('chart: on the local cluster', { timeout: 10 * 60_000 }, () => {
  const kc = kubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const release = uniqueName('chart');
  let ns: { name: string; dispose: () => Promise<void> };
  const base = ['-f', localValues, '--set', `image.registry=${registry}`];

  before(async () => {
    ns = await testNamespace(core, 'chart');
  });
  after(async () => {
    await helm('uninstall', release, '-n', ns.name, '--wait').catch(() => undefined);
    await ns?.dispose();
  });

  it('accepts every rendered object (server-side dry run)', async () => {
    const manifest = await renderChart(release, ns.name, ...base, '--set', `image.tag=${tag}`);
    const out = await new Promise<string>((resolve, reject) => {
      const child = execFile(path.join(process.env.SVC_K8S_BIN!, 'kubectl'), ['apply', '--dry-run=server', '-f', '-'], { env: process.env }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)));
      child.stdin!.end(manifest);
    });
    for (const kind of ['deployment.apps', 'service', 'poddisruptionbudget.policy', 'networkpolicy.networking.k8s.io', 'secret']) assert.match(out, new RegExp(`^${kind}/`, 'm'), out);
  });

  it('installs, upgrades to another image tag keeping its generated key, and uninstalls keeping the CRDs and custom resources', async () => {
    const started = Date.now();
    await helm('install', release, chart, '-n', ns.name, ...base, '--set', `image.tag=${tag}`);
    const installMs = Date.now() - started;
    const keyOf = async () => (await core.readNamespacedSecret({ name: `${release}-keys`, namespace: ns.name })).data!['artifact-key'];
    const key = await keyOf();
    const imageOf = async (component: string) => (await apps.readNamespacedDeployment({ name: `${release}-${component}`, namespace: ns.name })).spec!.template.spec!.containers[0]!.image;
    assert.equal(await imageOf('api'), images.api);
    // An App made while the release is installed: uninstalling must not take it.
    await custom.createNamespacedCustomObject({ group, version, namespace: ns.name, plural: pluralOf('App'), body: { apiVersion, kind: 'App', metadata: { name: 'kept' }, spec: {} } });

    const upgradeStarted = Date.now();
    await helm('upgrade', release, chart, '-n', ns.name, ...base, '--set', 'image.tag=next');
    const upgradeMs = Date.now() - upgradeStarted;
    for (const component of ['api', 'controllers', 'ingress-auth']) assert.equal(await imageOf(component), `${registry}/svc/${component}:next`);
    assert.equal(await keyOf(), key, 'the artifact key generated on install is kept on upgrade');
    assert.match(await helm('history', release, '-n', ns.name), /\n2\s.*deployed/);

    await helm('uninstall', release, '-n', ns.name, '--wait');
    await eventually('the workloads to be gone', async () => (await apps.listNamespacedDeployment({ namespace: ns.name })).items.length === 0, { timeoutMs: 60_000 });
    for (const name of [`${release}-api`, `${release}-ingress-auth`]) await assert.rejects(core.readNamespacedService({ name, namespace: ns.name }), (err: unknown) => statusOf(err) === 404);
    assert.equal(await keyOf(), key, 'the key Secret outlives the release');
    const crds = await kubectl('get', 'crd', '-o', 'name');
    for (const kind of ['apps', 'builds', 'sandboxes', 'databases']) assert.match(crds, new RegExp(`${kind}\\.${group.replace('.', '\\.')}`));
    const kept = (await custom.getNamespacedCustomObject({ group, version, namespace: ns.name, plural: pluralOf('App'), name: 'kept' })) as k8s.KubernetesObject;
    assert.equal(kept.metadata!.name, 'kept');
    console.log(`# chart: install ${(installMs / 1000).toFixed(1)} s, upgrade ${(upgradeMs / 1000).toFixed(1)} s (helm, without waiting for pods)`);
  });
});
