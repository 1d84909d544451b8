// Attack suite, issue 30 finding 2: a preview's branch is another database. The attack as reported:
// a preview made with a token restricted to its app (or by anyone who can push a branch of an
// imported repository) runs `COPY ... TO PROGRAM 'psql -h <parent> ...'` on its branch and writes
// into the parent's production database, because the tenant role was the server's superuser, the
// branch's Secret held the parent's password and the branch's server could reach the parent's.
// Here, on the real nodes, from the preview's own machine: its role is no superuser (no programs,
// no server files, no untrusted extensions; a trusted one works), its passwords are not the
// parent's, it reaches neither the parent's server nor (through its branch's server) a way back;
// the parent's rows are untouched. The same for a preview made by a pushed branch, and for a
// database restored from a backup (whose dump is loaded as the tenant). A server made before all
// this (its tenant the bootstrap superuser) is converted on its first start on the new image; a
// credentials Secret written before replication passwords gets one when the API starts.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { DatabaseRepository } from '../../api/repositories/databases.js';
import { dataClaim, serverPod } from '../../controllers/database/desired.js';
import { credentialKeys, databaseObjects, replicationKey } from '../../lib/databases.js';
import type { Database } from '../../lib/resources/index.js';
import { mergePatch } from '../../lib/kube/client.js';
import { createLogger } from '../../lib/logger.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromApp, getFromEveryMachine } from '../support/app-traffic.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { images } from '../support/images.js';
import { kubectl } from '../support/kube.js';
import { eventually } from '../support/wait.js';

/**
 * The attacker's app, a handler tree (so that Git import builds it: api/<op>, run by the runtime
 * image, whose dependencies hold `pg`): /api/sql runs one statement on its database (or on `url`),
 * /api/connect opens a TCP connection, /api/has says whether any of its environment's values holds
 * `v`, /api/env whether it has a database.
 */
const attacker = `
const net = require('net');
const { Client } = require('/app/node_modules/pg');
const attempt = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port: Number(port) });
  const t = setTimeout(() => { s.destroy(); resolve('timeout'); }, 3000);
  s.once('connect', () => { clearTimeout(t); s.destroy(); resolve('connected'); });
  s.once('error', (e) => { clearTimeout(t); resolve(e.code); });
});
module.exports = async function handler(req, ctx) {
  const p = new URL(req.url).searchParams;
  switch (ctx.params.op) {
    case 'env': return { url: Boolean(process.env.DATABASE_URL), host: process.env.PGHOST || null };
    case 'has': return { has: Object.values(process.env).some((v) => v.includes(p.get('v'))) };
    case 'connect': return { connect: await attempt(p.get('host'), p.get('port')) };
    case 'sql': {
      const c = new Client({ connectionString: p.get('url') || process.env.DATABASE_URL, connectionTimeoutMillis: 4000 });
      try { await c.connect(); const res = await c.query(p.get('q')); return { rows: res.rows }; }
      catch (e) { return { error: e.message }; }
      finally { c.end().catch(() => undefined); }
    }
    default: return { ok: true };
  }
};
`;
const tree = { 'api/[op].cjs': attacker };

/** How a server was made before its tenant stopped being a superuser (the entrypoint of then), with a row. */
const legacyServer = `set -e
B=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
mkdir -p "$PGDATA" && chmod 0700 "$PGDATA"
printf '%s' "$PGPASSWORD" >/tmp/pw
"$B/initdb" --pgdata="$PGDATA" --username="$PGUSER" --pwfile=/tmp/pw --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
echo "CREATE DATABASE \\"$PGDATABASE\\" OWNER \\"$PGUSER\\"" | "$B/postgres" --single -D "$PGDATA" -j postgres >/dev/null 2>&1
"$B/pg_ctl" --pgdata="$PGDATA" --wait --silent --log=/tmp/server.log -o "-c listen_addresses='' -c unix_socket_directories=/tmp" start
psql -qAt -h /tmp -v ON_ERROR_STOP=1 -c "create table notes (v text)" -c "insert into notes values ('made before')" -c "select rolsuper from pg_roles where rolname = current_user"
"$B/pg_ctl" --pgdata="$PGDATA" --wait --silent --mode=fast stop
`;

