// The `svc` command groups on the typed client (cli/apps.ts, cli/env.ts, cli/tokens.ts,
// cli/webhooks.ts, cli/usage.ts, cli/raw-api.ts) run as a user runs them, the built bin/svc.js,
// against the real API on a fresh database and the test cluster: what they send is what the API
// takes, what they print is what it answered, and the exit codes are 0, 1 and 2 as the usage says.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';
import { startTestApi, type TestApi } from '../support/api.js';

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

describe('svc apps, env, tokens, webhooks, usage and api against the API', () => {
  let api: TestApi;
  let dir: string;
  const svc = (args: string[], o: { token?: string; stdin?: string } = {}) =>
    new Promise<Ran>((resolve) => {
      const child = execFile(
        process.execPath,
        [path.join(repoRoot, 'bin/svc.js'), ...args],
        { env: { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: o.token ?? api.token } },
        (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end(o.stdin ?? '');
    });
  const ok = async (args: string[], o: { token?: string; stdin?: string } = {}) => {
    const r = await svc(args, o);
    assert.equal(r.code, 0, `svc ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    // Webhooks to a loopback URL are refused unless private addresses are allowed.
    api = await startTestApi({ env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    dir = await mkdtemp(path.join(tmpdir(), 'svc-cli-groups-'));
  });
  after(async () => {
    await api?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates, lists, shows and deletes an app, asking for --yes without a terminal', async () => {
    const created = JSON.parse(await ok(['apps', 'create', 'cli-shop', '--json'])) as { id: string; name: string };
    assert.equal(created.name, 'cli-shop');
    assert.match(await ok(['apps', 'ls']), /^NAME\s+STATUS\s+READY\s+KIND\s+URL\s+EXPIRES\ncli-shop\s+/m);
    const listed = JSON.parse(await ok(['apps', 'ls', '--json'])) as { apps: Array<{ id: string }> };
    assert.ok(listed.apps.some((a) => a.id === created.id));
    assert.match(await ok(['apps', 'get', 'cli-shop']), new RegExp(`^id:\\s+${created.id}$`, 'm'));
    const expiry = JSON.parse(await ok(['apps', 'expiry', 'cli-shop', '--in', '7d', '--json'])) as { expires_at: string };
    assert.ok(Date.parse(expiry.expires_at) > Date.now() + 6 * 86400e3);
    await ok(['apps', 'expiry', 'cli-shop', '--clear']);

    await ok(['apps', 'create', 'cli-gone']);
    const refused = await svc(['apps', 'rm', 'cli-gone']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /not a terminal to ask at: add --yes/);
    assert.match(await ok(['apps', 'rm', 'cli-gone', '--yes']), /^deleted app cli-gone$/m);
    const missing = await svc(['apps', 'get', 'cli-gone']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^svc: 404 .*cli-gone/);
  });

  it('sets, imports, lists and unsets variables; a bad .env line changes nothing', async () => {
    await ok(['env', 'set', 'cli-shop', 'LOG_LEVEL=debug', 'GREETING=hello world']);
    const file = path.join(dir, '.env');
    await writeFile(file, '# imported\nexport A=1\nB="two\\nlines"\nC=\'$NOT_EXPANDED\'\n');
    await ok(['env', 'import', 'cli-shop', file]);
    const env = (JSON.parse(await ok(['env', 'ls', 'cli-shop', '--json'])) as { env: Record<string, string> }).env;
    assert.deepEqual(env, { LOG_LEVEL: 'debug', GREETING: 'hello world', A: '1', B: 'two\nlines', C: '$NOT_EXPANDED' });
    assert.match(await ok(['env', 'ls', 'cli-shop']), /^B\s+"two\\nlines"\s+app$/m);

    await writeFile(file, 'D=4\n1BAD=5\n');
    const bad = await svc(['env', 'import', 'cli-shop', file]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /line 2: "1BAD" is not a variable name/);
    const kept = (JSON.parse(await ok(['env', 'ls', 'cli-shop', '--json'])) as { env: Record<string, string> }).env;
    assert.equal(kept.D, undefined, 'nothing of the bad file was written');

    await ok(['env', 'import', 'cli-shop', '-', '--replace'], { stdin: 'ONLY=1\n' });
    assert.deepEqual((JSON.parse(await ok(['env', 'ls', 'cli-shop', '--json'])) as { env: Record<string, string> }).env, { ONLY: '1' });
    await ok(['env', 'unset', 'cli-shop', 'ONLY']);
    const unknown = await svc(['env', 'unset', 'cli-shop', 'ONLY']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^svc: 404 /);
  });

  it('creates a restricted token that works as restricted, lists it, and revokes it', async () => {
    const token = (
      await ok(['tokens', 'create', '--name', 'cli-ci', '--apps', 'cli-shop', '--actions', 'read', '--expires-in', '1h'])
    ).trim();
    assert.match(token, /^svc_/);
    assert.match(await ok(['apps', 'get', 'cli-shop'], { token }), /^name:\s+cli-shop$/m);
    const refused = await svc(['env', 'set', 'cli-shop', 'X=1'], { token });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^svc: 403 token lacks action "write"\nsvc: this needs a token with the "write" action/);
    const listed = JSON.parse(await ok(['tokens', 'ls', '--json'])) as {
      tokens: Array<{ nonce: string; name: string | null; revoked: boolean }>;
    };
    const mine = listed.tokens.find((t) => t.name === 'cli-ci');
    assert.ok(mine);
    await ok(['tokens', 'rm', mine.nonce, '--yes']);
    const revoked = await svc(['apps', 'ls'], { token });
    assert.equal(revoked.code, 1);
    assert.match(revoked.stderr, /^svc: 401 .*\nsvc: to log in, set \$SVC_TOKEN/);
  });

  it('adds a webhook (its secret alone on stdout), lists it, shows its deliveries, and removes it', async () => {
    const add = await svc(['webhooks', 'add', 'http://127.0.0.1:9/hook', '--events', 'app.created']);
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout.trim(), /^\S+$/, 'only the secret on stdout');
    const hooks = JSON.parse(await ok(['webhooks', 'ls', '--json'])) as { webhooks: Array<{ id: string; url: string; events: string[] }> };
    const hook = hooks.webhooks.find((w) => w.url === 'http://127.0.0.1:9/hook');
    assert.ok(hook);
    assert.deepEqual(hook.events, ['app.created']);
    const deliveries = JSON.parse(await ok(['webhooks', 'deliveries', hook.id, '--json'])) as { deliveries: unknown[] };
    assert.ok(Array.isArray(deliveries.deliveries));
    await ok(['webhooks', 'rm', hook.id, '--yes']);
    const gone = JSON.parse(await ok(['webhooks', 'ls', '--json'])) as { webhooks: Array<{ id: string }> };
    assert.ok(!gone.webhooks.some((w) => w.id === hook.id));
  });

  it('shows usage, and its history by day', async () => {
    const usage = JSON.parse(await ok(['usage', '--json'])) as { meters: Record<string, number>; apps: Record<string, unknown> };
    assert.equal(typeof usage.meters.machine_seconds, 'number');
    assert.match(await ok(['usage']), /^METER\s+USED\nmachine_seconds\s+/m);
    const history = JSON.parse(await ok(['usage', '--history', '--days', '3', '--json'])) as { history: unknown[] };
    assert.ok(Array.isArray(history.history));
  });

  it('calls any path with svc api, exiting 1 on a 4xx', async () => {
    const body = JSON.parse(await ok(['api', 'PATCH', '/apps/cli-shop/env', '--data', '{"RAW":"1"}'])) as { env: Record<string, string> };
    assert.equal(body.env.RAW, '1');
    const missing = await svc(['api', 'GET', '/apps/no-such-app']);
    assert.equal(missing.code, 1);
    assert.equal(typeof (JSON.parse(missing.stdout) as { error: unknown }).error, 'string');
    assert.match(missing.stderr, /^svc: 404 /);
    const usage = await svc(['api', 'GET']);
    assert.equal(usage.code, 2);
  });
});
