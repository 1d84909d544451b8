// The cloudnative-pg provider against CloudNativePG itself: the operator v1.30.0 (built from its Go
// module, hack/build-cnpg.sh; installed from its release manifest, hack/cnpg.sh operator) running on
// the local nodes, its instances on Debian's PostgreSQL (svc/cnpg-postgres). A Database made through
// the API becomes a Cluster of a primary and a standby that the operator brings up; the attached
// app's machines write and read rows through DATABASE_URL; the primary's pod is deleted, the
// operator promotes the standby, and the app, reaching the same Service name, goes on with its rows;
// a backup into the object store is restored into a new Cluster, rows and all; a preview's branch is
// a logical copy of it on a server of our own; deleting the Database takes the Cluster with it. The timings go to the output.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { repoRoot } from '../../lib/paths.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromApp } from '../support/app-traffic.js';
import { dbAppScript } from '../support/db-app.js';
import { images } from '../support/images.js';
import { eventually } from '../support/wait.js';

const cluster = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters' };
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface Cluster {
  metadata: { ownerReferences?: Array<{ kind: string; name: string }> };
  spec: Record<string, unknown>;
  status?: { currentPrimary?: string; targetPrimary?: string; readyInstances?: number; instances?: number; phase?: string };
}

describe('Databases on CloudNativePG (the operator running)', { timeout: 900_000 }, () => {
  let api: TestApi;
  let ns: string;
  const timings: string[] = [];
  const json = expectJson;
  const database = async (name: string) =>
    (
      await json<{ databases: Array<{ name: string; phase: string; message: string | null; host: string | null }> }>(
        await api.request('GET', '/api/databases'),
        200,
      )
    ).databases.find((d) => d.name === name);
  const clusterOf = async (name: string) =>
    (await api.kube.kc
      .makeApiClient(k8s.CustomObjectsApi)
      .getNamespacedCustomObject({ ...cluster, namespace: ns, name })
      .catch(() => undefined)) as Cluster | undefined;
  /** GET `path` of the app's machines: the body of a 200, else it throws what it got. */
  const app = async (p: string) => {
    const r = await getFromApp(ns, 'cnpgapp', p);
    if (!r) throw new Error('the app has no ready machine');
    if (r.status !== 200) throw new Error(`the app answered ${r.status}: ${r.body.slice(0, 200)}`);
    return r.body;
  };

  before(async () => {
    const { stdout } = await promisify(execFile)(path.join(repoRoot, 'hack/cnpg.sh'), ['operator'], { timeout: 300_000 });
    console.log(`# ${stdout.trim()}`);
    api = await startTestApi({ env: { SVC_DATABASE_PROVIDER: 'cloudnative-pg' } });
    ns = api.account.namespace;
  });
  after(async () => {
    await api?.close();
    if (timings.length) console.log(`# cloudnative-pg: ${timings.join(', ')}`);
  });

  it("runs a Database as a primary and a standby; the app keeps its rows when the primary is deleted and the standby promoted, in a restore of its backup, and in a preview's branch", async () => {
    const started = Date.now();
    await json(await api.request('POST', '/api/databases', { body: { name: 'pg1', storage_bytes: 256 << 20 } }), 201);
    const made = await eventually('the Cluster', () => clusterOf('db-pg1'));
    assert.equal(made.spec.instances, 2);
    // A commit waits for the standby: what the app was told is written survives the failover below.
    assert.partialDeepStrictEqual(made.spec.postgresql, { synchronous: { method: 'any', number: 1, dataDurability: 'preferred' } });
    assert.equal(made.spec.imageName, images.cnpgPostgres);
    // What the provider wrote, with what the operator's webhook added (encoding, locale) beside it.
    assert.partialDeepStrictEqual(made.spec.bootstrap, {
      initdb: { database: 'pg1', owner: 'app', secret: { name: 'db-pg1-credentials' } },
    });
    assert.deepEqual(
      made.metadata.ownerReferences?.map((o) => [o.kind, o.name]),
      [['Database', 'pg1']],
    );

    // Ready once the operator reports the Cluster healthy: both instances up.
    let last = '';
    const ready = await eventually(
      'the Database Ready',
      async () => {
        const d = await database('pg1');
        last = `${d?.phase}: ${d?.message}`;
        return d?.phase === 'Ready' ? d : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 1000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last: ${last}`);
    });
    timings.push(`created to Ready ${seconds(Date.now() - started)}`);
    assert.match(ready.message ?? '', /^CloudNativePG: Cluster in healthy state; PostgreSQL accepts connections at/);
    const healthy = (await clusterOf('db-pg1'))!;
    assert.equal(healthy.status?.readyInstances, 2);
    const primary = healthy.status.currentPrimary!;
    const service = await api.kube.core.readNamespacedService({ namespace: ns, name: 'db-pg1' });
    assert.equal(ready.host, service.spec?.clusterIP);

    // Attached: the app's machines write and read through DATABASE_URL, the primary's Service.
    await json(await api.request('POST', '/api/apps', { body: { name: 'cnpgapp' } }), 201);
    await json(await api.request('PUT', '/api/apps/cnpgapp/database', { body: { name: 'pg1' } }), 200);
    const d = await json<{ id: string }>(
      await api.request('POST', '/api/apps/cnpgapp/deploy', { body: { image: images.runtime, command: ['node', '-e', dbAppScript] } }),
      202,
    );
    await eventually(
      `deploy ${d.id} live`,
      async () => {
        const got = await json<{ status: string; reason: string | null }>(await api.request('GET', `/api/deploys/${d.id}`), 200);
        if (got.status === 'failed') throw new Error(`deploy ${d.id} failed: ${got.reason}`);
        return got.status === 'live';
      },
      { timeoutMs: 120_000 },
    );
    assert.equal(await eventually('a row written', () => app('/write/a'), { timeoutMs: 60_000 }), 'a');
    assert.equal(await app('/write/b'), 'a,b');

    // The primary's pod deleted: the operator promotes the standby, the Service follows the new
    // primary, and the app (a connection per request to the same name) reads its rows and writes.
    const failed = Date.now();
    await api.kube.core.deleteNamespacedPod({ namespace: ns, name: primary, gracePeriodSeconds: 0 });
    const promoted = await eventually(
      'the standby promoted',
      async () => {
        const s = (await clusterOf('db-pg1'))?.status;
        return s?.currentPrimary && s.currentPrimary !== primary && s.targetPrimary === s.currentPrimary ? s.currentPrimary : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    timings.push(`primary deleted to standby promoted ${seconds(Date.now() - failed)}`);
    assert.notEqual(promoted, primary);
    const after = await eventually(
      'the app writing through the new primary',
      async () => {
        const rows = await app('/').catch(() => undefined);
        if (rows !== 'a,b') return undefined;
        return app('/write/c').catch(() => undefined);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    timings.push(`primary deleted to the app writing again ${seconds(Date.now() - failed)}`);
    assert.equal(after, 'a,b,c', 'the rows written before the failover are there, and new ones go in');
    const back = await eventually('the Database Ready again', async () => ((await database('pg1'))?.phase === 'Ready' ? true : undefined), {
      timeoutMs: 300_000,
      intervalMs: 1000,
    });
    assert.ok(back);

    // Backed up as a server of our own is (a logical dump by a Job of the platform's image, from the
    // primary's Service, into the object store), nightly and now through the CLI, which waits for it.
    const cron = await eventually('the nightly CronJob', () =>
      api.kube.kc
        .makeApiClient(k8s.BatchV1Api)
        .readNamespacedCronJob({ namespace: ns, name: 'db-pg1-backup' })
        .catch(() => undefined),
    );
    assert.equal(cron.spec?.concurrencyPolicy, 'Forbid');
    const env = { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token };
    const svc = async (...args: string[]) =>
      (await promisify(execFile)(process.execPath, [path.join(repoRoot, 'bin/svc.js'), ...args], { env, timeout: 600_000 })).stdout;
    const backedUp = Date.now();
    const taken = JSON.parse(await svc('db', 'backup', 'pg1', '--json')) as { id: string; status: string; bytes: number; digest?: string };
    timings.push(`backup ${seconds(Date.now() - backedUp)}`);
    assert.equal(taken.status, 'done');
    assert.ok(taken.bytes > 0);
    assert.equal(await app('/write/d'), 'a,b,c,d', 'a write after the backup');

    // Restored into a new CloudNativePG database: the Cluster bootstraps empty, a Job loads the dump
    // in one transaction, and only then is the Database Ready (and its app let in).
    const restoring = Date.now();
    const restored = JSON.parse(await svc('db', 'restore', taken.id, 'pg2', '--json')) as { phase: string; host: string; message: string };
    timings.push(`restore into a new Cluster, to Ready ${seconds(Date.now() - restoring)}`);
    assert.equal(restored.phase, 'Ready', restored.message);
    assert.equal((await clusterOf('db-pg2'))?.spec.instances, 2, 'a Cluster, as the provider makes them');
    const job = await api.kube.kc.makeApiClient(k8s.BatchV1Api).readNamespacedJob({ namespace: ns, name: 'db-pg2-restore' });
    assert.equal(job.status?.succeeded, 1);
    await json(await api.request('DELETE', '/api/apps/cnpgapp/database'), 204);
    await json(await api.request('PUT', '/api/apps/cnpgapp/database', { body: { name: 'pg2' } }), 200);
    assert.equal(
      await eventually(
        'the app on the restored database',
        async () => ((await app('/env').catch(() => ''))?.includes(restored.host) ? app('/') : undefined),
        {
          timeoutMs: 120_000,
          intervalMs: 1000,
        },
      ),
      'a,b,c',
      'the rows as they were when backed up',
    );
    assert.equal(await app('/write/e'), 'a,b,c,e', 'and it writes');

    // A preview gets a branch: a server of our own holding a logical copy of the Cluster's database
    // (there is no replication role of ours there), its own writes its own, gone with the preview.
    const previewed = Date.now();
    const created = await json<{ preview: { app: string; database: string }; deploy: { id: string } | null }>(
      await api.request('POST', '/api/apps/cnpgapp/previews', { body: { ref: 'feat' } }),
      201,
    );
    assert.match(created.preview.database, /^pg2-[0-9a-f]{6}$/);
    const branch = await eventually(
      'the branch Ready',
      async () => {
        const b = await database(created.preview.database);
        last = `${b?.phase}: ${b?.message}`;
        return b?.phase === 'Ready' ? b : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last: ${last}`);
    });
    timings.push(`preview's branch Ready ${seconds(Date.now() - previewed)}`);
    assert.notEqual(branch.host, restored.host, 'a server of its own');
    assert.equal(await clusterOf(`db-${branch.name}`), undefined, 'not a Cluster: a preview needs no failover');
    const preview = async (p: string) => {
      const r = await getFromApp(ns, created.preview.app, p);
      if (r?.status !== 200) throw new Error(`the preview answered ${r?.status}: ${r?.body.slice(0, 200)}`);
      return r.body;
    };
    assert.equal(
      await eventually("the preview reads the parent's rows", () => preview('/').catch(() => undefined), { timeoutMs: 120_000 }),
      'a,b,c,e',
    );
    assert.equal(await preview('/write/f'), 'a,b,c,e,f');
    assert.equal(await app('/'), 'a,b,c,e', "the preview's write did not reach the Cluster");
    await json(await api.request('DELETE', '/api/apps/cnpgapp/previews/feat'), 204);
    await eventually('the branch gone with its preview', async () => !(await database(branch.name)), { timeoutMs: 120_000 });

    // Detached and deleted: the Cluster (its instances, volumes) goes with the Database.
    await json(await api.request('DELETE', '/api/apps/cnpgapp/database'), 204);
    for (const name of ['pg1', 'pg2']) await json(await api.request('DELETE', `/api/databases/${name}`), 204);
    await eventually('the Databases gone', async () => !(await database('pg1')) && !(await database('pg2')), { timeoutMs: 120_000 });
    await eventually('the Clusters gone with them', async () => !(await clusterOf('db-pg1')) && !(await clusterOf('db-pg2')), {
      timeoutMs: 120_000,
    });
  });
});
