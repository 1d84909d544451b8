// The build actions (api/builds/actions.ts) with in-memory fakes: an uploaded tree is planned before
// anything is kept (nothing to build, or no archive at all, is refused and the upload dropped), then
// counted against the account's storage (a refusal there starts nothing); a Git source is resolved
// and its token kept; a started build is recorded first (its build.queued event) and then made as a
// Build; builds of apps the caller does not see are not found; a build that ended is not canceled.
// And a Build's record, read once from the custom resource.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { BuildActions, type BuildActionDeps, type BuildActor, type StagedTree } from '../../api/builds/actions.js';
import { buildRecord, type BuildRecord } from '../../api/builds/repository.js';
import { presentBuild } from '../../api/presenters/builds.js';
import { appRecord } from '../../api/repositories/app-record.js';
import { packTree } from '../../lib/artifacts/tarball.js';
import type { BuildRecord as StoredBuild } from '../../lib/builds/store.js';
import { DomainError } from '../../lib/errors.js';
import type { Build, BuildSpec } from '../../lib/resources/index.js';

const ns = 'acct-1';
const actor: BuildActor = { accountId: 'acc_1', namespace: ns, createdBy: 'token:t1' };
const now = new Date('2026-03-01T12:00:00Z');
const everyApp = () => true;
const app = appRecord({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'App',
  metadata: { name: 'web', namespace: ns, uid: 'uid-web', generation: 1, resourceVersion: '1' },
  spec: {},
});

const resource = (id: string, spec: BuildSpec, status?: Build['status']): Build => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Build',
  metadata: { name: id, namespace: ns, uid: `uid-${id}` },
  spec,
  ...(status ? { status } : {}),
});

/** The builds table, in memory: create records build.queued as the store does (in its transaction). */
class FakeStore implements Pick<BuildActionDeps['store'], 'create' | 'get' | 'list'> {
  readonly items = new Map<string, StoredBuild>();
  readonly events: Array<{ type: string; subject: string; data: Record<string, unknown> }> = [];
  async create(b: Parameters<BuildActionDeps['store']['create']>[0]): Promise<void> {
    this.items.set(b.id, {
      ...b,
      phase: 'Queued',
      reason: null,
      message: null,
      plan: null,
      artifactDigest: null,
      artifactBytes: null,
      image: null,
      reusedFrom: null,
      deployId: null,
      deployError: null,
      startedAt: null,
      completedAt: null,
      hasLog: false,
      logTruncated: false,
    });
    this.events.push({
      type: 'build.queued',
      subject: b.id,
      data: { build: b.id, app: b.app, source: 'artifact' in b.source ? 'upload' : 'git', deploy: b.deploy },
    });
  }
  async get(accountId: string, id: string): Promise<StoredBuild | undefined> {
    const r = this.items.get(id);
    return r && r.accountId === accountId ? r : undefined;
  }
  async list(accountId: string, appName: string, limit = 20): Promise<StoredBuild[]> {
    return [...this.items.values()].filter((r) => r.accountId === accountId && r.app === appName).slice(0, limit);
  }
}

/** The Build objects, in memory: cancel marks one Canceled (as its controller would, at once). */
class FakeBuilds implements Pick<BuildActionDeps['builds'], 'create' | 'record' | 'cancel' | 'untilRecord'> {
  readonly items = new Map<string, Build>();
  readonly created: Array<{ id: string; spec: BuildSpec }> = [];
  readonly canceled: string[] = [];
  async create(...[namespace, id, , spec]: Parameters<BuildActionDeps['builds']['create']>): Promise<BuildRecord> {
    this.created.push({ id, spec });
    const b = { ...resource(id, spec), metadata: { name: id, namespace, uid: `uid-${id}` } };
    this.items.set(id, b);
    return buildRecord(b);
  }
  record(_namespace: string, id: string): BuildRecord | undefined {
    const b = this.items.get(id);
    return b && buildRecord(b);
  }
  async cancel(_namespace: string, id: string): Promise<boolean> {
    const b = this.items.get(id);
    if (!b) return false;
    this.canceled.push(id);
    this.items.set(id, { ...b, status: { ...b.status, phase: 'Canceled', reason: 'Canceled' } });
    return true;
  }
  /** At once: the fake's cancel is the controller's too. */
  async untilRecord(namespace: string, id: string): Promise<BuildRecord | undefined> {
    return this.record(namespace, id);
  }
}

const dir = await mkdtemp(path.join(tmpdir(), 'build-actions-'));
after(() => rm(dir, { recursive: true, force: true }));

/** An upload as staged: a file, and whether it was dropped. */
async function staged(name: string, bytes: Buffer): Promise<StagedTree & { discarded: boolean }> {
  const file = path.join(dir, name);
  await writeFile(file, bytes);
  const s = {
    file,
    digest: `sha256:${name}`,
    size: bytes.length,
    discarded: false,
    discard: async () => void (s.discarded = true),
  };
  return s;
}

