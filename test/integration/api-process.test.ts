// The API as `make dev` runs it: a process that migrates, creates the first account and its
// namespace, writes the owner token (mode 0600), serves with it, and stops cleanly on SIGTERM.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { repoRoot } from '../../lib/paths.js';
import { freshDatabase } from '../support/db.js';
import { kubeConfig } from '../support/kube.js';
import { eventually } from '../support/wait.js';

async function freePort(): Promise<number> {
  const srv = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => srv.once('listening', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

describe('API process', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let stateDir: string;
  let port: number;
  let machinePort: number;
  let output = '';
  const core = kubeConfig().makeApiClient(k8s.CoreV1Api);

  function start(): ChildProcess {
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/api/main.js')], {
      env: {
        ...process.env,
        SVC_DATABASE_URL: fresh.url,
        SVC_STATE_DIR: stateDir,
        SVC_API_PORT: String(port),
        // Its own machine port: the default one is taken wherever `make dev` runs an API.
        SVC_API_MACHINE_PORT: String(machinePort),
        SVC_ADMIN_EMAIL: 'first@example.test',
        SVC_LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    return child;
  }
  async function healthy(): Promise<void> {
    await eventually('the API to answer /api/health', async () => (await fetch(`http://127.0.0.1:${port}/api/health`)).ok, {
      timeoutMs: 30_000,
    });
  }
  async function stop(child: ChildProcess): Promise<number | null> {
    // Exited already (it failed to start): its code, rather than waiting for an exit that came.
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    return exited;
  }

  before(async () => {
    fresh = await freshDatabase();
    stateDir = await mkdtemp(path.join(tmpdir(), 'svc-api-'));
    port = await freePort();
    machinePort = await freePort();
  });
  after(async () => {
    const ns = (await fresh
      .db('accounts')
      .select('namespace')
      .catch(() => [])) as Array<{ namespace: string }>;
    for (const { namespace } of ns) await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await fresh?.dispose();
    await rm(stateDir, { recursive: true, force: true });
  });

  it('creates the first account on an empty database and writes a working owner token', async () => {
    const child = start();
    try {
      await healthy();
      const file = path.join(stateDir, 'owner-token');
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const token = (await readFile(file, 'utf8')).trim();
      const res = await fetch(`http://127.0.0.1:${port}/api/account`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200, output);
      const account = (await res.json()) as { email: string; namespace: string };
      assert.equal(account.email, 'first@example.test');
      await core.readNamespace({ name: account.namespace });
      const openapi = await fetch(`http://127.0.0.1:${port}/api/openapi.json`);
      assert.equal(((await openapi.json()) as { openapi: string }).openapi, '3.1.0');
    } finally {
      assert.equal(await stop(child), 0, output);
    }
  });

  it('does not create a second account or token on a restart', async () => {
    const before = await readFile(path.join(stateDir, 'owner-token'), 'utf8');
    const child = start();
    try {
      await healthy();
      const rows = await fresh.db('accounts').count<Array<{ n: string }>>({ n: '*' });
      assert.equal(Number(rows[0]?.n), 1);
      assert.equal(await readFile(path.join(stateDir, 'owner-token'), 'utf8'), before);
    } finally {
      assert.equal(await stop(child), 0, output);
    }
  });

  it('refuses to start with invalid configuration, naming the variable', async () => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/api/main.js')], {
      env: { ...process.env, SVC_API_PORT: 'eighty' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((r) => child.once('exit', r));
    assert.equal(code, 1);
    assert.match(err, /SVC_API_PORT: .*\(got "eighty"\)/);
  });
});
