// `svc login` and `svc logout` (cli/login.ts) and the credentials file they keep (cli/config.ts),
// against a fake API on 127.0.0.1:0 that answers each route from a queue: the device-code flow
// (pending, approved, denied, slowed down), the file written 0600 in a 0700 directory and then used
// by target(), the precedence of --token, $SVC_TOKEN and the file, a file others could read
// refused, logout's revocation with the stored token; and the built `svc` for the same.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, beforeEach, describe, it } from 'node:test';
import { GroupUsageError, printable, type CommandContext, type CommandGroup } from '../../cli/command.js';
import {
  configDir,
  CredentialsError,
  credentialsPath,
  readCredentials,
  resolveTarget,
  type Credentials,
  type Env,
} from '../../cli/config.js';
import { describeFailure } from '../../cli/failure.js';
import { commandGroups } from '../../cli/groups.js';
import { createLoginGroups, type LoginDeps } from '../../cli/login.js';
import { ApiError } from '../../lib/client/index.js';

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

interface Answer {
  status: number;
  json?: unknown;
}

/** The fake API: each `METHOD /path` answers from its queue (the last answer repeats), a 404 otherwise. */
class FakeApi {
  seen: Seen[] = [];
  private routes = new Map<string, Answer[]>();
  url = '';
  private readonly server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const route = new URL(req.url ?? '/', 'http://fake').pathname.replace(/^\/api/, '');
      const text = Buffer.concat(chunks).toString();
      this.seen.push({
        method: req.method ?? '',
        path: route,
        authorization: req.headers.authorization,
        body: text ? JSON.parse(text) : undefined,
      });
      const queue = this.routes.get(`${req.method} ${route}`);
      const a = (queue && queue.length > 1 ? queue.shift() : queue?.[0]) ?? {
        status: 404,
        json: { error: `no route ${req.method} ${route}` },
      };
      if (a.json === undefined) res.writeHead(a.status).end();
      else res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.json));
    });
  });

  on(route: string, ...answers: Answer[]): this {
    this.routes.set(route, answers);
    return this;
  }

  reset(): void {
    this.seen = [];
    this.routes = new Map();
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
  }

  stop(): Promise<void> {
    return new Promise((resolve, reject) => this.server.close((err) => (err ? reject(err) : resolve())));
  }
}

const fake = new FakeApi();
let dir = '';
let env: Env = {};

interface Run {
  code: number;
  out: string[];
  err: string[];
  /** Each wait, in ms. */
  slept: number[];
  opened: string[];
}

/** Runs login or logout as svc.ts does, on a fake clock that each wait moves on. */
async function run(which: 'login' | 'logout', args: string[], o: { tty?: boolean; env?: Env } = {}): Promise<Run> {
  const r: Run = { code: -1, out: [], err: [], slept: [], opened: [] };
  let now = Date.parse('2026-11-28T09:00:00Z');
  const deps: Partial<LoginDeps> = {
    env: o.env ?? env,
    now: () => now,
    hostname: () => 'host-1',
    stdoutIsTTY: () => o.tty ?? false,
    openBrowser: (url) => r.opened.push(url),
  };
  const groups = createLoginGroups(deps);
  const ctx: CommandContext = {
    out: (line) => r.out.push(line),
    err: (line) => r.err.push(line),
    write: () => undefined,
    writeErr: () => undefined,
    stdout: new Writable({ write: (_c, _e, done) => done() }),
    readStdin: () => Promise.resolve(''),
    interactive: false,
    ask: () => Promise.resolve(''),
    target: (token) => resolveTarget(token, o.env ?? env),
    sleep: (ms) => {
      r.slept.push(ms);
      now += ms;
      return Promise.resolve();
    },
  };
  const group: CommandGroup = groups[which];
  r.code = await group.run(args, ctx);
  return r;
}

