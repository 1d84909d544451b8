// The database actions (api/databases/actions.ts) with in-memory fakes: creating one counts the
// account's databases and storage under its lock and records database.created; a restore names a
// done backup; deleting, backing up, attaching and detaching refuse what the handlers refused, with
// the same messages, and record their events. And a Database's record and presentation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DatabaseActions, type DatabaseActionDeps } from '../../api/databases/actions.js';
import type { Actor } from '../../api/deploys/actions.js';
import { presentDatabase } from '../../api/presenters/databases.js';
import { appRecord, type AppRecord } from '../../api/repositories/app-record.js';
import type { AppRepository } from '../../api/repositories/apps.js';
import { databaseRecord, type DatabaseRecord, type DatabaseRepository } from '../../api/repositories/databases.js';
import type { Backup } from '../../lib/backups.js';
import { DomainError } from '../../lib/errors.js';
import type { App, Database } from '../../lib/resources/index.js';
import { FakeLock } from '../support/fake-lock.js';
import { refusalOf } from '../support/answers.js';

const ns = 'acct-1';
const actor: Actor = { accountId: 'acc_1', namespace: ns, createdBy: 'token:t1' };
const now = new Date('2026-03-01T12:00:00Z');

const resource = (name: string, o: { spec?: Database['spec']; status?: Database['status']; deleting?: boolean } = {}): Database => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Database',
  metadata: {
    name,
    namespace: ns,
    uid: `uid-${name}`,
    creationTimestamp: '2026-02-01T00:00:00Z' as unknown as Date,
    ...(o.deleting ? { deletionTimestamp: '2026-02-02T00:00:00Z' as unknown as Date } : {}),
  },
  spec: o.spec ?? { engine: 'postgres' },
  ...(o.status ? { status: o.status } : {}),
});

type DatabasesDep = DatabaseActionDeps['databases'];

/** The account's Databases, in memory; create and delete as the repository's answer. */
class FakeDatabases implements DatabasesDep {
  readonly items = new Map<string, Database>();
  readonly created: Array<{ name: string; spec: Database['spec']; underLock: boolean }> = [];
  readonly deleted: string[] = [];
  readonly backupRequests: Array<{ name: string; token: string }> = [];
  constructor(private readonly lock: FakeLock) {}
  put(db: Database): void {
    this.items.set(db.metadata.name!, db);
  }
  records(namespace: string): DatabaseRecord[] {
    return [...this.items.values()]
      .filter((d) => d.metadata.namespace === namespace)
      .map(databaseRecord)
      .sort((a, b) => a.name.localeCompare(b.name));
  }
  record(namespace: string, name: string): DatabaseRecord | undefined {
    const db = this.items.get(name);
    return db && db.metadata.namespace === namespace ? databaseRecord(db) : undefined;
  }
  async create(...[, name, spec]: Parameters<DatabaseRepository['create']>): Promise<DatabaseRecord> {
    if (this.items.has(name)) throw new DomainError('conflict', `a database named "${name}" already exists`);
    this.created.push({ name, spec, underLock: this.lock.held });
    this.put(resource(name, { spec }));
    return this.record(ns, name)!;
  }
  async delete(...[, db]: Parameters<DatabaseRepository['delete']>): Promise<void> {
    this.deleted.push(db.name);
    this.items.delete(db.name);
  }
  async requestBackup(...[, name, token]: Parameters<DatabaseRepository['requestBackup']>): Promise<void> {
    this.backupRequests.push({ name, token });
  }
}

/** The account's Apps, in memory: updateSpec decides on the App as it is and merge-patches it (null removes). */
class FakeApps implements Pick<AppRepository, 'list' | 'updateSpec'> {
  readonly items = new Map<string, App>();
  put(name: string, spec: App['spec'] = {}): AppRecord {
    const app: App = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'App',
      metadata: { name, namespace: ns, uid: `uid-${name}`, generation: 1, resourceVersion: '1' },
      spec,
    };
    this.items.set(name, app);
    return appRecord(app);
  }
  list(namespace: string): AppRecord[] {
    return [...this.items.values()].filter((a) => a.metadata.namespace === namespace).map(appRecord);
  }
  async updateSpec(namespace: string, name: string, decide: (app: AppRecord) => Record<string, unknown> | undefined): Promise<AppRecord> {
    const app = this.items.get(name);
    if (!app || app.metadata.namespace !== namespace) throw new DomainError('not_found', `app ${name} not found`);
    const patch = decide(appRecord(app));
    if (!patch) return appRecord(app);
    const spec: Record<string, unknown> = { ...app.spec };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete spec[k];
      else spec[k] = v;
    }
    return this.put(name, spec);
  }
}

