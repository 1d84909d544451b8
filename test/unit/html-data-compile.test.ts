// HTML data bindings compiled at deploy (lib/html-data): the grammar of one `data-svc` attribute,
// the checks of where a binding stands, forms turned into declared fields, and the messages a
// deploy fails with (file, line, the attribute as written).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { BindingError, compileBindings, type DataModel } from '../../lib/html-data/compile.js';
import { BindingSyntaxError, parseBinding } from '../../lib/html-data/grammar.js';

const compile = (pages: Record<string, string>): DataModel | undefined => compileBindings(new Map(Object.entries(pages)));

/** The deploy's message for a page, or fails when it compiles. */
function refusal(html: string, file = 'index.html'): string {
  try {
    compile({ [file]: html });
  } catch (err) {
    assert.ok(err instanceof BindingError, String(err));
    return err.message;
  }
  assert.fail(`compiled: ${html}`);
}

const guestbook = `<!doctype html>
<title>Guestbook</title>
<ul data-svc="list entries order=-_created limit=20">
  <template><li><b data-svc="field name"></b>: <span data-svc="field message"></span>
    <form data-svc="update entries"><textarea name="message" maxlength="500" required></textarea><button>Save</button></form>
    <button data-svc="delete entries">Delete</button></li></template>
</ul>
<p><span data-svc="count entries"></span> entries</p>
<form data-svc="create entries">
  <input name="name" maxlength="80" required>
  <textarea name="message" maxlength="500" required></textarea>
  <button type="submit">Sign</button>
</form>`;

