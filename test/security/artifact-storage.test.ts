// Attack: filling the artifact store, which shares the disk with etcd, PostgreSQL and the registry
// (issue 30 finding 3: uploads, build outputs and backups were neither counted in an account's
// storage nor ever collected), and racing the storage limit with deploys whose volumes the
// controller makes later (finding 4). Through the real API on the real apiserver and PostgreSQL:
//
// - uploads past the account's storage limit are refused with quota_exceeded and leave nothing (no
//   file, no staged file, no deploy, no count); the same bytes again count once; a backup past the
//   limit is refused and recorded as failed, its dump not kept;
// - ten parallel uploads at the limit leave the account within it;
// - the collector (called directly, its clock moved past the grace period) deletes an old
//   unreferenced artifact and keeps the current deploy's, the rollback window's, a preview's, a
//   backup's and a fresh one's; a rollback to a collected deploy says it is no longer stored; a run
//   while another replica collects does nothing;
// - ten parallel deploys each adding a volume at the limit leave the account within it.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mintBackupCredential } from '../../lib/artifacts/credential.js';
import { packTree } from '../../lib/artifacts/tarball.js';
import { recordBackup } from '../../lib/backups.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { images } from '../support/images.js';
import { eventually } from '../support/wait.js';

const MiB = 1024 ** 2;

interface Storage {
  used_bytes: number;
  limit_bytes: number;
  database_bytes: number;
  volume_bytes: number;
  artifact_bytes: number;
}

/** A site whose archive is about `bytes` long (random bytes do not compress). */
const site = (bytes: number, mark = randomBytes(4).toString('hex')) =>
  packTree({ 'index.html': `<p>${mark}</p>`, 'blob.bin': randomBytes(bytes) });
const digestOf = (buf: Buffer) => `sha256:${createHash('sha256').update(buf).digest('hex')}`;

const storageOf = async (api: TestApi) => (await expectJson<{ storage: Storage }>(await api.request('GET', '/api/volumes'), 200)).storage;
const upload = (api: TestApi, app: string, body: Buffer) =>
  fetch(`${api.url}/api/apps/${app}/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/gzip' },
    body,
  });
const stagedLeft = async (api: TestApi) => (await readdir(path.join(api.deps.config.deploys.artifactDir, 'tmp')).catch(() => [])).length;

describe("security: stored artifacts count against the account's storage", { timeout: 120_000 }, () => {
  let api: TestApi;
  const limit = 1_000_000;

  before(async () => {
    api = await startTestApi({ env: { SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: String(limit) } });
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'up' } }), 201);
  });
  after(async () => api?.close());

  it('refuses an upload past the limit with quota_exceeded, naming what to delete, and writes nothing of it', async () => {
    const [a, b, c] = await Promise.all([site(350_000), site(350_000), site(350_000)]);
    await expectJson(await upload(api, 'up', a), 202);
    await expectJson(await upload(api, 'up', b), 202);
    const refused = await expectJson<{ error: string }>(await upload(api, 'up', c), 403);
    assert.match(
      refused.error,
      /the deploy's tree needs \d+ bytes, which would bring the account's storage to \d+, over its limit of 1000000 bytes/,
    );
    assert.match(refused.error, /in stored artifacts; delete a database, a detached volume .*or an app or preview/);
    // Nothing half-written: no file, no staged file, no deploy record, not counted.
    assert.equal(await api.deps.artifacts.has(digestOf(c)), false);
    assert.equal(await stagedLeft(api), 0);
    const deploys = await expectJson<{ deploys: Array<{ digest: string }> }>(await api.request('GET', '/api/apps/up/deploys'), 200);
    assert.deepEqual(deploys.deploys.map((d) => d.digest).sort(), [digestOf(a), digestOf(b)].sort());
    const storage = await storageOf(api);
    assert.equal(storage.artifact_bytes, a.length + b.length);
    assert.equal(storage.used_bytes, a.length + b.length);
    assert.equal(storage.limit_bytes, limit);
    // The same bytes again are held once: accepted, not counted twice.
    await expectJson(await upload(api, 'up', a), 202);
    assert.equal((await storageOf(api)).artifact_bytes, a.length + b.length);
  });

  it('refuses a backup past the limit: recorded as failed saying why, its dump not kept', async () => {
    const key = api.deps.config.deploys.artifactKey;
    // make test's platform always has one (hack/lib.sh ensure_artifact_key): without it no backup
    // credential exists, and this attack would not be tried at all.
    assert.ok(key, 'an artifact key (SVC_ARTIFACT_KEY_FILE) to mint the backup credential with');
    const dump = randomBytes(400_000);
    const credential = mintBackupCredential(key, api.account.namespace, 'orders', new Date(api.clock.now.getTime() + 600_000));
    const res = await fetch(`${api.machineUrl}/backups/${api.account.namespace}/orders`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${credential}` },
      body: dump,
    });
    const body = (await res.json()) as { error: string };
    assert.equal(res.status, 403, JSON.stringify(body));
    assert.match(body.error, /a backup of database orders needs 400000 bytes.*over its limit of 1000000 bytes/);
    assert.equal(await api.deps.artifacts.has(digestOf(dump)), false);
    assert.equal(await stagedLeft(api), 0);
    const [recorded] = await api.deps.backups.list(api.account.id, 'orders');
    assert.equal(recorded?.status, 'failed');
    assert.match(recorded?.error ?? '', /over its limit/);
  });

  it('ten parallel uploads at the limit leave the account within it, each refused one uncounted', async () => {
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'race' } }), 201);
    const before = await storageOf(api);
    const trees = await Promise.all(Array.from({ length: 10 }, () => site(60_000)));
    const answers = await Promise.all(trees.map(async (tree) => ({ tree, res: await upload(api, 'race', tree) })));
    const made = answers.filter((x) => x.res.status === 202);
    const refused = answers.filter((x) => x.res.status !== 202);
    for (const r of refused)
      assert.match(((await r.res.json()) as { error: string }).error, /over its limit of 1000000 bytes/, `status ${r.res.status}`);
    // Whatever the order, at least as many fit as the largest tree fits into the room, and not all ten.
    const room = limit - before.used_bytes;
    const largest = Math.max(...trees.map((tree) => tree.length));
    assert.ok(
      made.length >= Math.floor(room / largest) && refused.length > 0,
      `${made.length} made, ${refused.length} refused with ${room} bytes of room`,
    );
    const after = await storageOf(api);
    assert.ok(after.used_bytes <= limit, `the account holds ${after.used_bytes} bytes against a limit of ${limit}`);
    assert.equal(after.artifact_bytes, before.artifact_bytes + made.reduce((n, x) => n + x.tree.length, 0));
    for (const r of refused) assert.equal(await api.deps.artifacts.has(digestOf(r.tree)), false);
  });
});

