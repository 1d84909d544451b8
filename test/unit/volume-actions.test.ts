// The volume actions (api/volumes/actions.ts) with in-memory fakes: listing gives the volumes with
// what holds them and the account's storage; deleting refuses a volume that is not there or is
// attached (with the messages the handler had), and a retained database's volume is recorded as
// volume.deleted with its storage sample at 0. And a volume's presentation, key for key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Actor } from '../../api/deploys/actions.js';
import { presentVolume } from '../../api/presenters/volumes.js';
import type { AppRecord } from '../../api/repositories/app-record.js';
import type { DatabaseRecord } from '../../api/repositories/databases.js';
import type { MachineVolumeRecord, VolumeRecord } from '../../api/repositories/volumes.js';
import type { StorageUse } from '../../api/storage/account-storage.js';
import { VolumeActions, type VolumeActionDeps } from '../../api/volumes/actions.js';
import { refusalOf } from '../support/answers.js';

const ns = 'acct-1';
const actor: Actor = { accountId: 'acc_1', namespace: ns, createdBy: 'token:t1' };
const createdAt = new Date('2026-02-01T00:00:00Z');

const machineVolume = (ref: string, o: Partial<MachineVolumeRecord> = {}): MachineVolumeRecord => ({
  kind: 'machine',
  ref,
  sizeBytes: 1024,
  usedBytes: undefined,
  attached: false,
  node: 'node-a',
  createdAt,
  app: 'web',
  service: undefined,
  machine: 0,
  volume: 'data',
  path: undefined,
  mountedBy: undefined,
  ...o,
});

const databaseVolume = (ref: string, database: string, attached: boolean): VolumeRecord => ({
  kind: 'database',
  ref,
  database,
  sizeBytes: 2048,
  usedBytes: 512,
  attached,
  node: undefined,
  createdAt,
});

const use: StorageUse = { databaseBytes: 2048, volumeBytes: 1024, artifactBytes: 10, usedBytes: 3082, limitBytes: 10_000 };

function setup(volumes: VolumeRecord[]) {
  const deleted: string[] = [];
  const described: Array<{ apps: string[]; databases: string[] }> = [];
  const events: Array<{ type: string; subject: string; data: Record<string, unknown> | undefined }> = [];
  const samples: Array<{ subject: string; bytes: number }> = [];
  const apps = [{ name: 'web' }] as AppRecord[];
  const databases = [{ name: 'main' }] as DatabaseRecord[];
  const fakeVolumes: VolumeActionDeps['volumes'] = {
    describe: (namespace, a, d) => {
      assert.equal(namespace, ns);
      described.push({ apps: a.map((x) => x.name), databases: d.map((x) => x.name) });
      return volumes;
    },
    // As measured by the nodes: what the kubelet says replaces the provisioner's figure.
    list: async (namespace, a, d) => fakeVolumes.describe(namespace, a, d).map((v) => ({ ...v, usedBytes: 99 })),
    delete: async (_namespace, v) => void deleted.push(v.ref),
  };
  const actions = new VolumeActions({
    volumes: fakeVolumes,
    apps: { list: () => apps },
    databases: { records: () => databases },
    storage: { use: async () => use },
    usage: { storage: async (_accountId, subject, bytes) => void samples.push({ subject, bytes }) },
    events: { record: async (_accountId, type, subject, data) => void events.push({ type, subject, data }) },
  });
  return { actions, deleted, described, events, samples };
}

describe('VolumeActions.list', () => {
  it("lists the account's volumes against its apps and databases, as measured, with its storage", async () => {
    const t = setup([machineVolume('web-data-0'), databaseVolume('main-db-data', 'main', true)]);
    const { volumes, storage } = await t.actions.list(actor);
    assert.deepEqual(
      volumes.map((v) => [v.ref, v.usedBytes]),
      [
        ['web-data-0', 99],
        ['main-db-data', 99],
      ],
    );
    assert.deepEqual(t.described, [{ apps: ['web'], databases: ['main'] }]);
    assert.equal(storage, use);
  });
});

