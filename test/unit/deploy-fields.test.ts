// The App spec fields a deploy owns are listed once (lib/contract.ts deployOwnedFields): the
// deploy's patch, the spec a fork or preview copies, and the controller's snapshot of the live
// revision are all made from that list, and DeploySpec has exactly its keys.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deployOwnedFields, type DeployOwnedField } from '../../lib/contract.js';
import type { DeploySpec } from '../../lib/deploys.js';
import type { App } from '../../lib/resources/index.js';
import { deploySpecOf, specPatch } from '../../api/deploys/deployer.js';
import type { AppRecord } from '../../api/repositories/app-record.js';
import { snapshotOf } from '../../controllers/app/rollout.js';

/** A deploy that sets every field it owns. */
const full: DeploySpec = {
  kind: 'container',
  image: 'registry.example/web:1',
  command: ['serve'],
  args: ['--fast'],
  port: 9090,
  source: { digest: `sha256:${'a'.repeat(64)}`, url: 'https://git.example/web.git' },
  env: [{ name: 'MODE', value: 'prod' }],
  auth: { rules: [{ source: 'compose', path: '/', allow: ['owner'] }] } as unknown as NonNullable<DeploySpec['auth']>,
  data: {
    bindings: [
      {
        id: 'AAAAAAAAAAAAAAAA',
        verb: 'count',
        collection: 'notes',
        audience: ['public'],
        file: 'index.html',
        line: 1,
        source: 'count notes',
      },
    ],
    collections: { notes: { text: { kind: 'text', required: false, minLength: 0, maxLength: 1000 } } },
  },
  service: 'web',
  ports: [9090, 9091],
  healthcheck: { test: ['CMD', 'true'] } as unknown as NonNullable<DeploySpec['healthcheck']>,
  dependsOn: [{ service: 'db' }] as unknown as NonNullable<DeploySpec['dependsOn']>,
  aliases: ['www'],
  workingDir: '/srv',
  services: [{ name: 'db', image: 'registry.example/db:1' }],
};

const record = (spec: Partial<App['spec']>, live?: Partial<App['spec']>): AppRecord =>
  ({ spec, status: live ? { live: { spec: live } } : {} }) as unknown as AppRecord;

describe('deploy-owned fields', () => {
  it('DeploySpec has exactly the listed fields (this file does not compile otherwise)', () => {
    type Unlisted = Exclude<keyof DeploySpec, DeployOwnedField>;
    type NotInSpec = Exclude<DeployOwnedField, keyof DeploySpec>;
    const exact: [Unlisted, NotInSpec] extends [never, never] ? 'exact' : 'differs' = 'exact';
    assert.equal(exact, 'exact');
    assert.deepEqual(Object.keys(full).sort(), [...deployOwnedFields].sort(), 'the test deploy sets every field');
  });

  it("a deploy's patch names every owned field, and removes (null) those the deploy does not set", () => {
    const patch = specPatch({ kind: 'static', source: { digest: full.source!.digest } });
    assert.deepEqual(Object.keys(patch).sort(), [...deployOwnedFields].sort());
    assert.deepEqual(patch.source, { digest: full.source!.digest, url: null }, 'an old url cannot survive the merge');
    for (const f of deployOwnedFields.filter((f) => f !== 'kind' && f !== 'source')) assert.equal(patch[f], null, f);
  });

  it('a fork or preview copies every owned field of what the App serves, and nothing of the App', () => {
    assert.deepEqual(deploySpecOf(record({ ...full, machines: 3, envSecretName: 'web-env' })), full);
    // While a newer spec rolls out, what serves is the live snapshot.
    assert.deepEqual(deploySpecOf(record({ kind: 'static' }, full as Partial<App['spec']>)), full);
    // Unset defaults are not copied: port 8080, an empty policy, empty lists.
    assert.deepEqual(deploySpecOf(record({ kind: 'container', image: 'x', port: 8080, auth: { rules: [] }, aliases: [] })), {
      kind: 'container',
      image: 'x',
    });
  });

  it("the controller's snapshot of a live revision keeps the owned fields, the env Secret and the deploy id, not the App's settings", () => {
    const app = {
      metadata: { name: 'web' },
      spec: { ...full, envSecretName: 'web-env', deployId: 'dep-1', machines: 3 },
    } as unknown as App;
    assert.deepEqual(Object.keys(snapshotOf(app)).sort(), [...deployOwnedFields, 'envSecretName', 'deployId'].sort());
  });
});
