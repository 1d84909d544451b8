// What the storage limit counts of an App's volumes before the controller makes them
// (api/storage/account-storage.ts, issue 30 finding 4): one claim per machine of each service and
// volume of it, named as the controller names them, and the spec a deploy would leave.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { specAfter } from '../../api/deploys/deployer.js';
import { AccountStorage, declaredClaims, type StorageDeps } from '../../api/storage/account-storage.js';
import type { App } from '../../lib/resources/index.js';

const MiB = 1024 ** 2;

describe('storage count of declared volumes', () => {
  it("declares a claim per machine and volume of every service, by the controller's names and the declared sizes", () => {
    const claims = declaredClaims('shop', {
      machines: 2,
      volumes: [
        { name: 'data', path: '/data', size: '16Mi' },
        { name: 'cache', path: '/cache' },
      ],
      services: [{ name: 'db', image: 'postgres', machines: 1, volumes: [{ name: 'pg', path: '/pg', size: '2Gi' }] }],
    });
    assert.deepEqual(Object.fromEntries(claims), {
      'shop-data-m0': 16 * MiB,
      'shop-data-m1': 16 * MiB,
      'shop-cache-m0': 1024 * MiB,
      'shop-cache-m1': 1024 * MiB,
      'shop-pg-m0': 2048 * MiB,
    });
    assert.equal(declaredClaims('idle', { machines: 0, volumes: [{ name: 'data', path: '/data' }] }).size, 0);
  });

  it("counts what a deploy leaves: its machines, its volumes, its services replacing the app's", () => {
    const app = {
      machines: 1,
      volumes: [{ name: 'data', path: '/data', size: '16Mi' }],
      services: [{ name: 'old', image: 'x', volumes: [{ name: 'o', path: '/o' }] }],
    };
    const after = specAfter(app, { spec: { kind: 'container', image: 'web' }, machines: 3 });
    assert.deepEqual([...declaredClaims('shop', after).keys()], ['shop-data-m0', 'shop-data-m1', 'shop-data-m2']);
    const emptied = specAfter(app, { spec: { kind: 'container', image: 'web' }, volumes: [] });
    assert.equal(declaredClaims('shop', emptied).size, 0);
  });

  it('counts a declared claim not made yet by what it grows, a made one by nothing, a new one whole', () => {
    const declared: App['spec'] = { machines: 1, volumes: [{ name: 'data', path: '/data', size: '1Mi' }] };
    const made = new Map<string, number>();
    const deps = { apps: { list: () => [{ name: 'shop', spec: declared }] }, claims: () => made } as unknown as StorageDeps;
    const storage = new AccountStorage(deps);
    const grown: App['spec'] = { machines: 1, volumes: [{ name: 'data', path: '/data', size: '64Mi' }] };
    // Declared at 1 MiB, not made yet: declaring it again at 64 MiB adds 63 MiB (it was free before).
    assert.equal(storage.newVolumeBytes('ns', 'shop', grown), 63 * MiB);
    assert.equal(storage.newVolumeBytes('ns', 'shop', declared), 0);
    assert.equal(storage.newVolumeBytes('ns', 'shop', { ...grown, machines: 2 }), 63 * MiB + 64 * MiB);
    // Made at 1 MiB: the controller never resizes a made claim, so the bigger spec adds nothing.
    made.set('shop-data-m0', MiB);
    assert.equal(storage.newVolumeBytes('ns', 'shop', grown), 0);
  });
});
