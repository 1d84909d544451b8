// GET /events against the real API and PostgreSQL: list with a cursor and filters, follow over SSE
// (an event published after the follow began arrives; Last-Event-ID resumes with no gap and no
// duplicate after the connection is cut), NDJSON, a revoked token ending its stream within a
// second, and events of concurrent transactions delivered in id order with none skipped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { eventsCommand } from '../../cli/events.js';
import { recordEvent } from '../../lib/events.js';
import { startTestApi, type TestApi } from '../support/api.js';

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
}

/** Follows a stream, parsing SSE frames (or NDJSON lines) as they come. */
function follow(api: TestApi, opts: { token?: string; headers?: Record<string, string>; query?: string } = {}) {
  const controller = new AbortController();
  const frames: Frame[] = [];
  const waiters: Array<() => void> = [];
  let ended = false;
  const done = (async () => {
    const res = await fetch(`${api.url}/api/events?follow=true${opts.query ?? ''}`, {
      headers: { authorization: `Bearer ${opts.token ?? api.token}`, ...opts.headers },
      signal: controller.signal,
    });
    assert.equal(res.status, 200);
    const ndjson = res.headers.get('content-type') === 'application/x-ndjson';
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += Buffer.from(chunk).toString();
        const sep = ndjson ? '\n' : '\n\n';
        let i: number;
        while ((i = buf.indexOf(sep)) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + sep.length);
          if (ndjson) {
            if (block.trim()) frames.push({ data: block });
          } else {
            const f: Frame = {};
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const c = line.indexOf(':');
              (f as Record<string, string>)[line.slice(0, c)] = line.slice(c + 1).trimStart();
            }
            if (Object.keys(f).length) frames.push(f);
          }
          for (const w of waiters.splice(0)) w();
        }
      }
    } catch (err) {
      if ((err as Error).name !== 'AbortError') throw err;
    } finally {
      ended = true;
      for (const w of waiters.splice(0)) w();
    }
  })();
  const until = async (check: () => boolean, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (ended || Date.now() > deadline) break;
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return check();
  };
  const events = () =>
    frames
      .filter((f) => f.id !== undefined || (f.data && !f.retry && f.event !== 'error'))
      .map((f) => JSON.parse(f.data!) as { id: number; type: string; subject: string | null });
  return { frames, events, until, close: () => controller.abort(), done, ended: () => ended };
}

