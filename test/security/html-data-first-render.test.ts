// Attack: what visitors store, written into a public page's first render on the server
// (ingress-auth/data/first-render.ts) from a real PostgreSQL. A record's text must stay text
// wherever the author put the field (an element's contents, a link), a link must never run script,
// and nothing a visitor without a session could not read may be filled into a page: not a gated
// page's reads, not `mine`, not a read for `$verified`. A page that names a binding of another page
// (a tenant forging ids into the HTML) gets nothing that page's own fetch would not give.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parse } from 'parse5';
import { anonymousReads, firstRender, firstRenderMaxAdded } from '../../ingress-auth/data/first-render.js';
import { ReadCache } from '../../ingress-auth/data/read-cache.js';
import { annotatePage, compileBindings, type DataModel } from '../../lib/html-data/compile.js';
import { DataStore } from '../../lib/html-data/store.js';
import { migrateLatest } from '../../lib/db/migrate.js';
import type { AuthPolicy } from '../../lib/policy/index.js';
import type { App } from '../../lib/resources/index.js';
import { freshDatabase } from '../support/db.js';

const board = `<!doctype html><html><head><title>Board</title></head><body>
<ul id="posts" data-svc="list posts order=_created">
  <template><li><a data-svc="field link href" href="#"></a> <span class="t" data-svc="field title"></span><em data-svc="field seen"></em></li></template>
</ul>
<p id="n" data-svc="count posts"></p>
<div id="one" data-svc="one posts"><b data-svc="field title"></b><a class="site" data-svc="field link href">site</a></div>
<ul id="mine" data-svc="list posts mine"><template><li data-svc="field title"></li></template></ul>
<ul id="members" data-svc="list posts for=$verified"><template><li data-svc="field title"></li></template></ul>
<form data-svc="create posts"><input name="title" maxlength="500"><input type="url" name="link"><input type="checkbox" name="seen"></form>
</body></html>`;
const gated = `<!doctype html><title>Members</title><ul id="g" data-svc="list posts"><template><li data-svc="field title"></li></template></ul>`;
const policy: AuthPolicy = { rules: [{ mode: 'auth', paths: ['/gated.html'], admit: { owner: true } }] };