const started = {
  device_code: 'd'.repeat(43),
  user_code: 'ABCD-EFGH',
  verification_url: 'http://127.0.0.1/console/cli-login?code=ABCD-EFGH',
  expires_in: 600,
  interval: 2,
};
const pending: Answer = { status: 202, json: { status: 'pending' } };
const approved: Answer = {
  status: 200,
  json: { status: 'approved', token: 'svc_issued', nonce: 'nonce-1', expires_at: '2027-02-26T09:00:00.000Z', email: 'owner@example.com' },
};

const stored = (over: Partial<Credentials> = {}): Credentials => ({
  api_url: fake.url,
  token: 'svc_stored',
  nonce: 'nonce-1',
  email: 'owner@example.com',
  expires_at: '2099-01-01T00:00:00.000Z',
  ...over,
});

async function store(c: Credentials, mode = 0o600): Promise<string> {
  const file = credentialsPath(env);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(c), { mode });
  await chmod(file, mode);
  return file;
}

const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

before(() => fake.start());
after(() => fake.stop());
beforeEach(async () => {
  fake.reset();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(path.join(tmpdir(), 'svc-login-'));
  // A directory not made yet: login makes it.
  env = { SVC_CONFIG_DIR: path.join(dir, 'config', 'svc') };
});
after(() => rm(dir, { recursive: true, force: true }));

describe('svc login', () => {
  it('polls until approved, stores the token 0600 in a 0700 directory, and target() then uses it', async () => {
    fake.on('POST /cli/logins', { status: 201, json: started }).on('POST /cli/logins/token', pending, pending, approved);
    const r = await run('login', ['--api', `${fake.url}/`, '--json'], { tty: true });
    assert.equal(r.code, 0, r.err.join('\n'));

    // The start asks for nothing but a name, and neither call sends a token.
    assert.deepEqual(fake.seen[0], { method: 'POST', path: '/cli/logins', authorization: undefined, body: { name: 'host-1 (svc CLI)' } });
    assert.deepEqual(
      fake.seen.slice(1).map((s) => [s.path, s.authorization, s.body]),
      Array(3).fill(['/cli/logins/token', undefined, { device_code: started.device_code }]),
    );
    assert.deepEqual(r.slept, [2000, 2000, 2000]);
    assert.deepEqual(r.opened, [started.verification_url]);
    assert.equal(r.err[0], `Open ${started.verification_url} and check that it shows the code ABCD-EFGH`);
    assert.ok(r.err.includes('Signed in as owner@example.com (token nonce-1, expires 2027-02-26T09:00:00.000Z)'), r.err.join('\n'));
    assert.ok(!r.err.join('\n').includes('svc_issued'), 'the token is never printed');
    assert.deepEqual(JSON.parse(r.out.join('\n')), {
      email: 'owner@example.com',
      nonce: 'nonce-1',
      expires_at: '2027-02-26T09:00:00.000Z',
      api_url: fake.url,
    });

    const file = credentialsPath(env);
    assert.equal(file, path.join(dir, 'config', 'svc', 'credentials.json'));
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(path.dirname(file))).mode & 0o777, 0o700);
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), {
      api_url: fake.url,
      token: 'svc_issued',
      nonce: 'nonce-1',
      email: 'owner@example.com',
      expires_at: '2027-02-26T09:00:00.000Z',
    });
    assert.deepEqual(resolveTarget(undefined, env), { apiUrl: fake.url, token: 'svc_issued' });
  });

  it('opens no browser with --no-browser or when stdout is not a terminal, and names the device as told', async () => {
    fake.on('POST /cli/logins', { status: 201, json: started }).on('POST /cli/logins/token', approved);
    const quiet = await run('login', ['--api', fake.url, '--no-browser', '--name', 'ci runner'], { tty: true });
    assert.equal(quiet.code, 0);
    assert.deepEqual(quiet.opened, []);
    assert.deepEqual(fake.seen[0]!.body, { name: 'ci runner' });
    assert.deepEqual(quiet.out, [], 'nothing on stdout without --json');
    const piped = await run('login', ['--api', fake.url]);
    assert.deepEqual(piped.opened, []);
    await assert.rejects(run('login', ['--name', 'x'.repeat(101)]), GroupUsageError);
    await assert.rejects(run('login', ['--token', 'svc_x']), GroupUsageError);
    await assert.rejects(run('login', ['--api', 'ftp://example.com']), GroupUsageError);
  });

  it('takes the API from $SVC_API_URL when --api is not given; an origin alone stands for its /api', async () => {
    fake.on('POST /cli/logins', { status: 201, json: started }).on('POST /cli/logins/token', approved);
    const origin = fake.url.replace(/\/api$/, '');
    assert.equal((await run('login', [], { env: { ...env, SVC_API_URL: fake.url } })).code, 0);
    assert.equal((await run('login', ['--api', origin])).code, 0);
    assert.equal(readCredentials(env)!.api_url, fake.url);
  });

  it('exits 1 with the API’s words when the login is denied, and stores nothing', async () => {
    fake
      .on('POST /cli/logins', { status: 201, json: started })
      .on('POST /cli/logins/token', pending, { status: 410, json: { error: 'this login was denied; run svc login again' } });
    const r = await run('login', ['--api', fake.url]);
    assert.equal(r.code, 1);
    assert.equal(r.err.at(-1), 'svc: this login was denied; run svc login again');
    assert.equal(await exists(credentialsPath(env)), false);
  });

  it('polls 5 s more slowly after each 429, as RFC 8628 says of slow_down', async () => {
    const slow: Answer = { status: 429, json: { error: 'polled too fast: wait 2 s between polls, and 5 s more now' } };
    fake.on('POST /cli/logins', { status: 201, json: started }).on('POST /cli/logins/token', slow, pending, slow, approved);
    const r = await run('login', ['--api', fake.url]);
    assert.equal(r.code, 0);
    assert.deepEqual(r.slept, [2000, 7000, 7000, 12000]);
    assert.ok(r.err.some((l) => /every 7 s/.test(l)));
  });

  it('gives up when the code expires unapproved, and keeps trying through a moment without the API', async () => {
    fake
      .on('POST /cli/logins', { status: 201, json: { ...started, expires_in: 10 } })
      .on('POST /cli/logins/token', { status: 503, json: { error: 'restarting' } }, pending);
    const r = await run('login', ['--api', fake.url]);
    assert.equal(r.code, 1);
    assert.deepEqual(r.slept, [2000, 2000, 2000, 2000, 2000]);
    assert.ok(r.err.includes('svc: 503 restarting; still trying'));
    assert.match(r.err.at(-1)!, /the code ABCD-EFGH expired before it was approved/);
  });

  it('says a refused start in the API’s words', async () => {
    fake.on('POST /cli/logins', { status: 429, json: { error: 'too many logins started from this address; try again in a minute' } });
    await assert.rejects(
      run('login', ['--api', fake.url]),
      (err: unknown) => err instanceof ApiError && err.status === 429 && /too many logins/.test(err.message),
    );
  });
});