function setup(o: { admit?: () => Promise<void>; artifactKey?: Buffer } = {}) {
  const store = new FakeStore();
  const builds = new FakeBuilds();
  const admitted: Array<{ digest: string; what: string }> = [];
  const secrets: Array<{ app: string; token: string }> = [];
  const actions = new BuildActions({
    builds,
    store,
    logs: () => new PassThrough(),
    storage: {
      admit: async (_accountId, _namespace, s, what) => {
        await o.admit?.();
        admitted.push({ digest: s.digest, what });
      },
    },
    git: {
      secret: async (_namespace, appName, token) => {
        secrets.push({ app: appName, token });
        return `build-git-${appName}`;
      },
      remote: (token) => ({ token, allowPrivate: false, resolver: undefined }),
    },
    settings: { artifactKey: 'artifactKey' in o ? o.artifactKey : Buffer.alloc(32), artifactBaseUrl: 'https://api.test/artifacts' },
    clock: () => now,
  });
  return { actions, store, builds, admitted, secrets };
}

const buildable = { 'package.json': JSON.stringify({ name: 'web', scripts: { start: 'node index.js' } }), 'index.js': 'console.log(1)' };

describe('build actions: starting one', () => {
  it('builds an uploaded tree: admitted, recorded with build.queued, then made as a Build', async () => {
    const { actions, store, builds, admitted } = setup();
    const upload = await staged('ok.tar.gz', await packTree(buildable));
    const v = await actions.buildUpload(actor, app, upload, { deploy: true });
    assert.equal(upload.discarded, false);
    assert.deepEqual(admitted, [{ digest: 'sha256:ok.tar.gz', what: "the build's source" }]);
    assert.equal(v.stored.app, 'web');
    assert.equal(v.stored.createdBy, 'token:t1');
    assert.deepEqual(v.stored.createdAt, now);
    assert.deepEqual(v.stored.source, { artifact: { digest: 'sha256:ok.tar.gz' } });
    assert.deepEqual(store.events, [
      { type: 'build.queued', subject: v.stored.id, data: { build: v.stored.id, app: 'web', source: 'upload', deploy: true } },
    ]);
    assert.deepEqual(builds.created, [
      {
        id: v.stored.id,
        spec: {
          app: 'web',
          source: { artifact: { digest: 'sha256:ok.tar.gz', url: 'https://api.test/artifacts/sha256:ok.tar.gz' } },
          deploy: true,
          resultsUrl: 'https://api.test/builds',
        },
      },
    ]);
    assert.equal(v.live?.id, v.stored.id);
    const shown = presentBuild(v.stored, v.live);
    assert.equal(shown.status, 'queued');
    assert.deepEqual(shown.source, { type: 'upload', digest: 'sha256:ok.tar.gz' });
  });

  it('refuses a tree with nothing to build, and drops the upload: nothing recorded or made', async () => {
    const { actions, store, builds, admitted } = setup();
    const upload = await staged('empty.tar.gz', await packTree({ 'README.md': 'hello' }));
    await assert.rejects(actions.buildUpload(actor, app, upload, { deploy: false }), (err: unknown) => {
      assert.ok(err instanceof DomainError);
      assert.equal(err.kind, 'invalid');
      assert.match(err.message, /^nothing can be built from this tree: /);
      return true;
    });
    assert.equal(upload.discarded, true);
    assert.deepEqual([admitted.length, store.events.length, builds.created.length], [0, 0, 0]);
  });

  it('refuses what is no archive as archive: ...', async () => {
    const { actions } = setup();
    const upload = await staged('junk.tar.gz', Buffer.from('not a tarball'));
    await assert.rejects(actions.buildUpload(actor, app, upload, { deploy: false }), (err: unknown) => {
      assert.ok(err instanceof DomainError);
      assert.equal(err.kind, 'invalid');
      assert.match(err.message, /^archive: /);
      return true;
    });
    assert.equal(upload.discarded, true);
  });

  it('starts nothing when the account has no storage left for the source', async () => {
    const { actions, store, builds } = setup({
      admit: async () => {
        throw new DomainError('quota_exceeded', 'storage: 1 of 1 bytes used');
      },
    });
    const upload = await staged('big.tar.gz', await packTree(buildable));
    await assert.rejects(actions.buildUpload(actor, app, upload, { deploy: false }), { name: 'DomainError', kind: 'quota_exceeded' });
    assert.deepEqual([store.events.length, builds.created.length], [0, 0]);
  });

  it('is served only with an artifact key', () => {
    assert.equal(setup().actions.served, true);
    assert.equal(setup({ artifactKey: undefined }).actions.served, false);
  });

  it('starts a Git build at a commit without recording its token Secret', async () => {
    const { actions, store, builds } = setup();
    const { id, created } = await actions.start(
      actor,
      app,
      { git: { url: 'https://git.test/web.git', ref: 'main', commit: 'a'.repeat(40), path: 'svc', secretName: 'build-git-web' } },
      { deploy: false, timeoutSeconds: 600 },
    );
    assert.equal(created.id, id);
    assert.deepEqual(store.items.get(id)!.source, {
      git: { url: 'https://git.test/web.git', ref: 'main', commit: 'a'.repeat(40), path: 'svc' },
    });
    assert.deepEqual(builds.created[0]!.spec.source, {
      git: { url: 'https://git.test/web.git', ref: 'main', commit: 'a'.repeat(40), path: 'svc', secretName: 'build-git-web' },
    });
    assert.equal(builds.created[0]!.spec.timeoutSeconds, 600);
    assert.equal(store.events[0]!.data.source, 'git');
  });
});