describe('html data: one data-svc attribute', () => {
  it('reads verbs, targets and options, with each verb’s default audience', () => {
    assert.deepEqual(parseBinding('list todos mine order=-_created limit=20'), {
      verb: 'list',
      collection: 'todos',
      audience: ['$verified'],
      mine: true,
      order: { field: '_created', desc: true },
      limit: 20,
    });
    assert.deepEqual(parseBinding('create entries').audience, ['$verified']);
    assert.deepEqual(parseBinding('update entries').audience, ['$author', '$owner']);
    assert.deepEqual(parseBinding('list entries').audience, ['public']);
    assert.deepEqual(parseBinding('increment counters.clicks for=public record=main'), {
      verb: 'increment',
      collection: 'counters',
      field: 'clicks',
      audience: ['public'],
      record: 'main',
    });
    assert.deepEqual(parseBinding('delete entries for=$owner shared').audience, ['$owner']);
    assert.equal(parseBinding('field link href').place, 'href');
    assert.equal(parseBinding('  LIST   entries  ').verb, 'list');
  });

  it('refuses unknown verbs, options, audiences and names, saying what it knows', () => {
    const cases: Array<[string, RegExp]> = [
      ['', /is empty/],
      ['show entries', /"show" is not a verb \(known: list, one/],
      ['list', /names no collection/],
      ['list Entries', /not a collection name/],
      ['list entries sort=name', /"sort=name" is not an option of list \(known: for, mine, order, limit\)/],
      ['list entries limit=0', /limit is a whole number from 1 to 100/],
      ['list entries limit=1e2', /limit is a whole number/],
      ['list entries for=$admin', /"\$admin" is not an audience \(known: public, \$verified, \$owner, \$author\)/],
      ['create entries for=$author', /\$author is the author of the record a binding changes: create changes no record/],
      ['list entries for=public,$owner', /public already admits everyone/],
      ['list entries mine for=public', /mine reads the visitor’s own records/],
      ['list entries mine mine', /says mine twice/],
      ['list entries order', /order needs a value/],
      ['count entries mine=yes', /mine takes no value/],
      ['increment clicks', /increment <collection>\.<field>/],
      ['toggle todos._author', /_author is stamped by the platform/],
      ['update entries for=$author shared', /\$author adds nothing/],
      ['field link href src', /puts the value in one place/],
      ['one settings mine record=main', /mine and record= cannot go together/],
      [`list ${'x'.repeat(300)}`, /longer than 300 characters/],
    ];
    for (const [value, message] of cases)
      assert.throws(
        () => parseBinding(value),
        (e: unknown) => e instanceof BindingSyntaxError && message.test(e.message),
        value,
      );
  });
});

describe('html data: an app’s bindings compiled', () => {
  it('compiles the guestbook: ids, fields from the forms, one declaration per field', () => {
    const model = compile({ 'index.html': guestbook, 'about.html': '<p>no bindings</p>' })!;
    assert.deepEqual(
      model.bindings.map((b) => [b.verb, b.collection, b.field ?? '', b.line]),
      [
        ['list', 'entries', '', 3],
        ['field', 'entries', 'name', 4],
        ['field', 'entries', 'message', 4],
        ['update', 'entries', '', 5],
        ['delete', 'entries', '', 6],
        ['count', 'entries', '', 8],
        ['create', 'entries', '', 9],
      ],
    );
    assert.deepEqual(model.bindings.find((b) => b.verb === 'create')!.fields, ['name', 'message']);
    assert.deepEqual(model.collections, {
      entries: {
        message: { kind: 'text', required: true, minLength: 1, maxLength: 500 },
        name: { kind: 'text', required: true, minLength: 1, maxLength: 80 },
      },
    });
    const ids = model.bindings.map((b) => b.id);
    assert.equal(new Set(ids).size, ids.length, 'one id per binding');
    assert.ok(ids.every((id) => /^[A-Za-z0-9_-]{16}$/.test(id)));
    // The same page compiles to the same ids (a redeploy keeps open pages working); another page's
    // binding with the same text gets another id.
    assert.deepEqual(
      compile({ 'index.html': guestbook })!.bindings.map((b) => b.id),
      ids,
    );
    assert.notEqual(compile({ 'other.html': guestbook })!.bindings[0]!.id, ids[0]);
    assert.equal(compile({ 'index.html': '<p>plain</p>' }), undefined);
  });

  it('reads form controls as typed fields: numbers, checkboxes, choices, formats', () => {
    const model = compile({
      'settings.html': `<form data-svc="update settings record=main for=$owner">
        <input type=number name=per_page min=5 max=50 required>
        <input type=checkbox name=dark>
        <select name=theme><option>light</option><option value="sepia">Sepia</option></select>
        <input type=radio name=size value=s><input type=radio name=size value=l required>
        <input type=url name=homepage>
        <input type=email name=contact maxlength=200>
        <input type=submit value=Save>
      </form>
      <div data-svc="one settings record=main"><a data-svc="field homepage href">home</a></div>`,
    })!;
    assert.deepEqual(model.collections.settings, {
      per_page: { kind: 'number', required: true, min: 5, max: 50, integer: true },
      dark: { kind: 'boolean' },
      theme: { kind: 'choice', required: false, choices: ['light', 'sepia'] },
      homepage: { kind: 'text', format: 'url', required: false, minLength: 0, maxLength: 1000 },
      contact: { kind: 'text', format: 'email', required: false, minLength: 0, maxLength: 200 },
      size: { kind: 'choice', required: true, choices: ['s', 'l'] },
    });
    assert.deepEqual(model.bindings[0]!.fields, ['per_page', 'dark', 'theme', 'size', 'homepage', 'contact']);
  });

  it('an action declares its counter or flag, and must agree with a form writing the same field', () => {
    const model = compile({
      'counter.html': `<div data-svc="one counters record=main"><span data-svc="field clicks"></span></div>
        <button data-svc="increment counters.clicks record=main for=public">+1</button>`,
    })!;
    assert.deepEqual(model.collections.counters, { clicks: { kind: 'number', required: false, integer: true } });
    assert.match(
      refusal(
        `<form data-svc="create todos"><input name=done></form><ul data-svc="list todos"><li><button data-svc="toggle todos.done">x</button></li></ul>`,
      ),
      /^index\.html:1: data-svc="toggle todos\.done": writes todos\.done as a checkbox, but index\.html:1 writes it as text of 0-1000 characters: one field, one declaration$/,
    );
  });

  it('fails naming file, line and attribute for a binding in the wrong place or naming what nothing writes', () => {
    const cases: Array<[string, RegExp]> = [
      [
        '<p>\n<span data-svc="field name"></span>',
        /^index\.html:2: data-svc="field name": field shows a field of a record: put it inside a list/,
      ],
      ['<p>\n<div DATA-SVC>x</div>', /^index\.html:2: data-svc="": is empty/],
      ['<div data-svc="create entries"><input name=a></div>', /create goes on a <form>/],
      ['<form data-svc="create entries"><button>Go</button></form>', /the form has no named control/],
      ['<form data-svc="create entries"><input name=_author></form>', /_author is stamped by the platform, a form cannot send it/],
      ['<form data-svc="create entries"><input name=Title></form>', /not a field name/],
      ['<form data-svc="create entries"><input type=file name=pic></form>', /files are not data/],
      ['<form data-svc="create entries"><input type=password name=pw></form>', /never stored as app data/],
      [
        '<form data-svc="create entries"><input type=hidden name=author value=me></form>',
        /hidden control is still whatever the browser sends/,
      ],
      ['<form data-svc="create entries"><input name=a><input name=a></form>', /two controls are named a/],
      ['<form data-svc="create entries"><input name=a maxlength=20000></form>', /at most 10000 characters a field/],
      ['<form data-svc="create entries"><input type=number name=n min=x></form>', /<input min="x">: not a number/],
      ['<form data-svc="create entries"><input type=color name=c></form>', /not a control a binding stores/],
      [
        '<button data-svc="delete entries">x</button><form data-svc="create entries"><input name=a></form>',
        /delete changes one record: put it inside a list or one binding of entries/,
      ],
      [
        '<form data-svc="create a"><input name=x></form><form data-svc="create b"><input name=y></form><ul data-svc="list a"><li><button data-svc="delete b">x</button></ul>',
        /delete b stands inside a binding of a/,
      ],
      [
        '<ul data-svc="list a"><li><span data-svc="count a"></span></ul><form data-svc="create a"><input name=x></form>',
        /reads do not nest/,
      ],
      ['<ul data-svc="list notes"></ul>', /nothing in the app writes notes/],
      ['<form data-svc="create a"><input name=x></form><ul data-svc="list a order=y"></ul>', /order=y: a has no such field/],
      [
        '<form data-svc="create a"><input name=x></form><ul data-svc="list a"><li data-svc="field z"></ul>',
        /a has no field z \(its fields: x, _id/,
      ],
      [
        '<form data-svc="create a"><input name=x></form><ul data-svc="list a"><li><a data-svc="field x href">x</a></ul>',
        /only a url field/,
      ],
      // A record's text filled into a script, a style or another document would be code, not text.
      ...['script', 'style', 'iframe', 'noscript', 'xmp', 'link', 'base'].map((tag): [string, RegExp] => [
        `<form data-svc="create a"><input name=x></form><ul data-svc="list a"><template><li><${tag} data-svc="field x"></${tag}></template></ul>`,
        new RegExp(`field goes on an element whose contents are shown as text, not on <${tag}>`),
      ]),
    ];
    for (const [html, message] of cases) assert.match(refusal(html), message, html);
  });

  it('reads bindings as a browser parses the page: in <template> and <noscript>, and at their own lines', () => {
    const model = compile({
      'a.html': `<form data-svc="create a"><input name=x></form>\n<noscript>\n<ul data-svc="list a"></ul></noscript>\n\n<template><b data-svc="count a"></b></template>`,
    })!;
    assert.deepEqual(
      model.bindings.map((b) => [b.verb, b.line]),
      [
        ['create', 1],
        ['list', 3],
        ['count', 5],
      ],
    );
  });
});

describe('html data: the reference’s examples', () => {
  it('compiles every HTML example of docs/api/html-data.md as written', () => {
    const doc = readFileSync(new URL('../../../docs/api/html-data.md', import.meta.url), 'utf8');
    const examples = [...doc.matchAll(/```html\n([\s\S]*?)```/g)].map((m) => m[1]!);
    assert.equal(examples.length, 3);
    for (const html of examples) assert.ok(compile({ 'index.html': html })!.bindings.length > 0, html);
  });
});
