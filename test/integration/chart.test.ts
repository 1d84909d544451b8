// test-runs-alone: it installs a second platform on the nodes and counts failed requests under load.
// The Helm chart (charts/svc-platform) with the real helm (hack/build-helm.sh) against the local
// cluster: it lints with both example values files, its schema refuses bad values with a message
// naming them, and it renders the availability defaults (2 replicas each, probes, disruption
// budgets, spread, no root). Then the platform itself, installed from the images of this checkout
// on the real nodes, with its own PostgreSQL (a pod outside the release, as in production) and an
// S3 object store for artifacts (versitygw, a pod outside the release): every component ready, the first token in its Secret, an app deployed
// through the installed API and reached through the installed ingress-auth behind sign-in; a deploy
// that completes when the controllers' leader is deleted in its middle; an ingress-auth pod deleted
// and a `helm upgrade` to a new image tag, both under load with no failed request; an uninstall
// that leaves the CRDs, the tenants' resources and the kept Secrets. The timings go to the output.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import * as k8s from '@kubernetes/client-node';
import { pluralOf } from '../../lib/contract.js';
import { repoRoot } from '../../lib/paths.js';
import { group, version } from '../../lib/resources/index.js';
import { chartDir, helm, localValues, renderChart } from '../support/helm.js';
import { images } from '../support/images.js';
import { fragmentSecret } from '../support/ingress.js';
import { registryToken } from '../support/registry.js';
import { kubeConfig, kubectl, statusOf, testNamespace } from '../support/kube.js';
import { eventually } from '../support/wait.js';

const chart = chartDir;

type Obj = k8s.KubernetesObject & Record<string, unknown>;
const render = async (...args: string[]): Promise<Obj[]> =>
  (k8s.loadAllYaml(await renderChart('svc', 'default', ...args)) as Obj[]).filter(Boolean);
