// Serving HTML data bindings, the pure parts: the page the runtime serves (each binding's id beside
// it, the same ids compileBindings stored; the client script; nothing else changed), who may use a
// binding (ingress-auth/data/access.ts), what a live stream is told of a change (live.ts), and the
// rate of a client (rate.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { audienceAdmits, isOwner, mayChange } from '../../ingress-auth/data/access.js';
import { eventsFor } from '../../ingress-auth/data/live.js';
import { RateLimiter } from '../../ingress-auth/data/rate.js';
import { ReadCache } from '../../ingress-auth/data/read-cache.js';
import type { Identity } from '../../lib/auth/identity.js';
import { annotatePage, compileBindings, dataClientPath, type CompiledBinding } from '../../lib/html-data/compile.js';
import type { Change } from '../../lib/html-data/store.js';

const guestbook = `<!doctype html>
<html><head><title>Guestbook</title></head>
<body>
<ul data-svc="list entries order=-_created limit=20">
  <template><li><b data-svc="field name"></b>: <span data-svc='field message'></span>
    <form data-svc="update entries"><textarea name="message" maxlength="500" required></textarea><button>Save</button></form>
    <button data-svc="delete entries">Delete</button></li></template>
</ul>
<ul data-svc="list todos mine"><template><li data-svc="field title"></li><button data-svc="toggle todos.done">x</button></template></ul>
<form data-svc="create todos"><input name="title"><input type="checkbox" name="done"></form>
<p><span data-svc="count entries"></span> entries</p>
<form data-svc='create\tentries'>
  <input name="name" maxlength="80" required>
  <textarea name="message" maxlength="500" required></textarea>
</form>
</body></html>`;

const ada: Identity = { provider: 'idp', subject: 'idp:ada', email: 'ada@example.test' };
const bob: Identity = { provider: 'idp', subject: 'idp:bob', email: 'bob@example.test' };
const owner: Identity = { provider: 'svc', subject: 'acct_1', email: 'o@example.test', facts: { namespace: 'svc-acct-1' } };
const ns = 'svc-acct-1';