describe('VolumeActions.delete', () => {
  it('answers a volume that is not there as not found', async () => {
    const t = setup([machineVolume('web-data-0')]);
    const err = await refusalOf(() => t.actions.delete(actor, 'nope'));
    assert.deepEqual([err.kind, err.message], ['not_found', 'volume nope not found']);
    assert.deepEqual(t.deleted, []);
  });

  it("refuses a database's volume while its database exists", async () => {
    const t = setup([databaseVolume('main-db-data', 'main', true)]);
    const err = await refusalOf(() => t.actions.delete(actor, 'main-db-data'));
    assert.deepEqual(
      [err.kind, err.message],
      ['conflict', "volume main-db-data holds database main's data: it goes with the database (DELETE /databases/main)"],
    );
    assert.deepEqual([t.deleted, t.events, t.samples], [[], [], []]);
  });

  it('refuses an attached machine volume, saying what holds it', async () => {
    const t = setup([
      machineVolume('web-data-1', { attached: true, machine: 1, path: '/data', mountedBy: 'web-1' }),
      machineVolume('web-logs-0', { attached: true, volume: 'logs' }),
      machineVolume('odd', { attached: true, app: undefined, machine: undefined }),
    ]);
    const mounted = await refusalOf(() => t.actions.delete(actor, 'web-data-1'));
    assert.deepEqual(
      [mounted.kind, mounted.message],
      [
        'conflict',
        "volume web-data-1 is attached to machine 1 of app web (mounted by web-1 at /data): remove data from the app's volumes, or scale the app below 2 machines, first",
      ],
    );
    const declared = await refusalOf(() => t.actions.delete(actor, 'web-logs-0'));
    assert.equal(
      declared.message,
      "volume web-logs-0 is attached to machine 0 of app web (declared): remove logs from the app's volumes, or scale the app below 1 machines, first",
    );
    // Unlabelled, as the API shows it: null.
    const odd = await refusalOf(() => t.actions.delete(actor, 'odd'));
    assert.match(odd.message, /^volume odd is attached to machine null of app null \(declared\)/);
    assert.deepEqual(t.deleted, []);
  });

  it('deletes a detached machine volume, leaving its storage and events to the volume meter', async () => {
    const t = setup([machineVolume('web-data-3', { machine: 3 })]);
    await t.actions.delete(actor, 'web-data-3');
    assert.deepEqual([t.deleted, t.events, t.samples], [['web-data-3'], [], []]);
  });

  it("deletes a retained database's volume: its storage sample goes to 0 and volume.deleted is recorded", async () => {
    const t = setup([databaseVolume('gone-db-data', 'gone', false)]);
    await t.actions.delete(actor, 'gone-db-data');
    assert.deepEqual(t.deleted, ['gone-db-data']);
    assert.deepEqual(t.samples, [{ subject: 'database/gone', bytes: 0 }]);
    assert.deepEqual(t.events, [
      { type: 'volume.deleted', subject: 'gone-db-data', data: { volume: 'gone-db-data', database: 'gone', size_bytes: 2048 } },
    ]);
  });
});

describe('presentVolume', () => {
  it('answers the fields, nulls and key order GET /volumes always had', () => {
    const machine = presentVolume(machineVolume('web-data-0', { attached: true, path: '/data', mountedBy: 'web-0', usedBytes: 7 }));
    assert.deepEqual(Object.keys(machine), [
      'ref',
      'size_bytes',
      'used_bytes',
      'node',
      'created_at',
      'kind',
      'app',
      'service',
      'machine',
      'volume',
      'database',
      'path',
      'attached',
      'mounted_by',
    ]);
    assert.deepEqual(machine, {
      ref: 'web-data-0',
      size_bytes: 1024,
      used_bytes: 7,
      node: 'node-a',
      created_at: '2026-02-01T00:00:00.000Z',
      kind: 'machine',
      app: 'web',
      service: null,
      machine: 0,
      volume: 'data',
      database: null,
      path: '/data',
      attached: true,
      mounted_by: 'web-0',
    });
    assert.deepEqual(presentVolume(databaseVolume('main-db-data', 'main', true)), {
      ref: 'main-db-data',
      size_bytes: 2048,
      used_bytes: 512,
      node: null,
      created_at: '2026-02-01T00:00:00.000Z',
      kind: 'database',
      app: null,
      service: null,
      machine: null,
      volume: null,
      database: 'main',
      path: null,
      attached: true,
      mounted_by: null,
    });
  });
});
