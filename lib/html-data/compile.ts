// An HTML app's data bindings, compiled at deploy into the allow-list the platform serves from:
// every `data-svc` attribute of every page, read (grammar.ts), checked against where it stands (a
// field inside a list, an update inside a record, a create on a form), each form's named controls
// turned into the collection's declared fields with their types and limits, and each binding given
// an id the browser addresses it by. Anything wrong fails the deploy naming file, line and attribute.
import { createHash } from 'node:crypto';
import { parse as parseHtml, type DefaultTreeAdapterMap } from 'parse5';
import { actionVerbs, formVerbs, parseBinding, readVerbs, recordVerbs, BindingSyntaxError, type Binding, type Verb } from './grammar.js';
import { childrenOf, descendantsOf, type TreeNode } from '../html/tree.js';
import { fieldName, stampFields } from './names.js';
import { insertAt, splice, type Edit } from '../html/splice.js';

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

/** A declared field of a collection, from the form controls that write it. */
export type FieldSpec =
  | { kind: 'text'; format?: 'email' | 'url' | 'date' | 'time' | 'datetime'; required: boolean; minLength: number; maxLength: number }
  | { kind: 'number'; required: boolean; min?: number; max?: number; integer: boolean }
  | { kind: 'boolean' }
  | { kind: 'choice'; required: boolean; choices: string[] };

export interface CompiledBinding extends Binding {
  /** What the browser sends to use it: derived from the page, its place in it and the binding. */
  id: string;
  /** The page that declares it (its admission applies first) and the line of the attribute. */
  file: string;
  line: number;
  /** The attribute as written, for messages. */
  source: string;
  /** create, update: the fields the form sends. */
  fields?: string[];
  /** update, delete, actions inside a list or one: that read's id (they change only records it shows). */
  within?: string;
}

export interface DataModel {
  bindings: CompiledBinding[];
  /** Each collection's declared fields, by name. */
  collections: Record<string, Record<string, FieldSpec>>;
}

/** A binding that cannot be deployed: `file:line: data-svc="...": why`. */
export class BindingError extends Error {
  override name = 'BindingError';
  constructor(
    readonly file: string,
    readonly line: number,
    readonly attribute: string,
    detail: string,
  ) {
    super(`${file}:${line}: data-svc="${attribute}": ${detail}`);
  }
}

/** Per app, so one page cannot make the allow-list or a record's shape unbounded. */
export const dataLimits = {
  bindings: 500,
  collections: 50,
  fieldsPerCollection: 50,
  textMax: 10_000,
  textDefault: 1_000,
  choices: 100,
  choiceLength: 200,
};

/**
 * Whether a page names the attribute: such a page is parsed, a valueless `<div data-svc>` included
 * (it is refused as empty), and makes its tree an HTML app (api/deploys/detect.ts).
 */
export const namesBinding = /\sdata-svc(?![\w-])/i;

/** Compiles the bindings of an app's HTML pages (path → source), or undefined when no page has one. */
export function compileBindings(pages: ReadonlyMap<string, string>): DataModel | undefined {
  const bindings: CompiledBinding[] = [];
  const declared = new Map<string, Map<string, { spec: FieldSpec; at: string }>>();
  const files = [...pages.keys()].filter((f) => namesBinding.test(pages.get(f)!)).sort();
  for (const file of files) compilePage(file, pages.get(file)!, bindings, declared);
  if (bindings.length === 0) return undefined;
  checkApp(bindings, declared);
  const collections: DataModel['collections'] = {};
  for (const [name, fields] of [...declared].sort(([a], [b]) => a.localeCompare(b)))
    collections[name] = Object.fromEntries([...fields].map(([f, d]) => [f, d.spec]));
  return { bindings, collections };
}

