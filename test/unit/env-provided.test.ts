// What the env operations list as provided (api/presenters/env.ts) against what the App controller
// really gives a machine (controllers/app/machine-spec.ts): the same names, in the same order, and
// the same winner when the app sets one of them itself (docs/decisions/0030-provided-env.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machinePod } from '../../controllers/app/desired.js';
import { databaseEnvNames, presentEnv, providedEnv } from '../../api/presenters/env.js';
import type { App } from '../../lib/resources/index.js';

const settings = {
  site: { appsDomain: 'apps.localhost', appsUrlSuffix: ':8081', secure: false },
  runtimeImage: 'svc/runtime:latest',
  artifactBaseUrl: 'http://10.244.0.1:8080/artifacts',
  rolloutDeadlineMs: 60_000,
  assertionIssuer: 'http://apps.localhost:8081/_svc/auth',
  jwksUrl: 'http://10.244.0.1:8080/_svc/auth/jwks.json',
};
const app = (spec: Partial<App['spec']> = {}): App => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: { name: 'shop', namespace: 'ns', uid: 'u1', generation: 1 },
  spec: { kind: 'container', image: 'busybox', port: 8080, machines: 1, ...spec },
});

describe('provided env', () => {
  it('lists nothing without an attached database', () => {
    assert.deepEqual(providedEnv(undefined, { DATABASE_URL: 'mine' }), []);
    assert.deepEqual(presentEnv({ spec: {} }, { A: '1' }), { env: { A: '1' }, provided: [] });
  });

  it("lists an attached database's variables, masked, with their source, and which of the app's own they override", () => {
    const own = { DATABASE_URL: 'postgres://elsewhere/x', PGPORT: '6543', API_KEY: 'k' };
    const provided = providedEnv('orders', own);
    assert.deepEqual(
      provided.map((v) => [v.name, v.overrides]),
      [
        ['PGHOST', false],
        ['PGPORT', true],
        ['PGUSER', false],
        ['PGPASSWORD', false],
        ['PGDATABASE', false],
        ['DATABASE_URL', true],
      ],
    );
    for (const v of provided) {
      assert.deepEqual(v.source, { kind: 'database', name: 'orders' });
      assert.equal(v.masked, true);
      assert.ok(!('value' in v), `${v.name}: no value, not even a placeholder`);
    }
    // The app's own are shown as they always were, overridden or not.
    assert.deepEqual(presentEnv({ spec: { database: 'orders' } }, own).env, own);
  });

  it("names what a machine of an app with a database gets, in its order, and the database's win over the app's own", () => {
    const withDb = { ...settings, database: { name: 'orders', host: '10.96.0.7' } };
    const container = (a: App, s: Parameters<typeof machinePod>[2]) => machinePod(a, 0, s).spec!.containers[0]!;
    // What attaching adds to a machine's env: exactly these names, in this order.
    const plain = app({ database: 'orders' });
    const before = (container(plain, settings).env ?? []).map((e) => e.name);
    const after = (container(plain, withDb).env ?? []).map((e) => e.name);
    assert.deepEqual(
      after.filter((n) => !before.includes(n)),
      [...databaseEnvNames],
    );
    assert.equal(after.length, before.length + databaseEnvNames.length);
    // Until the controller sees the database's address, the machines get none of them.
    assert.deepEqual(
      (container(plain, { ...settings, database: { name: 'orders', host: undefined } }).env ?? []).map((e) => e.name),
      before,
    );

    // The app's env (the env operations') is the container's envFrom: any name in env wins over it.
    const a = app({ database: 'orders', envSecretName: 'shop-env-0123456789', env: [{ name: 'DATABASE_URL', value: 'from-compose' }] });
    const c = container(a, withDb);
    assert.deepEqual(c.envFrom, [{ secretRef: { name: 'shop-env-0123456789' } }]);
    // A service's own variable of the same name comes earlier in env: the last of a name wins.
    const env = c.env ?? [];
    const last = env.findLast((e) => e.name === 'DATABASE_URL')!;
    assert.match(last.value ?? '', /^postgres:\/\/\$\(PGUSER\)/);
    assert.ok(env.findIndex((e) => e.value === 'from-compose') < env.indexOf(last));
  });
});
