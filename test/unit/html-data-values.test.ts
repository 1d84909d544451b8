// A form's submission read against its collection's declared fields (lib/html-data/values.ts): the
// browser's own rules checked again on the server, declared fields only, each refusal naming the field.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FieldSpec } from '../../lib/html-data/compile.js';
import { readRecord, RecordInputError } from '../../lib/html-data/values.js';

const fields: Record<string, FieldSpec> = {
  title: { kind: 'text', required: true, minLength: 3, maxLength: 10 },
  note: { kind: 'text', required: false, minLength: 0, maxLength: 100 },
  site: { kind: 'text', format: 'url', required: false, minLength: 0, maxLength: 200 },
  mail: { kind: 'text', format: 'email', required: false, minLength: 0, maxLength: 200 },
  day: { kind: 'text', format: 'date', required: false, minLength: 0, maxLength: 20 },
  at: { kind: 'text', format: 'datetime', required: false, minLength: 0, maxLength: 30 },
  count: { kind: 'number', required: false, min: 0, max: 10, integer: true },
  price: { kind: 'number', required: true, integer: false },
  done: { kind: 'boolean' },
  size: { kind: 'choice', required: false, choices: ['s', 'l'] },
};
const names = Object.keys(fields);
const base = { title: 'Milk', price: '2.5' };
const read = (input: Record<string, unknown>, mode: 'create' | 'update' = 'create') => readRecord(fields, names, input, mode);
const refused = (input: Record<string, unknown>, why: RegExp, mode: 'create' | 'update' = 'create') =>
  assert.throws(
    () => read(input, mode),
    (e: unknown) => e instanceof RecordInputError && why.test(e.message),
    JSON.stringify(input),
  );

describe('html data: a form’s values read against its fields', () => {
  it('types what a form sends: numbers, checkboxes, choices, empty optional fields', () => {
    assert.deepEqual(read({ ...base, count: '7', done: 'on', size: 'l', site: 'https://x.example/a', day: '2024-02-29' }), {
      title: 'Milk',
      note: null,
      site: 'https://x.example/a',
      mail: null,
      day: '2024-02-29',
      at: null,
      count: 7,
      price: 2.5,
      done: true,
      size: 'l',
    });
    // JSON bodies: real booleans and numbers; an unchecked checkbox is simply absent.
    assert.equal(read({ ...base, price: 3, done: false }).done, false);
    assert.equal(read(base).done, false);
    // An update reads only what it was sent.
    assert.deepEqual(read({ count: '0' }, 'update'), { count: 0 });
  });

  it('refuses what the browser would have refused, naming the field', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ price: '1' }, /^title is required$/],
      [{ ...base, title: 'ab' }, /title is at least 3 characters/],
      [{ ...base, title: 'x'.repeat(11) }, /title is at most 10 characters/],
      [{ title: 'Milk' }, /price is required/],
      [{ ...base, price: 'cheap' }, /price is a number/],
      [{ ...base, price: 'Infinity' }, /price is a number/],
      [{ ...base, count: '2.5' }, /count is a whole number/],
      [{ ...base, count: '11' }, /count is at most 10/],
      [{ ...base, count: '-1' }, /count is at least 0/],
      [{ ...base, size: 'xl' }, /size is one of s, l/],
      [{ ...base, mail: 'not-an-address' }, /mail is not an e-mail address/],
      [{ ...base, day: '2023-02-29' }, /day is not a date/],
      [{ ...base, at: '2024-01-01 10:00' }, /at is not a date and time/],
      [{ ...base, done: 3 }, /done is a checkbox/],
      [{ ...base, note: { $gt: '' } }, /note is text/],
    ];
    for (const [input, why] of cases) refused(input, why);
  });

  it('refuses fields the form does not declare, a field sent twice, control characters, and links that would run', () => {
    refused({ ...base, _author: 'someone-else' }, /_author is not a field of this form/);
    refused({ ...base, owner: 'true' }, /owner is not a field of this form/);
    refused({ ...base, title: ['Milk', 'Eggs'] }, /title is sent more than once/);
    refused({ ...base, note: 'a\u0000b' }, /note holds a control character/);
    refused({ ...base, note: 'a\u001bb' }, /note holds a control character/);
    for (const link of [
      'javascript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'JaVaScRiPt:alert(1)',
      '//evil.example',
      'ftp://x.example/',
    ])
      refused({ ...base, site: link }, /site is not an http or https URL/);
    // Text is stored as written: markup is the renderer's to escape, not the store's to mangle.
    assert.equal(read({ ...base, note: '<img src=x onerror=alert(1)>' }).note, '<img src=x onerror=alert(1)>');
    assert.equal(read({ ...base, note: 'tab\tand\nnewline' }).note, 'tab\tand\nnewline');
  });
});