describe('svc logout', () => {
  it('revokes the stored token with itself and removes the file', async () => {
    const file = await store(stored());
    fake.on('DELETE /account/tokens/nonce-1', { status: 204 });
    const r = await run('logout', ['--json']);
    assert.equal(r.code, 0);
    assert.deepEqual(fake.seen, [
      { method: 'DELETE', path: '/account/tokens/nonce-1', authorization: 'Bearer svc_stored', body: undefined },
    ]);
    assert.equal(await exists(file), false);
    assert.deepEqual(JSON.parse(r.out[0]!), { signed_out: true, revoked: true, nonce: 'nonce-1', api_url: fake.url });
  });

  it('says "not signed in" and exits 0 without a file', async () => {
    const r = await run('logout', []);
    assert.equal(r.code, 0);
    assert.match(r.err[0]!, /^not signed in \(no .*credentials\.json\)$/);
    assert.deepEqual(fake.seen, []);
  });

  it('keeps the file when the API refuses the revocation (a token may revoke itself: any refusal is unexpected)', async () => {
    const file = await store(stored());
    fake.on('DELETE /account/tokens/nonce-1', { status: 403, json: { error: 'token lacks action "admin"' } });
    const r = await run('logout', []);
    assert.equal(r.code, 1);
    assert.equal(await exists(file), true);
    const said = r.err.join('\n');
    assert.match(said, /token lacks action "admin"/);
    assert.match(said, /was not revoked and .*credentials\.json is kept: run svc logout again/);
  });

  it('keeps the file when the API cannot be reached, and removes it when the token is already invalid', async () => {
    const file = await store(stored({ api_url: 'http://127.0.0.1:1/api' }));
    const down = await run('logout', []);
    assert.equal(down.code, 1);
    assert.equal(await exists(file), true);
    await store(stored());
    fake.on('DELETE /account/tokens/nonce-1', { status: 401, json: { error: 'invalid token: revoked' } });
    const gone = await run('logout', []);
    assert.equal(gone.code, 0);
    assert.equal(await exists(file), false);
  });
});

