// Attack suite, issue 30 finding 6: an image reference is tenant input that the node's containerd
// acts on from the host's network namespace. Deploying `127.0.0.1:8082/rt/x:latest` made containerd
// connect to the controllers' port (and its pull error told an open port from a closed one). Every
// reference below would have passed before: the API's only check was the character class
// /^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$/ (asserted here for each), compose's was the same, and the App
// CRD has none, so the controller made a machine of whatever an App named. Now the API refuses each
// with 400 naming the rule and writes nothing; the App controller makes no machine of an App applied
// with one and says why in its status.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version, type App } from '../../lib/resources/index.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { images } from '../support/images.js';
import { eventually } from '../support/wait.js';

const oldCheck = /^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$/;
const hint = /; images come from public registries or the platform's own \(SVC_IMAGE_REGISTRIES\)$/;

// [reference, what the refusal says the registry is]
const hostile: Array<[string, RegExp]> = [
  ['127.0.0.1:8082/rt/x:latest', /registry 127\.0\.0\.1:8082 is a loopback address/],
  ['127.0.0.1:10250/x', /is a loopback address/],
  ['127.1:8082/x', /registry 127\.1:8082 is a loopback address/],
  ['0x7f.1:8082/x', /is a loopback address/],
  ['2130706433:8082/x', /is a loopback address/],
  ['0177.0.0.1:55432/x', /is a loopback address/],
  ['localhost:8082/x', /registry localhost:8082 is a loopback name/],
  ['LOCALHOST:8080/x', /is a loopback name/],
  ['localhost.:5000/x', /is a loopback name/],
  ['169.254.169.254/latest', /registry 169\.254\.169\.254 is a link-local address/],
  ['metadata.google.internal/computemetadata', /is an internal name/],
  ['10.96.0.1:443/x', /registry 10\.96\.0\.1:443 is a private address/],
  ['192.168.1.1/x', /is a private address/],
  ['0.0.0.0:8082/x', /is an unspecified/],
  ['registry:5000/x', /is a single-label name/],
];

