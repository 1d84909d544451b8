// The `svc` command groups on the typed client (cli/apps.ts, cli/env.ts, ... cli/raw-api.ts) against
// a fake API on 127.0.0.1:0 that records every request and answers from a table: the request each
// command sends (method, path, query, body), what it prints (the table, and --json as the API's
// JSON), usage errors, confirmation, and the built `svc` itself for exit codes and error words.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { after, before, beforeEach, describe, it } from 'node:test';
import { appsGroup } from '../../cli/apps.js';
import { buildGroup } from '../../cli/build.js';
import { buildsGroup } from '../../cli/builds.js';
import { dbGroup } from '../../cli/db.js';
import { deployGroup } from '../../cli/deploy.js';
import { domainsGroup } from '../../cli/domains.js';
import { evalGroup } from '../../cli/eval.js';
import { eventsGroup } from '../../cli/events.js';
import { importGroup } from '../../cli/import.js';
import { openGroup } from '../../cli/open.js';
import { sandboxGroup } from '../../cli/sandbox.js';
import { volumesGroup } from '../../cli/volumes.js';
import { GroupUsageError, type CommandContext, type CommandGroup } from '../../cli/command.js';
import { deploysGroup } from '../../cli/deploys.js';
import { envGroup } from '../../cli/env.js';
import { commandGroups } from '../../cli/groups.js';
import { machinesGroup } from '../../cli/machines.js';
import { metricsGroup } from '../../cli/metrics.js';
import { previewsGroup } from '../../cli/previews.js';
import { rawApiGroup } from '../../cli/raw-api.js';
import { rollbackGroup } from '../../cli/rollback.js';
import { sessionsGroup } from '../../cli/sessions.js';
import { tokensGroup } from '../../cli/tokens.js';
import { usageGroup } from '../../cli/usage.js';
import { usersGroup } from '../../cli/users.js';
import { webhooksGroup } from '../../cli/webhooks.js';
import { ApiError } from '../../lib/client/index.js';

interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  /** The JSON body parsed; a body of bytes (an upload) is in `bytes`. */
  body: unknown;
  bytes: Buffer;
  headers: IncomingMessage['headers'];
}

interface Answer {
  status?: number;
  json?: unknown;
  text?: string;
  /** A body of this type (text/event-stream, application/x-ndjson), sent in these pieces as they are. */
  stream?: { type: string; chunks: string[] };
}

/** The fake API: answers by `METHOD /path` (without the query), a 404 in the API's words otherwise. */
class FakeApi {
  readonly seen: Seen[] = [];
  readonly answers = new Map<string, Answer | ((seen: Seen) => Answer)>();
  url = '';
  private readonly server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://fake');
      const route = u.pathname.replace(/^\/api/, '');
      const bytes = Buffer.concat(chunks);
      const isJson = bytes.length > 0 && (req.headers['content-type'] ?? '').startsWith('application/json');
      const seen: Seen = {
        method: req.method ?? '',
        path: route,
        query: Object.fromEntries(u.searchParams),
        authorization: req.headers.authorization,
        body: isJson ? JSON.parse(bytes.toString()) : undefined,
        bytes,
        headers: req.headers,
      };
      this.seen.push(seen);
      const answer = this.answers.get(`${req.method} ${route}`) ?? { status: 404, json: { error: `no route ${req.method} ${route}` } };
      const a = typeof answer === 'function' ? answer(seen) : answer;
      const status = a.status ?? 200;
      if (a.stream) {
        res.writeHead(status, { 'content-type': a.stream.type });
        const pieces = [...a.stream.chunks];
        // Each piece a write of its own, a moment apart: the client sees them come one by one.
        const next = () => (pieces.length ? res.write(pieces.shift(), () => setTimeout(next, 5)) : res.end());
        next();
      } else if (a.json !== undefined)
        res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req-1' }).end(JSON.stringify(a.json));
      else res.writeHead(status, { 'content-type': 'text/plain' }).end(a.text ?? '');
    });
  });

  on(route: string, answer: Answer | ((seen: Seen) => Answer)): this {
    this.answers.set(route, answer);
    return this;
  }

  get last(): Seen {
    return this.seen.at(-1)!;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
  }

  stop(): Promise<void> {
    return new Promise((resolve, reject) => this.server.close((err) => (err ? reject(err) : resolve())));
  }
}

interface Run {
  code: number;
  out: string[];
  err: string[];
  written: string;
  /** What was written raw to stderr (a sandboxed command's own). */
  writtenErr: string;
  /** The bytes piped to stdout (a file out of a sandbox). */
  bytes: Buffer;
}

const fake = new FakeApi();

/** Runs a group as svc.ts does, with a terminal (`answer` typed at a question) or without one. */
async function run(group: CommandGroup, args: string[], o: { interactive?: boolean; answer?: string; stdin?: string } = {}): Promise<Run> {
  const r: Run = { code: -1, out: [], err: [], written: '', writtenErr: '', bytes: Buffer.alloc(0) };
  const stdout = new Writable({
    write(chunk: Buffer, _encoding, done) {
      r.bytes = Buffer.concat([r.bytes, chunk]);
      done();
    },
  });
  const ctx: CommandContext = {
    out: (line) => r.out.push(line),
    err: (line) => r.err.push(line),
    write: (text) => void (r.written += text),
    writeErr: (text) => void (r.writtenErr += text),
    stdout,
    readStdin: () => Promise.resolve(o.stdin ?? ''),
    interactive: o.interactive ?? false,
    ask: (question) => {
      r.err.push(question);
      return Promise.resolve(o.answer ?? '');
    },
    target: (token) => ({ apiUrl: fake.url, token: token ?? 'svc_test' }),
    sleep: () => Promise.resolve(),
  };
  r.code = await group.run(args, ctx);
  return r;
}

const json = (r: Run): unknown => JSON.parse(r.out.join('\n'));

const app = {
  id: 'uid-shop',
  name: 'shop',
  kind: 'container',
  image: 'nginx:1.27',
  url: 'https://shop.apps.example',
  ready: '2/2',
  status: 'Ready',
  machines: 2,
  current_deploy: 'dep_2',
  rollout: null,
  services: null,
  expires_at: null,
  created_at: '2026-11-27T10:00:00.000Z',
};

const deploy = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  app: 'shop',
  app_id: 'uid-shop',
  status: 'live',
  reason: null,
  current: false,
  kind: 'image',
  digest: null,
  image: 'nginx:1.27',
  origin: 'deploy',
  origin_deploy: null,
  summary: {},
  created_by: 'token nonce1',
  created_at: '2026-11-27T10:00:00.000Z',
  updated_at: '2026-11-27T10:00:00.000Z',
  live_at: '2026-11-27T10:01:00.000Z',
  ...over,
});

before(() => fake.start());
after(() => fake.stop());
beforeEach(() => {
  fake.seen.length = 0;
  fake.answers.clear();
});

