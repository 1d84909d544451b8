// The `data-svc` attribute of an HTML app's page: one binding, written `<verb> <target> [option ...]`
// (docs/api/html-data.md is the reference). This file reads one attribute's value; compile.ts reads
// every binding of every page, checks each against where it stands, and gives each its id.
import { collectionName, fieldName, stampFields } from './names.js';

/** What a binding does. */
export const verbs = ['list', 'one', 'count', 'field', 'create', 'update', 'delete', 'increment', 'decrement', 'toggle'] as const;
export type Verb = (typeof verbs)[number];

export const readVerbs: readonly Verb[] = ['list', 'one', 'count'];
export const formVerbs: readonly Verb[] = ['create', 'update'];
export const actionVerbs: readonly Verb[] = ['increment', 'decrement', 'toggle'];
/** Verbs that act on one record: the record in context, or a named one (`record=`). */
export const recordVerbs: readonly Verb[] = ['update', 'delete', ...actionVerbs];

/** Who may use a binding; a list of them is ORed. */
export const audiences = ['public', '$verified', '$owner', '$author'] as const;
export type Audience = (typeof audiences)[number];
/** Who may use a binding: at least one audience. */
export type Audiences = [Audience, ...Audience[]];

/** Where a `field` binding puts the value: the element's text, or one of two attributes (scheme-checked). */
export type FieldPlace = 'text' | 'href' | 'src';

export interface Binding {
  verb: Verb;
  /** The collection (every verb but `field`). */
  collection?: string;
  /** The field: `field`'s value, or the counter or flag of an action. */
  field?: string;
  audience: Audiences;
  /** Reads: only the visitor's own records. */
  mine?: true;
  /** Reads: by this field, `desc` for `-field`. */
  order?: { field: string; desc: boolean };
  /** list: records per page. */
  limit?: number;
  /** One named record (a settings record, a counter) instead of the record in context. */
  record?: string;
  /** update, delete: anyone of the audience, not only the record's author. */
  shared?: true;
  /** field: where the value goes. */
  place?: FieldPlace;
}

/** What a verb admits when `for=` is not given: reads are public, writes need a verified identity, a record's changes its author or the owner. */
export function defaultAudience(verb: Verb): Audiences {
  if (readVerbs.includes(verb) || verb === 'field') return ['public'];
  if (verb === 'update' || verb === 'delete') return ['$author', '$owner'];
  return ['$verified'];
}

export const maxLimit = 100;
const maxAttributeLength = 300;

/** A binding that cannot be: its message says what to write instead (the caller adds file, line and the attribute). */
export class BindingSyntaxError extends Error {
  override name = 'BindingSyntaxError';
}

const fail = (message: string): never => {
  throw new BindingSyntaxError(message);
};