describe('images only from allowed registries (issue 30 finding 6)', () => {
  let api: TestApi;
  let custom: k8s.CustomObjectsApi;
  const json = expectJson;
  const deploysOf = async (app: string) =>
    (await json<{ deploys: unknown[] }>(await api.request('GET', `/api/apps/${app}/deploys`), 200)).deploys;
  const podsOf = async (app: string) =>
    (await api.kube.core.listNamespacedPod({ namespace: api.account.namespace, labelSelector: `svc.dev/app=${app}` })).items;

  before(async () => {
    // As make dev runs it: the platform's registry (SVC_BUILD_REGISTRY) and no allow-list.
    api = await startTestApi({ env: { SVC_BUILD_REGISTRY: images.registry } });
    custom = api.kube.kc.makeApiClient(k8s.CustomObjectsApi);
    await json(await api.request('POST', '/api/apps', { body: { name: 'victim' } }), 201);
  });
  after(async () => {
    await api?.close();
  });

  it('would have passed the old check: every reference here is of its characters', () => {
    for (const [ref] of hostile) assert.match(ref, oldCheck, ref);
  });

  it('refuses an image deploy from each, naming the rule, and writes nothing', async () => {
    for (const [ref, rule] of hostile) {
      const { error } = await json<{ error: string }>(await api.request('POST', '/api/apps/victim/deploy', { body: { image: ref } }), 400);
      assert.ok(error.startsWith(`image ${ref}: `), error);
      assert.match(error, rule, ref);
      assert.match(error, hint, ref);
    }
    // Not a registry but an image ID, which the node's containerd resolves to whatever image it has
    // cached under it, another account's included, without pulling.
    const id = `sha256:${'5e'.repeat(32)}`;
    const refused = await json<{ error: string }>(await api.request('POST', '/api/apps/victim/deploy', { body: { image: id } }), 400);
    assert.equal(
      refused.error,
      `image ${id}: is not an image reference (a digest alone names an image ID; name its repository, like repo@sha256:<hex>)`,
    );
    // The issue's own reference, word for word.
    const { error } = await json<{ error: string }>(
      await api.request('POST', '/api/apps/victim/deploy', { body: { image: '127.0.0.1:8082/rt/x:latest' } }),
      400,
    );
    assert.equal(
      error,
      "image 127.0.0.1:8082/rt/x:latest: registry 127.0.0.1:8082 is a loopback address; images come from public registries or the platform's own (SVC_IMAGE_REGISTRIES)",
    );
    assert.deepEqual(await deploysOf('victim'), [], 'no deploy recorded');
    const app = await api.deps.apps.find(api.account.namespace, 'victim');
    assert.equal(app?.spec.image, undefined, 'the App unchanged');
    assert.equal(app?.spec.kind, undefined);
    assert.deepEqual(await podsOf('victim'), []);
  });

  it('refuses one hostile service in a compose file, the others fine, and writes nothing', async () => {
    const compose = [
      'services:',
      '  web:',
      `    image: ${images.busybox}`,
      '    ports: ["8080"]',
      '  cache:',
      '    image: redis:7',
      '  spy:',
      '    image: 169.254.169.254/latest:v1',
      '',
    ].join('\n');
    assert.match('169.254.169.254/latest:v1', oldCheck);
    const { error } = await json<{ error: string }>(await api.request('POST', '/api/apps/victim/deploy', { body: { compose } }), 400);
    assert.match(error, /^image 169\.254\.169\.254\/latest:v1: registry 169\.254\.169\.254 is a link-local address/);
    assert.deepEqual(await deploysOf('victim'), []);
    assert.equal((await api.deps.apps.find(api.account.namespace, 'victim'))?.spec.services, undefined);
  });

  it('refuses it when an app is created with it, and in a preview, leaving neither app behind', async () => {
    const made = await json<{ error: string }>(
      await api.request('POST', '/api/apps', { body: { name: 'spy', image: '127.0.0.1:8082/rt/x:latest' } }),
      400,
    );
    assert.match(made.error, /registry 127\.0\.0\.1:8082 is a loopback address/);
    await json(await api.request('GET', '/api/apps/spy'), 404);
    const preview = await json<{ error: string }>(
      await api.request('POST', '/api/apps/victim/previews', { body: { ref: 'pr-1', image: '10.0.0.1:5000/x' } }),
      400,
    );
    assert.match(preview.error, /registry 10\.0\.0\.1:5000 is a private address/);
    await json(await api.request('GET', '/api/apps/victim--pr-1'), 404);
  });

  it("still deploys from the platform's registry and from public ones", async () => {
    const ok = await json<{ status: string }>(
      await api.request('POST', '/api/apps/victim/deploy', { body: { image: images.busybox, command: ['sleep', '600'] } }),
      202,
    );
    assert.equal(ok.status, 'deploying');
    // Checked before anything is made, so a public name needs no pull to pass: the App is left to fail pulling.
    await json(await api.request('POST', '/api/apps', { body: { name: 'hub', image: 'nginx:1.27', machines: 0 } }), 201);
  });

  it('has the App controller refuse an App applied with kubectl: no machine, and its status says why', async () => {
    const ns = api.account.namespace;
    const apply = (name: string, spec: Record<string, unknown>) =>
      custom.createNamespacedCustomObject({
        group,
        version,
        namespace: ns,
        plural: 'apps',
        body: { apiVersion, kind: 'App', metadata: { name }, spec },
      });
    await apply('gitops-spy', { kind: 'container', image: '127.0.0.1:8082/rt/x:latest', port: 8080 });
    await apply('gitops-svc', {
      kind: 'container',
      image: images.busybox,
      command: ['sleep', '600'],
      port: 8080,
      service: 'web',
      services: [{ name: 'spy', image: '169.254.169.254/latest:v1' }],
    });
    for (const [name, rule] of [
      ['gitops-spy', /^image 127\.0\.0\.1:8082\/rt\/x:latest: registry 127\.0\.0\.1:8082 is a loopback address/],
      ['gitops-svc', /^image 169\.254\.169\.254\/latest:v1: registry 169\.254\.169\.254 is a link-local address/],
    ] as const) {
      const app = await eventually(
        `${name} refused by the controller`,
        async () => {
          const a = (await custom.getNamespacedCustomObject({ group, version, namespace: ns, plural: 'apps', name })) as App;
          return a.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'ImageRefused' ? a : undefined;
        },
        { timeoutMs: 20_000 },
      );
      const ready = app.status!.conditions!.find((c) => c.type === 'Ready')!;
      assert.equal(ready.status, 'False');
      assert.match(ready.message, rule);
      assert.match(ready.message, hint);
      assert.equal(app.status?.rollout?.state, 'Failed');
      assert.match(app.status?.rollout?.reason ?? '', rule);
      assert.equal(app.status?.ready, '0/0');
      assert.deepEqual(await podsOf(name), [], `${name}: no machine was made`);
    }
  });
});
