// The pure parts of the console's env, tokens and events pages (console/src/): what a pasted .env
// would change (parsed by cli/dotenv.ts, the CLI's own rules), which listed token is this
// console's session and the create request from the form, and the events feed: Server-Sent Events
// read from a stream's chunks, and merging that resumes after the last id seen with no gap and no
// repeat however the reconnections overlap.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AccountEvent, AppEnv, Token } from '../../console/src/api.js';
import { ownVariables, previewPaste, sourceInWords } from '../../console/src/env-changes.js';
import { emptyFeed, eventSummary, maxShown, mergeEvents, readFrames, reconnectDelay, type Feed } from '../../console/src/event-feed.js';
import { hrefOf, routeOf } from '../../console/src/routes.js';
import { sessionToken, tokenRequest } from '../../console/src/token-form.js';

const env = (own: Record<string, string>, provided: string[] = []): AppEnv => ({
  env: own,
  provided: provided.map((name) => ({ name, source: { kind: 'database', name: 'orders' }, masked: true, overrides: name in own })),
});

describe('console env page: a pasted .env', () => {
  it('previews what is added and changed, and patches only those', () => {
    const text = [
      '# a comment',
      'export API_URL=https://api.example.com # trailing comment',
      "SINGLE='a $b \\n kept'",
      'DOUBLE="line1\\nline2"',
      'SAME=1',
      'COLOR=red',
      '',
    ].join('\n');
    const p = previewPaste(text, env({ SAME: '1', COLOR: 'blue' }));
    assert.deepEqual(p.errors, []);
    assert.deepEqual(
      p.changes.map((c) => `${c.name}:${c.kind}`),
      ['API_URL:added', 'SINGLE:added', 'DOUBLE:added', 'SAME:unchanged', 'COLOR:changed'],
    );
    assert.deepEqual(p.patch, {
      API_URL: 'https://api.example.com',
      SINGLE: 'a $b \\n kept',
      DOUBLE: 'line1\nline2',
      COLOR: 'red',
    });
  });

  it('names every bad line by its number and sends nothing while one is bad', () => {
    const p = previewPaste('GOOD=1\nthis is not a variable\n2BAD=x\nOPEN="never closed', env({}));
    assert.deepEqual(p.errors, [
      'line 2: expected KEY=VALUE',
      'line 3: "2BAD" is not a variable name (letters, digits and _, not starting with a digit, at most 256)',
      'line 4: the double quote is never closed',
    ]);
    assert.deepEqual(p.patch, {});
  });

  it('marks a variable a provided one overrides, and repeated names', () => {
    const p = previewPaste('DATABASE_URL=x\nA=1\nA=2', env({}, ['DATABASE_URL']));
    assert.equal(p.changes.find((c) => c.name === 'DATABASE_URL')?.overridden, true);
    assert.deepEqual(p.repeated, ['A']);
    assert.equal(p.patch.A, '2');
    const own = ownVariables(env({ DATABASE_URL: 'mine', B: '2', A: '1' }, ['DATABASE_URL', 'PGHOST']));
    assert.deepEqual(
      own.map((v) => [v.name, v.overriddenBy]),
      [
        ['A', undefined],
        ['B', undefined],
        ['DATABASE_URL', 'database orders'],
      ],
    );
    assert.equal(sourceInWords({ kind: 'vault', name: 'x' }), 'vault x');
  });
});

