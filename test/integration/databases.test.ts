// Databases on the real apiserver, node and local volumes: a Database becomes a PostgreSQL server
// of its own (Ready, with its address); attached, the app's machines read and write rows through
// DATABASE_URL (a client of the pg package in the runtime image); a redeploy keeps the data; one
// database attaches to one app; detaching removes the variables; another account neither sees nor
// attaches it; Drop removes the server, its volume and credentials, Retain keeps the volume, which a
// database of the same name takes up again.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createAccount } from '../../lib/accounts.js';
import * as k8s from '@kubernetes/client-node';
import { mintBackupCredential } from '../../lib/artifacts/credential.js';
import { databaseObjects } from '../../lib/databases.js';
import { repoRoot } from '../../lib/paths.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromApp, getFromEveryMachine } from '../support/app-traffic.js';
import { dbAppScript } from '../support/db-app.js';
import { images } from '../support/images.js';
import { hostUidsOfPod } from '../support/user-namespace.js';
import { eventually } from '../support/wait.js';

interface DatabaseBody {
  name: string;
  phase: string;
  message: string | null;
  attached_to: string | null;
  host: string | null;
  storage_bytes: number;
  used_bytes: number | null;
  port: number | null;
  deletion_policy: string;
}

describe('Databases', () => {
  let api: TestApi;
  let ns: string;
  const json = expectJson;
  const list = async (token?: string) =>
    (await json<{ databases: DatabaseBody[] }>(await api.request('GET', '/api/databases', token ? { token } : {}), 200)).databases;
  const ready = (name: string) =>
    eventually(`database ${name} Ready`, async () => (await list()).find((d) => d.name === name && d.phase === 'Ready'), {
      timeoutMs: 90_000,
      intervalMs: 200,
    });
  /** GET `path` of app `name`'s machines: the body of a 200; else it throws what it got, which a wait that times out tells. */
  const on = (name: string) => async (path: string) => {
    const r = await getFromApp(ns, name, path);
    if (!r) throw new Error(`app ${name} has no ready machine`);
    if (r.status !== 200) throw new Error(`app ${name} answered ${r.status}: ${r.body.slice(0, 200)}`);
    return r.body;
  };
  /** Waits until deploy `id` is live; if it never is, the wait's error says why a failed one failed. */
  const live = (id: string) =>
    eventually(
      `deploy ${id} live`,
      async () => {
        const d = await json<{ status: string; reason: string | null }>(await api.request('GET', `/api/deploys/${id}`), 200);
        if (d.status === 'failed') throw new Error(`deploy ${id} failed: ${d.reason}`);
        return d.status === 'live';
      },
      { timeoutMs: 120_000 },
    );
  const app = on('dbapp');
  /** GET `path` of app `name`: the answer of every machine it has, once they agree (a rollout is over). */
  const onEvery = (name: string) => (path: string) => getFromEveryMachine(ns, name, path);
  /** A new database, Ready, attached to a new app of the rows script (live); the app's getter. */
  const dbWithApp = async (database: string, appName: string) => {
    await json(await api.request('POST', '/api/databases', { body: { name: database } }), 201);
    await ready(database);
    await json(await api.request('POST', '/api/apps', { body: { name: appName } }), 201);
    await json(await api.request('PUT', `/api/apps/${appName}/database`, { body: { name: database } }), 200);
    const d = await json<{ id: string }>(
      await api.request('POST', `/api/apps/${appName}/deploy`, { body: { image: images.runtime, command: ['node', '-e', dbAppScript] } }),
      202,
    );
    await live(d.id);
    return on(appName);
  };

  before(async () => {
    api = await startTestApi();
    ns = api.account.namespace;
  });
  after(async () => {
    await api?.close();
  });

  it('creates a server, attaches it, and the app keeps rows through DATABASE_URL across a redeploy; detaching removes the variables', async () => {
    const started = Date.now();
    const created = await json<DatabaseBody>(await api.request('POST', '/api/databases', { body: { name: 'notes-db' } }), 201);
    assert.equal(created.phase, 'Pending');
    const up = await ready('notes-db');
    console.log(`# database Ready ${Date.now() - started} ms after create`);
    const readyEvents = await eventually('database.ready recorded', async () => {
      const e = (
        await json<{ events: Array<{ subject: string; data: { host?: string } }> }>(
          await api.request('GET', '/api/events?kinds=database.ready'),
          200,
        )
      ).events.filter((x) => x.subject === 'notes-db');
      return e.length ? e : undefined;
    });
    assert.deepEqual(
      readyEvents.map((e) => e.data.host),
      [up.host],
      'once, with its address',
    );
    assert.match(up.host ?? '', /^\d+\.\d+\.\d+\.\d+$/);
    // The server runs the tenant's SQL in a user namespace of its own: its processes are high uids on the node.
    const server = await api.kube.core.readNamespacedPod({ name: databaseObjects('notes-db').pod, namespace: ns });
    assert.equal(server.spec?.hostUsers, false);
    const uids = await hostUidsOfPod(server.metadata!.uid!);
    assert.ok(uids.length > 0 && uids.every((u) => u >= 65536), `the server's processes' host uids: ${uids.join(', ')}`);
    // What its data takes, measured on its volume: an initialised cluster is tens of megabytes.
    const measured = await eventually(
      'the size used measured',
      async () => (await list()).find((x) => x.name === 'notes-db' && (x.used_bytes ?? 0) > 8 * 1024 ** 2),
      { timeoutMs: 30_000 },
    );
    assert.ok(measured.used_bytes! < measured.storage_bytes, `used_bytes ${measured.used_bytes}`);
    assert.equal(up.port, 5432);
    await json(await api.request('POST', '/api/databases', { body: { name: 'notes-db' } }), 409);
    await json(await api.request('POST', '/api/databases', { body: { name: 'Bad_Name' } }), 400);
    assert.match(
      (await json<{ error: string }>(await api.request('POST', '/api/databases', { body: { name: 'x'.repeat(41) } }), 400)).error,
      /name: must be at most 40 characters/,
    );
    assert.match(
      (await json<{ error: string }>(await api.request('POST', '/api/databases', { body: { name: 'tiny', storage_bytes: 5 } }), 400)).error,
      /storage_bytes/,
    );
    assert.match(
      (await json<{ error: string }>(await api.request('POST', '/api/databases', { body: { name: 'odd', deletion_policy: 'keep' } }), 400))
        .error,
      /deletion_policy/,
    );
    assert.match(
      (await json<{ error: string }>(await api.request('POST', '/api/databases', { body: { name: 'extra', engine: 'mysql' } }), 400)).error,
      /engine/,
    );
    assert.ok(!(await list()).some((d) => ['tiny', 'odd', 'extra'].includes(d.name)), 'nothing half-made');

    await json(await api.request('POST', '/api/apps', { body: { name: 'dbapp' } }), 201);
    const d = await json<{ id: string }>(
      await api.request('POST', '/api/apps/dbapp/deploy', { body: { image: images.runtime, command: ['node', '-e', dbAppScript] } }),
      202,
    );
    await eventually(
      'the app live',
      async () => (await json<{ status: string }>(await api.request('GET', `/api/deploys/${d.id}`), 200)).status === 'live',
      { timeoutMs: 90_000 },
    );
    assert.deepEqual(JSON.parse(await eventually('the app', () => app('/env'))), { url: null, host: null });

    const attached = await json<{ app: string; database: DatabaseBody }>(
      await api.request('PUT', '/api/apps/dbapp/database', { body: { name: 'notes-db' } }),
      200,
    );
    assert.equal(attached.app, 'dbapp');
    await json(await api.request('PUT', '/api/apps/dbapp/database', { body: { name: 'notes-db' } }), 200); // idempotent
    const env = JSON.parse(
      await eventually(
        'every machine to have DATABASE_URL',
        async () => {
          const e = await onEvery('dbapp')('/env');
          return e?.includes('postgres://') ? e : undefined;
        },
        { timeoutMs: 90_000 },
      ),
    ) as { url: string; host: string };
    assert.equal(env.url, `postgres://app:***@${up.host}:5432/notes-db`);
    assert.equal(await eventually('a row written', () => app('/write/a'), { timeoutMs: 30_000 }), 'a');
    assert.equal(await app('/write/b'), 'a,b');
    await eventually('attached_to', async () => (await list()).find((x) => x.name === 'notes-db')?.attached_to === 'dbapp');

    // One app per database; an attached database is not deleted.
    await json(await api.request('POST', '/api/apps', { body: { name: 'other' } }), 201);
    const taken = await json<{ error: string }>(await api.request('PUT', '/api/apps/other/database', { body: { name: 'notes-db' } }), 409);
    assert.match(taken.error, /attached to app dbapp/);
    const held = await json<{ error: string }>(await api.request('DELETE', '/api/databases/notes-db'), 409);
    assert.match(held.error, /detach it first \(DELETE \/apps\/dbapp\/database\)/);
    await json(await api.request('PUT', '/api/apps/other/database', { body: { name: 'nosuch' } }), 404);

    // A redeploy (new variables roll the machines) keeps the data.
    const machines = async () =>
      (await api.kube.core.listNamespacedPod({ namespace: ns, labelSelector: 'svc.dev/app=dbapp' })).items
        .filter((p) => !p.metadata!.deletionTimestamp)
        .map((p) => p.metadata!.name!);
    const [before] = await machines();
    await json(await api.request('PATCH', '/api/apps/dbapp/env', { body: { COLOR: 'blue' } }), 200);
    await eventually(
      'a new machine serving the rows',
      async () => {
        const now = await machines();
        return now.length === 1 && now[0] !== before && (await app('/')) === 'a,b';
      },
      { timeoutMs: 90_000 },
    );

    await json(await api.request('DELETE', '/api/apps/dbapp/database'), 204);
    await eventually(
      'the variables gone from every machine',
      async () => (await onEvery('dbapp')('/env')) === JSON.stringify({ url: null, host: null }),
      { timeoutMs: 90_000 },
    );
    await json(await api.request('DELETE', '/api/apps/dbapp/database'), 400);
    const kinds = (
      await json<{ events: Array<{ type: string }> }>(await api.request('GET', '/api/events?kinds=database.*'), 200)
    ).events.map((e) => e.type);
    assert.deepEqual(kinds, ['database.created', 'database.ready', 'database.attached', 'database.detached']);
  });

  it('is neither listed to nor attachable by another account', async () => {
    const other = await createAccount(api.db, api.kube.core, { email: `other-${Date.now()}@example.test` });
    const { token } = await api.deps.tokens.issue(other.id, { name: 'other' });
    try {
      assert.deepEqual(await list(token), []);
      await json(await api.request('POST', '/api/apps', { token, body: { name: 'thief' } }), 201);
      await json(await api.request('PUT', '/api/apps/thief/database', { token, body: { name: 'notes-db' } }), 404);
      await json(await api.request('DELETE', '/api/databases/notes-db', { token }), 404);
    } finally {
      await api.kube.core.deleteNamespace({ name: other.namespace }).catch(() => undefined);
    }
  });

  it('deletes with Drop: server, volume and credentials go; with Retain the volume stays and a database of its name takes it up again', async () => {
    const o = databaseObjects('notes-db');
    await json(await api.request('DELETE', '/api/databases/notes-db'), 204);
    await eventually(
      'the server, volume and credentials gone',
      async () => {
        const [pods, claims, secrets] = await Promise.all([
          api.kube.core.listNamespacedPod({ namespace: ns, labelSelector: 'svc.dev/database=notes-db' }),
          api.kube.core.listNamespacedPersistentVolumeClaim({ namespace: ns }),
          api.kube.core.listNamespacedSecret({ namespace: ns }),
        ]);
        return (
          pods.items.length === 0 &&
          !claims.items.some((c) => c.metadata!.name === o.claim) &&
          !secrets.items.some((s) => s.metadata!.name === o.secret)
        );
      },
      { timeoutMs: 60_000 },
    );
    assert.ok(!(await list()).some((d) => d.name === 'notes-db'));

    const k = databaseObjects('kept');
    await json(await api.request('POST', '/api/databases', { body: { name: 'kept', deletion_policy: 'retain' } }), 201);
    await ready('kept');
    const claim = await api.kube.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: k.claim });
    await json(await api.request('DELETE', '/api/databases/kept'), 204);
    await eventually('the database gone', async () => !(await list()).some((d) => d.name === 'kept'), { timeoutMs: 60_000 });
    const kept = await api.kube.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: k.claim });
    assert.equal(kept.metadata!.uid, claim.metadata!.uid, 'the same volume');
    assert.ok(!kept.metadata!.ownerReferences?.length, 'no longer owned by the deleted database');
    await api.kube.core.readNamespacedSecret({ namespace: ns, name: k.secret });
    // Created again: the kept volume and its credentials serve it.
    await json(await api.request('POST', '/api/databases', { body: { name: 'kept' } }), 201);
    await ready('kept');
    const again = await api.kube.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: k.claim });
    assert.equal(again.metadata!.uid, claim.metadata!.uid);
    await json(await api.request('DELETE', '/api/databases/kept'), 204);
  });
  it("gives a preview of an app with a database a branch: the parent's rows, its own writes, gone with the preview", async () => {
    const parent = await dbWithApp('trunk', 'brapp');
    assert.equal(await eventually('a row in the parent', () => parent('/write/a'), { timeoutMs: 60_000 }), 'a');
    assert.equal(await parent('/write/b'), 'a,b');

    const started = Date.now();
    const created = await json<{ preview: { app: string; database: string }; deploy: { id: string } | null }>(
      await api.request('POST', '/api/apps/brapp/previews', { body: { ref: 'feat' } }),
      201,
    );
    assert.match(created.preview.database, /^trunk-[0-9a-f]{6}$/);
    const preview = on(created.preview.app);
    const branch = await eventually(
      'the branch Ready',
      async () => (await list()).find((x) => x.name === created.preview.database && x.phase === 'Ready'),
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    console.log(`# preview branch Ready ${Date.now() - started} ms after the preview was created`);
    assert.equal(branch.attached_to, created.preview.app);
    assert.notEqual(branch.host, (await list()).find((x) => x.name === 'trunk')!.host, 'a server of its own');
    // The preview's machine starts once its branch is Ready; when it is live, its reads are the branch's.
    assert.ok(created.deploy, 'the preview was deployed from its parent');
    await live(created.deploy.id);
    assert.equal(await eventually("the preview reads the parent's rows", () => preview('/'), { timeoutMs: 60_000 }), 'a,b');
    assert.equal(await preview('/write/c'), 'a,b,c');
    assert.equal(await parent('/write/d'), 'a,b,d', "the preview's write did not reach the parent");
    assert.equal(await preview('/'), 'a,b,c', "nor the parent's the preview");

    await json(await api.request('DELETE', `/api/apps/brapp/previews/feat`), 204);
    await eventually('the branch gone with its preview', async () => !(await list()).some((x) => x.name === branch.name), {
      timeoutMs: 60_000,
    });
    await eventually(
      'its volume gone',
      async () =>
        !(await api.kube.core.listNamespacedPersistentVolumeClaim({ namespace: ns })).items.some(
          (c) => c.metadata?.name === databaseObjects(branch.name).claim,
        ),
      { timeoutMs: 60_000 },
    );
    const branchEvents = async () =>
      (
        await json<{ events: Array<{ type: string; subject: string }> }>(await api.request('GET', '/api/events?kinds=database.*'), 200)
      ).events
        .filter((e) => e.subject === branch.name)
        .map((e) => e.type);
    await eventually("the branch's deletion told", async () => (await branchEvents()).includes('database.deleted'));
    assert.deepEqual(await branchEvents(), ['database.created', 'database.ready', 'database.deleted']);
    assert.equal(await parent('/'), 'a,b,d', 'the parent keeps its rows');
    await json(await api.request('DELETE', '/api/apps/brapp/database'), 204);
    await json(await api.request('DELETE', '/api/databases/trunk'), 204);
  });

  it('backs a database up (nightly by a CronJob, now on request) into the artifact store and restores it into a new database, rows and all', async () => {
    const bk = await dbWithApp('src-bk', 'bkapp');
    assert.equal(await eventually('a row', () => bk('/write/x'), { timeoutMs: 60_000 }), 'x');
    assert.equal(await bk('/write/y'), 'x,y');

    const cron = await eventually('the nightly CronJob', () =>
      api.kube.kc
        .makeApiClient(k8s.BatchV1Api)
        .readNamespacedCronJob({ namespace: ns, name: 'db-src-bk-backup' })
        .catch(() => undefined),
    );
    assert.equal(cron.spec?.schedule, '30 3 * * *');
    assert.equal(cron.spec?.concurrencyPolicy, 'Forbid');

    // Now, through the CLI: it waits until the backup is stored.
    const { execFile } = await import('node:child_process');
    const env = { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token };
    const run = (...args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [path.join(repoRoot, 'bin/svc.js'), ...args], { env }, (err, out, errOut) =>
          err ? reject(new Error(`${err.message}${errOut}`)) : resolve(out),
        ),
      );
    const made = JSON.parse(await run('db', 'backup', 'src-bk', '--json')) as { id: string; status: string; bytes: number };
    assert.equal(made.status, 'done');
    assert.ok(made.bytes > 0);
    assert.match(
      await run('db', 'backups', 'src-bk'),
      new RegExp(`^ID\\s+STATUS\\s+BYTES\\s+TAKEN\\s+ERROR\\n${made.id}\\s+done\\s+${made.bytes}\\s`, 'm'),
    );
    const events = (
      await json<{ events: Array<{ type: string; subject: string; data: { backup?: string } }> }>(
        await api.request('GET', '/api/events?kinds=database.backup_done'),
        200,
      )
    ).events;
    assert.ok(
      events.some((e) => e.subject === 'src-bk' && e.data.backup === made.id),
      'database.backup_done recorded',
    );

    // A failure, as a backup Job reports one (its credential opens this database's backups only).
    const key = api.deps.config.deploys.artifactKey!;
    const soon = new Date(Date.now() + 60_000);
    const report = (db: string, token: string) =>
      fetch(`${api.url}/backups/${ns}/src-bk/failed`, {
        method: 'POST',
        headers: { authorization: `Bearer ${mintBackupCredential(key, ns, db, soon)}`, 'content-type': 'text/plain' },
        body: token,
      });
    assert.equal((await report('other-db', 'x')).status, 403, 'a credential of another database adds nothing here');
    assert.equal((await fetch(`${api.url}/backups/${ns}/src-bk`, { method: 'PUT', body: 'x' })).status, 401);
    for (const odd of [`/backups/..%2f${ns}/src-bk`, `/backups/${ns}/src-bk/extra`, `/backups/${ns}/Src_Bk`, `/backups/${ns}`]) {
      assert.equal((await fetch(`${api.url}${odd}`, { method: 'PUT', body: 'x' })).status, 404, odd);
    }
    assert.equal(
      (await fetch(`${api.url}/backups/${ns}/src-bk`, { method: 'GET' })).status,
      405,
      'backups are only added, never read back here',
    );
    assert.equal(
      (await report('src-bk', 'x'.repeat(5000))).status,
      413,
      'a report longer than the Job ever sends is refused, nothing recorded',
    );
    assert.equal((await report('src-bk', 'pg_dump: error: boom')).status, 201);
    const failed = (
      await json<{ backups: Array<{ id: string; status: string; error: string | null }> }>(
        await api.request('GET', '/api/databases/src-bk/backups'),
        200,
      )
    ).backups[0]!;
    assert.deepEqual([failed.status, failed.error], ['failed', 'pg_dump: error: boom']);
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('POST', '/api/databases', { body: { name: 'from-failed', restore_from: { backup: failed.id } } }),
          409,
        )
      ).error,
      /failed \(pg_dump: error: boom\)/,
    );
    await json(
      await api.request('POST', '/api/databases', { body: { name: 'from-nothing', restore_from: { backup: 'bk-0000000000000000' } } }),
      404,
    );
    await json(await api.request('GET', '/api/databases/no-such/backups'), 404);

    // Restored into a new database: the rows are there, and the source goes on by itself.
    assert.equal(await bk('/write/z'), 'x,y,z', 'a write after the backup');
    const restored = JSON.parse(await run('db', 'restore', made.id, 'restored', '--json')) as DatabaseBody;
    assert.equal(restored.phase, 'Ready');
    await json(await api.request('DELETE', '/api/apps/bkapp/database'), 204);
    await json(await api.request('PUT', '/api/apps/bkapp/database', { body: { name: 'restored' } }), 200);
    const every = onEvery('bkapp');
    assert.equal(
      await eventually(
        'the app on the restored database',
        async () => ((await every('/env'))?.includes(restored.host!) ? every('/') : undefined),
        { timeoutMs: 90_000 },
      ),
      'x,y',
      'the rows as they were when backed up',
    );
    await json(await api.request('DELETE', '/api/apps/bkapp/database'), 204);
    for (const name of ['restored', 'src-bk']) await json(await api.request('DELETE', `/api/databases/${name}`), 204);
    // A deleted database's backups stay listed, and restorable.
    assert.ok(
      (await json<{ backups: Array<{ id: string }> }>(await api.request('GET', '/api/databases/src-bk/backups'), 200)).backups.some(
        (b) => b.id === made.id,
      ),
    );
  });

  it('svc db creates (waiting until Ready), lists, attaches, detaches and removes', async () => {
    const { execFile } = await import('node:child_process');
    const svc = path.join(repoRoot, 'bin/svc.js');
    const env = { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token };
    const run = (...args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [svc, ...args], { env }, (err, out, errOut) =>
          err ? reject(new Error(`${err.message}${errOut}`)) : resolve(out),
        ),
      );
    // 128 MiB: a volume is a filesystem of its size (decision 0023), and an initialised cluster takes about 46 MiB.
    const created = JSON.parse(await run('db', 'create', 'cli-db', '--size', String(128 << 20), '--json')) as DatabaseBody;
    assert.equal(created.phase, 'Ready');
    assert.match(
      await run('db', 'ls'),
      /^NAME\s+PHASE\s+APP\s+SIZE\s+USED\s+ON DELETE\ncli-db\s+Ready\s+-\s+128 MiB\s+(-|\d+(\.\d)? (B|KiB|MiB|GiB))\s+drop/m,
    );
    await json(await api.request('POST', '/api/apps', { body: { name: 'cli-app' } }), 201);
    assert.match(await run('db', 'attach', 'cli-db', 'cli-app'), /cli-db attached to cli-app/);
    await assert.rejects(run('db', 'rm', 'cli-db'), /409 database cli-db is attached to app cli-app/);
    assert.match(await run('db', 'detach', 'cli-app'), /detached from cli-app/);
    assert.match(await run('db', 'rm', 'cli-db'), /cli-db deleted/);
  });

  it("refuses a database beyond the account's count or storage limit, naming it", async () => {
    const limited = await startTestApi({ env: { SVC_DATABASE_MAX_PER_ACCOUNT: '1', SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: String(3 << 26) } });
    try {
      const post = (body: unknown) => limited.request('POST', '/api/databases', { body });
      const big = await json<{ error: string }>(await post({ name: 'big', storage_bytes: 4 << 26 }), 403);
      assert.match(big.error, /over its limit of 201326592 bytes \(0 in use\)/);
      await json(await post({ name: 'small', storage_bytes: 2 << 26 }), 201);
      const stored = async () =>
        (await json<{ meters: { stored_bytes: number } }>(await limited.request('GET', '/api/account/usage'), 200)).meters.stored_bytes;
      limited.clock.advance(1000); // usage is of [start of month, now): a sample counts from its instant on
      assert.equal(await stored(), 2 << 26, 'its volume counts as stored');
      const more = await json<{ error: string }>(await post({ name: 'another', storage_bytes: 2 << 26 }), 403);
      assert.match(more.error, /the account has 1 databases \(branches included\), its limit is 1; delete one first/);
      // Databases are the account's: a token restricted to apps cannot list them.
      const { token } = await limited.deps.tokens.issue(limited.account.id, {
        name: 'narrow',
        restrictions: [{ kind: 'apps', apps: ['x'] }],
      });
      await json(await limited.request('GET', '/api/databases', { token }), 403);
      limited.clock.advance(1000);
      await json(await limited.request('DELETE', '/api/databases/small'), 204);
      limited.clock.advance(1000);
      assert.equal(await stored(), 0, 'dropped, it is stored no more');
    } finally {
      await limited.close();
    }
  });
  it("says when the account's quota keeps its server from starting, and starts it once there is room", async () => {
    // A second quota in the namespace, as full as can be: every quota of a namespace applies.
    await api.kube.core.createNamespacedResourceQuota({
      namespace: ns,
      body: { metadata: { name: 'tiny' }, spec: { hard: { 'limits.cpu': '100m' } } },
    });
    try {
      await json(await api.request('POST', '/api/databases', { body: { name: 'squeezed' } }), 201);
      const failed = await eventually(
        'the quota said',
        async () => (await list()).find((d) => d.name === 'squeezed' && d.phase === 'Failed'),
        { timeoutMs: 30_000 },
      );
      assert.match(failed.message ?? '', /the server cannot start: the account's exceeded quota: tiny/);
    } finally {
      await api.kube.core.deleteNamespacedResourceQuota({ namespace: ns, name: 'tiny' });
    }
    await ready('squeezed');
    await json(await api.request('DELETE', '/api/databases/squeezed'), 204);
  });
});