function setup(o: { limit?: number; freeBytes?: number; provider?: 'pods' | 'cloudnative-pg' } = {}) {
  const lock = new FakeLock();
  const databases = new FakeDatabases(lock);
  const apps = new FakeApps();
  const backups = new Map<string, Backup>();
  const events: Array<{ type: string; subject: string; data: Record<string, unknown> | undefined }> = [];
  const samples: Array<{ subject: string; bytes: number }> = [];
  const fits: Array<{ bytes: number; underLock: boolean }> = [];
  const freeBytes = o.freeBytes ?? 10 * 2 ** 30;
  const actions = new DatabaseActions({
    databases,
    apps,
    backups: {
      list: async (_accountId, database) => [...backups.values()].filter((b) => b.database === database),
      get: async (_accountId, id) => backups.get(id),
    },
    quota: {
      lock,
      limits: { databases: o.limit ?? 3 },
      storage: {
        assertFits: async (_accountId, _namespace, bytes, what) => {
          fits.push({ bytes, underLock: lock.held });
          if (bytes > freeBytes)
            throw new DomainError('quota_exceeded', `the account's storage is full: ${what}, ${freeBytes} bytes are free`);
        },
      },
    },
    usage: { storage: async (_accountId, subject, bytes) => void samples.push({ subject, bytes }) },
    events: { record: async (_accountId, type, subject, data) => void events.push({ type, subject, data }) },
    settings: {
      defaultBytes: 2 ** 30,
      provider: o.provider ?? 'pods',
      cnpg: { instances: 2 },
      artifactBaseUrl: 'http://api.svc:8081/artifacts',
    },
    clock: () => now,
  });
  return { actions, databases, apps, backups, events, samples, fits };
}

const backup = (id: string, o: Partial<Backup> = {}): Backup => ({
  id,
  database: 'old',
  status: 'done',
  digest: 'sha256-abc',
  bytes: 1234,
  error: null,
  createdAt: now,
  ...o,
});