describe('svc apps', () => {
  it('lists every page as one table, and --json as one list', async () => {
    fake.on('GET /apps', {
      json: { apps: [app, { ...app, name: 'blog', kind: null, url: null, expires_at: '2026-12-01T00:00:00Z' }], next_after: null },
    });
    const r = await run(appsGroup, ['ls']);
    assert.deepEqual(fake.last.query, { limit: '500' });
    assert.equal(fake.last.authorization, 'Bearer svc_test');
    assert.deepEqual(r.out, [
      'NAME  STATUS  READY  KIND       URL                        EXPIRES',
      'shop  Ready   2/2    container  https://shop.apps.example  -',
      'blog  Ready   2/2    -          -                          2026-12-01T00:00:00Z',
    ]);
    const listed = json(await run(appsGroup, ['ls', '--json'])) as { apps: Array<{ name: string }> };
    assert.deepEqual(
      listed.apps.map((a) => a.name),
      ['shop', 'blog'],
    );
  });

  it('follows next_after', async () => {
    fake.on('GET /apps', (seen) =>
      seen.query.after === undefined
        ? { json: { apps: [app], next_after: 'shop' } }
        : { json: { apps: [{ ...app, name: 'zoo' }], next_after: null } },
    );
    const r = await run(appsGroup, ['ls', '--json']);
    assert.deepEqual(
      fake.seen.map((s) => s.query),
      [{ limit: '500' }, { limit: '500', after: 'shop' }],
    );
    assert.deepEqual(
      (json(r) as { apps: Array<{ name: string }> }).apps.map((a) => a.name),
      ['shop', 'zoo'],
    );
  });

  it('creates with the options as the API takes them, and refuses a bad port before calling', async () => {
    fake.on('POST /apps', { status: 201, json: app });
    const r = await run(appsGroup, ['create', 'shop', '--image', 'nginx:1.27', '--port', '80', '--machines', '2']);
    assert.deepEqual(fake.last.body, { name: 'shop', image: 'nginx:1.27', port: 80, machines: 2 });
    assert.equal(r.out[0], 'created app shop (uid-shop)');
    await assert.rejects(run(appsGroup, ['create', 'shop', '--port', 'eighty']), GroupUsageError);
    assert.equal(fake.seen.length, 1);
  });

  it('gets one app with its fields, and carries the API’s error', async () => {
    fake.on('GET /apps/shop', { json: app });
    const r = await run(appsGroup, ['get', 'shop']);
    assert.match(r.out.join('\n'), /status: +Ready \(2\/2 machines ready\)/);
    assert.match(r.out.join('\n'), /expires: +never/);
    await assert.rejects(run(appsGroup, ['get', 'nope']), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 404);
      assert.equal(err.apiMessage, 'no route GET /apps/nope');
      return true;
    });
  });

  it('rm asks on a terminal, refuses without one unless --yes, and deletes with --yes', async () => {
    fake.on('DELETE /apps/shop', { status: 204 });
    const no = await run(appsGroup, ['rm', 'shop'], { interactive: true, answer: 'n' });
    assert.equal(no.code, 1);
    assert.match(no.err[0]!, /^delete app shop .*\[y\/N\] $/);
    assert.equal(fake.seen.length, 0, 'nothing deleted on "n"');
    await assert.rejects(run(appsGroup, ['rm', 'shop']), /not a terminal to ask at: add --yes/);
    assert.equal(fake.seen.length, 0);
    const yes = await run(appsGroup, ['rm', 'shop'], { interactive: true, answer: 'yes' });
    assert.equal(yes.code, 0);
    assert.equal(fake.last.method, 'DELETE');
    const scripted = await run(appsGroup, ['rm', 'shop', '--yes']);
    assert.deepEqual(scripted.out, ['deleted app shop']);
    assert.equal(fake.seen.length, 2);
  });

  it('forks and sets or clears the expiry', async () => {
    fake.on('POST /apps/shop/fork', {
      status: 201,
      json: { app: { ...app, name: 'shop2', id: 'uid-2' }, deploy: deploy('dep_9', { status: 'pending' }) },
    });
    const f = await run(appsGroup, ['fork', 'shop', 'shop2']);
    assert.deepEqual(fake.last.body, { name: 'shop2' });
    assert.equal(f.out[0], 'forked shop into shop2 (uid-2)');
    fake.on('PUT /apps/shop/expiry', { json: { expires_at: '2026-12-04T10:00:00Z' } });
    await run(appsGroup, ['expiry', 'shop', '--in', '7d']);
    assert.deepEqual(fake.last.body, { ttl: '7d' });
    await run(appsGroup, ['expiry', 'shop', '--at', '2026-12-04T10:00:00Z']);
    assert.deepEqual(fake.last.body, { expires_at: '2026-12-04T10:00:00Z' });
    fake.on('DELETE /apps/shop/expiry', { status: 204 });
    assert.deepEqual((await run(appsGroup, ['expiry', 'shop', '--clear'])).out, ['app shop no longer expires']);
    await assert.rejects(run(appsGroup, ['expiry', 'shop', '--in', '7d', '--clear']), /give one of/);
  });
});