const ofKind = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);
/** The pod spec of a component's Deployment (`api`, `controllers`, `ingress-auth`) in rendered objects. */
const podOf = (objs: Obj[], component: string) =>
  (ofKind(objs, 'Deployment').find((d) => (d.metadata?.name ?? '').endsWith(`-${component}`)) as k8s.V1Deployment).spec!.template.spec!;

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
    const refused = async (why: RegExp, ...args: string[]) =>
      assert.rejects(render(...args), (err: Error) => why.test(err.message), args.join(' '));
    await refused(/appsDomain/, '--set', 'database.url=postgres://x/y');
    await refused(/database/, '--set', 'appsDomain=apps.example.com');
    await refused(/additional properties 'replica' not allowed|replica/, '-f', localValues, '--set', 'api.replica=3');
    await refused(/replicas/, '-f', localValues, '--set', 'api.replicas=two');
    await refused(/appsDomain/, '-f', localValues, '--set', 'appsDomain=Not_A_Domain');
    await refused(/logLevel/, '-f', localValues, '--set', 'logLevel=chatty');
    await refused(/clientSecret is required/, '-f', localValues, '--set', 'identityProviders.oidc.clientId=x');
    await refused(/registrar.token \(or registrar.existingSecret\) is required/, '-f', localValues, '--set', 'registrar.username=svc');
    await refused(/tlds/, '-f', localValues, '--set', 'registrar.tlds=.com');
    await refused(/api.artifacts.s3.existingSecret is required/, '-f', localValues, '--set', 'api.artifacts.s3.endpoint=http://s3:7070');
    await refused(/endpoint/, '-f', localValues, '--set', 'api.artifacts.s3.endpoint=s3.example.com');
    await refused(/bucket/, '-f', localValues, '--set', 'api.artifacts.s3.bucket=Not_A_Bucket');
    await refused(/prefix/, '-f', localValues, '--set', 'api.artifacts.s3.prefix=../x/');
    await refused(/provider/, '-f', localValues, '--set', 'databases.provider=mysql');
    await refused(/instances/, '-f', localValues, '--set', 'databases.cloudnativePg.instances=0');
  });

  it('serves databases with either provider: pods by default, CloudNativePG with its image, namespace and instances', async () => {
    const envOf = (objs: Obj[], component: string) => podOf(objs, component).containers[0]!.env!;
    const value = (env: k8s.V1EnvVar[], name: string) => env.find((e) => e.name === name)?.value;
    const byDefault = await render('-f', localValues);
    assert.equal(value(envOf(byDefault, 'controllers'), 'SVC_DATABASE_PROVIDER'), 'pods');
    // Its CloudNativePG settings stay: Databases made on it keep their Clusters as they were.
    assert.equal(value(envOf(byDefault, 'controllers'), 'SVC_DATABASE_CNPG_INSTANCES'), '2');
    // The platform's own operand image, of the major its PostgreSQL client (backups, branches) takes.
    assert.equal(value(envOf(byDefault, 'controllers'), 'SVC_DATABASE_CNPG_IMAGE'), 'svc/cnpg-postgres:15');
    const back = await render('-f', localValues, '--set', 'databases.cloudnativePg.image=registry.example/cnpg-postgres:16-x');
    assert.equal(value(envOf(back, 'controllers'), 'SVC_DATABASE_CNPG_IMAGE'), 'registry.example/cnpg-postgres:16-x');
    const cnpg = await render(
      '-f',
      localValues,
      '--set',
      'databases.provider=cloudnative-pg',
      '--set',
      'databases.cloudnativePg.image=registry.example/cnpg-postgres:16-x',
      '--set',
      'databases.cloudnativePg.instances=3',
    );
    for (const component of ['controllers', 'api']) {
      const env = envOf(cnpg, component);
      assert.deepEqual(
        ['SVC_DATABASE_PROVIDER', 'SVC_DATABASE_CNPG_IMAGE', 'SVC_DATABASE_CNPG_OPERATOR_NAMESPACE', 'SVC_DATABASE_CNPG_INSTANCES'].map(
          (n) => value(env, n),
        ),
        ['cloudnative-pg', 'registry.example/cnpg-postgres:16-x', 'cnpg-system', '3'],
        component,
      );
    }
  });

  it('keeps artifacts in the object store with its key pair from a Secret; with the old claim too, copies it in first', async () => {
    const apiOf = (objs: Obj[]) => podOf(objs, 'api');
    const s3 = ['--set', 'api.artifacts.s3.endpoint=https://s3.example.com', '--set', 'api.artifacts.s3.existingSecret=store'];
    const pod = apiOf(await render('-f', localValues, ...s3));
    const env = pod.containers[0]!.env!;
    assert.equal(env.find((e) => e.name === 'SVC_ARTIFACT_S3_ENDPOINT')?.value, 'https://s3.example.com');
    assert.equal(env.find((e) => e.name === 'SVC_ARTIFACT_S3_BUCKET')?.value, 'svc-artifacts');
    assert.deepEqual(
      { ...env.find((e) => e.name === 'SVC_ARTIFACT_S3_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef },
      { name: 'store', key: 'AWS_SECRET_ACCESS_KEY' },
    );
    // A cache, not a claim; no migration without a claim to move.
    assert.deepEqual({ ...pod.volumes!.find((v) => v.name === 'artifacts')?.emptyDir }, { sizeLimit: '2Gi' });
    assert.equal(pod.initContainers, undefined);
    const moving = apiOf(await render('-f', localValues, ...s3, '--set', 'api.artifacts.existingClaim=old-artifacts'));
    assert.deepEqual(
      moving.initContainers?.map((c) => c.command),
      [['node', '/app/dist/api/migrate-artifacts.js', '--allow-refused', '/var/lib/svc/legacy-artifacts']],
    );
    assert.deepEqual(
      { ...moving.volumes!.find((v) => v.name === 'legacy-artifacts')?.persistentVolumeClaim },
      {
        claimName: 'old-artifacts',
        readOnly: true,
      },
    );
    assert.ok(moving.initContainers?.[0]?.env?.some((e) => e.name === 'SVC_ARTIFACT_S3_ACCESS_KEY_ID'));
    // Without an object store nor a claim: the artifacts themselves in an emptyDir, with no size limit to be evicted at.
    assert.deepEqual({ ...apiOf(await render('-f', localValues)).volumes!.find((v) => v.name === 'artifacts')?.emptyDir }, {});
    // Without an object store the claim is where the artifacts live, as before.
    const files = apiOf(await render('-f', localValues, '--set', 'api.artifacts.existingClaim=old-artifacts'));
    assert.deepEqual({ ...files.volumes!.find((v) => v.name === 'artifacts')?.persistentVolumeClaim }, { claimName: 'old-artifacts' });
    assert.equal(
      files.containers[0]!.env!.find((e) => e.name === 'SVC_ARTIFACT_S3_ENDPOINT'),
      undefined,
    );
  });

  it('keeps the runtime image on every node with a sleeping DaemonSet, unless told not to', async () => {
    const objs = await render('-f', localValues, '--set', 'images.runtime=registry.example/svc/runtime:7');
    const [holder] = ofKind(objs, 'DaemonSet') as unknown as k8s.V1DaemonSet[];
    const pod = holder!.spec!.template.spec!;
    assert.equal(pod.containers[0]!.image, 'registry.example/svc/runtime:7');
    assert.deepEqual(pod.containers[0]!.command, ['sleep', 'infinity']);
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(pod.containers[0]!.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(ofKind(await render('-f', localValues, '--set', 'prepull.enabled=false'), 'DaemonSet').length, 0);
  });

  it('configures the registrar with its token from a Secret, and only when a username is set', async () => {
    const envOf = (objs: Obj[]) => podOf(objs, 'api').containers[0]!.env!;
    assert.equal(
      envOf(await render('-f', localValues)).find((e) => e.name === 'SVC_REGISTRAR'),
      undefined,
    );
    const given = await render('-f', localValues, '--set', 'registrar.username=svc', '--set', 'registrar.token=s3cret');
    const env = envOf(given);
    assert.equal(env.find((e) => e.name === 'SVC_REGISTRAR')?.value, 'namecom');
    assert.deepEqual(
      { ...env.find((e) => e.name === 'SVC_REGISTRAR_TOKEN')?.valueFrom?.secretKeyRef },
      { name: 'svc-registrar', key: 'token' },
    );
    assert.ok(!JSON.stringify(env).includes('s3cret'), 'the token is not in the Deployment');
    const secret = ofKind(given, 'Secret').find((s) => s.metadata?.name === 'svc-registrar') as k8s.V1Secret;
    assert.equal(Buffer.from(secret.data!.token!, 'base64').toString(), 's3cret');
    const theirs = await render('-f', localValues, '--set', 'registrar.username=svc', '--set', 'registrar.existingSecret=mine');
    assert.deepEqual(
      { ...envOf(theirs).find((e) => e.name === 'SVC_REGISTRAR_TOKEN')?.valueFrom?.secretKeyRef },
      { name: 'mine', key: 'token' },
    );
    assert.equal(
      ofKind(theirs, 'Secret').find((s) => s.metadata?.name === 'svc-registrar'),
      undefined,
    );
  });

  it('renders two replicas of each component, probes, budgets, spread and no root', async () => {
    const objs = await render('-f', localValues, '--set', `image.registry=${registry}`, '--set', `image.tag=${tag}`);
    const deployments = ofKind(objs, 'Deployment') as unknown as k8s.V1Deployment[];
    assert.deepEqual(deployments.map((d) => [d.metadata!.name, d.spec!.replicas]).sort(), [
      ['svc-api', 2],
      ['svc-controllers', 2],
      ['svc-ingress-auth', 2],
    ]);
    for (const d of deployments) {
      const pod = d.spec!.template.spec!;
      const c = pod.containers[0]!;
      assert.ok(c.readinessProbe && c.livenessProbe, `${d.metadata!.name}: probes`);
      assert.ok(c.resources?.requests && c.resources.limits, `${d.metadata!.name}: requests and limits`);
      assert.equal(pod.securityContext?.runAsNonRoot, true);
      assert.deepEqual(
        [c.securityContext?.readOnlyRootFilesystem, c.securityContext?.allowPrivilegeEscalation, c.securityContext?.capabilities?.drop],
        [true, false, ['ALL']],
      );
      assert.equal(pod.topologySpreadConstraints?.[0]?.whenUnsatisfiable, 'ScheduleAnyway');
      assert.match(c.image!, new RegExp(`^${registry}/svc/[a-z-]+:${tag}$`));
      assert.ok(c.env?.some((e) => e.name === 'SVC_DATABASE_URL' && e.valueFrom?.secretKeyRef?.name === 'svc-database'));
    }
    const budgets = ofKind(objs, 'PodDisruptionBudget') as unknown as k8s.V1PodDisruptionBudget[];
    assert.deepEqual(budgets.map((b) => [b.metadata!.name, b.spec!.maxUnavailable]).sort(), [
      ['svc-api', 1],
      ['svc-controllers', 1],
      ['svc-ingress-auth', 1],
    ]);
    assert.equal(ofKind(objs, 'NetworkPolicy').length, 1);
    const keys = ofKind(objs, 'Secret').find((s) => s.metadata!.name === 'svc-keys') as unknown as k8s.V1Secret;
    assert.equal(Buffer.from(keys.data!['artifact-key']!, 'base64').length, 48);
    assert.equal(ofKind(objs, 'RuntimeClass').length, 0, 'the local platform has its own');
    const owner = ofKind(objs, 'Secret').find((s) => s.metadata!.name === 'svc-owner-token')!;
    assert.equal(owner.metadata!.annotations?.['helm.sh/resource-policy'], 'keep', 'the first token outlives the release');
    const envOf = (name: string) =>
      new Map(
        deployments
          .find((d) => d.metadata!.name === name)!
          .spec!.template.spec!.containers[0]!.env!.map((e) => [e.name, e.value ?? e.valueFrom]),
      );
    assert.equal(envOf('svc-api').get('SVC_OWNER_TOKEN_SECRET'), 'default/svc-owner-token');
    assert.equal(
      (envOf('svc-controllers').get('SVC_PLATFORM_NAMESPACE') as k8s.V1EnvVarSource).fieldRef?.fieldPath,
      'metadata.namespace',
      "tenants' policies admit the release namespace",
    );
    assert.equal(envOf('svc-controllers').get('SVC_MACHINE_PLATFORM_CIDRS'), '10.244.0.1/32,10.244.1.1/32');
    const full = await render('-f', path.join(chart, 'examples/production.yaml'));
    assert.deepEqual(
      ofKind(full, 'HorizontalPodAutoscaler').map((h) => h.metadata!.name),
      ['svc-ingress-auth'],
    );
    assert.ok(!ofKind(full, 'Secret').some((s) => s.metadata!.name === 'svc-database'), 'an existing Secret is used, none made');
  });
});

/**
 * Requests made over and over by `concurrency` loops, each on a new connection (as many clients
 * would: a load balancer spreads connections, not requests), until stop(): every failure is kept.
 */
class Traffic {
  readonly failures: string[] = [];
  count = 0;
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(request: () => Promise<string | undefined>, concurrency = 2, maxMs = 300_000) {
    const until = Date.now() + maxMs;
    this.loops = Array.from({ length: concurrency }, async () => {
      while (this.running && Date.now() < until) {
        const why = await request().catch((err: Error) => `${err.message}`);
        this.count++;
        if (why !== undefined) this.failures.push(`${new Date().toISOString()} ${why}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    });
  }

  async stop(): Promise<{ count: number; failures: string[] }> {
    this.running = false;
    await Promise.all(this.loops);
    return { count: this.count, failures: this.failures };
  }
}

/** One HTTP/1.1 request on a connection of its own, with any Host header (fetch sends the URL's). */
function send(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string; cookies: string[] }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, agent: false, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, cookies: res.headers['set-cookie'] ?? [] }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}
const get = (url: string, headers: Record<string, string>) => send('GET', url, headers);

/** Gives the manifest of `repository:from` in the local registry a second tag, as a release would. */
async function tagImage(repository: string, from: string, to: string): Promise<void> {
  const base = `http://${images.registry}/v2/${repository}/manifests`;
  const accept = [
    'application/vnd.oci.image.index.v1+json',
    'application/vnd.oci.image.manifest.v1+json',
    'application/vnd.docker.distribution.manifest.v2+json',
    'application/vnd.docker.distribution.manifest.list.v2+json',
  ];
  // As the operator, who alone pushes the platform's images (docs/decisions/0025-registry-auth.md).
  const authorization = `Bearer ${await registryToken([`repository:${repository}:pull,push`])}`;
  const got = await fetch(`${base}/${from}`, { headers: { authorization, accept: accept.join(', ') } });
  assert.equal(got.status, 200, `${repository}:${from} in the registry`);
  const put = await fetch(`${base}/${to}`, {
    method: 'PUT',
    headers: { authorization, 'content-type': got.headers.get('content-type')! },
    body: Buffer.from(await got.arrayBuffer()),
  });
  assert.equal(put.status, 201, `${repository}:${to} tagged`);
}

/**
 * The make-test platform's own controllers (hack/dev.sh, on the host) reconcile every namespace:
 * while the release runs, they are stopped so that its controllers are the only ones (they share the
 * leader Lease anyway), and started again after.
 */
const devScript = path.join(repoRoot, 'hack/dev.sh');
function hostControllers(verb: 'stop' | 'up'): Promise<void> {
  // The host's controllers log as make test started them (the test runner's silence would hide the
  // line dev.sh waits for).
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'SVC_LOG_LEVEL'));
  return new Promise((resolve, reject) =>
    execFile(devScript, [verb, 'controllers'], { env }, (err, _out, stderr) =>
      err ? reject(new Error(`dev.sh ${verb} controllers: ${stderr}`)) : resolve(),
    ),
  );
}

describe('chart: the platform installed on the local cluster', { timeout: 15 * 60_000 }, () => {
  const kc = kubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const leases = kc.makeApiClient(k8s.CoordinationV1Api);
  const release = 'svc';
  // The upgrade's tag, new each run: the nodes keep platform images IfNotPresent, so a fixed tag
  // would start whatever an earlier run left cached under it (an older API, refusing this database).
  const nextTag = `next-${randomBytes(4).toString('hex')}`;
  // The API as this host reaches it: its Service's address, read once the chart made it (pods
  // inside the cluster reach it, and PostgreSQL, by name through the cluster DNS).
  let apiUrl: string;
  const proxyPort = 8081;
  const app = 'hello';
  const host = `${app}.apps.localhost:${proxyPort}`;
  let ns: { name: string; dispose: () => Promise<void> };
  const s3Secret = randomBytes(18).toString('hex');
  let ingressUrl: string;
  let token: string;
  let cookie: string;
  let accountNamespace: string | undefined;
  let hostControllersStopped = false;
  const timings: string[] = [];
  const values = () => [
    '-f',
    localValues,
    '--set',
    `image.registry=${registry}`,
    '--set',
    `images.runtime=${images.runtime}`,
    '--set',
    `images.postgres=${images.postgres}`,
    '--set',
    `images.builder=${images.builder}`,
    '--set',
    `images.sandbox=${images.sandbox}`,
    '--set',
    'api.artifacts.s3.endpoint=http://s3:7070',
    '--set',
    'api.artifacts.s3.existingSecret=s3',
    '--set',
    `ingressAuth.service.port=${proxyPort}`,
    // The certificates namespace made by the test (a server-side dry run cannot place a Role in a
    // namespace the same manifest would make), one per run.
    '--set',
    `certificates.namespace=${ns.name}-certs`,
    '--set',
    'certificates.createNamespace=false',
  ];

  const api = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${apiUrl}${p}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const deploy = async (html: string) => {
    const d = await api('POST', `/apps/${app}/deploy`, { compose: 'x-svc:\n  auth: owner\n', files: { 'index.html': html } });
    assert.equal(d.status, 202, JSON.stringify(d.body));
    return d.body.id as string;
  };
  const live = (id: string) =>
    eventually(`deploy ${id} live`, async () => (await api('GET', `/deploys/${id}`)).body.status === 'live', {
      timeoutMs: 120_000,
      intervalMs: 250,
    });
  const page = () => get(`${ingressUrl}/`, { host, cookie });
  const ready = async (component: string) => {
    const d = await apps.readNamespacedDeployment({ name: `${release}-${component}`, namespace: ns.name });
    return (
      d.status?.readyReplicas === d.spec!.replicas &&
      d.status?.updatedReplicas === d.spec!.replicas &&
      (d.status?.replicas ?? 0) === d.spec!.replicas
    );
  };
  const leader = async () =>
    (await leases.readNamespacedLease({ name: 'svc-controllers', namespace: 'kube-system' })).spec?.holderIdentity?.split('_')[0];
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  /**
   * helm with --wait, and when it gives up, why: each pod's phase, unready containers and their last
   * log lines, and the namespace's warnings (helm says only "context deadline exceeded").
   */
  const helmWaiting = async (...args: string[]) => {
    try {
      await helm(...args);
    } catch (err) {
      const lines: string[] = [];
      const pods = (await core.listNamespacedPod({ namespace: ns.name })).items;
      for (const p of pods) {
        const statuses = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])];
        lines.push(`pod ${p.metadata!.name} on ${p.spec?.nodeName ?? '(unscheduled)'}: ${p.status?.phase}`);
        for (const c of statuses.filter((c) => !c.ready)) {
          lines.push(`  ${c.name}: ${JSON.stringify(c.state)} restarts ${c.restartCount}`);
          const log = await core
            .readNamespacedPodLog({ name: p.metadata!.name!, namespace: ns.name, container: c.name, tailLines: 15 })
            .catch((e: unknown) => `(no log: ${String(e)})`);
          lines.push(
            ...String(log)
              .split('\n')
              .map((l) => `    ${l}`),
          );
        }
      }
      const events = (await core.listNamespacedEvent({ namespace: ns.name })).items.filter((e) => e.type !== 'Normal');
      lines.push(...events.slice(-30).map((e) => `event ${e.involvedObject.name}: ${e.reason} ${e.message}`));
      throw new Error(`${(err as Error).message}\n${lines.join('\n')}`, { cause: err });
    }
  };

  before(async () => {
    ns = await testNamespace(core, 'chart');
    await core.createNamespace({ body: { metadata: { name: `${ns.name}-certs` } } });
    // The platform's PostgreSQL, outside the release as in production: the svc/postgres image as a
    // Pod and the Service `postgres` the local values name.
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name: 'postgres', labels: { 'svc.dev/test': 'postgres' } },
        spec: {
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            runAsGroup: 1000,
            fsGroup: 1000,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'postgres',
              image: images.postgres,
              env: [
                { name: 'PGUSER', value: 'svc' },
                { name: 'PGPASSWORD', value: 'svc-chart' },
                { name: 'PGDATABASE', value: 'svc' },
                { name: 'PGDATA', value: '/var/lib/svc-postgres/data' },
              ],
              ports: [{ containerPort: 5432 }],
              readinessProbe: { tcpSocket: { port: 5432 as unknown as k8s.IntOrString }, periodSeconds: 1 },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              volumeMounts: [
                { name: 'data', mountPath: '/var/lib/svc-postgres' },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            { name: 'data', emptyDir: {} },
            { name: 'tmp', emptyDir: {} },
          ],
        },
      },
    });
    await core.createNamespacedService({
      namespace: ns.name,
      body: {
        metadata: { name: 'postgres' },
        spec: { selector: { 'svc.dev/test': 'postgres' }, ports: [{ port: 5432 }] },
      },
    });
    // The artifacts every API replica shares: an S3-compatible object store outside the release
    // (versitygw over an emptyDir, the local stand-in for S3), its key pair in a Secret.
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 's3' }, stringData: { AWS_ACCESS_KEY_ID: 'svc-chart', AWS_SECRET_ACCESS_KEY: s3Secret } },
    });
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name: 's3', labels: { 'svc.dev/test': 's3' } },
        spec: {
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65534,
            runAsGroup: 65534,
            fsGroup: 65534,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 's3',
              image: images.versitygw,
              args: ['--port', ':7070', 'posix', '/data'],
              env: [
                { name: 'ROOT_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: 's3', key: 'AWS_ACCESS_KEY_ID' } } },
                { name: 'ROOT_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: 's3', key: 'AWS_SECRET_ACCESS_KEY' } } },
              ],
              ports: [{ containerPort: 7070 }],
              readinessProbe: { tcpSocket: { port: 7070 as unknown as k8s.IntOrString }, periodSeconds: 1 },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
            },
          ],
          volumes: [{ name: 'data', emptyDir: {} }],
        },
      },
    });
    await core.createNamespacedService({
      namespace: ns.name,
      body: { metadata: { name: 's3' }, spec: { selector: { 'svc.dev/test': 's3' }, ports: [{ port: 7070 }] } },
    });
    // The "new release" the upgrade goes to: the same images under another tag.
    for (const repository of ['svc/api', 'svc/controllers', 'svc/ingress-auth']) await tagImage(repository, tag, nextTag);
    await hostControllers('stop');
    hostControllersStopped = true;
  });
  after(async () => {
    await helm('uninstall', release, '-n', ns.name, '--wait').catch(() => undefined);
    if (accountNamespace) await core.deleteNamespace({ name: accountNamespace }).catch(() => undefined);
    if (ns) await core.deleteNamespace({ name: `${ns.name}-certs` }).catch(() => undefined);
    await ns?.dispose();
    if (hostControllersStopped) await hostControllers('up');
    if (timings.length) console.log(`# chart: ${timings.join(', ')}`);
  });

  it('accepts every rendered object (server-side dry run)', async () => {
    const manifest = await renderChart(release, ns.name, ...values(), '--set', `image.tag=${tag}`);
    const out = await new Promise<string>((resolve, reject) => {
      const child = execFile(
        path.join(process.env.SVC_K8S_BIN!, 'kubectl'),
        ['apply', '--dry-run=server', '-f', '-'],
        { env: process.env },
        (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)),
      );
      child.stdin!.end(manifest);
    });
    for (const kind of ['deployment.apps', 'service', 'poddisruptionbudget.policy', 'networkpolicy.networking.k8s.io', 'secret'])
      assert.match(out, new RegExp(`^${kind}/`, 'm'), out);
  });

  it('installs: two ready replicas of each component, one controllers leader, the first token in its Secret', async () => {
    const started = Date.now();
    await helmWaiting('install', release, chartDir, '-n', ns.name, ...values(), '--set', `image.tag=${tag}`, '--wait', '--timeout', '5m');
    timings.push(`install to every pod ready ${seconds(Date.now() - started)}`);
    const apiService = await core.readNamespacedService({ name: `${release}-api`, namespace: ns.name });
    apiUrl = `http://${apiService.spec!.clusterIP}:8080/api`;
    for (const component of ['api', 'controllers', 'ingress-auth']) assert.ok(await ready(component), `${component}: 2 of 2 ready`);
    const pods = (await core.listNamespacedPod({ namespace: ns.name, labelSelector: `app.kubernetes.io/instance=${release}` })).items;
    assert.equal(new Set(pods.map((p) => p.spec!.nodeName)).size, 2, 'replicas spread over both nodes');
    // The runtime image held on both nodes before any machine needs it.
    const holding = pods.filter((p) => p.metadata!.labels!['app.kubernetes.io/component'] === 'prepull');
    assert.deepEqual(
      holding.map((p) => p.status?.containerStatuses?.[0]?.ready),
      [true, true],
    );
    assert.equal(new Set(holding.map((p) => p.spec!.nodeName)).size, 2);
    const controllers = pods
      .filter((p) => p.metadata!.labels!['app.kubernetes.io/component'] === 'controllers')
      .map((p) => p.metadata!.name!);
    assert.ok(
      controllers.includes(await eventually('a controllers leader', leader, { timeoutMs: 30_000 })),
      "one of the release's controllers leads",
    );
    token = await eventually('the first token in its Secret', async () => {
      const data = (await core.readNamespacedSecret({ name: `${release}-owner-token`, namespace: ns.name })).data;
      return data?.token ? Buffer.from(data.token, 'base64').toString() : undefined;
    });
    const account = await api('GET', '/account');
    assert.equal(account.status, 200, JSON.stringify(account.body));
    accountNamespace = account.body.namespace as string;
    const proxy = await core.readNamespacedService({ name: `${release}-ingress-auth`, namespace: ns.name });
    ingressUrl = `http://${proxy.spec!.clusterIP}:${proxyPort}`;
  });

  it('deploys an app through the installed API and serves it through the installed ingress-auth, behind sign-in', async () => {
    assert.equal((await api('POST', '/apps', { name: app })).status, 201);
    const started = Date.now();
    await live(await deploy('<h1>first</h1>'));
    timings.push(`first deploy live ${seconds(Date.now() - started)}`);
    // The artifact is in the object store, not on one replica's disk: the machine got it whichever
    // replica it asked.
    const store = await core.readNamespacedService({ name: 's3', namespace: ns.name });
    const s3 = new S3Client({
      endpoint: `http://${store.spec!.clusterIP}:7070`,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'svc-chart', secretAccessKey: s3Secret },
    });
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'svc-artifacts' })).finally(() => s3.destroy());
    assert.ok(
      listed.Contents?.some((o) => /^sha256\/[a-f0-9]{64}$/.test(o.Key ?? '')),
      `an artifact in s3://svc-artifacts: ${JSON.stringify(listed.Contents?.map((o) => o.Key))}`,
    );
    const anonymous = await get(`${ingressUrl}/`, { host, accept: 'text/html' });
    assert.ok([302, 303, 401].includes(anonymous.status), `no session: ${anonymous.status}`);
    assert.doesNotMatch(anonymous.body, /first/);
    const link = await api('POST', `/apps/${app}/auth/owner-link`, { next: '/' });
    assert.equal(link.status, 201, JSON.stringify(link.body));
    const redeemed = await send(
      'POST',
      `${ingressUrl}/_svc/auth/redeem`,
      { host, origin: `http://${host}`, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' },
      JSON.stringify({ token: fragmentSecret(link.body.url as string) }),
    );
    assert.equal(redeemed.status, 200, redeemed.body);
    cookie = redeemed.cookies.map((c) => c.split(';')[0]!).find((c) => c.startsWith('svc-session='))!;
    assert.ok(cookie, 'a session cookie');
    const signedIn = await page();
    assert.equal(signedIn.status, 200);
    assert.match(signedIn.body, /first/);
  });

  it("completes a deploy when the controllers' leader is deleted in the middle of it: the other replica takes over", async () => {
    const old = (await leader())!;
    const id = await deploy('<h1>second</h1>');
    const started = Date.now();
    await core.deleteNamespacedPod({ name: old, namespace: ns.name });
    const next = await eventually(
      'another controllers leader',
      async () => {
        const now = await leader();
        return now && now !== old ? now : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    timings.push(`leader handover ${seconds(Date.now() - started)}`);
    await live(id);
    timings.push(`deploy live after its leader was deleted ${seconds(Date.now() - started)}`);
    assert.notEqual(next, old);
    assert.match(
      (await eventually('the second version served', async () => ((await page()).body.includes('second') ? page() : undefined))).body,
      /second/,
    );
  });

  it('keeps serving while an ingress-auth pod is deleted under load: no request fails', async () => {
    // Setup, not the property: a replacement controllers pod on a fresh node took 80 s to listen once (CI, 2026-11-27).
    await eventually('the controllers back to two ready', () => ready('controllers'), { timeoutMs: 180_000 });
    const traffic = new Traffic(async () => {
      const r = await page();
      return r.status === 200 && r.body.includes('second') ? undefined : `status ${r.status}`;
    });
    await new Promise((r) => setTimeout(r, 1_000));
    const [victim] = (
      await core.listNamespacedPod({
        namespace: ns.name,
        labelSelector: `app.kubernetes.io/instance=${release},app.kubernetes.io/component=ingress-auth`,
      })
    ).items;
    const started = Date.now();
    await core.deleteNamespacedPod({ name: victim!.metadata!.name!, namespace: ns.name });
    await eventually(
      'the deleted pod gone and two ready again',
      async () => {
        const names = (
          await core.listNamespacedPod({
            namespace: ns.name,
            labelSelector: `app.kubernetes.io/instance=${release},app.kubernetes.io/component=ingress-auth`,
          })
        ).items.map((p) => p.metadata!.name);
        return !names.includes(victim!.metadata!.name) && (await ready('ingress-auth'));
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    timings.push(`ingress-auth pod replaced ${seconds(Date.now() - started)}`);
    await new Promise((r) => setTimeout(r, 1_000));
    const { count, failures } = await traffic.stop();
    timings.push(`${count} requests through an ingress-auth pod's deletion, ${failures.length} failed`);
    assert.deepEqual(failures, [], `of ${count} requests`);
    assert.ok(count > 50, `${count} requests`);
  });

  it('upgrades to a new image tag while clients poll the app and the API: no request fails, the generated key is kept', async () => {
    const keyOf = async () => (await core.readNamespacedSecret({ name: `${release}-keys`, namespace: ns.name })).data!['artifact-key'];
    const key = await keyOf();
    const app$ = new Traffic(async () => {
      const r = await page();
      return r.status === 200 && r.body.includes('second') ? undefined : `app: status ${r.status}`;
    });
    const api$ = new Traffic(async () => {
      const r = await get(`${apiUrl}/apps/${app}`, { authorization: `Bearer ${token}` });
      return r.status === 200 ? undefined : `api: status ${r.status} ${r.body.slice(0, 200)}`;
    });
    const started = Date.now();
    await helmWaiting(
      'upgrade',
      release,
      chartDir,
      '-n',
      ns.name,
      ...values(),
      '--set',
      `image.tag=${nextTag}`,
      '--wait',
      '--timeout',
      '5m',
    );
    timings.push(`upgrade to every new pod ready ${seconds(Date.now() - started)}`);
    const [a, b] = [await app$.stop(), await api$.stop()];
    timings.push(`${a.count} app and ${b.count} API requests through the upgrade, ${a.failures.length + b.failures.length} failed`);
    assert.deepEqual([...a.failures, ...b.failures], [], `of ${a.count} app and ${b.count} API requests`);
    for (const component of ['api', 'controllers', 'ingress-auth']) {
      const d = await apps.readNamespacedDeployment({ name: `${release}-${component}`, namespace: ns.name });
      assert.equal(d.spec!.template.spec!.containers[0]!.image, `${registry}/svc/${component}:${nextTag}`);
    }
    assert.equal(await keyOf(), key, 'the artifact key generated on install is kept on upgrade');
    assert.match(await helm('history', release, '-n', ns.name), /\n2\s.*deployed/);
    // Machines made before the upgrade still fetch with credentials minted under the kept key.
    assert.equal((await page()).status, 200);
  });

  it('uninstalls: the workloads go; the CRDs, the custom resources and the kept Secrets stay', async () => {
    const started = Date.now();
    await helm('uninstall', release, '-n', ns.name, '--wait');
    await eventually(
      'the workloads to be gone',
      async () =>
        (await core.listNamespacedPod({ namespace: ns.name, labelSelector: `app.kubernetes.io/instance=${release}` })).items.length === 0,
      { timeoutMs: 90_000 },
    );
    timings.push(`uninstall ${seconds(Date.now() - started)}`);
    assert.equal((await apps.listNamespacedDeployment({ namespace: ns.name })).items.length, 0);
    for (const name of [`${release}-api`, `${release}-ingress-auth`])
      await assert.rejects(core.readNamespacedService({ name, namespace: ns.name }), (err: unknown) => statusOf(err) === 404);
    for (const name of [`${release}-keys`, `${release}-owner-token`])
      assert.ok((await core.readNamespacedSecret({ name, namespace: ns.name })).data, `${name} kept`);
    const crds = await kubectl('get', 'crd', '-o', 'name');
    for (const kind of ['apps', 'builds', 'sandboxes', 'databases'])
      assert.match(crds, new RegExp(`${kind}\\.${group.replace('.', '\\.')}`));
    const kept = (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace: accountNamespace!,
      plural: pluralOf('App'),
      name: app,
    })) as k8s.KubernetesObject;
    assert.equal(kept.metadata!.name, app, "the tenant's App outlives the release");
  });
});