describe('DatabaseActions.create', () => {
  it('creates the database under the account lock, records its storage sample and database.created', async () => {
    const t = setup();
    const db = await t.actions.create(actor, { name: 'main', storageBytes: 256 * 2 ** 20, deletionPolicy: 'retain' });
    assert.equal(db.name, 'main');
    assert.equal(db.storageBytes, 256 * 2 ** 20);
    assert.equal(db.deletionPolicy, 'Retain');
    assert.deepEqual(t.databases.created, [
      {
        name: 'main',
        spec: {
          engine: 'postgres',
          provider: 'pods',
          storageBytes: 256 * 2 ** 20,
          deletionPolicy: 'Retain',
          backupUrl: 'http://api.svc:8081/backups',
        },
        underLock: true,
      },
    ]);
    assert.deepEqual(t.fits, [{ bytes: 256 * 2 ** 20, underLock: true }]);
    assert.deepEqual(t.samples, [{ subject: 'database/main', bytes: 256 * 2 ** 20 }]);
    assert.deepEqual(t.events, [
      {
        type: 'database.created',
        subject: 'main',
        data: { database: 'main', storage_bytes: 256 * 2 ** 20, deletion_policy: 'retain' },
      },
    ]);
  });

  it('writes no size when none is asked for, and counts the default', async () => {
    const t = setup();
    await t.actions.create(actor, { name: 'main', deletionPolicy: 'drop' });
    assert.equal('storageBytes' in t.databases.created[0]!.spec, false);
    assert.equal(t.databases.created[0]!.spec.deletionPolicy, 'Drop');
    assert.deepEqual(t.fits, [{ bytes: 2 ** 30, underLock: true }]);
    assert.deepEqual(t.events[0]!.data, { database: 'main', storage_bytes: 2 ** 30, deletion_policy: 'drop' });
  });

  it('refuses one more database at the limit (branches count), making and recording nothing', async () => {
    const t = setup({ limit: 2 });
    t.databases.put(resource('a'));
    t.databases.put(resource('b', { spec: { branchOf: 'a' } }));
    const err = await refusalOf(() => t.actions.create(actor, { name: 'c', deletionPolicy: 'drop' }));
    assert.equal(err.kind, 'quota_exceeded');
    assert.equal(err.message, 'the account has 2 databases (branches included), its limit is 2; delete one first');
    assert.deepEqual([t.databases.created, t.fits, t.samples, t.events], [[], [], [], []]);
  });

  it("refuses a database the account's storage cannot hold", async () => {
    const t = setup({ freeBytes: 2 ** 29 });
    const err = await refusalOf(() => t.actions.create(actor, { name: 'big', deletionPolicy: 'drop' }));
    assert.equal(err.kind, 'quota_exceeded');
    assert.match(err.message, /database big needs 1073741824 bytes/);
    assert.deepEqual([t.databases.created, t.events], [[], []]);
  });

  it('answers a name in use as a conflict, recording nothing', async () => {
    const t = setup();
    t.databases.put(resource('main'));
    const err = await refusalOf(() => t.actions.create(actor, { name: 'main', deletionPolicy: 'drop' }));
    assert.deepEqual([err.kind, err.message], ['conflict', 'a database named "main" already exists']);
    assert.deepEqual([t.samples, t.events], [[], []]);
  });

  it('restores a done backup: the Database names its dump, the event where it came from', async () => {
    const t = setup();
    t.backups.set('bk1', backup('bk1'));
    await t.actions.create(actor, { name: 'copy', deletionPolicy: 'drop', restoreFrom: 'bk1' });
    assert.deepEqual(t.databases.created[0]!.spec.restoreFrom, {
      backup: 'bk1',
      digest: 'sha256-abc',
      url: 'http://api.svc:8081/artifacts/sha256-abc',
    });
    assert.deepEqual(t.events[0]!.data, {
      database: 'copy',
      storage_bytes: 2 ** 30,
      deletion_policy: 'drop',
      restored_from: { database: 'old', backup: 'bk1' },
    });
  });

  it('counts a CloudNativePG database once per instance, each holding a copy of its volume', async () => {
    const t = setup({ provider: 'cloudnative-pg', freeBytes: 3 * 2 ** 30 });
    await t.actions.create(actor, { name: 'ha', storageBytes: 2 ** 30, deletionPolicy: 'drop' });
    assert.deepEqual(t.fits, [{ bytes: 2 * 2 ** 30, underLock: true }]);
    assert.deepEqual(t.samples, [{ subject: 'database/ha', bytes: 2 * 2 ** 30 }]);
    assert.equal(t.events[0]!.data?.storage_bytes, 2 ** 30, 'the event says the size asked for');
    const full = await refusalOf(() => t.actions.create(actor, { name: 'big', storageBytes: 2 * 2 ** 30, deletionPolicy: 'drop' }));
    assert.equal(full.kind, 'quota_exceeded');
    assert.match(full.message, /database big needs 4294967296 bytes \(2147483648 on each of 2 instances\)/);
  });

  it('refuses a restore from a backup that is not there or failed', async () => {
    const t = setup();
    const missing = await refusalOf(() => t.actions.create(actor, { name: 'copy', deletionPolicy: 'drop', restoreFrom: 'nope' }));
    assert.deepEqual([missing.kind, missing.message], ['not_found', 'backup nope not found']);
    t.backups.set('bad', backup('bad', { status: 'failed', digest: null, error: 'pg_dump exited 1' }));
    const failed = await refusalOf(() => t.actions.create(actor, { name: 'copy', deletionPolicy: 'drop', restoreFrom: 'bad' }));
    assert.deepEqual([failed.kind, failed.message], ['conflict', 'backup bad failed (pg_dump exited 1); restore from one that is done']);
    assert.deepEqual(t.databases.created, []);
  });

  it('restores into a CloudNativePG database too: the dump is logical, whichever provider made it', async () => {
    const cnpg = setup({ provider: 'cloudnative-pg' });
    cnpg.backups.set('bk1', backup('bk1'));
    await cnpg.actions.create(actor, { name: 'copy', deletionPolicy: 'drop', restoreFrom: 'bk1' });
    const spec = cnpg.databases.created[0]!.spec;
    assert.equal(spec.provider, 'cloudnative-pg');
    assert.equal(spec.restoreFrom?.backup, 'bk1');
  });
});