describe('build actions: reading and canceling', () => {
  async function started() {
    const t = setup();
    const upload = await staged(`s-${Math.random().toString(16).slice(2)}.tar.gz`, await packTree(buildable));
    const v = await t.actions.buildUpload(actor, app, upload, { deploy: false });
    return { ...t, id: v.stored.id };
  }

  it('finds a build of the account; another account, an unknown id, a malformed id or an app not seen: not found', async () => {
    const { actions, id } = await started();
    assert.equal((await actions.get(actor, id, everyApp)).stored.id, id);
    for (const [who, bid, sees] of [
      [{ ...actor, accountId: 'acc_2' }, id, everyApp],
      [actor, 'bld-0000000000000000', everyApp],
      [actor, 'nope', everyApp],
      [actor, id, (a: string) => a === 'other'],
    ] as const)
      await assert.rejects(actions.get(who, bid, sees), { name: 'DomainError', kind: 'not_found', message: `build ${bid} not found` });
    await assert.rejects(
      actions.cancel(actor, id, () => false),
      { kind: 'not_found' },
    );
    await assert.rejects(
      actions.logs(actor, id, () => false, false),
      { kind: 'not_found' },
    );
  });

  it('lists the app’s builds with their Builds as cached', async () => {
    const { actions, id } = await started();
    const list = await actions.list(actor, app, 20);
    assert.deepEqual(
      list.map((v) => [v.stored.id, v.live?.id]),
      [[id, id]],
    );
  });

  it('cancels a running build and answers it Canceled', async () => {
    const { actions, builds, id } = await started();
    const v = await actions.cancel(actor, id, everyApp);
    assert.deepEqual(builds.canceled, [id]);
    assert.equal(presentBuild(v.stored, v.live).status, 'canceled');
  });

  it('refuses to cancel a build that ended (its Build says so, or its record when the Build is gone)', async () => {
    const { actions, builds, store, id } = await started();
    builds.items.set(id, { ...builds.items.get(id)!, status: { phase: 'Succeeded', reason: 'Built' } });
    await assert.rejects(actions.cancel(actor, id, everyApp), {
      name: 'DomainError',
      kind: 'conflict',
      message: `build ${id} has ended (succeeded): nothing to cancel`,
    });
    builds.items.delete(id);
    store.items.set(id, { ...store.items.get(id)!, phase: 'Failed' });
    await assert.rejects(actions.cancel(actor, id, everyApp), {
      kind: 'conflict',
      message: `build ${id} has ended (failed): nothing to cancel`,
    });
    assert.deepEqual(builds.canceled, []);
  });

  it('refuses to cancel a build whose Build is gone before it ended', async () => {
    const { actions, builds, id } = await started();
    builds.items.delete(id);
    await assert.rejects(actions.cancel(actor, id, everyApp), { kind: 'conflict', message: `build ${id} is no longer running` });
  });
});

describe('build record', () => {
  it('reads the custom resource once into typed fields', () => {
    const b = resource(
      'bld-0123456789abcdef',
      { app: 'web', source: { artifact: { digest: 'sha256:x' } } },
      {
        phase: 'Succeeded',
        reason: 'Built',
        startedAt: '2026-03-01T12:00:00Z',
        completedAt: '2026-03-01T12:01:30Z',
        artifact: { digest: 'sha256:out', sizeBytes: 42 },
        image: 'registry.test/web:1',
      },
    );
    const r = buildRecord(b);
    assert.equal(buildRecord(b), r);
    assert.equal(r.app, 'web');
    assert.equal(r.deploy, false);
    assert.equal(r.phase, 'Succeeded');
    assert.equal(r.artifactBytes, 42);
    assert.deepEqual(r.completedAt, new Date('2026-03-01T12:01:30Z'));
    assert.equal(r.message, undefined);
  });

  it('refuses a resource without a name, namespace or app as a DomainError', () => {
    const b = resource('x', { app: '', source: {} });
    b.metadata = {};
    assert.throws(() => buildRecord(b), {
      name: 'DomainError',
      kind: 'unavailable',
      message: 'cannot read build (unnamed): the cluster answered it without metadata.name, metadata.namespace, spec.app',
    });
  });
});
