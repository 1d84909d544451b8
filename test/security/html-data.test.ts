// Attack: a hostile HTML app's page against the deploy-time compile of its data bindings
// (lib/html-data, docs/api/html-data.md). A tenant writes the page, so the compile must stay bounded
// whatever the markup, and no binding may widen who reads or claim authorship: a `mine` read made
// public, a form that sends `_author` or a hidden author field, an audience list that smuggles
// `public` in. Every refusal names the file, line and attribute; nothing is compiled from it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BindingError, compileBindings, dataLimits } from '../../lib/html-data/compile.js';
import { policyMetaTags } from '../../lib/policy/index.js';

const compile = (html: string) => compileBindings(new Map([['index.html', html]]));
const refused = (html: string, why: RegExp) =>
  assert.throws(
    () => compile(html),
    (e: unknown) => e instanceof BindingError && why.test(e.message),
    html.slice(0, 120),
  );
const writes = '<form data-svc="create notes"><input name="text"></form>';

describe('html data bindings: a hostile page', () => {
  it('nests elements 100,000 deep around a binding: compiled without recursion, in bounded time', () => {
    const depth = 100_000;
    const html = `${writes}${'<div>'.repeat(depth)}<ul data-svc="list notes"><li data-svc="field text"></li></ul>${'</div>'.repeat(depth)}`;
    const started = Date.now();
    const model = compile(html)!;
    assert.deepEqual(
      model.bindings.map((b) => b.verb),
      ['create', 'list', 'field'],
    );
    assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
    // The same depth inside a form: its controls are found without recursion too.
    const deepForm = `<form data-svc="create notes">${'<span>'.repeat(depth)}<input name="text">${'</span>'.repeat(depth)}</form>`;
    assert.deepEqual(compile(deepForm)!.bindings[0]!.fields, ['text']);
    // The page's policy is read the same way: a meta tag under that depth still gates the page
    // (a recursive walk threw RangeError, which failed the deploy with a 500).
    const gated = `${'<div>'.repeat(depth)}<meta name="svc-auth" content="owner">${'</div>'.repeat(depth)}`;
    assert.deepEqual(policyMetaTags(gated), [{ name: 'svc-auth', content: 'owner' }]);
  });

  it('cannot make a per-person read public, nor smuggle public into an audience', () => {
    refused(`${writes}<ul data-svc="list notes mine for=public"></ul>`, /mine reads the visitor’s own records/);
    refused(`${writes}<ul data-svc="count notes mine for=$owner,public"></ul>`, /public already admits everyone/);
    refused(`${writes}<ul data-svc="list notes for=$verified,PUBLIC"></ul>`, /public already admits everyone/);
    refused(`${writes}<ul data-svc="list notes for=$author"></ul>`, /list changes no record/);
  });

  it('cannot claim authorship or the platform’s stamps from a form', () => {
    for (const stamp of ['_author', '_id', '_created', '_updated'])
      refused(`<form data-svc="create notes"><input name="${stamp}"></form>`, new RegExp(`${stamp} is stamped by the platform`));
    refused(
      '<form data-svc="create notes"><input name="text"><input type="hidden" name="author" value="the-owner"></form>',
      /hidden control/,
    );
    refused('<form data-svc="create notes"><input name="text"><input type="HIDDEN" name="owner" value="1"></form>', /hidden control/);
    refused(`${writes}<button data-svc="toggle notes._author record=x">x</button>`, /_author is stamped by the platform/);
  });

  it('is bounded: bindings, collections, fields, attribute and field sizes', () => {
    const many = Array.from({ length: dataLimits.bindings + 1 }, () => '<b data-svc="count notes"></b>').join('\n');
    refused(`${writes}\n${many}`, /is binding 501 of the app; at most 500/);
    refused(
      Array.from({ length: dataLimits.collections + 1 }, (_, i) => `<form data-svc="create c${i}"><input name=x></form>`).join(''),
      /is collection 51 of the app; at most 50/,
    );
    refused(
      `<form data-svc="create notes">${Array.from({ length: dataLimits.fieldsPerCollection + 1 }, (_, i) => `<input name=f${i}>`).join('')}</form>`,
      /is field 51 of notes; at most 50/,
    );
    refused(`<ul data-svc="list notes ${'x'.repeat(400)}"></ul>`, /longer than 300 characters/);
    refused(
      '<form data-svc="create notes"><textarea name="text" maxlength="1000000"></textarea></form>',
      /at most 10000 characters a field/,
    );
    refused('<form data-svc="create notes"><input name="text" maxlength="-1"></form>', /a length is a whole number/);
    refused('<form data-svc="create notes"><input name="text" minlength="9" maxlength="3"></form>', /no text is both/);
    const options = Array.from({ length: dataLimits.choices + 1 }, (_, i) => `<option>o${i}</option>`).join('');
    refused(`<form data-svc="create notes"><select name="pick">${options}</select></form>`, /has 101 choices; at most 100/);
    refused(
      `<form data-svc="create notes"><input type="radio" name="pick" value="${'v'.repeat(201)}"></form>`,
      /a choice of at most 200 characters/,
    );
  });
});