/** Reads one `data-svc` value. Throws BindingSyntaxError naming what is wrong. */
export function parseBinding(value: string): Binding {
  if (value.length > maxAttributeLength) fail(`is longer than ${maxAttributeLength} characters`);
  const words = value.trim().split(/\s+/).filter(Boolean);
  const [verbWord, target, ...options] = words;
  if (!verbWord) return fail(`is empty (write a verb: ${verbs.join(', ')})`);
  const verb = verbWord.toLowerCase() as Verb;
  if (!verbs.includes(verb)) return fail(`"${verbWord}" is not a verb (known: ${verbs.join(', ')})`);
  if (!target) return fail(verb === 'field' ? 'names no field (write field <name>)' : `names no collection (write ${verb} <collection>)`);
  const b: Binding = { verb, audience: defaultAudience(verb) };
  // Whether `for=` said it (else the verb's default, which `mine` changes).
  let audienceGiven = false;

  if (verb === 'field') {
    b.field = checkedField(target, true);
  } else if (actionVerbs.includes(verb)) {
    const dot = target.indexOf('.');
    if (dot === -1) fail(`${verb} names a collection and a field: ${verb} <collection>.<field>`);
    b.collection = checkedCollection(target.slice(0, dot));
    b.field = checkedField(target.slice(dot + 1), false);
  } else {
    b.collection = checkedCollection(target);
  }

  const seen = new Set<string>();
  for (const option of options) {
    const eq = option.indexOf('=');
    const key = (eq === -1 ? option : option.slice(0, eq)).toLowerCase();
    const arg = eq === -1 ? undefined : option.slice(eq + 1);
    if (seen.has(key)) fail(`says ${key} twice`);
    seen.add(key);
    const allowed = optionsOf(verb);
    if (!allowed.includes(key))
      fail(`"${option}" is not an option of ${verb} (${allowed.length ? `known: ${allowed.join(', ')}` : 'it takes none'})`);
    const needsArg = !['mine', 'shared', 'href', 'src'].includes(key);
    if (needsArg && !arg) fail(`${key} needs a value (${key}=...)`);
    if (!needsArg && arg !== undefined) fail(`${key} takes no value`);
    switch (key) {
      case 'for':
        b.audience = parseAudience(arg!, verb);
        audienceGiven = true;
        break;
      case 'mine':
        b.mine = true;
        break;
      case 'shared':
        b.shared = true;
        break;
      case 'order': {
        const desc = arg!.startsWith('-');
        b.order = { field: checkedField(desc ? arg!.slice(1) : arg!, true), desc };
        break;
      }
      case 'limit': {
        const n = Number(arg);
        if (!/^\d+$/.test(arg!) || n < 1 || n > maxLimit) fail(`limit is a whole number from 1 to ${maxLimit}, not ${arg}`);
        b.limit = n;
        break;
      }
      case 'record':
        b.record = checkedRecordName(arg!);
        break;
      case 'href':
      case 'src':
        if (b.place) fail('puts the value in one place: text (the default), href or src');
        b.place = key;
        break;
    }
  }
  if (b.mine && b.record) fail('mine and record= cannot go together: a named record has no author to match');
  if (b.mine && !audienceGiven) b.audience = ['$verified'];
  if (b.mine && b.audience.includes('public'))
    fail('mine reads the visitor’s own records, which an anonymous visitor has none of: say for=$verified (the default with mine)');
  if (b.shared && b.audience.includes('$author')) fail('shared lets the whole audience change any record: $author adds nothing to it');
  if (verb === 'field' && !b.place) b.place = 'text';
  return b;
}

function optionsOf(verb: Verb): string[] {
  switch (verb) {
    case 'list':
      return ['for', 'mine', 'order', 'limit'];
    case 'one':
      return ['for', 'mine', 'record'];
    case 'count':
      return ['for', 'mine'];
    case 'field':
      return ['href', 'src'];
    case 'create':
      return ['for'];
    case 'update':
      return ['for', 'shared', 'record'];
    case 'delete':
      return ['for', 'shared'];
    default:
      return ['for', 'record'];
  }
}

function parseAudience(arg: string, verb: Verb): Audiences {
  const out: Audience[] = [];
  for (const word of arg.split(',')) {
    const a = word.trim().toLowerCase() as Audience;
    if (!audiences.includes(a)) fail(`"${word}" is not an audience (known: ${audiences.join(', ')})`);
    if (a === '$author' && !recordVerbs.includes(verb))
      fail(`$author is the author of the record a binding changes: ${verb} changes no record (use it on ${recordVerbs.join(', ')})`);
    if (!out.includes(a)) out.push(a);
  }
  if (out.includes('public') && out.length > 1) fail('public already admits everyone: name it alone');
  // Never empty: every word of the list was an audience, and a list has at least one word.
  return out as Audiences;
}

function checkedCollection(name: string): string {
  if (!collectionName.test(name))
    fail(`"${name}" is not a collection name (lowercase letters, digits, - and _, starting with a letter, at most 40)`);
  return name;
}

function checkedField(name: string, stampAllowed: boolean): string {
  if (stampFields.includes(name)) {
    if (!stampAllowed) fail(`${name} is stamped by the platform: a binding cannot change it`);
    return name;
  }
  if (!fieldName.test(name))
    fail(
      `"${name}" is not a field name (lowercase letters, digits and _, starting with a letter, at most 40; _id, _author, _created and _updated are the platform's)`,
    );
  return name;
}

function checkedRecordName(name: string): string {
  if (!collectionName.test(name)) fail(`record= names a record: lowercase letters, digits, - and _, starting with a letter, not "${name}"`);
  return name;
}