describe('svc env', () => {
  const provided = (name: string, overrides = false) => ({
    name,
    source: { kind: 'database', name: 'shopdb' },
    value: null,
    masked: true,
    overrides,
  });

  it('lists the app’s variables, then what a database provides, masked, and which own one it overrides', async () => {
    fake.on('GET /apps/shop/env', {
      json: {
        env: { LOG_LEVEL: 'debug', DATABASE_URL: 'postgres://old', GREETING: ' hi\n' },
        provided: [provided('PGHOST'), provided('DATABASE_URL', true)],
      },
    });
    const r = await run(envGroup, ['ls', 'shop']);
    assert.deepEqual(r.out, [
      'KEY           VALUE           SOURCE',
      'DATABASE_URL  postgres://old  app (not used: database shopdb sets it)',
      'GREETING      " hi\\n"         app',
      'LOG_LEVEL     debug           app',
      'PGHOST        ********        database shopdb',
      'DATABASE_URL  ********        database shopdb',
    ]);
    const j = json(await run(envGroup, ['ls', 'shop', '--json'])) as { env: Record<string, string> };
    assert.equal(j.env.LOG_LEVEL, 'debug');
  });

  it('set sends one PATCH of the variables; a bad name sends nothing', async () => {
    fake.on('PATCH /apps/shop/env', { json: { env: { A: '1', B: 'x=y' }, provided: [] } });
    const r = await run(envGroup, ['set', 'shop', 'A=1', 'B=x=y']);
    assert.equal(fake.last.method, 'PATCH');
    assert.deepEqual(fake.last.body, { A: '1', B: 'x=y' });
    assert.match(r.out[0]!, /^set A, B on shop/);
    await assert.rejects(run(envGroup, ['set', 'shop', 'OK=1', '1BAD=2', 'NOEQUALS']), (err: unknown) => {
      assert.ok(err instanceof GroupUsageError);
      assert.match(err.message, /"1BAD" is not a variable name/);
      assert.match(err.message, /NOEQUALS: expected KEY=VALUE/);
      return true;
    });
    assert.equal(fake.seen.length, 1);
  });

  it('unset removes one by DELETE, several by one PATCH of nulls', async () => {
    fake.on('DELETE /apps/shop/env/A', { status: 204 });
    assert.deepEqual((await run(envGroup, ['unset', 'shop', 'A'])).out, ['removed A from shop; its machines restart without it']);
    fake.on('PATCH /apps/shop/env', { json: { env: {}, provided: [] } });
    await run(envGroup, ['unset', 'shop', 'A', 'B']);
    assert.deepEqual(fake.last.body, { A: null, B: null });
  });

  it('import sends the whole file in one PATCH (PUT with --replace), from a file or standard input', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-env-'));
    try {
      const file = path.join(dir, '.env');
      await writeFile(file, '# settings\nexport A=1\nB="two words"\n');
      fake.on('PATCH /apps/shop/env', { json: { env: { A: '1', B: 'two words' }, provided: [] } });
      fake.on('PUT /apps/shop/env', { json: { env: { A: '1', B: 'two words' }, provided: [] } });
      const r = await run(envGroup, ['import', 'shop', file]);
      assert.equal(fake.seen.length, 1);
      assert.deepEqual(fake.last.body, { A: '1', B: 'two words' });
      assert.match(r.out[0]!, /^set 2 variables on shop \(A, B\)/);
      await run(envGroup, ['import', 'shop', '-', '--replace'], { stdin: 'C=3\n' });
      assert.equal(fake.last.method, 'PUT');
      assert.deepEqual(fake.last.body, { C: '3' });
      await writeFile(file, 'A=1\nbad-name=2\nC="open\n');
      await assert.rejects(run(envGroup, ['import', 'shop', file]), (err: unknown) => {
        assert.ok(err instanceof Error && !(err instanceof GroupUsageError), 'a bad file is exit 1, not a usage error');
        assert.match(err.message, /nothing was changed/);
        assert.match(err.message, /line 2: "bad-name" is not a variable name/);
        assert.match(err.message, /line 3: the double quote is never closed/);
        return true;
      });
      assert.equal(fake.seen.length, 2, 'a bad file sends nothing');
      await assert.rejects(run(envGroup, ['import', 'shop', path.join(dir, 'missing.env')]), /cannot read .*no such file/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});

describe('svc deploys and rollback', () => {
  it('lists deploys newest first with the current one marked, paging by next_before up to --limit', async () => {
    fake.on('GET /apps/shop/deploys', {
      json: {
        deploys: [deploy('dep_2', { current: true }), deploy('dep_1', { status: 'failed', reason: 'image not found' })],
        next_before: null,
      },
    });
    const r = await run(deploysGroup, ['ls', 'shop', '--limit', '5']);
    assert.deepEqual(fake.last.query, { limit: '5' });
    assert.match(r.out[1]!, /^\* +dep_2 +live +image +deploy /);
    assert.match(r.out[2]!, /^ +dep_1 +failed .* image not found$/);
  });

  it('gets one deploy', async () => {
    fake.on('GET /deploys/dep_2', { json: deploy('dep_2', { current: true }) });
    const r = await run(deploysGroup, ['get', 'dep_2']);
    assert.match(r.out[0]!, /^deploy: +dep_2 \(serving now\)$/);
  });

  it('rollback sends the deploy named, or none for the last live one', async () => {
    fake.on('POST /apps/shop/rollback', {
      status: 202,
      json: deploy('dep_3', { status: 'pending', origin: 'rollback', origin_deploy: 'dep_1' }),
    });
    const r = await run(rollbackGroup, ['shop', 'dep_1']);
    assert.deepEqual(fake.last.body, { deploy_id: 'dep_1' });
    assert.equal(r.out[0], 'rolling shop back: deploy dep_3 (rollback of dep_1)');
    await run(rollbackGroup, ['shop']);
    assert.deepEqual(fake.last.body, {});
    const j = json(await run(rollbackGroup, ['shop', '--json'])) as { id: string };
    assert.equal(j.id, 'dep_3');
  });
});

describe('svc previews, machines, metrics', () => {
  const preview = {
    ref: 'pr-42',
    app: 'shop--pr-42',
    id: 'uid-p',
    url: null,
    status: 'Pending',
    current_deploy: null,
    database: null,
    created_at: null,
  };

  it('lists, creates, deploys and removes previews', async () => {
    fake.on('GET /apps/shop/previews', { json: { previews: [preview] } });
    const ls = await run(previewsGroup, ['ls', 'shop']);
    assert.match(ls.out[1]!, /^pr-42 +shop--pr-42 +Pending +- +- +-$/);
    fake.on('POST /apps/shop/previews', { status: 201, json: { preview, deploy: null } });
    await run(previewsGroup, ['create', 'shop', 'pr-42', '--image', 'nginx:1.27']);
    assert.deepEqual(fake.last.body, { ref: 'pr-42', image: 'nginx:1.27' });
    fake.on('POST /apps/shop/previews/pr-42/deploy', { status: 202, json: deploy('dep_p', { app: 'shop--pr-42', status: 'pending' }) });
    await run(previewsGroup, ['deploy', 'shop', 'pr-42', '--image', 'nginx:1.28']);
    assert.deepEqual(fake.last.body, { image: 'nginx:1.28' });
    await assert.rejects(run(previewsGroup, ['deploy', 'shop', 'pr-42']), /--image names what to deploy/);
    fake.on('DELETE /apps/shop/previews/pr-42', { status: 204 });
    assert.deepEqual((await run(previewsGroup, ['rm', 'shop', 'pr-42', '--yes'])).out, ['deleted preview pr-42 of shop']);
  });

  it('lists machines (of one service) and migrates one', async () => {
    const m = {
      ordinal: 0,
      service: 'web',
      public: true,
      node: 'n1',
      state: 'running',
      address: '10.0.0.5',
      deploy: 'dep_2',
      started_at: null,
    };
    fake.on('GET /apps/shop/machines', { json: { machines: [m, { ...m, ordinal: 1, service: 'worker', public: false, node: null }] } });
    const r = await run(machinesGroup, ['ls', 'shop', '--service', 'web']);
    assert.deepEqual(fake.last.query, { service: 'web' });
    assert.match(r.out[1]!, /^web\/m0 \(public\) +running +n1 +10\.0\.0\.5 +dep_2 +-$/);
    assert.match(r.out[2]!, /^worker\/m1 +running +- /);
    fake.on('POST /apps/shop/machines/1/migrate', { status: 202, json: { ordinal: 1, from: 'n1', to: 'n2' } });
    const mv = await run(machinesGroup, ['migrate', 'shop', '1', '--node', 'n2']);
    assert.deepEqual(fake.last.body, { node: 'n2' });
    assert.deepEqual(mv.out, ['moving machine m1 of shop from n1 to n2']);
    await assert.rejects(run(machinesGroup, ['migrate', 'shop', 'first']), GroupUsageError);
  });

  it('asks for the summary by default, or the path named with since and step', async () => {
    const machine = {
      machine: 0,
      service: null,
      pod: 'shop-m0-1',
      node: 'n1',
      phase: 'Running',
      cpu_cores: 0.0215,
      memory_bytes: 52953088,
      memory_usage_bytes: 53010432,
      sampled_at: null,
      unavailable: null,
    };
    fake.on('GET /apps/shop/metrics/summary', {
      json: {
        app: 'shop',
        app_id: 'uid-shop',
        start: 's',
        end: 'e',
        requests: { total: 10, per_second: 0.0028, status: { '2xx': 9, '3xx': 0, '4xx': 1, '5xx': 0 } },
        latency: { p50: 12.44, p90: 48.1, p99: null, mean: 20, unit: 'ms' },
        machines: [machine],
      },
    });
    const s = await run(metricsGroup, ['shop']);
    assert.equal(s.out[1], 'requests: 10 (0.003/s): 2xx 9, 3xx 0, 4xx 1, 5xx 0');
    assert.equal(s.out[2], 'latency:  p50 12.4 ms, p90 48.1 ms, p99 - ms, mean 20 ms');
    assert.match(s.out[5]!, /^m0 +Running +n1 +0\.021 +51 MiB$/);
    fake.on('GET /apps/shop/metrics/requests', {
      json: {
        app: 'shop',
        app_id: 'uid-shop',
        start: 's',
        end: 'e',
        step_seconds: 3600,
        total: { requests: 3, status: { '2xx': 3, '3xx': 0, '4xx': 0, '5xx': 0 } },
        points: [{ time: '2026-11-27T10:00:00.000Z', requests: 3, status: { '2xx': 3, '3xx': 0, '4xx': 0, '5xx': 0 } }],
      },
    });
    const r = await run(metricsGroup, ['shop', 'requests', '--since', '6h', '--step', '1h']);
    assert.deepEqual(fake.last.query, { since: '6h', step: '1h' });
    assert.deepEqual(r.out.at(-1)!.split(/ +/), ['total', '3', '3', '0', '0', '0']);
    await assert.rejects(run(metricsGroup, ['shop', 'cpu']), /no metrics "cpu"; one of summary, requests, latency, machines/);
  });
});

describe('svc tokens, webhooks, usage', () => {
  it('creates a token with its restrictions, printing it alone on stdout', async () => {
    fake.on('POST /account/tokens', {
      status: 201,
      json: {
        token: 'svc_new',
        nonce: 'n9',
        name: 'ci',
        restrictions: ['apps: shop', 'actions: read, deploy'],
        created_at: 'c',
        expires_at: 'x',
      },
    });
    const r = await run(tokensGroup, ['create', '--name', 'ci', '--apps', 'shop', '--actions', 'deploy,read', '--expires-in', '30d']);
    assert.deepEqual(fake.last.body, { name: 'ci', apps: ['shop'], actions: ['read', 'deploy'], expires_in: '30d' });
    assert.deepEqual(r.out, ['svc_new']);
    assert.match(r.err[0]!, /^token n9 \(ci\), expires x: apps: shop; actions: read, deploy$/);
    await assert.rejects(run(tokensGroup, ['create', '--actions', 'read,fly']), /unknown actions: fly/);
    assert.equal(fake.seen.length, 1);
  });

  it('lists tokens with their state, and revokes one', async () => {
    const t = {
      nonce: 'n1',
      name: null,
      restrictions: [],
      created_at: 'c',
      expires_at: '2099-01-01T00:00:00Z',
      last_used_at: null,
      revoked: false,
      current: false,
    };
    fake.on('GET /account/tokens', {
      json: {
        tokens: [
          t,
          { ...t, nonce: 'n2', revoked: true },
          { ...t, nonce: 'n3', expires_at: '2000-01-01T00:00:00Z' },
          { ...t, nonce: 'n4', current: true },
        ],
      },
    });
    const r = await run(tokensGroup, ['ls']);
    assert.deepEqual(
      r.out.slice(1).map((l) => l.split(/ {2,}/).slice(0, 3)),
      [
        ['n1', '-', 'live'],
        ['n2', '-', 'revoked'],
        ['n3', '-', 'expired'],
        ['n4', '-', 'live (this one)'],
      ],
    );
    fake.on('DELETE /account/tokens/n1', { status: 204 });
    await run(tokensGroup, ['rm', 'n1', '--yes']);
    assert.equal(fake.last.method, 'DELETE');
    assert.equal(fake.last.path, '/account/tokens/n1');
  });

  it('adds a webhook (the secret alone on stdout), lists, removes, and works its deliveries', async () => {
    const w = {
      id: 'wh1',
      url: 'https://ci.example/h',
      events: ['deploy.live'],
      description: null,
      created_at: 'c',
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
    };
    fake.on('POST /account/webhooks', { status: 201, json: { ...w, secret: 'whsec_1' } });
    const add = await run(webhooksGroup, ['add', 'https://ci.example/h', '--events', 'deploy.live']);
    assert.deepEqual(fake.last.body, { url: 'https://ci.example/h', events: ['deploy.live'] });
    assert.deepEqual(add.out, ['whsec_1']);
    fake.on('GET /account/webhooks', { json: { webhooks: [w, { ...w, id: 'wh2', events: [], failing_since: 'f' }] } });
    const ls = await run(webhooksGroup, ['ls']);
    assert.match(ls.out[1]!, /^wh1 +https:\/\/ci\.example\/h +deploy\.live +ok +-$/);
    assert.match(ls.out[2]!, /^wh2 .* \* +failing since f +-$/);
    const d = {
      id: 'del1',
      event_id: 7,
      event_type: 'deploy.live',
      status: 'failed',
      attempts: 3,
      next_attempt_at: null,
      last_attempt_at: 'l',
      last_status: 500,
      last_error: 'HTTP 500',
      created_at: 'c',
    };
    fake.on('GET /account/webhooks/wh1/deliveries', { json: { deliveries: [d], next_before: 7 } });
    const dl = await run(webhooksGroup, ['deliveries', 'wh1', '--status', 'failed', '--limit', '10']);
    assert.deepEqual(fake.last.query, { status: 'failed', limit: '10' });
    assert.match(dl.out[1]!, /^del1 +7 deploy\.live +failed +3 +l \(500\) +- +HTTP 500$/);
    assert.equal(dl.out.at(-1), 'older ones: svc webhooks deliveries wh1 --before 7');
    fake.on('POST /account/webhooks/wh1/deliveries/del1/redeliver', { status: 202, json: { ...d, status: 'pending' } });
    await run(webhooksGroup, ['redeliver', 'wh1', 'del1']);
    assert.equal(fake.last.path, '/account/webhooks/wh1/deliveries/del1/redeliver');
    fake.on('GET /account/webhooks/wh1/deliveries/del1', {
      json: {
        ...d,
        payload: '{"type":"deploy.live"}',
        attempt_log: [{ attempt: 1, attempted_at: 'a', duration_ms: 12, status: 500, error: 'HTTP 500', response_excerpt: 'oops' }],
      },
    });
    const one = await run(webhooksGroup, ['delivery', 'wh1', 'del1']);
    assert.equal(one.out.at(-1), '{"type":"deploy.live"}');
    fake.on('DELETE /account/webhooks/wh1', { status: 204 });
    await run(webhooksGroup, ['rm', 'wh1', '--yes']);
    assert.equal(fake.last.method, 'DELETE');
    await assert.rejects(
      run(webhooksGroup, ['deliveries', 'wh1', '--status', 'lost']),
      /--status is one of pending, succeeded, failed, canceled/,
    );
  });

  it('shows this month’s usage, and the history by day', async () => {
    const meters = {
      machine_seconds: 7200,
      build_seconds: 360,
      sandbox_seconds: 0,
      stored_bytes: 1048576,
      data_requests: 1234,
      data_bytes: 2048,
      domain_registrations: 2,
    };
    const charges = { domain_registrations: { USD: 2798, JPY: 1500 } };
    fake.on('GET /account/usage', {
      json: { start: 's', end: 'e', meters, charges, apps: { shop: { machine_seconds: 3600 }, blog: { machine_seconds: 7200 } } },
    });
    const r = await run(usageGroup, []);
    assert.deepEqual(r.out.slice(1, 13), [
      'METER                 USED',
      'machine_seconds       2 h',
      'build_seconds         0.1 h',
      'sandbox_seconds       0 h',
      'stored_bytes          1 MiB',
      'data_requests         1234',
      'data_bytes            2 KiB',
      'domain_registrations  2',
      '',
      'CHARGED FOR           AMOUNT',
      'domain_registrations  27.98 USD',
      'domain_registrations  1500 JPY',
    ]);
    assert.deepEqual(r.out.slice(14), ['APP   MACHINE TIME', 'blog  2 h', 'shop  1 h']);
    assert.deepEqual((json(await run(usageGroup, ['--json'])) as { meters: unknown }).meters, meters);
    fake.on('GET /account/usage/history', { json: { history: [{ start: 'a', end: 'b', meters, charges }] } });
    await run(usageGroup, ['--history', '--days', '7']);
    assert.deepEqual(fake.last.query, { bucket: 'day', days: '7' });
    await assert.rejects(run(usageGroup, ['--days', '7']), /go with --history/);
  });
});

describe('svc users and sessions', () => {
  const user = {
    id: 'usr_1',
    email: 'a@example.com',
    name: null,
    last_provider: 'email',
    created_at: 'c',
    last_sign_in_at: null,
    disabled: false,
    disabled_at: null,
    active_sessions: 2,
  };

  it('lists users, disables and enables one, and lists the providers', async () => {
    fake.on('GET /apps/shop/auth/users', { json: { users: [user], next_after: null } });
    const ls = await run(usersGroup, ['ls', 'shop']);
    assert.match(ls.out[1]!, /^usr_1 +a@example\.com +- +never +email +2 +active$/);
    fake.on('POST /apps/shop/auth/users/usr_1/disable', { json: { user: { ...user, disabled: true } } });
    const off = await run(usersGroup, ['disable', 'shop', 'usr_1']);
    assert.deepEqual(off.out, ['a@example.com can no longer sign in to shop; their sessions have ended']);
    fake.on('POST /apps/shop/auth/users/usr_1/enable', { json: { user } });
    await run(usersGroup, ['enable', 'shop', 'usr_1']);
    assert.equal(fake.last.path, '/apps/shop/auth/users/usr_1/enable');
    fake.on('GET /apps/shop/auth/providers', { json: { providers: [{ name: 'idp', in_policy: true, configured: false }] } });
    const p = await run(usersGroup, ['providers', 'shop']);
    assert.match(p.out[1]!, /^idp +yes +no \(cannot sign in with it\)$/);
  });

  it('revokes one user’s or one address’s sessions, and everyone’s only when confirmed', async () => {
    fake.on('POST /apps/shop/auth/sessions/revoke', { json: { revoked: 2 } });
    const r = await run(sessionsGroup, ['revoke', 'shop', '--email', 'a@example.com']);
    assert.deepEqual(fake.last.body, { email: 'a@example.com' });
    assert.deepEqual(r.out, ['signed a@example.com out of shop: 2 sessions ended']);
    await run(sessionsGroup, ['revoke', 'shop', '--user', 'usr_1']);
    assert.deepEqual(fake.last.body, { user_id: 'usr_1' });
    await assert.rejects(run(sessionsGroup, ['revoke', 'shop']), /add --yes/);
    assert.equal(fake.seen.length, 2);
    await run(sessionsGroup, ['revoke', 'shop', '--yes']);
    assert.deepEqual(fake.last.body, {});
  });
});

describe('svc api', () => {
  it('sends the method, path, query and JSON body with the token, and prints the body as it came', async () => {
    fake.on('PATCH /apps/shop/env', { json: { env: { A: '1' }, provided: [] } });
    const r = await run(rawApiGroup, ['patch', '/apps/shop/env?x=1', '--data', '{"A":"1"}']);
    assert.equal(r.code, 0);
    assert.equal(fake.last.method, 'PATCH');
    assert.deepEqual(fake.last.query, { x: '1' });
    assert.deepEqual(fake.last.body, { A: '1' });
    assert.equal(fake.last.authorization, 'Bearer svc_test');
    assert.deepEqual(JSON.parse(r.written), { env: { A: '1' }, provided: [] });
    const piped = await run(rawApiGroup, ['POST', '/apps', '-d', '-'], { stdin: '{"name":"x"}' });
    assert.deepEqual(fake.last.body, { name: 'x' });
    assert.equal(piped.code, 1, 'a 404 exits 1');
    assert.deepEqual(piped.err, ['svc: 404 no route POST /apps']);
    await assert.rejects(run(rawApiGroup, ['POST', '/apps', '--data', '{nope']), /--data is not JSON/);
  });
});

const build = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  app: 'shop',
  status: 'succeeded',
  reason: 'Built',
  message: null,
  source: { type: 'upload', digest: 'sha256:0' },
  deploy: false,
  plan: null,
  artifact: { digest: 'sha256:0123456789abcdef0123', bytes: 2048 },
  image: null,
  reused_from: null,
  deploy_id: null,
  deploy_error: null,
  created_at: '2026-11-27T10:00:00.000Z',
  started_at: null,
  completed_at: null,
  duration_seconds: 12,
  ...over,
});

const database = (over: Record<string, unknown> = {}) => ({
  name: 'orders',
  engine: 'postgres',
  phase: 'Ready',
  message: null,
  attached_to: null,
  host: 'orders.db',
  port: 5432,
  database: 'orders',
  storage_bytes: 128 << 20,
  used_bytes: null,
  deletion_policy: 'drop',
  created_at: 'c',
  ...over,
});

const sandbox = (over: Record<string, unknown> = {}) => ({
  id: 'sb-1',
  runtime: 'python',
  network: false,
  state: 'ready',
  reason: 'Claimed',
  message: null,
  launch: 'warm',
  launch_reason: null,
  resources: { cpu: '1', memory: '512Mi', disk: '1Gi' },
  idle_timeout_seconds: 300,
  max_lifetime_seconds: 3600,
  created_at: 'c',
  ready_at: 'r',
  last_activity_at: null,
  idle_expires_at: null,
  expires_at: 'x',
  ended_at: null,
  ...over,
});

/** A directory of files for deploy and build, removed after `use`. */
async function withDir(files: Record<string, string>, use: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-cli-'));
  try {
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
    await use(dir);
  } finally {
    await rm(dir, { recursive: true });
  }
}

describe('svc deploy, build, builds, import', () => {
  it('deploy sends the directory as a .tar.gz and follows the deploy until it is live', async () => {
    await withDir({ 'index.html': '<h1>hi</h1>' }, async (dir) => {
      fake.on('POST /apps/shop/deploy', { status: 202, json: deploy('dep_1', { status: 'pending', kind: 'static' }) });
      fake.on('GET /deploys/dep_1', { json: deploy('dep_1', { status: 'live', kind: 'static' }) });
      fake.on('GET /apps/shop', { json: app });
      const r = await run(deployGroup, ['shop', dir]);
      const upload = fake.seen[0]!;
      assert.equal(upload.headers['content-type'], 'application/gzip');
      assert.equal(upload.authorization, 'Bearer svc_test');
      assert.match(gunzipSync(upload.bytes).toString('latin1'), /index\.html/);
      assert.match(r.out[0]!, /^Packing .*: 1 files, 11 B$/);
      assert.equal(r.out[1], 'Deploy dep_1 accepted: static');
      assert.equal(r.out[2], '  live');
      assert.match(r.out[3]!, /^Live in [\d.]+ s$/);
    });
  });

  it('deploy sends an image as JSON, and says why a deploy failed', async () => {
    fake.on('POST /apps/shop/deploy', { status: 202, json: deploy('dep_2', { status: 'pending' }) });
    fake.on('GET /deploys/dep_2', { json: deploy('dep_2', { status: 'failed', reason: 'image not found' }) });
    fake.on('GET /apps/shop', { json: app });
    await assert.rejects(
      run(deployGroup, ['shop', '--image', 'nginx:1.27']),
      /deploy dep_2 failed: image not found \(the previous deploy keeps serving\)/,
    );
    assert.deepEqual(fake.seen[0]!.body, { image: 'nginx:1.27' });
    const queued = await run(deployGroup, ['shop', '--image', 'nginx:1.27', '--no-wait']);
    assert.deepEqual(queued.out, ['Deploying image nginx:1.27 to shop', 'Deploy dep_2 accepted: image']);
    await assert.rejects(run(deployGroup, ['shop', 'dir', '--image', 'x']), /give a directory or --image, not both/);
  });

  it('build uploads the directory without node_modules, streams the log, and exits with the result', async () => {
    await withDir({ 'index.js': 'x' }, async (dir) => {
      fake.on('POST /builds', { status: 202, json: build('bld-1', { status: 'queued', deploy: true }) });
      fake.on('GET /builds/bld-1/logs', { stream: { type: 'text/plain', chunks: ['==> build bld-1\n', '==> $ npm run build\n'] } });
      fake.on('GET /builds/bld-1', { json: build('bld-1', { deploy: true, deploy_id: 'dep_3' }) });
      const r = await run(buildGroup, [dir, '--app', 'shop', '--deploy']);
      assert.equal(r.code, 0);
      assert.deepEqual(fake.seen[0]!.query, { app: 'shop', deploy: 'true' });
      assert.equal(fake.seen[0]!.headers['content-type'], 'application/gzip');
      assert.deepEqual(fake.seen[1]!.query, { follow: 'true' });
      assert.equal(
        r.written,
        'Build bld-1 of shop queued\n==> build bld-1\n==> $ npm run build\n' +
          'Build bld-1 succeeded in 12 s: sha256:0123456789ab… (2 KiB)\nDeploy dep_3 started (GET /deploys/dep_3)\n',
      );
      fake.on('GET /builds/bld-1', { json: build('bld-1', { status: 'failed', message: '`npm run build` exited with code 2' }) });
      const failed = await run(buildGroup, [dir, '--app', 'shop', '--json']);
      assert.equal(failed.code, 1);
      assert.equal((JSON.parse(failed.written) as { status: string }).status, 'failed', '--json: only the record');
    });
    fake.on('POST /builds', { status: 202, json: build('bld-2', { status: 'queued' }) });
    await run(buildGroup, ['--app', 'shop', '--git', 'https://git.example/shop', '--ref', 'main', '--no-follow']);
    assert.deepEqual(fake.last.body, { app: 'shop', deploy: false, git: { url: 'https://git.example/shop', ref: 'main' } });
    await assert.rejects(run(buildGroup, ['.']), /--app names the app to build for/);
  });

  it('builds reads a log, a build, an app’s builds (--json: the list), and cancels one', async () => {
    fake.on('GET /builds/bld-1/logs', { stream: { type: 'text/plain', chunks: ['line 1\n', 'line 2\n'] } });
    assert.equal((await run(buildsGroup, ['logs', 'bld-1'])).written, 'line 1\nline 2\n');
    assert.deepEqual(fake.last.query, {});
    fake.on('GET /builds/bld-1', { json: build('bld-1', { status: 'failed', reason: 'CommandFailed', message: 'exit 2' }) });
    assert.deepEqual((await run(buildsGroup, ['get', 'bld-1'])).out, ['bld-1 shop failed (CommandFailed): exit 2']);
    fake.on('GET /apps/shop/builds', { json: { builds: [build('bld-1')] } });
    const ls = await run(buildsGroup, ['ls', 'shop']);
    assert.deepEqual(ls.out[0]!.split(/ +/), ['ID', 'STATUS', 'REASON', 'SECONDS', 'CREATED']);
    assert.match(ls.out[1]!, /^bld-1 +succeeded +Built +12 +2026-11-27T10:00:00\.000Z$/);
    assert.equal((json(await run(buildsGroup, ['ls', 'shop', '--json'])) as Array<{ id: string }>)[0]!.id, 'bld-1');
    fake.on('POST /builds/bld-1/cancel', { status: 202, json: build('bld-1', { status: 'canceled' }) });
    assert.deepEqual((await run(buildsGroup, ['cancel', 'bld-1'])).out, ['bld-1 canceled']);
    await assert.rejects(run(buildsGroup, ['get']), GroupUsageError);
  });

  it('import previews without creating, or creates the app and streams its first build', async () => {
    fake.on('GET /apps/imports/preview', {
      json: {
        repository: 'https://git.example/shop',
        ref: 'main',
        commit: '0123456789abcdef',
        path: null,
        plan: { kind: 'node', why: 'package.json has a build script' },
        problem: null,
        services: [],
        auth: null,
        auth_from: 'none',
      },
    });
    const p = await run(importGroup, ['https://git.example/shop', '--preview', '--ref', 'main']);
    assert.deepEqual(fake.last.query, { repository: 'https://git.example/shop', ref: 'main' });
    assert.deepEqual(p.out, ['https://git.example/shop at main (0123456789ab): node, package.json has a build script; auth: none']);
    fake.on('POST /apps/imports', {
      status: 202,
      json: {
        app,
        build: build('bld-9', { status: 'queued' }),
        repository: { url: 'u', default_branch: 'main', path: null, hook_path: '/hooks/git/1', hook_secret: 's3' },
      },
    });
    fake.on('GET /builds/bld-9/logs', { stream: { type: 'text/plain', chunks: ['built\n'] } });
    fake.on('GET /builds/bld-9', { json: build('bld-9') });
    const r = await run(importGroup, ['https://git.example/shop', '--name', 'shop']);
    assert.deepEqual(fake.seen.find((x) => x.path === '/apps/imports')!.body, { repository: 'https://git.example/shop', name: 'shop' });
    assert.equal(r.out[0], 'App shop imported from https://git.example/shop (default branch main)');
    assert.equal(r.written, 'built\n');
    assert.equal(r.out.at(-1), 'Build bld-9 succeeded');
  });
});

describe('svc open, events', () => {
  it('open prints the one-time link alone', async () => {
    fake.on('POST /apps/shop/auth/owner-link', {
      status: 201,
      json: { url: 'https://shop.apps.example/_svc/auth/login#handoff=x', expires_at: 'x' },
    });
    const r = await run(openGroup, ['shop', '/admin']);
    assert.deepEqual(fake.last.body, { next: '/admin' });
    assert.deepEqual(r.out, ['https://shop.apps.example/_svc/auth/login#handoff=x']);
    await assert.rejects(run(openGroup, ['shop', 'admin']), /PATH starts with \//);
  });

  const event = (id: number, type = 'deploy.live') => ({ id, type, subject: 'shop', data: { deploy: 'd' }, created_at: 't' });

  it('events lists every page with the filters, one line each or --json', async () => {
    fake.on('GET /events', (seen) =>
      seen.query.after === '0' ? { json: { events: [event(1)], next_after: 1 } } : { json: { events: [event(2)], next_after: null } },
    );
    const r = await run(eventsGroup, ['--kind', 'deploy.*', '--app', 'shop']);
    assert.deepEqual(fake.seen[0]!.query, { after: '0', limit: '1000', kinds: 'deploy.*', app: 'shop' });
    assert.deepEqual(r.out, ['1  t  deploy.live  shop  {"deploy":"d"}', '2  t  deploy.live  shop  {"deploy":"d"}']);
    const j = await run(eventsGroup, ['--json']);
    assert.deepEqual(
      j.out.map((l) => (JSON.parse(l) as { id: number }).id),
      [1, 2],
    );
    await assert.rejects(run(eventsGroup, ['--after', 'x']), /--after is an event id/);
  });

  it('events --follow reconnects from the last event printed, and stops at an error event', async () => {
    let connections = 0;
    fake.on('GET /events', () => {
      connections += 1;
      return connections === 1
        ? { stream: { type: 'text/event-stream', chunks: ['retry: 10\n\n', `id: 1\ndata: ${JSON.stringify(event(1))}\n\n`] } }
        : {
            stream: {
              type: 'text/event-stream',
              chunks: [
                `data: ${JSON.stringify(event(1))}\n\ndata: ${JSON.stringify(event(2))}\n\n`,
                'event: error\ndata: {"error":"token revoked"}\n\n',
              ],
            },
          };
    });
    const r: string[] = [];
    await assert.rejects(
      run(eventsGroup, ['--follow', '--json']).then((x) => r.push(...x.out)),
      /the event stream ended: token revoked/,
    );
    assert.deepEqual(fake.seen[0]!.query, { follow: 'true', after: '0' });
    assert.equal(fake.seen[1]!.headers['last-event-id'], '1', 'resumed after the last one printed');
    assert.equal(fake.seen[1]!.headers.accept, 'text/event-stream');
  });
});

describe('svc db, volumes, domains', () => {
  it('db create waits until Ready, and ls prints a table or the list', async () => {
    fake.on('POST /databases', { status: 201, json: database({ phase: 'Pending' }) });
    fake.on('GET /databases', { json: { databases: [database()] } });
    const r = await run(dbGroup, ['create', 'orders', '--size', String(128 << 20), '--retain']);
    assert.deepEqual(fake.seen[0]!.body, { name: 'orders', storage_bytes: 128 << 20, deletion_policy: 'retain' });
    assert.deepEqual(r.out, ['orders: Ready']);
    const ls = await run(dbGroup, ['ls']);
    assert.deepEqual(ls.out[0]!.split(/ {2,}/), ['NAME', 'PHASE', 'APP', 'SIZE', 'USED', 'ON DELETE']);
    assert.match(ls.out[1]!, /^orders +Ready +- +128 MiB +- +drop$/);
    assert.equal((json(await run(dbGroup, ['ls', '--json'])) as Array<{ name: string }>)[0]!.name, 'orders');
    await assert.rejects(run(dbGroup, ['create', 'x', '--size', 'big']), /--size is a number of bytes/);
  });

  it('db attaches, detaches, removes, backs up (waiting until stored), lists backups and restores', async () => {
    fake.on('PUT /apps/shop/database', { json: { app: 'shop', database: database({ attached_to: 'shop' }) } });
    assert.match((await run(dbGroup, ['attach', 'orders', 'shop'])).out[0]!, /^orders attached to shop/);
    assert.deepEqual(fake.last.body, { name: 'orders' });
    fake.on('DELETE /apps/shop/database', { status: 204 });
    assert.deepEqual((await run(dbGroup, ['detach', 'shop'])).out, ['detached from shop']);
    fake.on('DELETE /databases/orders', { status: 204 });
    assert.deepEqual((await run(dbGroup, ['rm', 'orders'])).out, ['orders deleted']);
    const b = { id: 'bk-1', database: 'orders', status: 'done', bytes: 100, error: null, created_at: 't' };
    let listed = 0;
    fake.on('GET /databases/orders/backups', () => ({ json: { backups: listed++ < 2 ? [] : [b] } }));
    fake.on('POST /databases/orders/backups', { status: 202, json: { database: 'orders', requested_at: 'now' } });
    assert.deepEqual((json(await run(dbGroup, ['backup', 'orders', '--json'])) as { id: string }).id, 'bk-1');
    const backups = await run(dbGroup, ['backups', 'orders']);
    assert.match(backups.out.join('\n'), /^ID\s+STATUS\s+BYTES\s+TAKEN\s+ERROR\nbk-1\s+done\s+100\s+t$/);
    fake.on('POST /databases', { status: 201, json: database({ name: 'copy' }) });
    await run(dbGroup, ['restore', 'bk-1', 'copy']);
    assert.deepEqual(fake.last.body, { name: 'copy', restore_from: { backup: 'bk-1' } });
    await assert.rejects(run(dbGroup, ['frob']), /unknown db command: frob/);
  });

  it('volumes lists (--json: the list) and removes', async () => {
    const v = {
      ref: 'vol-shop-data-m0',
      kind: 'machine',
      app: 'shop',
      service: null,
      machine: 0,
      volume: 'data',
      database: null,
      path: '/data',
      size_bytes: 64 << 20,
      used_bytes: 2048,
      attached: true,
      mounted_by: 'shop-m0',
      node: 'n1',
      created_at: 'c',
    };
    const storage = { used_bytes: 0, limit_bytes: 0, database_bytes: 0, volume_bytes: 0, artifact_bytes: 0 };
    fake.on('GET /volumes', { json: { volumes: [v], storage } });
    const r = await run(volumesGroup, ['ls']);
    assert.match(
      r.out.join('\n'),
      /^REF\s+OF\s+PATH\s+SIZE\s+USED\s+ATTACHED\s+NODE\nvol-shop-data-m0\s+shop machine 0\s+\/data\s+64 MiB\s+2 KiB\s+yes\s+n1$/,
    );
    assert.equal((json(await run(volumesGroup, ['ls', '--json'])) as Array<{ ref: string }>)[0]!.ref, v.ref);
    fake.on('DELETE /volumes/vol-shop-data-m0', { status: 204 });
    assert.deepEqual((await run(volumesGroup, ['rm', v.ref])).out, ['vol-shop-data-m0 deleted']);
  });

  it('domains lists (--json as the API answers), and removes one, a wildcard’s * sent as %2A', async () => {
    fake.on('GET /apps/shop/domains', { json: { domains: [] } });
    assert.deepEqual((await run(domainsGroup, ['ls', 'shop'])).out, ['app shop has no domains; add one: svc domains add shop NAME']);
    assert.deepEqual(json(await run(domainsGroup, ['ls', 'shop', '--json'])), { domains: [] });
    fake.on('DELETE /apps/shop/domains/%2A.shop.example', { status: 204 });
    const r = await run(domainsGroup, ['rm', 'shop', '*.shop.example']);
    assert.deepEqual(r.out, ['*.shop.example removed from shop: it no longer routes there, and the name is free']);
    await assert.rejects(run(domainsGroup, ['add', 'shop']), /svc domains add APP NAME/);
  });
});

describe('svc sandbox and eval', () => {
  const exit = (over: Record<string, unknown> = {}) => ({
    type: 'exit',
    status: 'ok',
    exit_code: 3,
    signal: null,
    reason: null,
    truncated: { stdout: false, stderr: false },
    bytes: { stdout: 4, stderr: 4 },
    duration_ms: 5,
    ...over,
  });
  const ndjson = (...lines: unknown[]) => ({
    stream: { type: 'application/x-ndjson', chunks: lines.map((l) => `${JSON.stringify(l)}\n`) },
  });

  it('open prints the ID alone, and what it opened on stderr', async () => {
    fake.on('POST /sandboxes', { status: 201, json: sandbox() });
    const r = await run(sandboxGroup, ['open', '--runtime', 'python', '--network', '--idle', '60']);
    assert.deepEqual(fake.last.body, { runtime: 'python', network: true, idle_timeout_seconds: 60 });
    assert.deepEqual(r.out, ['sb-1']);
    assert.deepEqual(r.err, ['sb-1  ready (Claimed)  python  launch warm']);
    fake.on('POST /sandboxes', { status: 201, json: sandbox({ state: 'failed' }) });
    assert.equal((await run(sandboxGroup, ['open'])).code, 1);
  });

  it('exec streams stdout and stderr as they come and exits with the command’s code (124 at its timeout)', async () => {
    fake.on('POST /sandboxes/sb-1/exec', ndjson({ type: 'stdout', data: 'out\n' }, { type: 'stderr', data: 'err\n' }, exit()));
    const r = await run(sandboxGroup, ['exec', 'sb-1', '--', 'sh', '-c', 'exit 3']);
    assert.deepEqual(fake.last.body, { argv: ['sh', '-c', 'exit 3'], stream: true });
    assert.equal(fake.last.headers.accept, 'application/x-ndjson');
    assert.deepEqual([r.code, r.written, r.writtenErr], [3, 'out\n', 'err\n']);
    fake.on(
      'POST /sandboxes/sb-1/exec',
      ndjson(exit({ status: 'timed_out', exit_code: null, signal: 'SIGKILL', reason: 'killed after the timeout of 1 s' })),
    );
    const slow = await run(sandboxGroup, ['exec', 'sb-1', '--timeout', '1', '-c', 'sleep 5']);
    assert.deepEqual(fake.last.body, { command: 'sleep 5', timeout_seconds: 1, stream: true });
    assert.equal(slow.code, 124);
    assert.deepEqual(slow.err, ['svc: timed_out: killed after the timeout of 1 s']);
    fake.on('POST /sandboxes/sb-1/exec', { json: { ...exit({ exit_code: 0 }), stdout: 'x\n', stderr: '' } });
    const j = await run(sandboxGroup, ['exec', 'sb-1', '--json', '-c', 'echo x']);
    assert.equal((json(j) as { stdout: string }).stdout, 'x\n');
    assert.equal(fake.last.body && (fake.last.body as { stream?: boolean }).stream, undefined, '--json asks for the whole result');
    await assert.rejects(run(sandboxGroup, ['exec', 'sb-1']), /give -c 'SHELL COMMAND' or -- PROGRAM ARGS/);
  });

  it('put sends the file’s bytes, get pipes them out, rm and ls (--json: the list) as before', async () => {
    await withDir({ 'in.bin': 'bytes\u0000here' }, async (dir) => {
      fake.on('PUT /sandboxes/sb-1/files', { json: { path: '/home/app/in.bin', size: 10 } });
      const put = await run(sandboxGroup, ['put', 'sb-1', path.join(dir, 'in.bin'), 'in.bin']);
      assert.deepEqual(fake.last.query, { path: 'in.bin' });
      assert.equal(fake.last.headers['content-type'], 'application/octet-stream');
      assert.equal(fake.last.bytes.toString(), 'bytes\u0000here');
      assert.deepEqual(put.err, ['wrote 10 bytes to /home/app/in.bin']);
    });
    fake.on('GET /sandboxes/sb-1/files', { stream: { type: 'application/octet-stream', chunks: ['file ', 'body'] } });
    assert.equal((await run(sandboxGroup, ['get', 'sb-1', 'out.bin'])).bytes.toString(), 'file body');
    fake.on('DELETE /sandboxes/sb-1', { json: sandbox({ state: 'ended', reason: 'Deleted' }) });
    assert.match((await run(sandboxGroup, ['rm', 'sb-1'])).out[0]!, /^sb-1 {2}ended \(Deleted\)/);
    fake.on('GET /sandboxes', { json: { sandboxes: [sandbox()] } });
    const ls = await run(sandboxGroup, ['ls', '--all']);
    assert.deepEqual(fake.last.query, { all: 'true' });
    assert.match(ls.out[1]!, /^sb-1 +ready +Claimed +python +off +warm +c +x$/);
    assert.equal((json(await run(sandboxGroup, ['ls', '--json'])) as Array<{ id: string }>)[0]!.id, 'sb-1');
  });

  it('eval runs -c CODE or standard input once', async () => {
    fake.on('POST /eval', ndjson({ type: 'stdout', data: 'hi\n' }, exit()));
    const r = await run(evalGroup, ['--runtime', 'python', '-c', 'print("hi")']);
    assert.deepEqual(fake.last.body, { runtime: 'python', code: 'print("hi")', stream: true });
    assert.deepEqual([r.code, r.written], [3, 'hi\n']);
    await run(evalGroup, ['--runtime', 'node', '-'], { stdin: 'console.log(1)' });
    assert.equal((fake.last.body as { code: string }).code, 'console.log(1)');
    await assert.rejects(run(evalGroup, ['-c', '1']), /--runtime is required/);
  });
});

describe('every group', () => {
  it('prints its usage with an example on --help, and is listed in svc --help', async () => {
    for (const g of commandGroups) {
      const r = await run(g, ['--help']);
      assert.equal(r.code, 0, g.name);
      assert.match(r.out.join('\n'), /^usage:\n/, g.name);
      assert.match(r.out.join('\n'), /\nexample:\n {2}svc /, g.name);
      assert.match(g.synopsis, new RegExp(`^ {2}svc ${g.name} `), g.name);
    }
  });

  it('says an unknown subcommand or option is a usage error', async () => {
    await assert.rejects(
      run(appsGroup, ['frob']),
      (err: unknown) => err instanceof GroupUsageError && /unknown apps command: frob/.test(err.message),
    );
    await assert.rejects(run(appsGroup, ['ls', '--frob']), GroupUsageError);
    await assert.rejects(run(envGroup, []), GroupUsageError);
  });
});

describe('the built svc', () => {
  const svcJs = fileURLToPath(new URL('../../cli/svc.js', import.meta.url));
  const exec = promisify(execFile);
  const svc = (args: string[], env: Record<string, string> = {}) =>
    exec(process.execPath, [svcJs, ...args], { env: { ...process.env, SVC_API_URL: fake.url, SVC_TOKEN: 'svc_test', ...env } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
    );

  it('exits 0 with --json on stdout, 1 with the API’s words on a refusal, 2 on wrong usage', async () => {
    fake.on('GET /apps', { json: { apps: [app], next_after: null } });
    const ok = await svc(['apps', 'ls', '--json']);
    assert.equal(ok.code, 0);
    assert.equal((JSON.parse(ok.stdout) as { apps: unknown[] }).apps.length, 1);
    assert.equal(ok.stderr, '');

    fake.on('GET /apps', { status: 401, json: { error: 'invalid token: revoked' } });
    const denied = await svc(['apps', 'ls']);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /^svc: 401 invalid token: revoked\nsvc: to log in, set \$SVC_TOKEN/);
    assert.doesNotMatch(denied.stderr, /\n\s+at /, 'no stack trace');

    fake.on('PATCH /apps/shop/env', { status: 403, json: { error: 'token lacks action "write"' } });
    const lacking = await svc(['env', 'set', 'shop', 'A=1']);
    assert.equal(lacking.code, 1);
    assert.equal(
      lacking.stderr,
      'svc: 403 token lacks action "write"\nsvc: this needs a token with the "write" action (svc tokens create --actions write, or one without restrictions)\n',
    );

    const usage = await svc(['env', 'set', 'shop']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^svc: svc env set APP KEY=VALUE/);
    assert.match(usage.stderr, /\nusage:\n {2}svc env ls/);

    const help = await svc(['webhooks', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage:\n {2}svc webhooks ls/);

    const all = await svc(['--help']);
    assert.equal(all.code, 0);
    for (const g of commandGroups) assert.match(all.stdout, new RegExp(`\n {2}svc ${g.name} `), g.name);

    const unreachable = await svc(['usage'], { SVC_API_URL: 'http://127.0.0.1:1/api' });
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /^svc: cannot reach the API at http:\/\/127\.0\.0\.1:1\/api: .*\nsvc: is \$SVC_API_URL right\?/);

    fake.on('POST /sandboxes/sb-1/exec', {
      stream: {
        type: 'application/x-ndjson',
        chunks: [
          '{"type":"stdout","data":"out\\n"}\n{"type":"stderr","data":"err\\n"}\n',
          '{"type":"exit","status":"failed","exit_code":null,"signal":"SIGKILL","reason":"out of memory","truncated":{"stdout":false,"stderr":false},"bytes":{"stdout":4,"stderr":4},"duration_ms":1}\n',
        ],
      },
    });
    const exec = await svc(['sandbox', 'exec', 'sb-1', '-c', 'x']);
    assert.deepEqual([exec.code, exec.stdout, exec.stderr], [137, 'out\n', 'err\nsvc: failed: out of memory\n']);
    const moved = await svc(['db', 'create']);
    assert.equal(moved.code, 2);
    assert.match(moved.stderr, /^svc: svc db create NAME\nusage:\n {2}svc db create/);

    const raw = await svc(['api', 'GET', '/nowhere']);
    assert.equal(raw.code, 1);
    assert.deepEqual(JSON.parse(raw.stdout), { error: 'no route GET /nowhere' });
  });
});