function compilePage(
  file: string,
  html: string,
  out: CompiledBinding[],
  declared: Map<string, Map<string, { spec: FieldSpec; at: string }>>,
): void {
  const compiled = new Map<Element, { binding: CompiledBinding; read: CompiledBinding | undefined }>();
  for (const { el, attr, ordinal, parent } of boundElements(parseHtml(html, { sourceCodeLocationInfo: true, scriptingEnabled: false }))) {
    // The read this one stands inside: the nearest bound ancestor if it is a read, else that one's.
    const above = parent && compiled.get(parent);
    const enclosing = above && (above.binding.verb === 'list' || above.binding.verb === 'one' ? above.binding : above.read);
    const line = el.sourceCodeLocation?.attrs?.['data-svc']?.startLine ?? el.sourceCodeLocation?.startLine ?? 1;
    const binding = bindingAt(file, line, attr.value, ordinal, el, enclosing, declared);
    if (out.length >= dataLimits.bindings)
      throw new BindingError(file, line, attr.value, `is binding ${out.length + 1} of the app; at most ${dataLimits.bindings}`);
    out.push(binding);
    compiled.set(el, { binding, read: enclosing });
  }
}

/** A `data-svc` attribute of a page, as the compile and the runtime's annotation both see it. */
interface BoundElement {
  el: Element;
  attr: { name: string; value: string };
  /** Its place among the page's bindings (part of its id). */
  ordinal: number;
  /** The nearest ancestor element that has a binding too. */
  parent: Element | undefined;
}

/**
 * Every element of a parsed page that has a `data-svc` attribute, in document order (<template>
 * contents included), without recursion: a hostile page may nest elements as deep as it likes.
 * The one walk both compileBindings and annotatePage take, so ids agree.
 */
function* boundElements(doc: Node): Generator<BoundElement> {
  let ordinal = 0;
  const stack: Array<[Node, Element | undefined]> = [[doc, undefined]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, above] = item;
    let parent = above;
    if ('tagName' in node) {
      const attr = node.attrs.find((a) => a.name === 'data-svc');
      if (attr) {
        yield { el: node, attr, ordinal: ordinal++, parent: above };
        parent = node;
      }
    }
    const kids = childrenOf(node as TreeNode & Node);
    for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i]!, parent]);
  }
}

/** An element's descendant elements in document order. */
function descendants(root: Node): Element[] {
  const out: Element[] = [];
  for (const node of descendantsOf(root as TreeNode & Node)) if ('tagName' in node) out.push(node);
  return out;
}

function bindingAt(
  file: string,
  line: number,
  value: string,
  ordinal: number,
  el: Element,
  enclosing: CompiledBinding | undefined,
  declared: Map<string, Map<string, { spec: FieldSpec; at: string }>>,
): CompiledBinding {
  const context = enclosing?.collection;
  const err = (detail: string) => new BindingError(file, line, value, detail);
  let b: Binding;
  try {
    b = parseBinding(value);
  } catch (e) {
    if (e instanceof BindingSyntaxError) throw err(e.message);
    throw e;
  }
  const { verb } = b;
  if (verb === 'field' && context === undefined) throw err('field shows a field of a record: put it inside a list or one binding');
  if (verb === 'field' && notText.includes(el.tagName))
    throw err(
      `field goes on an element whose contents are shown as text, not on <${el.tagName}> (its contents or ${b.place ?? 'text'} would be code, a style or another document)`,
    );
  if (recordVerbs.includes(verb) && !b.record && context !== b.collection)
    throw err(
      context === undefined
        ? `${verb} changes one record: put it inside a list or one binding of ${b.collection}, or name the record with record=<name>`
        : `${verb} ${b.collection} stands inside a binding of ${context}: it can change only a record of that collection here`,
    );
  if (readVerbs.includes(verb) && context !== undefined) throw err(`${verb} stands inside a binding of ${context}: reads do not nest`);
  const binding: CompiledBinding = { ...b, id: bindingId(file, ordinal, value), file, line, source: value };
  if (verb === 'field') binding.collection = context;
  // A change inside a read acts only on the records that read shows (its audience, `mine`).
  if (enclosing && recordVerbs.includes(verb) && !b.record) binding.within = enclosing.id;
  if (formVerbs.includes(verb)) {
    if (el.tagName !== 'form') throw err(`${verb} goes on a <form> (its named controls are the fields it writes), not on <${el.tagName}>`);
    binding.fields = formFields(el, b.collection!, `${file}:${line}`, declared, err);
  }
  if (actionVerbs.includes(verb)) declareField(declared, b.collection!, b.field!, actionField(verb), `${file}:${line}`, err);
  return binding;
}

