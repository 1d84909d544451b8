// The CLI's interactive parts in a real terminal (tmux, test/support/terminal.ts), against the real
// API: `svc tokens rm` asks before revoking and does nothing on "n"; `svc login` at a terminal
// opens the browser on the console's link (a stand-in xdg-open records it), waits while the person
// approves there, and says who it signed in as.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { startTerminal, type Terminal } from '../support/terminal.js';
import { eventually } from '../support/wait.js';

describe('svc at a terminal (tmux)', () => {
  let api: TestApi;
  let dir: string;
  const terminals: Terminal[] = [];
  const svc = `${process.execPath} ${path.join(repoRoot, 'bin/svc.js')}`;
  const open = async (args: string, env: Record<string, string>) => {
    const t = await startTerminal(`${svc} ${args}`, { SVC_API_URL: `${api.url}/api`, ...env });
    terminals.push(t);
    return t;
  };

  before(async () => {
    api = await startTestApi();
    dir = await mkdtemp(path.join(tmpdir(), 'svc-terminal-'));
  });
  after(async () => {
    for (const t of terminals) await t.close();
    await api?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('svc tokens rm asks first: "n" keeps the token, "y" revokes it', async () => {
    const made = await expectJson<{ token: string; nonce: string }>(
      await api.request('POST', '/api/account/tokens', { body: { name: 'terminal', actions: ['read'] } }),
      201,
    );
    const no = await open(`tokens rm ${made.nonce}`, { SVC_TOKEN: api.token });
    await no.waitFor(new RegExp(`revoke token ${made.nonce} and every token made from it\\? \\[y/N\\]`));
    await no.type('n');
    assert.equal(await no.exitCode(), 1);
    assert.match(await no.screen(), /not revoked/);
    assert.equal((await api.request('GET', '/api/apps', { token: made.token })).status, 200, 'still works');

    const yes = await open(`tokens rm ${made.nonce}`, { SVC_TOKEN: api.token });
    await yes.waitFor(/\[y\/N\]/);
    await yes.type('y');
    assert.equal(await yes.exitCode(), 0);
    assert.match(await yes.screen(), new RegExp(`revoked token ${made.nonce}`));
    await eventually('the token refused', async () => (await api.request('GET', '/api/apps', { token: made.token })).status === 401);
  });

  it('svc login at a terminal opens the browser on the console link and signs in once approved there', async () => {
    // A stand-in for the desktop's xdg-open: it records the address it was asked to open.
    const bin = path.join(dir, 'bin');
    const opened = path.join(dir, 'opened');
    await mkdir(bin, { recursive: true });
    await writeFile(path.join(bin, 'xdg-open'), `#!/bin/sh\necho "$1" > '${opened}'\n`);
    await chmod(path.join(bin, 'xdg-open'), 0o755);
    const t = await open('login --name terminal-laptop', { SVC_CONFIG_DIR: path.join(dir, 'config'), PATH: `${bin}:${process.env.PATH}` });
    const screen = await t.waitFor(/Open (\S+) and check that it shows the code ([A-Z]{4}-[A-Z]{4})/);
    const [, url, code] = /Open (\S+) and check that it shows the code ([A-Z]{4}-[A-Z]{4})/.exec(screen)!;
    // Empty until the stand-in's echo has written it (its `>` makes the file first): not opened yet.
    const browsed = await eventually(
      'the browser opened',
      async () => (await readFile(opened, 'utf8').catch(() => '')).trim() || undefined,
    ).catch(async (err: unknown) => {
      throw new Error(`${String(err)}; the screen shows:\n${await t.screen()}`);
    });
    assert.equal(browsed, url);
    // The person approves in the console (its session cookie, header and Origin).
    const session = (await api.deps.tokens.issue(api.account.id, { name: 'console', expiresAt: new Date(Date.now() + 3600e3) })).token;
    const approved = await api.request('POST', `/api/cli/logins/${code}/approve`, {
      token: null,
      body: {},
      headers: { cookie: `svc-console=${session}`, 'x-svc-console': '1', origin: api.url },
    });
    assert.equal(approved.status, 200, await approved.text());
    // The API's clock is the test's: moved on so the CLI's next poll is not "too fast".
    api.clock.advance(10_000);
    await t.waitFor(new RegExp(`Signed in as ${api.account.email.replace(/[.]/g, '\\.')}`), 30_000);
    assert.equal(await t.exitCode(), 0);
  });
});