type Answer = { rows?: Array<Record<string, unknown>>; error?: string };

describe("a preview's branch is another database (issue 30 finding 2)", { timeout: 600_000 }, () => {
  let api: TestApi;
  let ns: string;
  let git: GitServer;
  let hook: { path: string; secret: string };
  const json = expectJson;
  const databases = async () =>
    (
      await json<{ databases: Array<{ name: string; phase: string; host: string | null; attached_to: string | null }> }>(
        await api.request('GET', '/api/databases'),
        200,
      )
    ).databases;
  const ready = (name: string) =>
    eventually(`database ${name} Ready`, async () => (await databases()).find((d) => d.name === name && d.phase === 'Ready'), {
      timeoutMs: 120_000,
      intervalMs: 250,
    });
  /** GET `path` on a machine of `app`, parsed. */
  const ask = async <T>(app: string, path: string): Promise<T> => {
    const r = await eventually(
      `${app} answering ${path}`,
      async () => {
        const a = await getFromApp(ns, app, path).catch(() => undefined);
        return a?.status === 200 ? a : undefined;
      },
      { timeoutMs: 60_000 },
    );
    return JSON.parse(r.body) as T;
  };
  const sql = (app: string, q: string, url?: string) =>
    ask<Answer>(app, `/api/sql?q=${encodeURIComponent(q)}${url ? `&url=${encodeURIComponent(url)}` : ''}`);
  const secret = async (database: string) => {
    const s = await api.kube.core.readNamespacedSecret({ namespace: ns, name: databaseObjects(database).secret });
    return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
  };
  /** Runs `script` in a database's server container (what only an operator can do), its output and exit code. */
  const inServer = async (database: string, script: string) => {
    const out = await kubectl(
      'exec',
      '-n',
      ns,
      databaseObjects(database).pod,
      '-c',
      'postgres',
      '--',
      'sh',
      '-c',
      `${script}; echo "rc=$?"`,
    );
    const rc = Number(/rc=(\d+)\s*$/.exec(out)?.[1]);
    return { out: out.replace(/rc=\d+\s*$/, '').trim(), rc };
  };
  const push = (body: unknown) => {
    const raw = JSON.stringify(body);
    return fetch(`${api.url}${hook.path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', hook.secret).update(raw).digest('hex')}`,
      },
      body: raw,
    });
  };
  let parentHost: string;
  let appToken: string;
  let preview: { app: string; database: string };
  let pushed: { app: string; build: string };

  before(async () => {
    api = await startTestApi({
      env: { SVC_BUILD_REGISTRY: images.registry, SVC_IMAGE_BUILDER: images.builder, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
    ns = api.account.namespace;
    git = await startGitServer(new URL(api.deps.config.deploys.artifactBaseUrl).hostname);
    // The parent: an app imported from Git (so that a push makes a preview), with its database.
    git.commit('shop', 'main', tree);
    await json(await api.request('POST', '/api/databases', { body: { name: 'prod', storage_bytes: 128 << 20 } }), 201);
    const imported = await json<{ build: { id: string }; repository: { hook_path: string; hook_secret: string } }>(
      await api.request('POST', '/api/apps/imports', { body: { repository: `${git.base}/shop.git` } }),
      202,
    );
    hook = { path: imported.repository.hook_path, secret: imported.repository.hook_secret };
    await eventually(
      'the import built',
      async () => {
        const b = await json<{ status: string; message: string | null }>(await api.request('GET', `/api/builds/${imported.build.id}`), 200);
        if (b.status === 'failed' || b.status === 'canceled') throw new Error(`the import's build ${b.status}: ${b.message}`);
        return b.status === 'succeeded';
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    parentHost = (await ready('prod')).host!;
    await json(await api.request('PUT', '/api/apps/shop/database', { body: { name: 'prod' } }), 200);
    await eventually(
      'every machine of shop on prod',
      async () => (await getFromEveryMachine(ns, 'shop', '/api/env'))?.includes(parentHost),
      { timeoutMs: 120_000 },
    );
    assert.deepEqual(await sql('shop', 'create table notes (v text)'), { rows: [] });
    assert.deepEqual(await sql('shop', "insert into notes values ('production')"), { rows: [] });

    // The attacker holds a token restricted to the app, and makes a preview with it...
    ({ token: appToken } = await api.deps.tokens.issue(api.account.id, {
      name: 'shop-only',
      restrictions: [{ kind: 'apps', apps: ['shop'] }],
    }));
    preview = (
      await json<{ preview: { app: string; database: string } }>(
        await api.request('POST', '/api/apps/shop/previews', { token: appToken, body: { ref: 'feat' } }),
        201,
      )
    ).preview;
    // ...or pushes a branch: its preview is built meanwhile.
    const commit = git.commit('shop', 'attack', { ...tree, 'README.md': 'a branch' });
    const told = await json<{ build: string }>(await push({ ref: 'refs/heads/attack', after: commit }), 202);
    pushed = { app: 'shop--attack', build: told.build };
    await ready(preview.database);
    await eventually(
      `${preview.app} on its branch`,
      async () => (await getFromEveryMachine(ns, preview.app, '/api/env'))?.includes('"url":true'),
      { timeoutMs: 120_000 },
    );
    // Ready in its status is its pod's readiness; its Service routes a moment later (kube-proxy, and
    // the policies of a machine and a server both new): the attacks start once the preview's
    // machine really reaches its branch.
    await eventually(`${preview.app} answered by its branch`, async () => (await sql(preview.app, 'select 1')).error === undefined, {
      timeoutMs: 90_000,
      intervalMs: 500,
    });
  });
  after(async () => {
    await git?.close();
    await api?.close();
  });

  it("gives the preview's code a role that is no superuser: no programs, no server files, no untrusted extensions; trusted ones work", async () => {
    const me = await sql(
      preview.app,
      'select rolsuper, rolcreaterole, rolreplication, rolbypassrls from pg_roles where rolname = current_user',
    );
    assert.deepEqual(me.rows, [{ rolsuper: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false }]);
    // The reported attack: a program run by the server (here a harmless one), then psql to the parent.
    assert.match(
      (await sql(preview.app, "COPY (SELECT 1) TO PROGRAM 'id'")).error ?? '',
      /must be superuser or have privileges of the pg_execute_server_program role/,
    );
    assert.match(
      (await sql(preview.app, `COPY (SELECT 1) TO PROGRAM 'psql -h ${parentHost} -c ''create table pwned ()'''`)).error ?? '',
      /pg_execute_server_program/,
    );
    assert.match((await sql(preview.app, "COPY notes FROM '/etc/passwd'")).error ?? '', /pg_read_server_files/);
    assert.match((await sql(preview.app, "select pg_read_file('/etc/passwd')")).error ?? '', /permission denied for function pg_read_file/);
    assert.match((await sql(preview.app, "select pg_read_binary_file('postgresql.auto.conf')")).error ?? '', /permission denied/);
    assert.match((await sql(preview.app, "select pg_ls_dir('.')")).error ?? '', /permission denied/);
    assert.match((await sql(preview.app, "select lo_import('/etc/passwd')")).error ?? '', /permission denied/);
    assert.match((await sql(preview.app, 'grant pg_read_server_files to current_user')).error ?? '', /admin option|permission denied/);
    assert.match((await sql(preview.app, 'grant pg_execute_server_program to current_user')).error ?? '', /admin option|permission denied/);
    assert.match((await sql(preview.app, 'set role svc_admin')).error ?? '', /permission denied/);
    assert.match((await sql(preview.app, "alter system set archive_command = 'id'")).error ?? '', /permission denied/);
    // Untrusted extensions (they reach the network, the files, or the server's memory) are refused...
    for (const ext of ['dblink', 'postgres_fdw', 'file_fdw', 'adminpack', 'pageinspect']) {
      assert.match(
        (await sql(preview.app, `create extension ${ext}`)).error ?? '',
        new RegExp(`permission denied to create extension "${ext}"`),
        ext,
      );
    }
    assert.match((await sql(preview.app, 'create language plpython3u')).error ?? '', /not available|permission denied|must be superuser/);
    // ...trusted ones are the allow-list, and work.
    assert.deepEqual(await sql(preview.app, 'create extension pgcrypto'), { rows: [] });
    assert.deepEqual((await sql(preview.app, "select encode(digest('x', 'sha256'), 'hex') as h")).rows, [
      { h: '2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881' },
    ]);
  });

  it("gives the branch passwords of its own, and no way from the preview or the branch to the parent's server", async () => {
    const [parent, branch] = [await secret('prod'), await secret(preview.database)];
    assert.equal(branch.username, parent.username, 'the copied data holds the role');
    assert.notEqual(branch.password, parent.password);
    assert.ok(parent[replicationKey] && branch[replicationKey] && branch[replicationKey] !== parent[replicationKey]);
    assert.equal(
      (await ask<{ has: boolean }>(preview.app, `/api/has?v=${parent.password}`)).has,
      false,
      "the parent's password is nowhere in the preview",
    );
    assert.equal(
      (await ask<{ has: boolean }>(preview.app, `/api/has?v=${branch[replicationKey]}`)).has,
      false,
      'machines never get a replication password',
    );
    // The parent's password does not open the branch, nor the branch's the parent.
    const host = (await databases()).find((d) => d.name === preview.database)!.host!;
    assert.match(
      (await sql(preview.app, 'select 1', `postgres://${parent.username}:${parent.password}@${host}:5432/${parent.database}`)).error ?? '',
      /password authentication failed/,
    );
    // The preview's machine reaches its branch only: not the parent's server, by its address.
    assert.notEqual((await ask<{ connect: string }>(preview.app, `/api/connect?host=${parentHost}&port=5432`)).connect, 'connected');
    assert.match(
      (await sql(preview.app, 'select 1', `postgres://${branch.username}:${branch.password}@${parentHost}:5432/${parent.database}`))
        .error ?? '',
      /timeout|ECONNREFUSED|terminated|EHOSTUNREACH/,
    );
    // The branch's server: its copy done, it is let out nowhere; the parent lets in its own app's
    // machines, its branches and its backups, not the preview's machines.
    const net = api.kube.kc.makeApiClient(k8s.NetworkingV1Api);
    await eventually(
      "the branch's way out to its source closed",
      async () =>
        ((await net.readNamespacedNetworkPolicy({ namespace: ns, name: databaseObjects(preview.database).policy })).spec?.egress ?? [])
          .length === 0,
      { timeoutMs: 30_000 },
    );
    const parentPolicy = await net.readNamespacedNetworkPolicy({ namespace: ns, name: databaseObjects('prod').policy });
    const from = JSON.stringify(parentPolicy.spec?.ingress);
    assert.ok(from.includes('"values":["shop"]') && !from.includes(preview.app), from);
    // From inside the branch's server (as an operator's exec: the tenant has no way to run anything
    // there): the parent does not answer, and its passwords are not in the server's environment.
    await eventually(
      "the parent unreachable from the branch's server",
      async () => (await inServer(preview.database, `pg_isready -h ${parentHost} -p 5432 -t 3`)).rc === 2,
      { timeoutMs: 30_000 },
    );
    const environ = (await inServer(preview.database, "tr '\\0' '\\n' </proc/1/environ")).out;
    for (const [what, value] of [
      ["the parent's password", parent.password],
      ["the parent's replication password", parent[replicationKey]],
      ['its own password', branch.password],
    ] as const) {
      assert.ok(!environ.includes(value!), `the server's environment holds ${what}`);
    }
  });

  it("leaves the parent's data untouched by what the preview writes", async () => {
    assert.deepEqual(await sql(preview.app, "insert into notes values ('preview')"), { rows: [] });
    assert.deepEqual((await sql(preview.app, 'select v from notes order by v')).rows, [{ v: 'preview' }, { v: 'production' }]);
    assert.deepEqual((await sql('shop', 'select v from notes order by v')).rows, [{ v: 'production' }]);
    assert.deepEqual(
      (await sql('shop', "select tablename from pg_tables where schemaname = 'public' order by 1")).rows,
      [{ tablename: 'notes' }],
      'no table made from elsewhere',
    );
    assert.deepEqual((await sql('shop', "select extname from pg_extension where extname <> 'plpgsql'")).rows, [], 'nor an extension');
  });

  it('holds the same for a preview made by pushing a branch of the imported repository', async () => {
    await eventually(
      'the pushed branch built',
      async () => {
        const b = await json<{ status: string; message: string | null }>(await api.request('GET', `/api/builds/${pushed.build}`), 200);
        if (b.status === 'failed' || b.status === 'canceled') throw new Error(`the push's build ${b.status}: ${b.message}`);
        return b.status === 'succeeded';
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    const branchName = (
      await json<{ previews: Array<{ app: string; database: string | null }> }>(await api.request('GET', '/api/apps/shop/previews'), 200)
    ).previews.find((p) => p.app === pushed.app)?.database;
    assert.match(branchName ?? '', /^prod-[0-9a-f]{6}$/);
    await ready(branchName!);
    await eventually(
      `${pushed.app} on its branch`,
      async () => (await getFromEveryMachine(ns, pushed.app, '/api/env'))?.includes('"url":true'),
      { timeoutMs: 120_000 },
    );
    assert.deepEqual((await sql(pushed.app, 'select rolsuper from pg_roles where rolname = current_user')).rows, [{ rolsuper: false }]);
    assert.match(
      (await sql(pushed.app, `COPY (SELECT 1) TO PROGRAM 'psql -h ${parentHost} -c ''create table pwned ()'''`)).error ?? '',
      /pg_execute_server_program/,
    );
    assert.match((await sql(pushed.app, 'create extension dblink')).error ?? '', /permission denied to create extension "dblink"/);
    assert.notEqual((await secret(branchName!)).password, (await secret('prod')).password);
    assert.notEqual((await ask<{ connect: string }>(pushed.app, `/api/connect?host=${parentHost}&port=5432`)).connect, 'connected');
    assert.deepEqual((await sql('shop', "select tablename from pg_tables where schemaname = 'public' order by 1")).rows, [
      { tablename: 'notes' },
    ]);
  });

  it('restores a backup as the tenant (no superuser either), and gives a Secret written before replication passwords one', async () => {
    await json(await api.request('POST', '/api/databases/prod/backups'), 202);
    const backup = await eventually(
      'the backup done',
      async () =>
        (
          await json<{ backups: Array<{ id: string; status: string }> }>(await api.request('GET', '/api/databases/prod/backups'), 200)
        ).backups.find((b) => b.status === 'done'),
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    await json(
      await api.request('POST', '/api/databases', {
        body: { name: 'restored', storage_bytes: 128 << 20, restore_from: { backup: backup.id } },
      }),
      201,
    );
    await ready('restored');
    const server = await api.kube.core.readNamespacedPod({ namespace: ns, name: databaseObjects('restored').pod });
    assert.equal(server.status?.containerStatuses?.[0]?.restartCount, 0, 'restored at the first try');
    // The tenant's own session over the server's socket (PGUSER/PGPASSWORD of its Secret).
    const psql = (q: string) => inServer('restored', `psql -h /tmp -Atc "${q}" 2>&1`);
    assert.equal((await psql('select rolsuper from pg_roles where rolname = current_user')).out, 'f');
    assert.equal((await psql('select v from notes')).out, 'production');
    assert.equal((await psql("select tableowner = current_user from pg_tables where tablename = 'notes'")).out, 't', 'owned by the tenant');
    assert.match((await psql("COPY (SELECT 1) TO PROGRAM 'id'")).out, /pg_execute_server_program/);
    // A Secret written before replication passwords (as an older API did) gets one when an API starts.
    await api.kube.core.patchNamespacedSecret(
      { namespace: ns, name: databaseObjects('restored').secret, body: { data: { [replicationKey]: null } } },
      mergePatch,
    );
    assert.equal((await secret('restored'))[replicationKey], undefined);
    const starting = new DatabaseRepository(api.kube.kc, createLogger('test', 'silent'));
    await starting.start();
    try {
      await eventually('the replication password added', async () => (await secret('restored'))[replicationKey]?.length === 48);
    } finally {
      await starting.stop();
    }
    await json(await api.request('DELETE', '/api/databases/restored'), 204);
  });

  it('converts a server made before (its tenant the bootstrap superuser) on its first start on the new image: its rows kept, its role no superuser', async () => {
    // Its volume and credentials as the entrypoint of then left them.
    const db = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Database',
      metadata: { name: 'legacy', namespace: ns, uid: 'none' },
      spec: { storageBytes: 128 << 20 },
    } as Database;
    const settings = { image: images.postgres, storageClass: undefined, defaultBytes: 128 << 20, platformCidrs: [] };
    const o = databaseObjects('legacy');
    await api.kube.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: o.secret },
        stringData: {
          [credentialKeys.username]: 'app',
          [credentialKeys.password]: randomUUID().replaceAll('-', ''),
          [credentialKeys.database]: 'legacy',
        },
      },
    });
    const claim = dataClaim(db, settings);
    await api.kube.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { ...claim, metadata: { ...claim.metadata, ownerReferences: undefined } },
    });
    const server = serverPod(db, settings);
    const maker: k8s.V1Pod = {
      ...server,
      metadata: { name: 'legacy-maker', namespace: ns },
      spec: {
        ...server.spec!,
        restartPolicy: 'Never',
        containers: server.spec!.containers.map((c) => ({
          ...c,
          name: 'maker',
          command: ['bash', '-c', legacyServer],
          args: [],
          readinessProbe: undefined,
          ports: undefined,
        })),
      },
    };
    await api.kube.core.createNamespacedPod({ namespace: ns, body: maker });
    await eventually(
      'the server of then made',
      async () => {
        const phase = (await api.kube.core.readNamespacedPod({ namespace: ns, name: 'legacy-maker' })).status?.phase;
        if (phase === 'Failed') throw new Error(await kubectl('logs', '-n', ns, 'legacy-maker'));
        return phase === 'Succeeded';
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    assert.equal((await kubectl('logs', '-n', ns, 'legacy-maker')).trim(), 't', 'its tenant was the superuser');
    await api.kube.core.deleteNamespacedPod({ namespace: ns, name: 'legacy-maker', gracePeriodSeconds: 0 });

    // The Database made again on it (as after a Retain): the API keeps the credentials, the server converts.
    await json(await api.request('POST', '/api/databases', { body: { name: 'legacy', storage_bytes: 128 << 20 } }), 201);
    await ready('legacy');
    const psql = (q: string) => inServer('legacy', `psql -h /tmp -Atc "${q}" 2>&1`);
    assert.equal((await psql('select rolsuper from pg_roles where rolname = current_user')).out, 'f');
    assert.equal((await psql('select v from notes')).out, 'made before');
    assert.equal((await psql('select rolname from pg_roles where oid = 10')).out, 'svc_admin');
    assert.match((await psql("COPY (SELECT 1) TO PROGRAM 'id'")).out, /pg_execute_server_program/);
    assert.match(await kubectl('logs', '-n', ns, o.pod, '-c', 'postgres'), /svc-postgres: converted in \d+ ms/);
    await json(await api.request('DELETE', '/api/databases/legacy'), 204);
  });
});