describe('security: unreferenced artifacts are collected, what rollbacks and previews need is kept', { timeout: 180_000 }, () => {
  let api: TestApi;

  before(async () => {
    api = await startTestApi({ env: { SVC_ARTIFACT_ROLLBACK_DEPLOYS: '2', SVC_ARTIFACT_GRACE_MINUTES: '60' } });
  });
  after(async () => api?.close());

  const deployFiles = async (app: string, text: string) => {
    const d = await expectJson<{ id: string; digest: string }>(
      await api.request('POST', `/api/apps/${app}/deploy`, {
        body: { files: { 'index.html': `<p>${text} ${randomBytes(8).toString('hex')}</p>` } },
      }),
      202,
    );
    return d;
  };
  const stored = (digest: string) => api.deps.artifacts.has(digest);

  it("deletes an old unreferenced artifact and an expired build log, and keeps the current deploy, the rollback window, a preview, a backup, a fresh upload and a recent build's log", async () => {
    const { deps, workers, account } = api;
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'gc' } }), 201);
    const deploys = [];
    for (let i = 1; i <= 5; i++) {
      const d = await deployFiles('gc', `gc ${i}`);
      // Live, as the recorder writes it once the controller says so (the rollback window counts live deploys).
      await deps.deploys.finish(d.id, { status: 'live' });
      deploys.push(d);
    }
    const [d1, d2, d3, d4, d5] = deploys as [
      (typeof deploys)[number],
      (typeof deploys)[number],
      (typeof deploys)[number],
      (typeof deploys)[number],
      (typeof deploys)[number],
    ];
    const preview = await expectJson<{ deploy: { digest: string } }>(
      await api.request('POST', '/api/apps/gc/previews', {
        body: { ref: 'pr-1', files: { 'index.html': `<p>preview ${randomBytes(8).toString('hex')}</p>` } },
      }),
      201,
    );
    // A backup's dump, stored as the endpoint stores it, and its record.
    const dump = await deps.artifacts.stageBytes(randomBytes(2048));
    await deps.storage.admit(account.id, account.namespace, dump, 'a backup');
    await recordBackup(api.db, account.id, 'orders', { digest: dump.digest, bytes: dump.size }, api.clock.read());
    // An app deployed and deleted: its artifact is nobody's.
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'gone' } }), 201);
    const gone = await deployFiles('gone', 'gone');
    await expectJson(await api.request('DELETE', '/api/apps/gone'), 204);

    // What the app serves is kept whatever its deploy: wait until that is d5, so the case is exact.
    await eventually(
      'gc serving d5',
      async () => {
        const app = await deps.apps.find(account.namespace, 'gc');
        return app?.status?.currentDeploy === d5.id && app.status.live?.deploy === d5.id;
      },
      { timeoutMs: 90_000 },
    );

    api.clock.advance(2 * 3600_000);
    // Stored just now, its record not written yet (an upload racing its deploy).
    const fresh = await deps.artifacts.stageBytes(randomBytes(1024));
    await deps.storage.admit(account.id, account.namespace, fresh, 'an upload');
    // Two builds' logs, the platform's records that no account holds: one of a build that ended
    // within the log retention (kept), one of a build that ended before it (deleted).
    const logOf = async (id: string, endedDaysAgo: number) => {
      const log = await deps.artifacts.stageBytes(randomBytes(512));
      await deps.artifacts.put(log);
      const ended = new Date(api.clock.read().getTime() - endedDaysAgo * 86_400_000);
      await api.db('builds').insert({
        id,
        account_id: account.id,
        app: 'gc',
        source: JSON.stringify({ git: { url: 'https://example.test/x.git' } }),
        phase: 'Succeeded',
        created_at: ended,
        completed_at: ended,
        log_digest: log.digest,
        log_bytes: log.size,
      });
      return log.digest;
    };
    const recentLog = await logOf('bld-recentlog00000', 29);
    const oldLog = await logOf('bld-oldlog00000000', 31);

    // While another replica collects, this one does nothing.
    const other = await api.db.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(30002, 0)');
      return workers.artifactCollector.collect();
    });
    assert.equal(other.skipped, true);
    assert.equal(await stored(d1.digest), true);

    const before = await storageOf(api);
    const run = await workers.artifactCollector.collect();
    assert.equal(run.skipped, false);
    assert.deepEqual(run.removed.map((r) => r.digest).sort(), [d1.digest, d2.digest, gone.digest, oldLog].sort());
    assert.deepEqual(run.released.map((r) => r.digest).sort(), [d1.digest, d2.digest, gone.digest].sort());
    for (const d of [d1, d2, gone]) assert.equal(await stored(d.digest), false, `${d.digest} deleted`);
    for (const [what, digest] of [
      ['current', d5.digest],
      ['window', d4.digest],
      ['window', d3.digest],
      ['preview', preview.deploy.digest],
      ['backup', dump.digest],
      ['fresh', fresh.digest],
      ["a recent build's log", recentLog],
    ] as const) {
      assert.equal(await stored(digest), true, `the ${what} artifact kept`);
    }
    const after = await storageOf(api);
    assert.equal(after.artifact_bytes, before.artifact_bytes - run.released.reduce((n, r) => n + r.bytes, 0));

    // A rollback to a collected deploy says so; one in the window goes ahead.
    const refused = await expectJson<{ error: string }>(
      await api.request('POST', '/api/apps/gc/rollback', { body: { deploy_id: d1.id } }),
      409,
    );
    assert.match(refused.error, new RegExp(`the artifact of deploy ${d1.id} is no longer stored`));
    await expectJson(await api.request('POST', '/api/apps/gc/rollback', { body: { deploy_id: d3.id } }), 202);
    // Nothing else goes on the next run.
    assert.deepEqual((await workers.artifactCollector.collect()).removed, []);
  });
});

