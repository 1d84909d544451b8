// Volumes on the real apiserver, node and local volume provisioner: a compose service's volume
// becomes a claim per machine that keeps a file across deploys and restarts; GET /volumes lists the
// apps' and the databases' volumes; a machine whose volume is local to its node is not migrated
// away from it (the migration says why); a mounted volume or a database's is not deleted, a detached
// one is; another account sees none of them; the account's storage limit holds.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createAccount } from '../../lib/accounts.js';
import { repoRoot } from '../../lib/paths.js';
import { attenuate } from '../../lib/tokens/token.js';
import type { Volume } from '../../api/repositories/volumes.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromApp } from '../support/app-traffic.js';
import { images } from '../support/images.js';
import { eventually } from '../support/wait.js';

/** A busybox service that appends a line per start to its log and serves it (/data/log on its volume). */
const compose = (mark: string, opts: { volumes?: boolean; size?: string } = {}) => {
  const withVolumes = opts.volumes ?? true;
  return [
    'services:',
    '  web:',
    `    image: ${images.busybox}`,
    // Without its volume the service keeps its log in /tmp (the root filesystem is read-only).
    `    command: ["sh", "-c", "echo start-$$MARK >> ${withVolumes ? '/data' : '/tmp'}/log; exec httpd -f -p 8080 -h ${withVolumes ? '/data' : '/tmp'}"]`,
    `    environment: {MARK: ${mark}}`,
    '    ports: ["8080"]',
    ...(withVolumes
      ? ['    volumes: ["data:/data"]', 'volumes:', '  data: {}', 'x-svc:', '  volumes:', '    data:', `      size: ${opts.size ?? '64Mi'}`]
      : []),
  ].join('\n');
};

