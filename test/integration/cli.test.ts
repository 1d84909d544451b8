// The `svc` CLI as a user runs it: `npx svc token attenuate` then `npx svc token inspect` offline,
// and `svc admin create-account` against the real database and cluster.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { migrateLatest } from '../../lib/db/migrate.js';
import { repoRoot } from '../../lib/paths.js';
import { TokenStore } from '../../lib/tokens/store.js';
import { mint, verifySignature, decode } from '../../lib/tokens/token.js';
import { freshDatabase } from '../support/db.js';
import { kubeConfig } from '../support/kube.js';

const exec = promisify(execFile);
const svc = (args: string[], env: Record<string, string> = {}) =>
  exec(process.execPath, [path.join(repoRoot, 'bin/svc.js'), ...args], { cwd: repoRoot, env: { ...process.env, ...env } });

describe('svc CLI', () => {
  const key = randomBytes(32);
  const root = mint(key, 'k1', 'cli-test-nonce-0001', [{ kind: 'expires', at: new Date(Date.now() + 7 * 86400e3) }]);

  it('npx svc token attenuate prints a narrower token that npx svc token inspect reads', async () => {
    const { stdout: narrowed } = await exec(
      'npx',
      ['--no-install', 'svc', 'token', 'attenuate', '--token', root, '--apps', 'shop', '--actions', 'read,deploy', '--expires-in', '1h'],
      { cwd: repoRoot },
    );
    const token = narrowed.trim();
    assert.ok(verifySignature(key, decode(token)), 'the narrowed token still verifies');
    const { stdout: text } = await exec('npx', ['--no-install', 'svc', 'token', 'inspect', token], { cwd: repoRoot });
    assert.match(text, /UNVERIFIED/);
    assert.match(text, /apps:\s+shop/);
    assert.match(text, /actions:\s+read, deploy/);
    assert.match(text, /expires:\s+\S+ \(in 59 minutes\)/);
    const { stdout: json } = await svc(['token', 'inspect', '--json', token]);
    const info = JSON.parse(json) as {
      verified: boolean;
      effective: { apps: string[]; actions: string[]; expires_at: string; expired: boolean };
      restrictions: string[];
    };
    assert.equal(info.verified, false);
    assert.deepEqual(info.effective.apps, ['shop']);
    assert.deepEqual(info.effective.actions, ['read', 'deploy']);
    assert.equal(info.effective.expired, false);
    assert.ok(Date.parse(info.effective.expires_at) <= Date.now() + 3600e3);
    assert.equal(info.restrictions.length, 4);
  });

  it('reads the token from standard input or $SVC_TOKEN, and refuses bad input with a clear message', async () => {
    const { stdout } = await svc(['token', 'inspect', '--json'], { SVC_TOKEN: root });
    assert.equal((JSON.parse(stdout) as { nonce: string }).nonce, 'cli-test-nonce-0001');
    await assert.rejects(svc(['token', 'inspect', 'svc_garbage']), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /not a valid token/);
      return true;
    });
    await assert.rejects(svc(['token', 'attenuate', '--token', root, '--actions', 'fly']), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /--actions takes a comma-separated list/);
      return true;
    });
    await assert.rejects(svc(['token', 'attenuate', '--token', root]), /give at least one of/);
    await assert.rejects(svc(['frobnicate']), /unknown command: frobnicate/);
  });

  describe('admin create-account', () => {
    let fresh: Awaited<ReturnType<typeof freshDatabase>>;
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    const namespaces: string[] = [];
    before(async () => {
      fresh = await freshDatabase();
    });
    after(async () => {
      for (const name of namespaces) await core.deleteNamespace({ name }).catch(() => undefined);
      await fresh?.dispose();
    });

    it('creates an account with its namespace and prints a working full-authority token', async () => {
      const { stdout } = await svc(['admin', 'create-account', '--email', 'Second@Example.test'], { SVC_DATABASE_URL: fresh.url });
      const out = JSON.parse(stdout) as { account: { id: string; email: string; namespace: string }; token: string };
      namespaces.push(out.account.namespace);
      assert.equal(out.account.email, 'second@example.test');
      await core.readNamespace({ name: out.account.namespace });
      await migrateLatest(fresh.db);
      const principal = await new TokenStore(fresh.db).authenticate(out.token);
      assert.equal(principal.accountId, out.account.id);
      assert.equal(principal.authority.actions, undefined);
      assert.equal(principal.authority.apps, undefined);
    });

    it('refuses a duplicate email and leaves nothing behind', async () => {
      await assert.rejects(
        svc(['admin', 'create-account', '--email', 'second@example.test'], { SVC_DATABASE_URL: fresh.url }),
        (err: { code: number; stderr: string }) => {
          assert.equal(err.code, 2);
          assert.match(err.stderr, /already exists/);
          return true;
        },
      );
      const rows = await fresh.db('accounts').count<Array<{ n: string }>>({ n: '*' });
      assert.equal(Number(rows[0]?.n), 1);
    });
  });
});