describe('security: the first render of a public page’s reads', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let data: { store: DataStore; cache: ReadCache };
  let app: App;
  let model: DataModel;
  const render = (file: string, html: string) => firstRender(data, app, annotatePage(file, html)!, 'https://board.example.test/');
  const read = (id: string) => model.bindings.find((b) => b.source.startsWith(id))!;

  before(async () => {
    fresh = await freshDatabase();
    await migrateLatest(fresh.db);
    data = { store: new DataStore(fresh.db), cache: new ReadCache() };
    model = compileBindings(
      new Map([
        ['index.html', board],
        ['gated.html', gated],
      ]),
    )!;
    app = { metadata: { uid: 'board-uid', namespace: 'svc-acct-1', name: 'board' }, spec: { data: model, auth: policy } } as unknown as App;
    const payloads = [
      { title: '</li></ul><script>window.x=1</script>', link: 'javascript:alert(1)', seen: true },
      { title: '<img src=x onerror=alert(1)> & "quotes"', link: 'https://example.test/a"onmouseover="alert(1)', seen: false },
      { title: '<!-- comment --><template>t</template>', link: 'data:text/html,<script>alert(1)</script>', seen: false },
    ];
    for (const p of payloads) await data.store.create('board-uid', 'posts', 'idp:ada', p);
  });
  after(async () => fresh?.dispose());

  it('fills only what an anonymous fetch may read: not a gated page, not mine, not $verified', () => {
    const ids = [...anonymousReads(app).values()].map((b) => b.source).sort();
    assert.deepEqual(ids, ['count posts', 'list posts order=_created', 'one posts']);
    assert.equal(read('list posts mine').mine, true);
    assert.ok(!anonymousReads(app).has(model.bindings.find((b) => b.file === 'gated.html' && b.verb === 'list')!.id));
  });

  it('writes records as text and links only with an http(s) scheme; the page stays one document with the same elements', async () => {
    const out = (await render('index.html', board))!;
    assert.ok(out, 'filled');
    // (A link's address may show as the text of an empty link, as the client shows it: text, never an attribute.)
    const payloadMarkup = ['<script>', '<img src=x', '<!-- comment -->', 'href="javascript:', 'href="data:', '"onmouseover="alert(1)"'];
    for (const p of payloadMarkup) assert.ok(!out.includes(p), `${p} is not in the page as written`);
    // Parsed as a browser would: the records are in the list as text, no element of theirs.
    const doc = parse(out);
    const all: Array<{ tag: string; attrs: Record<string, string>; text: string }> = [];
    const walk = (n: { nodeName: string; childNodes?: unknown[]; attrs?: Array<{ name: string; value: string }>; content?: unknown }) => {
      for (const c of (n.childNodes ?? []) as (typeof n)[]) {
        if (c.attrs)
          all.push({
            tag: c.nodeName,
            attrs: Object.fromEntries(c.attrs.map((a) => [a.name, a.value])),
            text: ((c.childNodes ?? []) as Array<{ value?: string }>).map((t) => t.value ?? '').join(''),
          });
        walk(c);
      }
    };
    walk(doc);
    assert.deepEqual(
      all.filter((e) => e.tag === 'script').map((e) => e.attrs.src),
      ['/_svc/data/client.js'],
      'no script element but the client',
    );
    assert.equal(all.filter((e) => e.tag === 'img').length, 0, 'no img element');
    const items = all.filter((e) => e.tag === 'li' && e.attrs['data-svc-item']);
    assert.equal(items.length, 3, 'each record one item, marked with its id');
    const titles = all.filter((e) => e.tag === 'span' && e.attrs.class === 't').map((e) => e.text);
    assert.deepEqual(titles, [
      '</li></ul><script>window.x=1</script>',
      '<img src=x onerror=alert(1)> & "quotes"',
      '<!-- comment --><template>t</template>',
    ]);
    const links = all.filter((e) => e.tag === 'a' && e.attrs['data-svc'] === 'field link href' && e.attrs.class !== 'site');
    assert.deepEqual(
      links.map((a) => a.attrs.href),
      [undefined, 'https://example.test/a%22onmouseover=%22alert(1)', undefined],
      'a javascript: or data: link loses its href; an http(s) one is written escaped',
    );
    assert.deepEqual(
      links.map((a) => a.text),
      ['javascript:alert(1)', 'https://example.test/a"onmouseover="alert(1)', 'data:text/html,<script>alert(1)</script>'],
      'an empty link shows its address as text',
    );
    assert.deepEqual(
      all.filter((e) => e.tag === 'em').map((e) => e.text),
      ['✓', '', ''],
    );
    assert.equal(all.find((e) => e.attrs.id === 'n')?.text, '3');
    assert.equal(all.find((e) => e.tag === 'b')?.text, '</li></ul><script>window.x=1</script>', 'one: its first record');
    assert.equal(all.find((e) => e.attrs.class === 'site')?.attrs.href, undefined);
    for (const id of ['mine', 'members']) assert.equal(all.filter((e) => e.tag === 'li' && !e.attrs['data-svc-item']).length, 0, id);
  });

  it('a gated page gets nothing filled, and a page naming another page’s ids gets only what those give anyone', async () => {
    assert.equal(await render('gated.html', gated), undefined);
    // A page forging the gated page's list id next to its own element: the gated read is not filled.
    const forged = `<ul data-svc-id="${model.bindings.find((b) => b.file === 'gated.html' && b.verb === 'list')!.id}"><template><li>x</li></template></ul>`;
    assert.equal(await firstRender(data, app, forged, 'https://board.example.test/'), undefined);
  });

  it('an empty read is marked empty, and a page without reads to fill is left alone', async () => {
    const empty = { ...app, metadata: { ...app.metadata, uid: 'empty-uid' } } as App;
    const out = (await firstRender(data, empty, annotatePage('index.html', board)!, 'https://board.example.test/'))!;
    assert.match(out, /<ul data-svc-empty id="posts"/);
    assert.match(out, /<p id="n" data-svc="count posts" data-svc-id="[^"]+">0<\/p>/);
    assert.equal(await firstRender(data, app, '<p>no bindings</p>', 'https://board.example.test/'), undefined);
  });

  it('fills only what the runtime annotated, each read once, within a bound: copied ids, scripts and huge lists get nothing', async () => {
    const annotated = annotatePage('index.html', board)!;
    const listId = read('list posts order=_created').id;
    const fieldId = model.bindings.find((b) => b.verb === 'field' && b.field === 'title' && b.file === 'index.html')!.id;
    // A tenant's page copying a field's id many times inside the template, without data-svc: not filled.
    const copies = `<span data-svc-id="${fieldId}"></span>`.repeat(1000);
    const copied = annotated.replace('<span class="t"', `${copies}<span class="t"`);
    const outCopied = (await firstRender(data, app, copied, 'https://board.example.test/'))!;
    assert.doesNotMatch(
      outCopied,
      new RegExp(`<span data-svc-id="${fieldId}">[^<]`),
      'the copies are repeated with the template, never filled',
    );
    // A script carrying a field's id (and data-svc) is never filled: its text would be code.
    const script = annotated.replace(
      '<em data-svc="field seen"',
      `<script data-svc="field title" data-svc-id="${fieldId}"></script><em data-svc="field seen"`,
    );
    assert.doesNotMatch(
      (await firstRender(data, app, script, 'https://board.example.test/'))!,
      /<script data-svc="field title" data-svc-id="[^"]+">[^<]/,
    );
    // The same read twice in a page: filled once.
    const twice = annotated + annotated.slice(annotated.indexOf('<ul id="posts"'), annotated.indexOf('</ul>') + 5);
    const filledTwice = (await firstRender(data, app, twice, 'https://board.example.test/'))!;
    assert.equal((filledTwice.match(/data-svc-item=/g) ?? []).length, 3, 'three records, once');
    // A list on an element the parser would take apart (<p>, <table>) is left to the client.
    for (const tag of ['p', 'table'])
      assert.equal(
        await firstRender(
          data,
          app,
          annotated
            .replace(
              `<ul id="posts" data-svc="list posts order=_created" data-svc-id="${listId}">`,
              `<${tag} data-svc="list posts order=_created" data-svc-id="${listId}">`,
            )
            .replace(/<\/ul>/, `</${tag}>`)
            .replace(/<p id="n"[^]*?<\/p>/, '')
            .replace(/<div id="one"[^]*?<\/div>/, ''),
          'https://board.example.test/',
        ),
        undefined,
        tag,
      );
    // Past the bound of what may be added, the page goes as written.
    const many = { ...app, metadata: { ...app.metadata, uid: 'many-uid' } } as App;
    const bigTitle = 'x'.repeat(400);
    for (let i = 0; i < 20; i++) await data.store.create('many-uid', 'posts', 'idp:ada', { title: bigTitle });
    const template = '<li><span data-svc="field title"></span></li>'.repeat(200);
    const heavy = annotatePage('index.html', board.replace('<template><li>', `<template>${template}<li>`))!;
    const heavyModel = compileBindings(
      new Map([
        ['index.html', board.replace('<template><li>', `<template>${template}<li>`)],
        ['gated.html', gated],
      ]),
    )!;
    const heavyApp = { ...many, spec: { data: heavyModel, auth: policy } } as unknown as App;
    assert.ok(20 * 200 * 400 > firstRenderMaxAdded);
    assert.equal(await firstRender(data, heavyApp, heavy, 'https://board.example.test/'), undefined);
  });
});