describe('Volumes', () => {
  let api: TestApi;
  let ns: string;
  const json = expectJson;
  const volumes = async (token?: string) =>
    (await json<{ volumes: Volume[] }>(await api.request('GET', '/api/volumes', token ? { token } : {}), 200)).volumes;
  const deploy = async (app: string, body: Record<string, unknown>) => {
    const d = await json<{ id: string }>(await api.request('POST', `/api/apps/${app}/deploy`, { body }), 202);
    await eventually(
      `deploy ${d.id} live`,
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${d.id}`), 200)).status === 'live',
      { timeoutMs: 120_000 },
    );
  };
  const log = async (app: string) => {
    const r = await getFromApp(ns, app, '/log');
    return r?.status === 200 ? r.body : undefined;
  };

  before(async () => {
    // A small storage limit: the last test exceeds it.
    api = await startTestApi({ env: { SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: String(2 * 1024 ** 3) } });
    ns = api.account.namespace;
  });
  after(async () => {
    await api?.close();
  });

  it('keeps a file across deploys and restarts, lists the volume, and refuses to delete it while mounted', async () => {
    await json(await api.request('POST', '/api/apps', { body: { name: 'vol-keep' } }), 201);
    await deploy('vol-keep', { compose: compose('one') });
    assert.equal(await eventually('the first start logged', () => log('vol-keep')), 'start-one\n');
    await deploy('vol-keep', { compose: compose('two') });
    assert.equal(
      await eventually('the second start logged', async () => ((await log('vol-keep'))?.includes('two') ? log('vol-keep') : undefined)),
      'start-one\nstart-two\n',
      'the file survived the deploy',
    );
    // A restart: the machine's Pod deleted, the controller makes it again on the same claim.
    const pod = (await volumes()).find((v) => v.ref === 'vol-keep-data-m0')?.mounted_by;
    assert.ok(pod, 'the volume is mounted by the machine');
    await api.kube.core.deleteNamespacedPod({ namespace: ns, name: pod, gracePeriodSeconds: 0 });
    assert.equal(
      await eventually(
        'the restart logged',
        async () => ((await log('vol-keep'))?.split('\n').length === 4 ? log('vol-keep') : undefined),
        { timeoutMs: 90_000 },
      ),
      'start-one\nstart-two\nstart-two\n',
      'the file survived the restart',
    );

    // Its files measured by the provisioner (the statfs of the volume's own filesystem, decision 0023).
    const v = await eventually(
      'the volume measured',
      async () => (await volumes()).find((x) => x.ref === 'vol-keep-data-m0' && x.used_bytes !== null),
      { timeoutMs: 30_000 },
    );
    assert.deepEqual(
      {
        kind: v.kind,
        app: v.app,
        machine: v.machine,
        volume: v.volume,
        path: v.path,
        size: v.size_bytes,
        attached: v.attached,
        database: v.database,
      },
      { kind: 'machine', app: 'vol-keep', machine: 0, volume: 'data', path: '/data', size: 64 * 1024 ** 2, attached: true, database: null },
    );
    assert.match(v.node ?? '', /^local-[ab]$/);
    assert.ok(v.used_bytes! > 0 && v.used_bytes! < 1024 ** 2, `used_bytes ${v.used_bytes}: a log of a few lines`);
    const refused = await json<{ error: string }>(await api.request('DELETE', '/api/volumes/vol-keep-data-m0'), 409);
    assert.match(refused.error, /attached to machine 0 of app vol-keep .*at \/data/);
    await json(await api.request('DELETE', '/api/volumes/nope-data-m0'), 404);
  });

  it('does not migrate a machine away from its node-local volume, saying why', async () => {
    const v = (await volumes()).find((x) => x.ref === 'vol-keep-data-m0')!;
    const res = await json<{ error: string }>(await api.request('POST', '/api/apps/vol-keep/machines/0/migrate', { body: {} }), 409);
    assert.match(res.error, new RegExp(`keeps volume data \\(vol-keep-data-m0, at /data\\) on node ${v.node}.*cannot move`));
    const spec = (await api.deps.apps.find(ns, 'vol-keep'))!.spec;
    assert.equal(spec.placement, undefined, 'no placement was written');
    assert.equal(await log('vol-keep'), 'start-one\nstart-two\nstart-two\n');
  });

  it('frees a volume once its app no longer declares it (svc volumes ls|rm), with volume.* events and stored_bytes', async () => {
    const { execFile } = await import('node:child_process');
    const env = { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token };
    const svc = (...args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [path.join(repoRoot, 'bin/svc.js'), ...args], { env }, (err, out, errOut) =>
          err ? reject(new Error(`${err.message}${errOut}`)) : resolve(out),
        ),
      );
    await assert.rejects(svc('volumes', 'rm', 'vol-keep-data-m0'), /409 volume vol-keep-data-m0 is attached to machine 0 of app vol-keep/);
    await deploy('vol-keep', { compose: compose('three', { volumes: false }) });
    const detached = await eventually('the volume detached', async () =>
      (await volumes()).find((x) => x.ref === 'vol-keep-data-m0' && !x.attached && !x.mounted_by),
    );
    assert.equal(detached.path, null);
    assert.match(
      await svc('volumes', 'ls'),
      /^REF\s+OF\s+PATH\s+SIZE\s+USED\s+ATTACHED\s+NODE\nvol-keep-data-m0\s+vol-keep machine 0\s+-\s+64 MiB\s+\d+(\.\d)? (B|KiB)\s+no\s+local-[ab]$/m,
    );
    assert.match(await svc('volumes', 'rm', 'vol-keep-data-m0'), /vol-keep-data-m0 deleted/);
    await eventually('the volume gone', async () => !(await volumes()).some((x) => x.ref === 'vol-keep-data-m0'));
    await json(await api.request('DELETE', '/api/volumes/vol-keep-data-m0'), 404);
    const events = await eventually('volume events recorded', async () => {
      const list = (
        await json<{ events: Array<{ type: string; subject: string; data: Record<string, unknown> }> }>(
          await api.request('GET', '/api/events?kinds=volume.*'),
          200,
        )
      ).events;
      return list.length >= 2 ? list : undefined;
    });
    assert.deepEqual(
      events.map((e) => [e.type, e.subject]),
      [
        ['volume.created', 'vol-keep-data-m0'],
        ['volume.deleted', 'vol-keep-data-m0'],
      ],
    );
    assert.equal(events[0]!.data.size_bytes, 64 * 1024 ** 2);
    const rows = await api
      .db('usage_records')
      .where({ account_id: api.account.id, meter: 'stored_bytes', subject: 'volume/vol-keep-data-m0' })
      .orderBy('started_at');
    assert.deepEqual(
      rows.map((r: { quantity: string | number }) => Number(r.quantity)),
      [64 * 1024 ** 2, 0],
    );
  });

  it('lists a database volume read-only, shows another account none, and holds the storage limit', async () => {
    await json(await api.request('POST', '/api/databases', { body: { name: 'vol-db', storage_bytes: 128 * 1024 ** 2 } }), 201);
    const dbVolume = await eventually('the database volume listed', async () => (await volumes()).find((x) => x.ref === 'db-vol-db-data'));
    assert.deepEqual([dbVolume.kind, dbVolume.database, dbVolume.attached, dbVolume.app], ['database', 'vol-db', true, null]);
    assert.match(
      (await json<{ error: string }>(await api.request('DELETE', '/api/volumes/db-vol-db-data'), 409)).error,
      /holds database vol-db's data: it goes with the database/,
    );

    const other = await createAccount(api.db, api.kube.core, { email: `other-vol-${Date.now()}@example.test` });
    try {
      const { token } = await api.deps.tokens.issue(other.id, { name: 'other' });
      assert.deepEqual(await volumes(token), []);
      await json(await api.request('DELETE', '/api/volumes/db-vol-db-data', { token }), 404);
      // Volumes are the account's: a token restricted to apps neither lists nor deletes them.
      const appsOnly = attenuate(api.token, [{ kind: 'apps', apps: ['vol-keep'] }]);
      await json(await api.request('GET', '/api/volumes', { token: appsOnly }), 403);
    } finally {
      await api.kube.core.deleteNamespace({ name: other.namespace }).catch(() => undefined);
    }

    // 2 GiB in all: the database's 64 MiB and three machines' 1 GiB each do not fit; nothing is written.
    await json(await api.request('POST', '/api/apps', { body: { name: 'vol-big' } }), 201);
    const over = await json<{ error: string }>(
      await api.request('POST', '/api/apps/vol-big/deploy', { body: { compose: `${compose('x', { size: '1Gi' })}\n  machines: 3` } }),
      403,
    );
    assert.match(over.error, /volumes need 3221225472 more bytes.*over its limit of 2147483648 bytes/);
    const big = await json<{ kind: string | null }>(await api.request('GET', '/api/apps/vol-big'), 200);
    assert.equal(big.kind, null, 'the refused deploy changed nothing');
    await json(await api.request('DELETE', '/api/databases/vol-db'), 204);
  });
});