describe('console tokens page', () => {
  const token = (t: Partial<Token> & { nonce: string }): Token => ({
    name: 'console',
    restrictions: ['expires=2026-11-28T22:00:00Z'],
    created_at: '2026-11-28T10:00:00.000Z',
    expires_at: '2026-11-28T22:00:00.000Z',
    last_used_at: null,
    revoked: false,
    current: false,
    ...t,
  });

  it("tells this session's token by the API's mark of the current one", () => {
    const tokens = [
      token({ nonce: 'n1' }),
      token({
        nonce: 'ci',
        name: 'ci',
        restrictions: ['actions=read', 'expires=2027-01-01T00:00:00Z'],
        expires_at: '2027-01-01T00:00:00.000Z',
      }),
      token({ nonce: 'old', revoked: true }),
      token({ nonce: 'expired', created_at: '2026-11-27T10:00:00.000Z', expires_at: '2026-11-27T22:00:00.000Z' }),
      // Named console by a person, for 90 days: not a session.
      token({ nonce: 'named', expires_at: '2027-02-26T10:00:00.000Z' }),
    ];
    assert.equal(sessionToken(tokens), undefined, 'none marked current');
    assert.equal(sessionToken([...tokens.slice(1), { ...tokens[0]!, current: true }]), 'n1');
    assert.equal(sessionToken([{ ...tokens[2]!, current: true }]), undefined, "a revoked one is nobody's session");
  });

  it('asks for a restriction only for what the form says', () => {
    assert.deepEqual(tokenRequest({ name: ' ', apps: '', actions: [], expiresIn: '90d' }), { expires_in: '90d' });
    assert.deepEqual(tokenRequest({ name: 'ci', apps: 'shop, blog ,', actions: ['deploy', 'read'], expiresIn: '1d' }), {
      name: 'ci',
      apps: ['shop', 'blog'],
      actions: ['read', 'deploy'],
      expires_in: '1d',
    });
  });
});

describe('console events page: the feed', () => {
  const ev = (id: number): AccountEvent => ({
    id,
    type: 'app.created',
    subject: `app${id}`,
    data: { app: `app${id}` },
    created_at: '2026-11-28T10:00:00.000Z',
  });
  const ids = (f: Feed) => f.events.map((e) => e.id);

  it('reads frames split anywhere across chunks, skipping comments, keeping retry', () => {
    const stream =
      'retry: 3000\n\nid: 7\nevent: app.created\ndata: {"id":7}\n\n: keep-alive\n\nid: 8\r\nevent: app.deleted\r\ndata: {"id":\r\ndata: 8}\r\n\r\n';
    for (const cut of [1, 5, 17, 30, 44, stream.length - 3]) {
      const first = readFrames(stream.slice(0, cut));
      const second = readFrames(first.rest + stream.slice(cut));
      const frames = [...first.frames, ...second.frames];
      assert.equal(second.rest, '');
      assert.deepEqual(
        frames,
        [
          { event: 'message', data: '', retry: 3000 },
          { id: '7', event: 'app.created', data: '{"id":7}' },
          { id: '8', event: 'app.deleted', data: '{"id":\n8}' },
        ],
        `cut at ${cut}`,
      );
    }
  });

  it('shows the newest first and resumes after the last id with no duplicate', () => {
    let feed = mergeEvents(emptyFeed, [ev(1), ev(2), ev(3)]);
    assert.deepEqual(ids(feed), [3, 2, 1]);
    assert.equal(feed.lastId, 3);
    // A reconnection that replays what was seen, out of order, repeated, with new ones.
    feed = mergeEvents(feed, [ev(2), ev(3), ev(5), ev(4), ev(5)]);
    assert.deepEqual(ids(feed), [5, 4, 3, 2, 1]);
    assert.equal(feed.lastId, 5);
    const same = mergeEvents(feed, [ev(5), ev(1)]);
    assert.equal(same, feed, 'nothing new: the same feed');
  });

  it('keeps only the newest', () => {
    const many = Array.from({ length: maxShown + 50 }, (_, i) => ev(i + 1));
    const feed = mergeEvents(emptyFeed, many);
    assert.equal(feed.events.length, maxShown);
    assert.equal(feed.events[0]!.id, maxShown + 50);
    assert.equal(feed.lastId, maxShown + 50);
  });

  it('backs off to a minute, and says what an event is about', () => {
    assert.deepEqual(
      [1, 2, 3, 10].map((n) => reconnectDelay(n)),
      [3000, 6000, 12000, 60000],
    );
    assert.equal(reconnectDelay(0, 1000), 1000);
    assert.equal(eventSummary({ ...ev(1), data: { set: ['A', 'B'], removed: [], deploy: 'dep_1', x: null } }), 'set: A, B; deploy: dep_1');
  });

  it('routes the new pages', () => {
    for (const route of [{ page: 'app-env', name: 'shop' }, { page: 'tokens' }, { page: 'events' }] as const) {
      assert.deepEqual(routeOf(hrefOf(route)), route);
    }
    assert.equal(hrefOf({ page: 'app-env', name: 'shop' }), '/console/apps/shop/env');
  });
});