describe('security: parallel deploys adding volumes cannot pass the storage limit', { timeout: 120_000 }, () => {
  let api: TestApi;
  const compose = (mark: string) =>
    [
      'services:',
      '  web:',
      `    image: ${images.busybox}`,
      `    command: ["sh", "-c", "echo ${mark} > /data/mark; exec httpd -f -p 8080 -h /data"]`,
      '    ports: ["8080"]',
      '    volumes: ["data:/data"]',
      'volumes:',
      '  data: {}',
      'x-svc:',
      '  volumes:',
      '    data:',
      '      size: 16Mi',
    ].join('\n');

  before(async () => {
    api = await startTestApi({ env: { SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: String(64 * MiB) } });
  });
  after(async () => api?.close());

  it('ten parallel deploys each adding a 16 MiB volume under 64 MiB: four pass, the account holds 64 MiB', async () => {
    for (let i = 0; i < 10; i++) await expectJson(await api.request('POST', '/api/apps', { body: { name: `vol${i}` } }), 201);
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const res = await api.request('POST', `/api/apps/vol${i}/deploy`, { body: { compose: compose(`m${i}`) } });
        return { status: res.status, body: (await res.json()) as { error?: string } };
      }),
    );
    const refusals = answers.filter((a) => a.status !== 202).map((a) => `${a.status} ${a.body.error}`);
    assert.equal(answers.filter((a) => a.status === 202).length, 4, refusals.join('\n'));
    for (const r of refusals)
      assert.match(
        r,
        /^403 the app's volumes need 16777216 more bytes, which would bring the account's storage to \d+, over its limit of 67108864 bytes/,
      );
    const storage = await storageOf(api);
    assert.equal(storage.volume_bytes, 64 * MiB);
    assert.ok(storage.used_bytes <= 64 * MiB);
    // The refused ones changed nothing.
    const declared = api.deps.apps.list(api.account.namespace).filter((a) => a.spec.volumes?.length).length;
    assert.equal(declared, 4);
  });
});