describe('html data: the page the runtime serves', () => {
  it('writes each binding’s compiled id beside its attribute, and the client before </head>, changing nothing else', () => {
    const model = compileBindings(new Map([['guest/index.html', guestbook]]))!;
    const out = annotatePage('guest/index.html', guestbook)!;
    const written = [...out.matchAll(/data-svc-id="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(
      written,
      model.bindings.map((b) => b.id),
      'the same ids, in the same order, as the deploy stored (template contents and unquoted values included)',
    );
    assert.equal(out.replace(/ data-svc-id="[^"]+"/g, '').replace(`<script src="${dataClientPath}" defer></script>`, ''), guestbook);
    assert.ok(out.indexOf(dataClientPath) < out.indexOf('</head>'));
    // Another page with the same text gets other ids (the page is part of the id).
    assert.notDeepEqual(
      [...annotatePage('other.html', guestbook)!.matchAll(/data-svc-id="([^"]+)"/g)].map((m) => m[1]),
      written,
    );
  });

  it('leaves a page without bindings alone, and puts the script at the end of a page without </head>', () => {
    assert.equal(annotatePage('a.html', '<p>data-svc is mentioned here as text</p>'), undefined);
    const bare = '<ul data-svc="count x"></ul>';
    assert.match(
      annotatePage('a.html', bare)!,
      /^<ul data-svc="count x" data-svc-id="[A-Za-z0-9_-]{16}"><\/ul><script src="\/_svc\/data\/client\.js" defer><\/script>$/,
    );
  });
});

describe('html data: who may use a binding', () => {
  const b = (audience: CompiledBinding['audience'], extra: Partial<CompiledBinding> = {}) =>
    ({ verb: 'update', audience, source: 'update entries', ...extra }) as CompiledBinding;

  it('public admits anyone; the others need someone signed in (401), then the right one (403)', () => {
    assert.equal(audienceAdmits(b(['public']), undefined, ns).kind, 'allowed');
    assert.equal(audienceAdmits(b(['$verified']), undefined, ns).kind, 'sign-in');
    assert.equal(audienceAdmits(b(['$verified']), bob, ns).kind, 'allowed');
    assert.equal(audienceAdmits(b(['$owner']), bob, ns).kind, 'forbidden');
    assert.equal(audienceAdmits(b(['$owner']), owner, ns).kind, 'allowed');
    assert.equal(audienceAdmits(b(['$owner']), owner, 'svc-acct-2').kind, 'forbidden', 'the owner of another account is not this app’s');
    assert.ok(isOwner(owner, ns) && !isOwner(ada, ns) && !isOwner(undefined, ns));
  });

  it('$author is decided at the record: its author only', () => {
    const authorOnly = b(['$author']);
    assert.equal(audienceAdmits(authorOnly, ada, ns).kind, 'allowed', 'decided again with the record');
    assert.equal(mayChange(authorOnly, undefined, ada, ns, { author: 'idp:ada', name: null }).kind, 'allowed');
    assert.equal(mayChange(authorOnly, undefined, bob, ns, { author: 'idp:ada', name: null }).kind, 'forbidden');
    assert.equal(
      mayChange(authorOnly, undefined, ada, ns, { author: null, name: 'main' }).kind,
      'forbidden',
      'a named record has no author',
    );
  });

  it('update and delete: the author or the owner unless shared; a change inside a mine read only on one’s own', () => {
    const verified = b(['$verified']);
    const record = { author: 'idp:ada', name: null };
    assert.equal(mayChange(verified, undefined, bob, ns, record).kind, 'forbidden');
    assert.equal(mayChange(verified, undefined, owner, ns, record).kind, 'allowed');
    assert.equal(mayChange({ ...verified, shared: true }, undefined, bob, ns, record).kind, 'allowed');
    assert.equal(mayChange(verified, undefined, bob, ns, { author: null, name: 'main' }).kind, 'allowed', 'named: the audience decides');
    const toggle = b(['$verified'], { verb: 'toggle' });
    assert.equal(mayChange(toggle, undefined, bob, ns, record).kind, 'allowed', 'an action is the audience’s');
    assert.equal(mayChange(toggle, { mine: true }, bob, ns, record).kind, 'forbidden', 'but inside a mine list, only one’s own');
    assert.equal(mayChange(toggle, { mine: true }, ada, ns, record).kind, 'allowed');
    assert.equal(mayChange(b(['public']), undefined, undefined, ns, record).kind, 'sign-in', 'anonymous and not the author: sign in');
  });
});

describe('html data: what a live stream is told', () => {
  const where = { file: 'index.html', line: 1, source: '' };
  const list: CompiledBinding = { id: 'L'.repeat(16), verb: 'list', collection: 'entries', audience: ['public'], ...where };
  const mine: CompiledBinding = { id: 'M'.repeat(16), verb: 'list', collection: 'todos', mine: true, audience: ['$verified'], ...where };
  const count: CompiledBinding = { id: 'C'.repeat(16), verb: 'count', collection: 'todos', audience: ['public'], ...where };
  const at = new Date('2026-11-29T00:00:00Z');
  const put = (collection: string, author: string | null): Change => ({
    seq: 7,
    collection,
    recordId: 'abcdefghijklmnopqrst',
    author,
    op: 'put',
    record: { id: 'abcdefghijklmnopqrst', name: null, author, fields: { title: '<img src=x onerror=alert(1)>' }, created: at, updated: at },
  });

  it('a record of a mine read only to its author; a count hears only that something changed', () => {
    const toBob = eventsFor({ who: bob, bindings: [list, mine, count] }, put('todos', 'idp:ada'));
    assert.doesNotMatch(toBob, /<img/, 'ada’s todo is not sent to bob');
    assert.match(toBob, /^id: 7\nevent: change\ndata: \{"b":"C{16}","op":"put"\}\n\n$/);
    const toAda = eventsFor({ who: ada, bindings: [list, mine] }, put('todos', 'idp:ada'));
    assert.match(toAda, /"b":"M{16}","op":"put","record":\{"_id":"abcdefghijklmnopqrst".*"_mine":true/);
  });

  it('a deletion carries the key only, and only to those who could read the record', () => {
    const gone: Change = { seq: 8, collection: 'todos', recordId: 'abcdefghijklmnopqrst', author: 'idp:ada', op: 'delete' };
    assert.equal(eventsFor({ who: bob, bindings: [mine] }, gone), '');
    assert.equal(
      eventsFor({ who: ada, bindings: [mine] }, gone),
      `id: 8\nevent: change\ndata: {"b":"${'M'.repeat(16)}","op":"delete","id":"abcdefghijklmnopqrst"}\n\n`,
    );
  });
});

describe('html data: rates', () => {
  it('allows a burst, then the steady rate, per key', () => {
    let now = 0;
    const limiter = new RateLimiter({ burst: 3, perSecond: 2 }, () => now);
    assert.deepEqual(
      [1, 2, 3].map(() => limiter.take('a')),
      [0, 0, 0],
    );
    assert.equal(limiter.take('a'), 1, 'the fourth at once waits');
    assert.equal(limiter.take('b'), 0, 'another client has its own bucket');
    now += 500;
    assert.equal(limiter.take('a'), 0, 'half a second later, one more');
  });
});

describe('html data: the read cache', () => {
  it('keeps a read until a change is heard, never one that overlapped a change, and nothing while off', async () => {
    const cache = new ReadCache();
    let reads = 0;
    const read = async () => ++reads;
    assert.equal(await cache.through('a', 'k', read), 1);
    assert.equal(await cache.through('a', 'k', read), 2, 'off until the change announcements are heard: not kept');
    cache.enable(true);
    assert.equal(await cache.through('a', 'k', read), 3);
    assert.equal(await cache.through('a', 'k', read), 3, 'kept');
    cache.invalidate('a');
    assert.equal(await cache.through('a', 'k', read), 4, 'read again after a change');
    // A read under way when a change is heard is not kept (it may predate the change).
    let release!: () => void;
    const slow = cache.through('b', 'k', () => new Promise<number>((r) => (release = () => r(++reads))));
    cache.invalidate('b');
    release();
    assert.equal(await slow, 5);
    assert.equal(await cache.through('b', 'k', read), 6, 'the overlapping read was not kept');
    cache.enable(false);
    assert.equal(cache.get('a', 'k'), undefined, 'turned off: emptied');
  });
});