/** Elements whose contents (or href/src) are code, styles, other documents or the page's own settings: a field never fills them. */
export const notText = [
  'script',
  'style',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'noscript',
  'noembed',
  'noframes',
  'xmp',
  'plaintext',
  'template',
  'link',
  'base',
  'meta',
];

function actionField(verb: Verb): FieldSpec {
  return verb === 'toggle' ? { kind: 'boolean' } : { kind: 'number', required: false, integer: true };
}

/** A stable id for a binding: the same page, place and text give the same one, so a redeploy keeps open pages working. */
function bindingId(file: string, ordinal: number, value: string): string {
  return createHash('sha256')
    .update(`${file}\n${ordinal}\n${value.trim().replace(/\s+/g, ' ')}`)
    .digest('base64url')
    .slice(0, 16);
}

const textFormats: Record<string, Extract<FieldSpec, { kind: 'text' }>['format'] | null> = {
  text: null,
  search: null,
  tel: null,
  email: 'email',
  url: 'url',
  date: 'date',
  time: 'time',
  'datetime-local': 'datetime',
};
const notData = ['submit', 'button', 'reset', 'image'];
const refused: Record<string, string> = {
  file: 'files are not data: a binding stores fields, not uploads',
  password: 'a password is never stored as app data',
  hidden: 'a hidden control is still whatever the browser sends: the platform stamps _author and the times itself',
};

/** The fields a form writes: its named controls, each declared on the collection with its type and limits. */
function formFields(
  form: Element,
  collection: string,
  at: string,
  declared: Map<string, Map<string, { spec: FieldSpec; at: string }>>,
  err: (detail: string) => BindingError,
): string[] {
  const names: string[] = [];
  // Radio buttons of one name are one field: its choices are their values.
  const radios = new Map<string, { choices: string[]; required: boolean }>();
  for (const child of descendants(form)) {
    const tag = child.tagName;
    if (tag === 'form') throw err('a form inside a form: browsers drop the inner one');
    if (tag === 'input' || tag === 'textarea' || tag === 'select') {
      const get = (n: string) => child.attrs.find((a) => a.name === n)?.value;
      const type = (get('type') ?? (tag === 'input' ? 'text' : tag)).toLowerCase();
      const name = get('name');
      if (notData.includes(type)) continue;
      if (name === undefined) continue;
      if (refused[type]) throw err(`<input type=${type} name=${name}>: ${refused[type]}`);
      if (!fieldName.test(name))
        throw err(
          stampFields.includes(name)
            ? `<${tag} name=${name}>: ${name} is stamped by the platform, a form cannot send it`
            : `<${tag} name=${name}>: not a field name (lowercase letters, digits and _, starting with a letter, at most 40)`,
        );
      if (type === 'radio') {
        const r = radios.get(name) ?? { choices: [], required: false };
        if (!radios.has(name) && names.includes(name)) throw err(`two controls are named ${name}`);
        const value = get('value') ?? 'on';
        if (!r.choices.includes(value)) r.choices.push(value);
        r.required ||= get('required') !== undefined;
        radios.set(name, r);
        if (!names.includes(name)) names.push(name);
        continue;
      }
      if (names.includes(name)) throw err(`two controls are named ${name}`);
      names.push(name);
      declareField(declared, collection, name, controlSpec(tag, type, get, child, err), at, err);
    }
  }
  for (const [name, r] of radios)
    declareField(declared, collection, name, { kind: 'choice', required: r.required, choices: r.choices }, at, err);
  if (names.length === 0) throw err('the form has no named control: nothing to write (give its inputs a name)');
  return names;
}

