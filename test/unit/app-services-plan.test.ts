// The App plan for an App with several services (a compose file's): each service's machines,
// the public one's Service, the names the app's machines reach the others by, start order, and
// redeploys that touch only what changed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { servicesOf } from '../../lib/app-services.js';
import {
  appService,
  machinePod,
  plan,
  revisionOf,
  serviceObjectName,
  serviceServices,
  type AppSettings,
} from '../../controllers/app/desired.js';
import { labels } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';

const base: AppSettings = {
  site: { appsDomain: 'apps.localhost', appsUrlSuffix: ':8081', secure: false },
  runtimeImage: 'svc/runtime:latest',
  artifactBaseUrl: 'http://10.244.0.1:8080/artifacts',
  rolloutDeadlineMs: 60_000,
  assertionIssuer: 'http://apps.localhost:8081/_svc/auth',
  jwksUrl: 'http://10.244.0.1:8080/_svc/auth/jwks.json',
};
const addresses = new Map([
  ['web', '10.96.0.10'],
  ['cache', '10.96.0.11'],
]);
const settings: AppSettings = { ...base, serviceAddresses: addresses };
const now = new Date('2026-01-01T00:00:00Z');
const app = (spec: Partial<App['spec']> = {}): App => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: { name: 'shop', namespace: 'ns', uid: 'u1', generation: 3 },
  spec: {
    kind: 'container',
    image: 'web:1',
    port: 8000,
    machines: 2,
    service: 'web',
    deployId: 'd1',
    services: [
      { name: 'worker', image: 'worker:1', args: ['work'], dependsOn: [{ service: 'cache', condition: 'healthy' }] },
      {
        name: 'cache',
        image: 'cache:1',
        port: 6379,
        ports: [6379],
        healthcheck: { command: ['check'], intervalSeconds: 1, timeoutSeconds: 1, retries: 2, startPeriodSeconds: 0 },
        aliases: ['redis'],
        volumes: [{ name: 'data', path: '/data' }],
      },
      { name: 'migrate', image: 'web:1', args: ['migrate'], restart: 'no' },
    ],
    ...spec,
  },
});
const running = (pod: k8s.V1Pod, ready = true): k8s.V1Pod => ({
  ...pod,
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
const ended = (pod: k8s.V1Pod, exitCode: number): k8s.V1Pod => ({
  ...pod,
  status: {
    phase: exitCode === 0 ? 'Succeeded' : 'Failed',
    containerStatuses: [
      {
        name: 'app',
        ready: false,
        restartCount: 0,
        image: 'x',
        imageID: 'x',
        state: { terminated: { exitCode, reason: exitCode ? 'Error' : 'Completed' } },
      },
    ],
  },
});
const view = (a: App, name: string) => servicesOf(a.spec).find((v) => v.name === name)!;
const podsOf = (a: App, name: string, n: number, make = running) =>
  Array.from({ length: n }, (_, o) => make(machinePod(a, o, settings, now, view(a, name))));
const names = (pods: k8s.V1Pod[]) => pods.map((p) => p.metadata!.name!).sort();

describe('App plan with services', () => {
  it("waits for the services' addresses before making any machine (each machine is given them all)", () => {
    const p = plan(app(), [], base, now);
    assert.deepEqual(p.create, []);
    assert.match(p.ready.message, /waits for the address of web, cache/);
  });

  it("makes each service's machines with its own labels, names and settings; start order follows depends_on", () => {
    const a = app();
    const p = plan(a, [], settings, now);
    // The worker waits for the cache to be healthy; web (started), cache and migrate have nothing to wait for.
    const made = p.create.map((x) => [x.metadata!.name, x.metadata!.labels![labels.service], x.metadata!.labels![labels.public]]);
    assert.deepEqual(made, [
      [`shop-m0-${revisionOf(a, settings, 0, view(a, 'web'))}`, 'web', 'true'],
      [`shop-m1-${revisionOf(a, settings, 1, view(a, 'web'))}`, 'web', 'true'],
      [`shop-cache-m0-${revisionOf(a, settings, 0, view(a, 'cache'))}`, 'cache', undefined],
      [`shop-migrate-m0-${revisionOf(a, settings, 0, view(a, 'migrate'))}`, 'migrate', undefined],
    ]);
    assert.match(p.ready.message, /worker 0\/1 waits for cache \(healthy\)/);
    const cache = p.create.find((x) => x.metadata!.labels![labels.service] === 'cache')!;
    const c = cache.spec!.containers[0]!;
    assert.deepEqual(c.readinessProbe?.exec?.command, ['check']);
    assert.deepEqual(c.ports, [{ name: 'p6379', containerPort: 6379 }]);
    assert.equal(c.env?.find((e) => e.name === 'PORT')?.value, '6379');
    assert.deepEqual(cache.spec!.hostAliases, [
      { ip: '10.96.0.10', hostnames: ['web'] },
      { ip: '10.96.0.11', hostnames: ['cache', 'redis'] },
    ]);
    assert.deepEqual(
      p.claims.map((x) => [x.metadata!.name, x.metadata!.labels![labels.service]]),
      [['shop-data-m0', 'cache']],
    );
    const migrate = p.create.find((x) => x.metadata!.labels![labels.service] === 'migrate')!;
    assert.equal(migrate.spec!.restartPolicy, 'Never');
    assert.equal(migrate.spec!.containers[0]!.readinessProbe, undefined, 'no port and no healthcheck: ready once it runs');
    assert.equal(
      migrate.spec!.containers[0]!.env?.find((e) => e.name === 'PORT'),
      undefined,
    );

    const cacheUp = podsOf(a, 'cache', 1);
    const next = plan(a, [...podsOf(a, 'web', 2), ...cacheUp, ...podsOf(a, 'migrate', 1, (x) => ended(x, 0))], settings, now);
    assert.deepEqual(
      next.create.map((x) => x.metadata!.labels![labels.service]),
      ['worker'],
      'the cache is healthy: the worker starts',
    );
    assert.equal(next.status.services?.find((s) => s.name === 'migrate')?.machines?.[0]?.state, 'exited');
    assert.deepEqual(next.delete, [], 'a finished one-shot service is left ended');
  });

  it("the public Service selects only the public service's machines; the others are reached by name on their own ports", () => {
    assert.deepEqual(appService(app()).spec?.selector, { [labels.app]: 'shop', [labels.public]: 'true' });
    assert.deepEqual(
      serviceServices(app()).map((s) => [s.metadata!.name, s.spec!.selector, s.spec!.ports!.map((p) => [p.name, p.port])]),
      [
        ['shop-web', { [labels.app]: 'shop', [labels.public]: 'true' }, [['p8000', 8000]]],
        ['shop-cache', { [labels.app]: 'shop', [labels.service]: 'cache' }, [['p6379', 6379]]],
      ],
    );
    assert.deepEqual(serviceServices(app({ services: undefined, service: undefined })), [], 'a one-service app has only its own Service');
    assert.equal(serviceObjectName('a'.repeat(60), 'cache').length <= 63, true);
  });

  it('is live once every service is; status per service, ready n/m', () => {
    const a = app();
    const pods = [
      ...podsOf(a, 'web', 2),
      ...podsOf(a, 'cache', 1),
      ...podsOf(a, 'worker', 1),
      ...podsOf(a, 'migrate', 1, (x) => ended(x, 0)),
    ];
    const p = plan(a, pods, settings, now);
    assert.deepEqual([p.create, p.delete], [[], []]);
    assert.equal(p.status.ready, '5/5');
    assert.equal(p.ready.ok, true);
    assert.equal(p.status.rollout?.state, 'Live');
    assert.equal(p.status.currentDeploy, 'd1');
    assert.deepEqual(
      p.status.services?.map((s) => [s.name, s.public, s.ready, s.address]),
      [
        ['web', true, '2/2', '10.96.0.10'],
        ['worker', false, '1/1', undefined],
        ['cache', false, '1/1', '10.96.0.11'],
        ['migrate', false, '1/1', undefined],
      ],
    );
    assert.deepEqual(
      p.status.machines?.map((m) => m.ordinal),
      [0, 1],
      "status.machines stays the public service's",
    );
  });

  it("a redeploy changing only the worker replaces only the worker's machines", () => {
    const a = app();
    const pods = [
      ...podsOf(a, 'web', 2),
      ...podsOf(a, 'cache', 1),
      ...podsOf(a, 'worker', 1),
      ...podsOf(a, 'migrate', 1, (x) => ended(x, 0)),
    ];
    const changed = app({ deployId: 'd2', services: a.spec.services!.map((s) => (s.name === 'worker' ? { ...s, image: 'worker:2' } : s)) });
    const p = plan(changed, pods, settings, now);
    assert.deepEqual(
      p.create.map((x) => x.metadata!.labels![labels.service]),
      ['worker'],
    );
    assert.deepEqual(p.delete, [], 'the old worker goes once the new one is ready');
    const withNew = [...pods, running(p.create[0]!)];
    const after = plan(changed, withNew, settings, now);
    assert.deepEqual(names(after.delete), names(pods.filter((x) => x.metadata!.labels![labels.service] === 'worker')));
    assert.equal(after.status.currentDeploy, 'd2');
    assert.deepEqual(
      after.status.services?.map((s) => [s.name, s.deploy]),
      [
        ['web', 'd1'],
        ['worker', 'd2'],
        ['cache', 'd1'],
        ['migrate', 'd1'],
      ],
      'each service says which deploy its machines were made for',
    );
  });

  it('a service dropped from the spec loses its machines; a one-shot service that failed fails the rollout with its exit code', () => {
    const a = app();
    const pods = [
      ...podsOf(a, 'web', 2),
      ...podsOf(a, 'cache', 1),
      ...podsOf(a, 'worker', 1),
      ...podsOf(a, 'migrate', 1, (x) => ended(x, 3)),
    ];
    const p = plan(a, pods, settings, now);
    assert.equal(p.status.rollout?.state, 'Failed');
    assert.match(p.status.rollout?.reason ?? '', /migrate machine 0: machine ended with exit code 3/);
    const without = app({ services: a.spec.services!.filter((s) => s.name !== 'worker') });
    assert.deepEqual(
      names(plan(without, pods, settings, now).delete),
      names(pods.filter((x) => x.metadata!.labels![labels.service] === 'worker')),
    );
  });

  it('labels the public machines made before services had names, instead of replacing them', () => {
    const one = app({ services: undefined, service: undefined, deployId: undefined, machines: 1 });
    const old = running(machinePod(one, 0, base, now));
    delete old.metadata!.labels![labels.public];
    const p = plan(one, [old], base, now);
    assert.deepEqual(
      p.relabel.map((x) => x.metadata!.name),
      [old.metadata!.name],
    );
    assert.deepEqual([p.create, p.delete], [[], []]);
  });
});