describe('DatabaseActions.delete', () => {
  it('answers a database that is not there as not found', async () => {
    const t = setup();
    const err = await refusalOf(() => t.actions.delete(actor, 'nope'));
    assert.deepEqual([err.kind, err.message], ['not_found', 'database nope not found']);
  });

  it('refuses a database an app has attached', async () => {
    const t = setup();
    t.databases.put(resource('main'));
    t.apps.put('web', { database: 'main' });
    const err = await refusalOf(() => t.actions.delete(actor, 'main'));
    assert.deepEqual(
      [err.kind, err.message],
      ['conflict', 'database main is attached to app web: detach it first (DELETE /apps/web/database)'],
    );
    assert.deepEqual(t.databases.deleted, []);
  });

  it('deletes a dropped database: its storage sample goes to 0 and database.deleted is recorded', async () => {
    const t = setup();
    t.databases.put(resource('main'));
    await t.actions.delete(actor, 'main');
    assert.deepEqual(t.databases.deleted, ['main']);
    assert.deepEqual(t.samples, [{ subject: 'database/main', bytes: 0 }]);
    assert.deepEqual(t.events, [{ type: 'database.deleted', subject: 'main', data: { database: 'main', deletion_policy: 'drop' } }]);
  });

  it('keeps counting a retained database volume', async () => {
    const t = setup();
    t.databases.put(resource('keep', { spec: { deletionPolicy: 'Retain' } }));
    await t.actions.delete(actor, 'keep');
    assert.deepEqual(t.samples, []);
    assert.deepEqual(t.events[0]!.data, { database: 'keep', deletion_policy: 'retain' });
  });
});

describe('DatabaseActions backups', () => {
  it("lists a deleted database's backups, and answers a name with neither as not found", async () => {
    const t = setup();
    t.backups.set('bk1', backup('bk1'));
    assert.deepEqual(
      (await t.actions.backups(actor, 'old')).map((b) => b.id),
      ['bk1'],
    );
    t.databases.put(resource('fresh'));
    assert.deepEqual(await t.actions.backups(actor, 'fresh'), []);
    const err = await refusalOf(() => t.actions.backups(actor, 'nope'));
    assert.deepEqual([err.kind, err.message], ['not_found', 'database nope not found']);
  });

  it('asks for a backup of a Ready database, with a token that starts with the time asked', async () => {
    const t = setup();
    t.databases.put(resource('main', { status: { phase: 'Ready' } }));
    const asked = await t.actions.backup(actor, 'main');
    assert.deepEqual(asked, { database: 'main', requestedAt: now });
    assert.equal(t.databases.backupRequests.length, 1);
    assert.match(t.databases.backupRequests[0]!.token, /^2026-03-01T12:00:00\.000Z [0-9a-f]{8}$/);
  });

  it('refuses a backup of a server that is not Ready or of a database being deleted', async () => {
    const t = setup();
    t.databases.put(resource('new'));
    const pending = await refusalOf(() => t.actions.backup(actor, 'new'));
    assert.deepEqual([pending.kind, pending.message], ['conflict', 'database new is Pending: a backup needs its server Ready']);
    t.databases.put(resource('going', { status: { phase: 'Ready' }, deleting: true }));
    const going = await refusalOf(() => t.actions.backup(actor, 'going'));
    assert.deepEqual([going.kind, going.message], ['not_found', 'database going not found']);
    assert.deepEqual(t.databases.backupRequests, []);
  });

  it('asks for a backup of a CloudNativePG database as of any other', async () => {
    const t = setup();
    t.databases.put(resource('ha', { spec: { engine: 'postgres', provider: 'cloudnative-pg' }, status: { phase: 'Ready' } }));
    await t.actions.backup(actor, 'ha');
    assert.deepEqual(
      t.databases.backupRequests.map((r) => r.name),
      ['ha'],
    );
  });
});