function controlSpec(
  tag: string,
  type: string,
  get: (n: string) => string | undefined,
  el: Element,
  err: (d: string) => BindingError,
): FieldSpec {
  const required = get('required') !== undefined;
  const num = (n: string) => {
    const v = get(n);
    if (v === undefined) return undefined;
    const x = Number(v);
    if (v.trim() === '' || !Number.isFinite(x)) throw err(`<${tag} ${n}="${v}">: not a number`);
    return x;
  };
  if (tag === 'select') {
    const choices = optionValues(el);
    if (choices.length === 0) throw err(`<select name=${get('name')}>: no option to choose`);
    return { kind: 'choice', required, choices };
  }
  if (type === 'checkbox') return { kind: 'boolean' };
  if (type === 'number' || type === 'range') {
    const step = get('step');
    return {
      kind: 'number',
      required,
      min: num('min'),
      max: num('max'),
      integer: step === undefined || step === '1' || /^\d+$/.test(step),
    };
  }
  const format = tag === 'textarea' ? null : textFormats[type];
  if (format === undefined)
    throw err(`<input type=${type}>: not a control a binding stores (text, email, url, number, checkbox, date, ...)`);
  const maxLength = num('maxlength') ?? dataLimits.textDefault;
  const minLength = num('minlength') ?? (required ? 1 : 0);
  for (const [n, v] of [
    ['maxlength', maxLength],
    ['minlength', minLength],
  ] as const)
    if (!Number.isInteger(v) || v < 0) throw err(`<${tag} ${n}="${v}">: a length is a whole number, 0 or more`);
  if (maxLength > dataLimits.textMax) throw err(`<${tag} maxlength=${maxLength}>: at most ${dataLimits.textMax} characters a field`);
  if (minLength > maxLength) throw err(`<${tag} minlength=${minLength} maxlength=${maxLength}>: no text is both`);
  return { kind: 'text', ...(format ? { format } : {}), required, minLength, maxLength };
}

function optionValues(select: Element): string[] {
  const out: string[] = [];
  for (const option of descendants(select)) {
    if (option.tagName !== 'option') continue;
    const value = option.attrs.find((a) => a.name === 'value')?.value ?? textOf(option).trim();
    if (!out.includes(value)) out.push(value);
  }
  return out;
}

/** An <option>'s text (the parser keeps only text in one). */
function textOf(el: Element): string {
  return el.childNodes.map((n) => ('value' in n && n.nodeName === '#text' ? n.value : '')).join('');
}

/** Declares a field; the same field written by two controls must be the same kind (limits: the tighter one wins nowhere, they must agree). */
function declareField(
  declared: Map<string, Map<string, { spec: FieldSpec; at: string }>>,
  collection: string,
  name: string,
  spec: FieldSpec,
  at: string,
  err: (detail: string) => BindingError,
): void {
  if (spec.kind === 'choice') {
    if (spec.choices.length > dataLimits.choices)
      throw err(`${collection}.${name} has ${spec.choices.length} choices; at most ${dataLimits.choices}`);
    const long = spec.choices.find((c) => c.length > dataLimits.choiceLength);
    if (long !== undefined)
      throw err(`${collection}.${name}: a choice of at most ${dataLimits.choiceLength} characters, not "${long.slice(0, 40)}..."`);
  }
  let fields = declared.get(collection);
  if (!fields) {
    if (declared.size >= dataLimits.collections)
      throw err(`is collection ${declared.size + 1} of the app; at most ${dataLimits.collections}`);
    declared.set(collection, (fields = new Map<string, { spec: FieldSpec; at: string }>()));
  }
  const before = fields.get(name);
  if (!before) {
    if (fields.size >= dataLimits.fieldsPerCollection)
      throw err(`is field ${fields.size + 1} of ${collection}; at most ${dataLimits.fieldsPerCollection}`);
    fields.set(name, { spec, at });
    return;
  }
  if (JSON.stringify(before.spec) !== JSON.stringify(spec))
    throw err(
      `writes ${collection}.${name} as ${describe(spec)}, but ${before.at} writes it as ${describe(before.spec)}: one field, one declaration`,
    );
}

