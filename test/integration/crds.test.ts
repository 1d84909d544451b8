// Each custom resource kind against the real apiserver: valid objects are accepted (with schema
// defaults applied), invalid ones are refused by schema validation with a message naming the
// field, and kubectl shows the printer columns and the svc-all category.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, kinds, version, type Kind } from '../../lib/resources/index.js';
import { kubeConfig, kubectl, messageOf, statusOf, testNamespace } from '../support/kube.js';
import { eventually } from '../support/wait.js';
import { images } from '../support/images.js';

const digest = `sha256:${'a'.repeat(64)}`;

const valid: Record<Kind, Record<string, unknown>> = {
  App: { kind: 'static', source: { digest } },
  Build: { app: 'shop', source: { git: { url: 'https://git.example.test/shop.git', ref: 'main' } } },
  Sandbox: { runtime: 'python' },
  Database: {},
  Domain: { domain: 'shop.example.com', app: 'web' },
};

// [kind, spec (or a whole object for metadata cases), the field the message must name]
const invalid: Array<[Kind, string, Record<string, unknown>, RegExp]> = [
  ['App', 'unknown kind', { kind: 'wasm', source: { digest } }, /spec\.kind: Unsupported value: "wasm"/],
  ['App', 'bad digest', { kind: 'static', source: { digest: 'md5:abc' } }, /spec\.source\.digest/],
  ['App', 'container without image', { kind: 'container' }, /spec\.image is required when spec\.kind is container/],
  ['App', 'port out of range', { kind: 'container', image: 'nginx', port: 70000 }, /spec\.port: Invalid value: 70000/],
  ['App', 'too many machines', { kind: 'container', image: 'nginx', machines: 21 }, /spec\.machines/],
  ['App', 'bad env name', { kind: 'container', image: 'nginx', env: [{ name: '1BAD', value: 'x' }] }, /spec\.env\[0\]\.name/],
  ['App', 'bad domain', { kind: 'container', image: 'nginx', domains: ['not a domain'] }, /spec\.domains\[0\]/],
  ['Domain', 'a name that is not a domain', { domain: 'not a domain', app: 'web' }, /spec\.domain/],
  ['Domain', 'a wildcard below the first label', { domain: 'shop.*.example.com', app: 'web' }, /spec\.domain/],
  [
    'App',
    'auth rule admitting nobody',
    { kind: 'container', image: 'nginx', auth: { rules: [{ mode: 'auth', paths: ['/**'], admit: {} }] } },
    /spec\.auth\.rules\[0\]\.admit: Invalid value: a rule must admit at least one identity/,
  ],
  [
    'App',
    'services without the public one named',
    { kind: 'container', image: 'nginx', services: [{ name: 'worker', image: 'w' }] },
    /spec\.service names the service the top-level fields describe/,
  ],
  [
    'App',
    'a private service named like the public one',
    { kind: 'container', image: 'nginx', service: 'web', services: [{ name: 'web', image: 'w' }] },
    /a service in spec\.services has the name of spec\.service/,
  ],
  [
    'App',
    'a volume mounted by two services',
    {
      kind: 'container',
      image: 'nginx',
      service: 'web',
      volumes: [{ name: 'data', path: '/d' }],
      services: [{ name: 'worker', image: 'w', volumes: [{ name: 'data', path: '/e' }] }],
    },
    /two services mount the same volume/,
  ],
  [
    'App',
    'a bad restart policy',
    { kind: 'container', image: 'nginx', service: 'web', services: [{ name: 'w', image: 'w', restart: 'sometimes' }] },
    /spec\.services\[0\]\.restart: Unsupported value/,
  ],
  [
    'App',
    'a service name that is no host name',
    { kind: 'container', image: 'nginx', service: 'web', services: [{ name: 'Worker_1', image: 'w' }] },
    /spec\.services\[0\]\.name/,
  ],
  [
    'App',
    'a data binding with a verb the platform does not serve',
    {
      kind: 'html',
      source: { digest },
      data: {
        bindings: [
          {
            id: 'AAAAAAAAAAAAAAAA',
            verb: 'drop',
            collection: 'notes',
            audience: ['public'],
            file: 'index.html',
            line: 1,
            source: 'drop notes',
          },
        ],
        collections: {},
      },
    },
    /spec\.data\.bindings\[0\]\.verb: Unsupported value: "drop"/,
  ],
  [
    'App',
    'a data field longer than a field may be',
    { kind: 'html', source: { digest }, data: { bindings: [], collections: { notes: { text: { kind: 'text', maxLength: 20000 } } } } },
    /spec\.data\.collections.*maxLength: Invalid value: 20000/,
  ],
  ['Build', 'missing app', { source: { artifact: { digest } } }, /spec\.app: Required value/],
  [
    'Build',
    'two sources',
    { app: 'shop', source: { artifact: { digest }, git: { url: 'https://x.test/r.git' } } },
    /spec\.source: Invalid value: exactly one of spec\.source\.artifact and spec\.source\.git/,
  ],
  ['Build', 'a timeout over two hours', { app: 'shop', source: { artifact: { digest } }, timeoutSeconds: 9000 }, /spec\.timeoutSeconds/],
  [
    'Build',
    'a git path leaving the repository',
    { app: 'shop', source: { git: { url: 'https://x.test/r.git', path: '../etc' } } },
    /spec\.source\.git\.path/,
  ],
  ['Sandbox', 'missing runtime', {}, /spec\.runtime: Required value/],
  ['Sandbox', 'timeout too short', { runtime: 'python', idleTimeoutSeconds: 1 }, /spec\.idleTimeoutSeconds/],
  ['Sandbox', 'lifetime too long', { runtime: 'python', maxLifetimeSeconds: 86401 }, /spec\.maxLifetimeSeconds/],
  ['Sandbox', 'a malformed memory limit', { runtime: 'python', resources: { memory: 'lots' } }, /spec\.resources\.memory/],
  ['Database', 'unknown engine', { engine: 'mysql' }, /spec\.engine: Unsupported value: "mysql"/],
  ['Database', 'tiny storage', { storageBytes: 10 }, /spec\.storageBytes/],
];