describe('DatabaseActions attach and detach', () => {
  const allow = () => undefined;

  it('attaches a database and records database.attached; stating it again changes nothing', async () => {
    const t = setup();
    t.databases.put(resource('main'));
    const web = t.apps.put('web');
    const db = await t.actions.attach(actor, web, 'main', allow);
    assert.equal(db.name, 'main');
    assert.equal(t.apps.list(ns)[0]!.spec.database, 'main');
    assert.deepEqual(t.events, [{ type: 'database.attached', subject: 'main', data: { database: 'main', app: 'web' } }]);
    await t.actions.attach(actor, t.apps.list(ns)[0]!, 'main', allow);
    assert.equal(t.events.length, 1);
  });

  it('refuses a database that is not there, or being deleted', async () => {
    const t = setup();
    const web = t.apps.put('web');
    t.databases.put(resource('going', { deleting: true }));
    for (const name of ['nope', 'going']) {
      const err = await refusalOf(() => t.actions.attach(actor, web, name, allow));
      assert.deepEqual([err.kind, err.message], ['not_found', `database ${name} not found`]);
    }
  });

  it('refuses a database another app holds, and an app that has another one', async () => {
    const t = setup();
    t.databases.put(resource('main'));
    t.databases.put(resource('other'));
    t.apps.put('api', { database: 'main' });
    const web = t.apps.put('web', { database: 'other' });
    const held = await refusalOf(() => t.actions.attach(actor, web, 'main', allow));
    assert.deepEqual([held.kind, held.message], ['conflict', 'database main is attached to app api; a database attaches to one app']);
    t.apps.items.delete('api');
    const other = await refusalOf(() => t.actions.attach(actor, web, 'main', allow));
    assert.deepEqual([other.kind, other.message], ['conflict', 'app web has database other attached: detach it first']);
    assert.deepEqual(t.events, []);
  });

  it("asks the caller's authority of the App as written, after the holder and before the app's own database", async () => {
    const t = setup();
    t.databases.put(resource('main'));
    const web = t.apps.put('web');
    const seen: string[] = [];
    await assert.rejects(
      t.actions.attach(actor, web, 'main', (app) => {
        seen.push(`${app.name}:${app.spec.database ?? '-'}`);
        throw new Error('refused by the route');
      }),
      /refused by the route/,
    );
    assert.deepEqual(seen, ['web:-']);
    assert.equal(t.apps.list(ns)[0]!.spec.database, undefined);
    assert.deepEqual(t.events, []);
  });

  it('detaches the database and records database.detached; an app without one is invalid', async () => {
    const t = setup();
    const web = t.apps.put('web', { database: 'main' });
    assert.equal(await t.actions.detach(actor, web), 'main');
    assert.equal(t.apps.list(ns)[0]!.spec.database, undefined);
    assert.deepEqual(t.events, [{ type: 'database.detached', subject: 'main', data: { database: 'main', app: 'web' } }]);
    const err = await refusalOf(() => t.actions.detach(actor, t.apps.list(ns)[0]!));
    assert.deepEqual([err.kind, err.message], ['invalid', 'app web has no database attached']);
  });
});

describe('DatabaseRecord and its presentation', () => {
  it('presents a database as the API always has', () => {
    const db = databaseRecord(
      resource('main', {
        spec: { engine: 'postgres', storageBytes: 512, deletionPolicy: 'Retain' },
        status: {
          phase: 'Ready',
          conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'serving', lastTransitionTime: '' }],
          attachedTo: 'web',
          host: 'db-main.acct-1.svc',
          port: 5432,
          databaseName: 'main',
          usedBytes: 100,
        },
      }),
    );
    assert.deepEqual(presentDatabase(db, 2 ** 30), {
      name: 'main',
      engine: 'postgres',
      phase: 'Ready',
      message: 'serving',
      attached_to: 'web',
      host: 'db-main.acct-1.svc',
      port: 5432,
      database: 'main',
      storage_bytes: 512,
      used_bytes: 100,
      deletion_policy: 'retain',
      created_at: '2026-02-01T00:00:00.000Z',
    });
    assert.deepEqual(presentDatabase(databaseRecord(resource('new', { spec: {}, deleting: true })), 2 ** 30), {
      name: 'new',
      engine: 'postgres',
      phase: 'Deleting',
      message: null,
      attached_to: null,
      host: null,
      port: null,
      database: null,
      storage_bytes: 2 ** 30,
      used_bytes: null,
      deletion_policy: 'drop',
      created_at: '2026-02-01T00:00:00.000Z',
    });
  });

  it('refuses a resource without the fields the apiserver always sets', () => {
    const bare = resource('main');
    delete bare.metadata.creationTimestamp;
    assert.throws(
      () => databaseRecord(bare),
      (err) =>
        err instanceof DomainError &&
        err.message === 'cannot read database main: the cluster answered it without metadata.creationTimestamp',
    );
  });
});