function describe(spec: FieldSpec): string {
  switch (spec.kind) {
    case 'text':
      return `${spec.format ?? 'text'} of ${spec.minLength}-${spec.maxLength} characters${spec.required ? ', required' : ''}`;
    case 'number':
      return `${spec.integer ? 'a whole number' : 'a number'}${spec.min !== undefined ? ` from ${spec.min}` : ''}${spec.max !== undefined ? ` to ${spec.max}` : ''}${spec.required ? ', required' : ''}`;
    case 'boolean':
      return 'a checkbox';
    case 'choice':
      return `one of ${spec.choices.join(', ')}${spec.required ? ', required' : ''}`;
  }
}

/** The checks that need every page: what a read or a field names must be written somewhere. */
function checkApp(bindings: CompiledBinding[], declared: Map<string, Map<string, { spec: FieldSpec; at: string }>>): void {
  for (const b of bindings) {
    const err = (detail: string) => new BindingError(b.file, b.line, b.source, detail);
    const fields = declared.get(b.collection!);
    if (!fields)
      throw err(`nothing in the app writes ${b.collection}: add a form with data-svc="create ${b.collection}" (or an action) on some page`);
    const known = (f: string) => stampFields.includes(f) || fields.has(f);
    if (b.verb === 'field' && !known(b.field!))
      throw err(`${b.collection} has no field ${b.field} (its fields: ${[...fields.keys(), ...stampFields].join(', ')})`);
    if (b.order && !known(b.order.field))
      throw err(`order=${b.order.field}: ${b.collection} has no such field (its fields: ${[...fields.keys(), ...stampFields].join(', ')})`);
    if (b.verb === 'field' && b.place !== 'text') {
      const spec = fields.get(b.field!)?.spec;
      if (!spec || spec.kind !== 'text' || spec.format !== 'url')
        throw err(`field ${b.field} ${b.place}: only a url field (an <input type=url>) can go in ${b.place}, whose scheme is checked`);
    }
  }
}

/** Where the platform serves the client that fills a page's bindings (ingress-auth/data/client.ts). */
export const dataClientPath = '/_svc/data/client.js';

/**
 * A page as the runtime serves it: each `data-svc` attribute followed by `data-svc-id="<its id>"`
 * (the id compileBindings gave it: same page, same place, same text) and the client's script before
 * `</head>` (else `</body>`, else at the end). Only inserted: every other byte of the page stays as
 * written. Undefined when the page has no binding.
 */
export function annotatePage(file: string, html: string): string | undefined {
  if (!namesBinding.test(html)) return undefined;
  const doc = parseHtml(html, { sourceCodeLocationInfo: true, scriptingEnabled: false });
  const edits: Edit[] = [];
  for (const { el, attr, ordinal } of boundElements(doc)) {
    const at = el.sourceCodeLocation?.attrs?.['data-svc']?.endOffset;
    if (at !== undefined) edits.push(insertAt(at, ` data-svc-id="${bindingId(file, ordinal, attr.value)}"`));
  }
  if (edits.length === 0) return undefined;
  // parse5 always makes <html> with <head> and <body>; their end tags are where they were written, if they were.
  const root = doc.childNodes.find((n): n is Element => 'tagName' in n && n.tagName === 'html');
  const endOf = (tag: string) =>
    root?.childNodes.find((n): n is Element => 'tagName' in n && n.tagName === tag)?.sourceCodeLocation?.endTag?.startOffset;
  edits.push(insertAt(endOf('head') ?? endOf('body') ?? html.length, `<script src="${dataClientPath}" defer></script>`));
  return splice(html, edits);
}