describe('GET /events', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api?.close();
  });

  const newToken = async (name: string) => {
    const res = await api.request('POST', '/api/account/tokens', { body: { name } });
    assert.equal(res.status, 201);
    return (await res.json()) as { token: string; nonce: string };
  };

  it('lists events after a cursor, by kind (exact or prefix.*) and app, and refuses unknown kinds naming the known ones', async () => {
    await recordEvent(api.db, api.account.id, 'deploy.created', 'shop', { deploy: 'd1' });
    await recordEvent(api.db, api.account.id, 'deploy.live', 'shop', { deploy: 'd1' });
    await recordEvent(api.db, api.account.id, 'deploy.live', 'blog', { deploy: 'd2' });
    const all = (await (await api.request('GET', '/api/events?limit=1000')).json()) as {
      events: Array<{ id: number; type: string; subject: string }>;
      next_after: number | null;
    };
    assert.equal(all.events[0]!.type, 'account.created');
    assert.ok(all.events.every((e, i) => i === 0 || e.id > all.events[i - 1]!.id));
    const deploys = (await (await api.request('GET', '/api/events?kinds=deploy.*&app=shop')).json()) as {
      events: Array<{ type: string; subject: string }>;
    };
    assert.deepEqual(
      deploys.events.map((e) => [e.type, e.subject]),
      [
        ['deploy.created', 'shop'],
        ['deploy.live', 'shop'],
      ],
    );
    const page = (await (await api.request('GET', '/api/events?limit=2')).json()) as { events: Array<{ id: number }>; next_after: number };
    const next = (await (await api.request('GET', `/api/events?after=${page.next_after}&limit=1`)).json()) as {
      events: Array<{ id: number }>;
    };
    assert.ok(next.events[0]!.id > page.next_after);
    const bad = await api.request('GET', '/api/events?kinds=app.deployed');
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: string }).error, /unknown event kind "app\.deployed"; known: account\.created/);
  });

  it('follows over SSE: retry set, each event with its id and kind, one published after the follow began', async () => {
    const f = follow(api, { query: '&kinds=token.*' });
    assert.ok(await f.until(() => f.events().length > 0), 'the existing token.created first');
    const before = f.events().length;
    assert.equal(f.frames[0]!.retry, '3000');
    const { nonce } = await newToken('followed');
    assert.ok(await f.until(() => f.events().length > before));
    const last = f.frames.at(-1)!;
    assert.equal(last.event, 'token.created');
    const data = JSON.parse(last.data!) as { subject: string; id: number };
    assert.equal(data.subject, nonce);
    assert.equal(Number(last.id), data.id);
    f.close();
    await f.done;
  });

  it('resumes from Last-Event-ID after the connection is cut: no gap, no duplicate', async () => {
    const first = follow(api);
    await first.until(() => first.events().length > 0);
    const a = await newToken('a');
    assert.ok(await first.until(() => first.events().some((e) => e.subject === a.nonce)));
    const seen = first.events();
    const lastId = seen.at(-1)!.id;
    first.close();
    await first.done;
    // Published while nobody follows.
    for (const n of ['b', 'c', 'd']) await newToken(n);
    const missed = (
      (await (await api.request('GET', `/api/events?after=${lastId}&limit=1000`)).json()) as { events: Array<{ id: number }> }
    ).events.map((e) => e.id);
    assert.equal(missed.length, 3);
    const resumed = follow(api, { headers: { 'last-event-id': String(lastId) } });
    await resumed.until(() => resumed.events().length >= 3);
    await newToken('e');
    await resumed.until(() => resumed.events().length >= 4);
    const ids = resumed.events().map((e) => e.id);
    assert.deepEqual(ids.slice(0, 3), missed, 'exactly the missed ones, in order');
    assert.equal(new Set(ids).size, ids.length, 'no duplicate');
    assert.ok(ids.every((id) => id > lastId));
    resumed.close();
    await resumed.done;
  });

  it('streams NDJSON to clients that ask for it', async () => {
    const f = follow(api, { headers: { accept: 'application/x-ndjson' }, query: '&kinds=token.created' });
    await f.until(() => f.events().length > 0);
    const n = f.events().length;
    await newToken('nd');
    assert.ok(await f.until(() => f.events().length > n));
    assert.equal(f.events().at(-1)!.type, 'token.created');
    f.close();
    await f.done;
  });

  it('ends the stream of a token revoked while following, within a second and a half', async () => {
    const { token, nonce } = await newToken('short-lived');
    const f = follow(api, { token });
    await f.until(() => f.events().length > 0);
    const revokedAt = Date.now();
    assert.equal((await api.request('DELETE', `/api/account/tokens/${nonce}`)).status, 204);
    await f.done;
    assert.ok(Date.now() - revokedAt < 1500, `ended ${Date.now() - revokedAt} ms after the revocation`);
    const err = f.frames.find((x) => x.event === 'error');
    assert.match(err?.data ?? '', /revoked/);
  });

  it('svc events lists, and --follow picks up after a dropped connection with nothing missed or twice', async () => {
    const { execFile, spawn } = await import('node:child_process');
    const net = await import('node:net');
    const path = await import('node:path');
    const { repoRoot } = await import('../../lib/paths.js');
    const svc = path.join(repoRoot, 'bin/svc.js');
    const apiPort = Number(new URL(api.url).port);
    // A proxy between the CLI and the API whose connections the test can cut.
    const sockets = new Set<import('node:net').Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(apiPort, '127.0.0.1');
      for (const x of [client, upstream]) {
        sockets.add(x);
        x.on('close', () => sockets.delete(x));
        x.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const env = {
      ...process.env,
      SVC_API_URL: `http://127.0.0.1:${(proxy.address() as import('node:net').AddressInfo).port}/api`,
      SVC_TOKEN: api.token,
    };
    try {
      const { stdout: listed } = await promisify(execFile)(process.execPath, [svc, 'events', '--kind', 'account.*'], { env });
      assert.match(listed, /^\d+ {2}\S+ {2}account\.created {2}acct_/);
      const child = spawn(process.execPath, [svc, 'events', '--follow', '--json', '--kind', 'token.*'], { env });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const lines = () =>
        out
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { id: number; subject: string });
      const waitFor = async (check: () => boolean, ms = 10_000) => {
        const deadline = Date.now() + ms;
        while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        return check();
      };
      try {
        const before = await newToken('cli-1');
        assert.ok(await waitFor(() => lines().some((l) => l.subject === before.nonce)), out);
        for (const x of sockets) x.destroy();
        const during = [await newToken('cli-2'), await newToken('cli-3')];
        // Back after the server's retry (3 s), from the last event printed.
        assert.ok(await waitFor(() => during.every((d) => lines().some((l) => l.subject === d.nonce))), out);
        const ids = lines().map((l) => l.id);
        assert.deepEqual(
          ids,
          [...new Set(ids)].sort((a, b) => a - b),
          'in order, none twice',
        );
        const all = (
          (await (await api.request('GET', `/api/events?kinds=token.*&limit=1000`)).json()) as { events: Array<{ id: number }> }
        ).events.map((e) => e.id);
        assert.deepEqual(ids, all, 'none missed');
      } finally {
        child.kill();
      }
    } finally {
      for (const x of sockets) x.destroy();
      proxy.close();
    }
  });

  it('delivers events of concurrent transactions in id order with none skipped', async () => {
    const f = follow(api, { query: '&kinds=sandbox.opened' });
    await new Promise((r) => setTimeout(r, 200));
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.db.transaction(async (tx) => {
          await recordEvent(tx, api.account.id, 'sandbox.opened', `sb-${i}`);
          // Held open a little, so commits interleave with other inserts.
          await new Promise((r) => setTimeout(r, Math.random() * 20));
        }),
      ),
    );
    assert.ok(await f.until(() => f.events().length >= 50), `got ${f.events().length}`);
    const ids = f.events().map((e) => e.id);
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
    );
    assert.equal(new Set(f.events().map((e) => e.subject)).size, 50);
    f.close();
    await f.done;
    const deadline = Date.now() + 2000;
    while (api.deps.eventHub.followers() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(api.deps.eventHub.followers(), 0, 'closed streams leave the hub');
  });
  it('records the life of an app: created, env changed (keys only), previews, app users, deleted', async () => {
    const ok = async (res: Response, status: number) => assert.equal(res.status, status, await res.clone().text());
    await ok(await api.request('POST', '/api/apps', { body: { name: 'evt' } }), 201);
    await ok(await api.request('PATCH', '/api/apps/evt/env', { body: { A: '1', B: 'secret-b' } }), 200);
    await ok(await api.request('PUT', '/api/apps/evt/env', { body: { A: '1', C: '3' } }), 200);
    await ok(await api.request('DELETE', '/api/apps/evt/env/A'), 204);
    await ok(await api.request('POST', '/api/apps/evt/previews', { body: { ref: 'pr-1' } }), 201);
    await ok(await api.request('DELETE', '/api/apps/evt/previews/pr-1'), 204);
    const app = (await (await api.request('GET', '/api/apps/evt')).json()) as { id: string };
    const ref = { uid: app.id, namespace: api.account.namespace, name: 'evt' };
    const user = await api.deps.auth.users.signIn(ref, 'Ada@Example.com', 'github');
    await api.deps.auth.users.disable(app.id, user!.id, api.deps.auth.sessions);
    await api.deps.auth.users.disable(app.id, user!.id, api.deps.auth.sessions); // idempotent: told once
    await api.deps.auth.users.enable(app.id, user!.id);
    await ok(await api.request('DELETE', '/api/apps/evt'), 204);
    const { events } = (await (await api.request('GET', '/api/events?app=evt')).json()) as {
      events: Array<{ type: string; data: Record<string, unknown> }>;
    };
    assert.deepEqual(
      events.map((e) => [e.type, e.data]),
      [
        ['app.created', { app: 'evt' }],
        ['env.changed', { set: ['A', 'B'], removed: [] }],
        ['env.changed', { set: ['C'], removed: ['B'] }],
        ['env.changed', { set: [], removed: ['A'] }],
        ['preview.created', { preview: 'evt--pr-1', ref: 'pr-1' }],
        ['preview.deleted', { preview: 'evt--pr-1', ref: 'pr-1' }],
        ['app_user.signed_in', { user: user!.id, email: 'ada@example.com', provider: 'github' }],
        ['app_user.disabled', { user: user!.id, email: 'ada@example.com' }],
        ['app_user.enabled', { user: user!.id, email: 'ada@example.com' }],
        ['app.deleted', { app: 'evt' }],
      ],
    );
    assert.ok(!JSON.stringify(events).includes('secret-b'), 'no variable value in the log');
  });

  it('refuses a Last-Event-ID that is not an event id', async () => {
    const res = await api.request('GET', '/api/events?follow=true', { headers: { 'last-event-id': 'abc' } });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: string }).error, /Last-Event-ID: must be an event id/);
  });

  it('answers a cursor older than the retention window gone, listing and following, and svc events goes on from the oldest kept', async () => {
    const { events: before } = (await (await api.request('GET', '/api/events?limit=1000')).json()) as { events: Array<{ id: number }> };
    const oldest = before[0]!.id;
    // Everything so far falls out of the window.
    assert.ok((await api.deps.events.purge(new Date(Date.now() + 1000))) >= before.length);
    await recordEvent(api.db, api.account.id, 'deploy.live', 'kept', { deploy: 'd9' });
    const horizon = before.at(-1)!.id;
    const listed = await api.request('GET', `/api/events?after=${oldest}`);
    assert.equal(listed.status, 410);
    assert.match(
      ((await listed.json()) as { error: string }).error,
      new RegExp(`events after ${oldest} are no longer kept \\(the log keeps 30 days\\): list again from after=${horizon}`),
    );
    // From the horizon on, or with no cursor: what is kept.
    const kept = (await (await api.request('GET', `/api/events?after=${horizon}`)).json()) as { events: Array<{ subject: string }> };
    assert.deepEqual(
      kept.events.map((e) => e.subject),
      ['kept'],
    );
    assert.equal(((await (await api.request('GET', '/api/events')).json()) as { events: unknown[] }).events.length, 1);
    // Following: one explicit gone event, then the stream ends.
    const f = follow(api, { headers: { 'last-event-id': String(oldest) } });
    await f.done;
    const gone = f.frames.find((x) => x.event === 'gone');
    assert.ok(gone, JSON.stringify(f.frames));
    assert.equal((JSON.parse(gone.data!) as { after: number }).after, horizon);
    const n = follow(api, { headers: { accept: 'application/x-ndjson' }, query: `&after=${oldest}` });
    await n.done;
    assert.deepEqual(JSON.parse(n.frames[0]!.data!), {
      error: (JSON.parse(gone.data!) as { error: string }).error,
      gone: true,
      after: horizon,
    });
    // The CLI says so and lists from the oldest kept.
    const out: string[] = [];
    const warnings: string[] = [];
    await eventsCommand(
      { apiUrl: `${api.url}/api`, token: api.token },
      { follow: false, after: oldest, json: true, out: (l) => out.push(l), warn: (l) => warnings.push(l) },
    );
    assert.match(warnings[0]!, /no longer kept/);
    assert.deepEqual(
      out.map((l) => (JSON.parse(l) as { subject: string }).subject),
      ['kept'],
    );
  });
});
