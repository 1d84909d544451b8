// GET /events (api/operations/events.ts) against in-memory fakes (test/support/fake-api.ts): the
// filters passed on, pages, the 400s of bad kinds, queries and Last-Event-ID, the 410 of a cursor
// older than the log keeps (listed and followed), the SSE framing of a follow, and the refusal of a
// token restricted to apps. No cluster, no PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { eventOperations } from '../../api/operations/events.js';
import { account, startFakeApi, type FakeApi } from '../support/fake-api.js';
import { errorOf } from '../support/answers.js';

describe('event handlers', () => {
  let api: FakeApi;
  before(async () => {
    api = await startFakeApi((f) => eventOperations(f));
  });
  after(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    api.f.events.log.length = 0;
    api.f.events.lists.length = 0;
    api.f.events.purgedThrough = 0;
    const record = (type: string, subject: string) => api.f.events.record(account.id, type, subject, { app: subject });
    await record('app.created', 'shop');
    await record('deploy.created', 'shop');
    await record('deploy.live', 'shop');
    await record('app.created', 'blog');
  });

  const error = errorOf;
  type Listed = { events: Array<{ id: number; type: string; subject: string; created_at: string }>; next_after: number | null };

  it('lists with the kinds and app filters passed on, a page at a time', async () => {
    const res = await api.request('GET', '/api/events?kinds=deploy.*,%20app.created&app=shop');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(api.f.events.lists.at(-1), { after: undefined, limit: 100, types: ['deploy.*', 'app.created'], app: 'shop' });
    assert.deepEqual(
      (res.body as Listed).events.map((e) => [e.type, e.subject]),
      [
        ['app.created', 'shop'],
        ['deploy.created', 'shop'],
        ['deploy.live', 'shop'],
      ],
    );
    const page = (await api.request('GET', '/api/events?limit=2')).body as Listed;
    assert.deepEqual(
      page.events.map((e) => e.id),
      [1, 2],
    );
    assert.equal(page.next_after, 2);
    const next = (await api.request('GET', `/api/events?after=${page.next_after}&limit=2`)).body as Listed;
    assert.deepEqual(
      next.events.map((e) => e.id),
      [3, 4],
    );
    assert.equal(((await api.request('GET', '/api/events?after=4&limit=2')).body as Listed).next_after, null);
  });

  it('refuses unknown kinds and bad queries with a 400 naming them', async () => {
    error(await api.request('GET', '/api/events?kinds=app.deployed'), 400, /unknown event kind "app\.deployed"; known: account\.created/);
    error(await api.request('GET', '/api/events?kinds=app.deployed,nope.*'), 400, /unknown event kinds "app\.deployed", "nope\.\*"/);
    error(await api.request('GET', '/api/events?limit=0'), 400, /^invalid query: limit: /);
    error(await api.request('GET', '/api/events?limit=1001'), 400, /^invalid query: limit: /);
    error(await api.request('GET', '/api/events?after=-1'), 400, /^invalid query: after: /);
    error(await api.request('GET', '/api/events?follow=yes'), 400, /^invalid query: follow: /);
    error(await api.request('GET', '/api/events?bogus=1'), 400, /Unrecognized key: "bogus"/);
    assert.equal(api.f.events.lists.length, 0, 'nothing listed');
  });

  it('refuses a Last-Event-ID that is not an event id', async () => {
    error(
      await api.request('GET', '/api/events?follow=true', undefined, { headers: { 'last-event-id': 'abc' } }),
      400,
      /Last-Event-ID: must be an event id/,
    );
    assert.equal(api.f.eventHub.followers, 0);
  });

  it('answers a cursor older than the log keeps 410, naming the oldest kept', async () => {
    api.f.events.purgedThrough = 3;
    error(
      await api.request('GET', '/api/events?after=1'),
      410,
      /^events after 1 are no longer kept \(the log keeps 30 days\): list again from after=3, the oldest kept$/,
    );
    const kept = (await api.request('GET', '/api/events?after=3')).body as Listed;
    assert.deepEqual(
      kept.events.map((e) => e.id),
      [4],
    );
    // Following from there: one gone event, and the stream ends.
    const res = await api.request('GET', '/api/events', undefined, { headers: { 'last-event-id': '1' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.match(res.text, /^retry: 3000\n\nevent: gone\ndata: \{"error":"events after 1 are no longer kept.*","after":3\}\n\n$/);
    assert.equal(api.f.eventHub.followers, 0);
  });

  it('follows over SSE: each event with its id and kind, after the cursor', async () => {
    const controller = new AbortController();
    const res = await fetch(`${api.url}/api/events?kinds=deploy.*`, {
      headers: { authorization: `Bearer ${api.f.tokens.token}`, accept: 'text/event-stream', 'last-event-id': '2' },
      signal: controller.signal,
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const more = async () => decoder.decode((await reader.read()).value as Uint8Array | undefined, { stream: true });
    let text = '';
    while (!text.includes('\n\nid: ')) text += await more();
    while (!/data: .*\n\n$/.test(text)) text += await more();
    assert.match(text, /^retry: 3000\n\nid: 3\nevent: deploy\.live\ndata: \{"id":3,"type":"deploy\.live","subject":"shop"/);
    assert.equal(api.f.eventHub.followers, 1);
    controller.abort();
    await reader.cancel().catch(() => undefined);
    for (let i = 0; i < 100 && api.f.eventHub.followers > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(api.f.eventHub.followers, 0, 'the client going away ends the follow');
  });

  it('refuses a token restricted to apps (the log is account-wide) and one without read', async () => {
    const shopOnly = api.f.tokens.tokenWith([{ kind: 'apps', apps: ['shop'] }]);
    error(await api.request('GET', '/api/events', undefined, { token: shopOnly }), 403, /^token lacks account-wide access/);
    const execOnly = api.f.tokens.tokenWith([{ kind: 'actions', actions: ['exec'] }]);
    error(await api.request('GET', '/api/events', undefined, { token: execOnly }), 403, /^token lacks action "read"$/);
    error(await api.request('GET', '/api/events', undefined, { token: null }), 401, /authentication required/);
  });
});