describe('custom resources (real apiserver)', () => {
  let ns: Awaited<ReturnType<typeof testNamespace>>;
  let custom: k8s.CustomObjectsApi;

  before(async () => {
    const kc = kubeConfig();
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    ns = await testNamespace(kc.makeApiClient(k8s.CoreV1Api), 'crds');
  });
  after(async () => {
    await ns?.dispose();
  });

  function create(kind: Kind, name: string, spec: Record<string, unknown>) {
    return custom.createNamespacedCustomObject({
      group,
      version,
      namespace: ns.name,
      plural: kinds[kind].plural,
      body: { apiVersion, kind, metadata: { name }, spec },
    }) as Promise<{ spec: Record<string, unknown> }>;
  }

  for (const kind of Object.keys(kinds) as Kind[]) {
    it(`accepts a valid ${kind} and applies schema defaults`, async () => {
      const created = await create(kind, `valid-${kind.toLowerCase()}`, valid[kind]);
      const defaults: Record<Kind, Record<string, unknown>> = {
        App: { port: 8080, machines: 1 },
        Build: { deploy: false, timeoutSeconds: 2700 },
        Sandbox: { network: false, idleTimeoutSeconds: 300, maxLifetimeSeconds: 3600 },
        Database: { engine: 'postgres', deletionPolicy: 'Drop' },
        Domain: {},
      };
      for (const [field, value] of Object.entries(defaults[kind])) {
        assert.equal(created.spec[field], value, `${kind} spec.${field} defaults to ${String(value)}`);
      }
    });
  }

  for (const [kind, title, spec, message] of invalid) {
    it(`refuses a ${kind} with ${title}, naming the field`, async () => {
      const name = `bad-${kind.toLowerCase()}-${title.replace(/[^a-z]+/g, '-')}`.slice(0, 60).replace(/-$/, '');
      await assert.rejects(create(kind, name, spec), (err: unknown) => {
        assert.equal(statusOf(err), 422, messageOf(err));
        assert.match(messageOf(err), message);
        return true;
      });
    });
  }

  it('refuses an App whose name is not a DNS label', async () => {
    await assert.rejects(create('App', 'x'.repeat(64), valid.App), (err: unknown) => {
      assert.equal(statusOf(err), 422);
      assert.match(messageOf(err), /metadata\.name/);
      return true;
    });
  });

  it('keeps a Build immutable after creation', async () => {
    await create('Build', 'immutable', { app: 'shop', source: { artifact: { digest } } });
    await assert.rejects(
      custom.patchNamespacedCustomObject(
        {
          group,
          version,
          namespace: ns.name,
          plural: 'builds',
          name: 'immutable',
          body: [{ op: 'replace', path: '/spec/app', value: 'other' }],
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
      ),
      (err: unknown) => {
        assert.equal(statusOf(err), 422);
        assert.match(messageOf(err), /a Build is immutable once created/);
        return true;
      },
    );
  });

  // On a Database: no controller writes its status yet, so the test's own writes are all there is.
  it('writes status only through the status subresource, with Kubernetes-shaped conditions', async () => {
    await create('Database', 'with-status', valid.Database);
    const status = {
      observedGeneration: 1,
      phase: 'Ready',
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'database ready', lastTransitionTime: new Date().toISOString() },
      ],
    };
    const target = { group, version, namespace: ns.name, plural: 'databases', name: 'with-status' };
    const patch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
    // Through the main resource, status is dropped. Read from the patches' own answers: the
    // Database controller writes this object's status too, at any moment.
    const plain = (await custom.patchNamespacedCustomObject({ ...target, body: { status } }, patch)) as {
      status?: { phase?: string; conditions?: unknown[] };
    };
    assert.notEqual(plain.status?.phase, 'Ready');
    assert.ok(!JSON.stringify(plain.status?.conditions ?? []).includes('database ready'));
    const withStatus = (await custom.patchNamespacedCustomObjectStatus({ ...target, body: { status } }, patch)) as {
      status: typeof status;
    };
    assert.equal(withStatus.status.phase, 'Ready');
    // A condition with an invalid status value is refused.
    await assert.rejects(
      custom.patchNamespacedCustomObjectStatus(
        { ...target, body: { status: { conditions: [{ ...status.conditions[0], status: 'Maybe' }] } } },
        patch,
      ),
      (err: unknown) => {
        assert.equal(statusOf(err), 422);
        assert.match(messageOf(err), /status\.conditions\[0\]\.status: Unsupported value: "Maybe"/);
        return true;
      },
    );
  });

  it('shows an App’s kind, URL, ready machines and deploy as kubectl columns', async () => {
    await create('App', 'columns', {
      kind: 'container',
      image: images.python,
      command: ['python3', '-m', 'http.server', '$(PORT)', '--bind', '0.0.0.0'],
      port: 8000,
      deployId: 'dep-1',
    });
    // The App controller fills the status; the columns must show exactly it.
    const app = await eventually(
      'the App status',
      async () => {
        const a = (await custom.getNamespacedCustomObject({ group, version, namespace: ns.name, plural: 'apps', name: 'columns' })) as {
          status?: { url?: string; ready?: string; currentDeploy?: string };
        };
        return a.status?.currentDeploy ? a : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const table = await kubectl('get', 'apps.svc.dev', '-n', ns.name, 'columns');
    const [header, row] = table.trim().split('\n');
    assert.match(header ?? '', /^NAME\s+KIND\s+URL\s+READY\s+DEPLOY\s+ROLLOUT\s+AGE$/);
    const cells = (row ?? '').split(/\s+/);
    assert.deepEqual(cells.slice(0, 6), ['columns', 'container', app.status!.url, app.status!.ready, 'dep-1', 'Live']);
  });

  it('lists every kind together through the svc-all category and short names', async () => {
    const all = await kubectl('get', 'svc-all', '-n', ns.name, '-o', 'name');
    for (const expected of [
      'app.svc.dev/valid-app',
      'build.svc.dev/valid-build',
      'sandbox.svc.dev/valid-sandbox',
      'database.svc.dev/valid-database',
      'domain.svc.dev/valid-domain',
    ]) {
      assert.ok(all.includes(expected), `kubectl get svc-all lists ${expected}:\n${all}`);
    }
    for (const short of ['svcapp', 'svcbuild', 'sbx', 'svcdb', 'svcdom']) {
      assert.ok((await kubectl('get', short, '-n', ns.name, '-o', 'name')).trim().length > 0, `short name ${short}`);
    }
  });
});