describe('the credentials file', () => {
  it('is in $SVC_CONFIG_DIR, else $XDG_CONFIG_HOME/svc, else ~/.config/svc', () => {
    assert.equal(configDir({ SVC_CONFIG_DIR: '/c', XDG_CONFIG_HOME: '/x' }), '/c');
    assert.equal(configDir({ XDG_CONFIG_HOME: '/x' }), '/x/svc');
    assert.equal(configDir({}), path.join(homedir(), '.config', 'svc'));
  });

  it('is refused when group or others may read it, and logout still signs out of it', async () => {
    const file = await store(stored(), 0o644);
    assert.throws(
      () => resolveTarget(undefined, env),
      (err: unknown) => err instanceof CredentialsError && err.message.includes(`chmod 600 ${file}`) && /mode 0644/.test(err.message),
    );
    // Even for its API URL alone: a file others may change could send $SVC_TOKEN elsewhere.
    assert.throws(() => resolveTarget(undefined, { ...env, SVC_TOKEN: 'svc_env' }), CredentialsError);
    fake.on('DELETE /account/tokens/nonce-1', { status: 204 });
    assert.equal((await run('logout', [])).code, 0);
    assert.equal(await exists(file), false);
  });

  it('is refused in a directory others may write to (they could have put it there)', async () => {
    const file = await store(stored());
    const dir = path.dirname(file);
    await chmod(dir, 0o777);
    try {
      assert.throws(
        () => resolveTarget(undefined, env),
        (err: unknown) =>
          err instanceof CredentialsError &&
          /can be changed by other users \(mode 0777/.test(err.message) &&
          err.message.includes(`chmod 700 ${dir}`),
      );
      await chmod(dir, 0o770);
      assert.throws(() => resolveTarget(undefined, env), CredentialsError, 'group-writable too');
      await chmod(dir, 0o755);
      assert.equal(resolveTarget(undefined, env).token, 'svc_stored', 'readable by others, writable by none: used');
    } finally {
      await chmod(dir, 0o700);
    }
  });

  it('comes after --token and $SVC_TOKEN, and its token goes only to its own API', async () => {
    await store(stored());
    assert.deepEqual(resolveTarget(undefined, env), { apiUrl: fake.url, token: 'svc_stored' });
    assert.deepEqual(resolveTarget(undefined, { ...env, SVC_TOKEN: 'svc_env' }), { apiUrl: fake.url, token: 'svc_env' });
    assert.deepEqual(resolveTarget('svc_flag', { ...env, SVC_TOKEN: 'svc_env' }), { apiUrl: fake.url, token: 'svc_flag' });
    assert.deepEqual(resolveTarget(undefined, { ...env, SVC_TOKEN: 'svc_env', SVC_API_URL: 'https://other.example/api/' }), {
      apiUrl: 'https://other.example/api',
      token: 'svc_env',
    });
    assert.throws(
      () => resolveTarget(undefined, { ...env, SVC_API_URL: 'https://other.example/api' }),
      (err: unknown) => err instanceof CredentialsError && /not to \$SVC_API_URL \(https:\/\/other\.example\/api\)/.test(err.message),
    );
    await store(stored({ expires_at: '2020-01-01T00:00:00.000Z' }));
    assert.throws(() => resolveTarget(undefined, env), /expired at 2020-01-01T00:00:00.000Z: run svc login again/);
    await rm(credentialsPath(env));
    assert.throws(
      () => resolveTarget(undefined, env),
      (err: unknown) => err instanceof GroupUsageError && /not signed in: run svc login/.test(err.message),
    );
  });
});

describe('the built svc', () => {
  const svcJs = fileURLToPath(new URL('../../cli/svc.js', import.meta.url));
  const exec = promisify(execFile);
  const svc = (args: string[], extra: Env = {}) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_')));
    return exec(process.execPath, [svcJs, ...args], { env: { ...base, ...env, ...extra } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
    );
  };

  it('sends the stored token to the stored API, $SVC_TOKEN instead when set, and says how to sign in', async () => {
    const none = await svc(['usage']);
    assert.equal(none.code, 2);
    assert.equal(none.stderr, 'svc: not signed in: run svc login (or set $SVC_TOKEN, or pass --token)\n');

    await store(stored());
    fake.on('GET /account/tokens', { status: 200, json: { tokens: [] } });
    assert.equal((await svc(['tokens', 'ls'])).code, 0);
    assert.equal(fake.seen.at(-1)!.authorization, 'Bearer svc_stored');
    assert.equal((await svc(['tokens', 'ls'], { SVC_TOKEN: 'svc_env' })).code, 0);
    assert.equal(fake.seen.at(-1)!.authorization, 'Bearer svc_env');

    fake.on('GET /account/tokens', { status: 401, json: { error: 'invalid token: revoked' } });
    const refused = await svc(['tokens', 'ls']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^svc: 401 invalid token: revoked\nsvc: to log in, .*svc login/);

    await chmod(credentialsPath(env), 0o640);
    const loose = await svc(['tokens', 'ls']);
    assert.equal(loose.code, 1);
    assert.match(loose.stderr, /^svc: .*credentials\.json can be read or changed by other users \(mode 0640\)/);

    fake.on('DELETE /account/tokens/nonce-1', { status: 204 });
    const out = await svc(['logout']);
    assert.equal(out.code, 0);
    assert.match(out.stderr, /^Revoked the token nonce-1 and signed out/);
    const again = await svc(['logout']);
    assert.deepEqual([again.code, again.stderr.startsWith('not signed in')], [0, true]);

    for (const g of ['login', 'logout']) {
      const help = await svc([g, '--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, new RegExp(`^usage:\\n {2}svc ${g} [^]*\\nexample:\\n {2}svc ${g}`));
    }
  });

  it("writes out a hostile API's control characters on stderr (no title set, no line rewritten)", async () => {
    await store(stored());
    fake.on('GET /account/tokens', { status: 403, json: { error: 'token lacks action "admin"\x1b]0;owned\x07\rsvc: all good' } });
    const r = await svc(['tokens', 'ls']);
    assert.equal(r.code, 1);
    assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(r.stderr), JSON.stringify(r.stderr));
    assert.match(r.stderr, /token lacks action "admin"\\x1b\]0;owned\\x07\\x0dsvc: all good/);
  });

  it('lists login and logout among the groups', () => {
    assert.ok(['login', 'logout'].every((n) => commandGroups.some((g) => g.name === n)));
    assert.match(describeFailure(new ApiError(401, 'no token', undefined))[1]!, /svc login/);
  });
});

describe('what svc prints for people', () => {
  it('writes out control characters from the API (no cursor moves, no carriage returns, no titles)', () => {
    assert.equal(printable('Signed in as a@b.c\x1b]0;pwned\x07\rok'), 'Signed in as a@b.c\\x1b]0;pwned\\x07\\x0dok');
    assert.equal(printable('line one\n\tline two'), 'line one\n\tline two', 'newlines and tabs stay');
    assert.equal(printable('caf\u00e9 \u2713'), 'caf\u00e9 \u2713', 'printable text as it is');
    assert.equal(printable('\u009b31m'), '\\x9b31m', 'the one-byte CSI too');
  });
});
