// The account group: account record and namespace, usage from real records, webhooks, events.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApi, type TestApi } from '../support/api.js';

describe('API account endpoints', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api?.close();
  });
  const get = async <T>(path: string): Promise<T> => {
    const res = await api.request('GET', path);
    assert.equal(res.status, 200, path);
    return (await res.json()) as T;
  };

  it('GET /account returns the caller’s account, whose namespace exists', async () => {
    const account = await get<{ id: string; email: string; namespace: string; created_at: string }>('/api/account');
    assert.equal(account.id, api.account.id);
    assert.equal(account.email, api.account.email);
    const ns = await api.kube.core.readNamespace({ name: account.namespace });
    assert.equal(ns.metadata?.labels?.['svc.dev/account'], account.id);
  });

  it('usage sums real records of the current month; history goes back by month', async () => {
    api.clock.now = new Date('2026-03-15T12:00:00Z');
    const db = api.db;
    const rec = (meter: string, subject: string, quantity: number, start: string, end: string) => ({
      account_id: api.account.id,
      meter,
      subject,
      quantity,
      started_at: new Date(start),
      ended_at: new Date(end),
    });
    await db('usage_records').insert([
      rec('machine_seconds', 'shop/0', 3600, '2026-03-01T00:00:00Z', '2026-03-01T01:00:00Z'),
      rec('machine_seconds', 'shop/1', 1800, '2026-03-02T00:00:00Z', '2026-03-02T00:30:00Z'),
      // Straddles the month boundary: half of it counts in March.
      rec('machine_seconds', 'blog/0', 7200, '2026-02-28T23:00:00Z', '2026-03-01T01:00:00Z'),
      rec('build_seconds', 'build-1', 90, '2026-03-03T00:00:00Z', '2026-03-03T00:01:30Z'),
      rec('sandbox_seconds', 'sbx-1', 42, '2026-02-10T00:00:00Z', '2026-02-10T00:00:42Z'),
      rec('stored_bytes', 'db/main', 1000, '2026-03-01T00:00:00Z', '2026-03-01T00:00:00Z'),
      rec('stored_bytes', 'db/main', 5000, '2026-03-10T00:00:00Z', '2026-03-10T00:00:00Z'),
      rec('stored_bytes', 'vol/data', 300, '2026-03-05T00:00:00Z', '2026-03-05T00:00:00Z'),
      // HTML data: requests a minute (summed), the records' size sampled (the latest counts).
      rec('data_requests', 'guestbook', 120, '2026-03-04T10:00:00Z', '2026-03-04T10:01:00Z'),
      rec('data_requests', 'guestbook', 30, '2026-03-04T10:01:00Z', '2026-03-04T10:02:00Z'),
      rec('data_requests', 'guestbook', 7, '2026-02-04T10:01:00Z', '2026-02-04T10:02:00Z'),
      rec('data_bytes', 'guestbook', 900, '2026-03-04T10:00:00Z', '2026-03-04T10:00:00Z'),
      rec('data_bytes', 'guestbook', 4096, '2026-03-04T10:01:00Z', '2026-03-04T10:01:00Z'),
    ]);
    const usage = await get<{ start: string; end: string; meters: Record<string, number> }>('/api/account/usage');
    assert.equal(usage.start, '2026-03-01T00:00:00.000Z');
    assert.equal(usage.end, '2026-03-15T12:00:00.000Z');
    assert.deepEqual(usage.meters, {
      machine_seconds: 3600 + 1800 + 3600,
      build_seconds: 90,
      sandbox_seconds: 0,
      stored_bytes: 5300,
      data_requests: 150,
      data_bytes: 4096,
      domain_registrations: 0,
    });
    const history = await get<{ history: Array<{ start: string; meters: Record<string, number> }> }>('/api/account/usage/history?months=3');
    assert.deepEqual(
      history.history.map((h) => h.start),
      ['2026-03-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    );
    assert.deepEqual(history.history[1]?.meters, {
      machine_seconds: 3600,
      build_seconds: 0,
      sandbox_seconds: 42,
      stored_bytes: 0,
      data_requests: 7,
      data_bytes: 0,
      domain_registrations: 0,
    });
    const bad = await api.request('GET', '/api/account/usage/history?months=99');
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
    api.clock.now = new Date();
  });

  it('webhooks: created with a secret shown once, listed without it, deleted', async () => {
    const res = await api.request('POST', '/api/account/webhooks', {
      body: { url: 'https://hooks.example.com/svc', events: ['deploy.live', 'sandbox.*'], description: 'ci' },
    });
    assert.equal(res.status, 201);
    const created = (await res.json()) as { id: string; secret: string; events: string[] };
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(created.events, ['deploy.live', 'sandbox.*']);
    const list = await get<{ webhooks: Array<{ id: string; url: string }> }>('/api/account/webhooks');
    assert.deepEqual(
      list.webhooks.map((w) => w.url),
      ['https://hooks.example.com/svc'],
    );
    assert.ok(!JSON.stringify(list).includes(created.secret));
    assert.equal((await api.request('DELETE', `/api/account/webhooks/${created.id}`)).status, 204);
    assert.deepEqual((await get<{ webhooks: unknown[] }>('/api/account/webhooks')).webhooks, []);
  });

  it('webhooks: filter by the documented kinds and prefix.*, refusing others with a 400 naming the known ones', async () => {
    for (const events of [['app.deployed'], ['deploy.*', 'nothing.*'], ['deploy.launched']]) {
      const res = await api.request('POST', '/api/account/webhooks', { body: { url: 'https://hooks.example.com/kinds', events } });
      assert.equal(res.status, 400, events.join());
      assert.match(
        ((await res.json()) as { error: string }).error,
        /unknown event kind .*; known: account\.created, .*deploy\.live.*, or prefix\.\* of /,
      );
    }
    assert.deepEqual((await get<{ webhooks: unknown[] }>('/api/account/webhooks')).webhooks, []);
  });

  it('webhooks: refuse non-https, loopback, private, link-local and local-name URLs, creating nothing', async () => {
    for (const url of [
      'http://hooks.example.com/x',
      'https://127.0.0.1/x',
      'https://10.1.2.3/x',
      'https://192.168.1.1/x',
      'https://169.254.169.254/latest',
      'https://[::1]/x',
      'https://localhost/x',
      'https://svc.internal/x',
      'https://user:pw@hooks.example.com/x',
      'not a url',
    ]) {
      const res = await api.request('POST', '/api/account/webhooks', { body: { url } });
      assert.equal(res.status, 400, url);
      assert.match(((await res.json()) as { error: string }).error, /url must/);
    }
    assert.deepEqual((await get<{ webhooks: unknown[] }>('/api/account/webhooks')).webhooks, []);
  });

  it('events list what happened to the account, in order, with a cursor', async () => {
    const first = await get<{ events: Array<{ id: number; type: string }>; next_after: number | null }>('/api/account/events?limit=2');
    assert.equal(first.events.length, 2);
    assert.equal(first.events[0]?.type, 'account.created');
    assert.equal(first.events[1]?.type, 'token.created');
    assert.equal(first.next_after, first.events[1]?.id);
    const rest = await get<{ events: Array<{ id: number; type: string }> }>(`/api/account/events?after=${first.next_after}&limit=1000`);
    assert.ok(rest.events.every((e) => e.id > first.next_after!));
    assert.ok(rest.events.some((e) => e.type === 'webhook.created') && rest.events.some((e) => e.type === 'webhook.deleted'));
    const onlyWebhooks = await get<{ events: Array<{ type: string }> }>('/api/account/events?type=webhook.created');
    assert.ok(onlyWebhooks.events.length > 0 && onlyWebhooks.events.every((e) => e.type === 'webhook.created'));
  });

  it('events list newest first with order=newest, paged down by before, the same events as oldest first', async () => {
    type Page = { events: Array<{ id: number }>; next_after: number | null; next_before: number | null };
    const all = (await get<Page>('/api/account/events?limit=1000')).events.map((e) => e.id);
    assert.ok(all.length >= 4, `${all.length} events`);
    const newest: number[] = [];
    let page = await get<Page>('/api/account/events?order=newest&limit=3');
    assert.equal(page.next_after, null);
    for (;;) {
      newest.push(...page.events.map((e) => e.id));
      if (page.next_before === null) break;
      page = await get<Page>(`/api/account/events?order=newest&limit=3&before=${page.next_before}`);
    }
    assert.deepEqual(newest, [...all].reverse(), 'every event once, newest first');
    for (const bad of ['order=newest&after=1', 'before=5', 'order=latest']) {
      const res = await api.request('GET', `/api/account/events?${bad}`);
      assert.equal(res.status, 400, bad);
    }
  });
});
