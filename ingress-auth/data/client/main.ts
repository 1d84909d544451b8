// The HTML data client (docs/api/html-data.md): served by the platform at /_svc/data/client.js and
// added to every page with bindings by the runtime, so an author writes no script. It fills reads
// (list, one, count) from /_svc/data/<id>, sends forms and buttons' changes, and follows live
// updates. Every value goes in as text (textContent, a form control's value) and a link only when
// its scheme is http(s): a record never becomes markup. The server decides everything else: this
// script addresses bindings by the ids the runtime wrote next to them (data-svc-id), nothing more.

import { safeUrl, shown } from '../shown.js';

type Value = string | number | boolean | null;
type DataRecord = Record<string, Value> & { _id: string };

interface Bound {
  el: Element;
  id: string;
  verb: string;
  collection: string;
}

const base = '/_svc/data/';
/** Each record element's record id (the list item or the `one` element). */
const recordOf = new WeakMap<Element, string>();
const wired = new WeakSet<Element>();
const reads = new Map<string, Bound>();

function describe(el: Element): Bound | undefined {
  const id = el.getAttribute('data-svc-id');
  const words = (el.getAttribute('data-svc') ?? '').trim().split(/\s+/);
  if (!id || !words[0]) return undefined;
  return { el, id, verb: words[0].toLowerCase(), collection: (words[1] ?? '').split('.')[0]! };
}

/** Bound elements under root in document order, not inside a template nor inside another read's content. */
function boundWithin(root: ParentNode): Bound[] {
  const out: Bound[] = [];
  const walk = (node: ParentNode) => {
    for (const child of Array.from(node.children)) {
      if (child.tagName === 'TEMPLATE') continue;
      const b = child.hasAttribute('data-svc-id') ? describe(child) : undefined;
      if (b) out.push(b);
      if (b && (b.verb === 'list' || b.verb === 'one')) continue;
      walk(child);
    }
  };
  walk(root);
  return out;
}

/** What a binding's endpoint answers (routes.ts). */
interface Reply {
  error?: string;
  message?: string;
  login_url?: string;
  count?: number;
  record?: DataRecord | null;
  records?: DataRecord[];
  next_offset?: number;
}

async function call(method: string, id: string, query: string, body?: unknown): Promise<{ status: number; json: Reply }> {
  const res = await fetch(base + id + query, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  try {
    return { status: res.status, json: text ? (JSON.parse(text) as Reply) : {} };
  } catch {
    return { status: res.status, json: { error: text.slice(0, 200) } };
  }
}

/** Shows why a read or a change failed, as text, in the element (or a sign-in link for 401). */
function problem(el: Element, status: number, json: Reply): void {
  el.setAttribute('data-svc-state', status === 401 ? 'sign-in' : 'error');
  let note = el.querySelector(':scope > .svc-problem');
  if (!note) {
    note = document.createElement(el.tagName === 'UL' || el.tagName === 'OL' ? 'li' : 'p');
    note.className = 'svc-problem';
    note.setAttribute('role', 'alert');
    el.appendChild(note);
  }
  note.textContent = '';
  if (status === 401 && json.login_url) {
    const a = document.createElement('a');
    a.href = json.login_url;
    a.textContent = 'Sign in';
    note.appendChild(a);
    return;
  }
  note.textContent = json.message ?? json.error ?? `failed (${status})`;
}

function clearProblem(el: Element): void {
  el.removeAttribute('data-svc-state');
  el.querySelector(':scope > .svc-problem')?.remove();
}

/** Fills a record's fields and wires its changes, under root (a list item's nodes, or a `one` element). */
function fillRecord(root: ParentNode, record: DataRecord): void {
  for (const b of boundWithin(root)) {
    if (b.verb === 'field') {
      const words = (b.el.getAttribute('data-svc') ?? '').trim().split(/\s+/);
      const value = record[words[1] ?? ''] ?? null;
      const place = words.slice(2).find((w) => w === 'href' || w === 'src');
      if (place) {
        const url = safeUrl(value, location.href);
        if (url) b.el.setAttribute(place, url);
        else b.el.removeAttribute(place);
        if (place === 'href' && !b.el.textContent) b.el.textContent = shown(value);
      } else b.el.textContent = shown(value);
      continue;
    }
    recordOf.set(b.el, record._id);
    if (b.verb === 'update' && b.el instanceof HTMLFormElement) prefill(b.el, record);
    wire(b);
  }
}

function prefill(form: HTMLFormElement, record: DataRecord): void {
  for (const control of Array.from(form.elements)) {
    const c = control as HTMLInputElement;
    if (!c.name || !(c.name in record)) continue;
    const v = record[c.name];
    if (c.type === 'checkbox') c.checked = v === true;
    else if (c.type === 'radio') c.checked = c.value === v;
    else c.value = v === null || v === undefined ? '' : String(v);
  }
}

/** A form's values as the server reads them: checkboxes true or false, the rest as typed. */
function formValues(form: HTMLFormElement): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const control of Array.from(form.elements)) {
    const c = control as HTMLInputElement;
    if (!c.name || c.disabled || ['submit', 'button', 'reset', 'image'].includes(c.type)) continue;
    if (c.type === 'checkbox') out[c.name] = c.checked;
    else if (c.type === 'radio') {
      if (c.checked) out[c.name] = c.value;
    } else out[c.name] = c.value;
  }
  return out;
}

/** Sends a change; then the page's reads of that collection are read again. */
async function change(b: Bound, body: Record<string, Value> | undefined): Promise<boolean> {
  const record = recordOf.get(b.el);
  const { status, json } = await call('POST', b.id, record ? `?record=${encodeURIComponent(record)}` : '', body ?? {});
  if (status === 401 && json.login_url) {
    location.assign(json.login_url);
    return false;
  }
  if (status >= 400) {
    problem(b.el instanceof HTMLFormElement ? b.el : (b.el.parentElement ?? b.el), status, json);
    return false;
  }
  clearProblem(b.el);
  refreshCollection(b.collection);
  return true;
}

function wire(b: Bound): void {
  if (wired.has(b.el)) return;
  if (b.verb === 'create' || b.verb === 'update') {
    if (!(b.el instanceof HTMLFormElement)) return;
    const form = b.el;
    wired.add(form);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (!form.reportValidity()) return;
      void change(b, formValues(form)).then((ok) => {
        if (ok && b.verb === 'create') form.reset();
      });
    });
  } else if (b.verb === 'delete' || b.verb === 'increment' || b.verb === 'decrement' || b.verb === 'toggle') {
    wired.add(b.el);
    b.el.addEventListener('click', (e) => {
      e.preventDefault();
      void change(b, undefined);
    });
  }
}

async function refresh(b: Bound, offset = 0): Promise<void> {
  b.el.setAttribute('aria-busy', 'true');
  try {
    const { status, json } = await call('GET', b.id, offset ? `?offset=${offset}` : '');
    if (status >= 400) return problem(b.el, status, json);
    clearProblem(b.el);
    if (b.verb === 'count') b.el.textContent = String(json.count);
    else if (b.verb === 'one') {
      b.el.toggleAttribute('data-svc-empty', !json.record);
      b.el.toggleAttribute('data-svc-mine', json.record?._mine === true);
      if (json.record) fillRecord(b.el, json.record);
    } else renderList(b, json.records ?? [], json.next_offset, offset);
  } finally {
    b.el.removeAttribute('aria-busy');
  }
}

function renderList(b: Bound, records: DataRecord[], next: number | undefined, offset: number): void {
  const template = Array.from(b.el.children).find((c): c is HTMLTemplateElement => c instanceof HTMLTemplateElement);
  if (!template) return;
  if (offset === 0) for (const old of Array.from(b.el.querySelectorAll(':scope > [data-svc-item], :scope > .svc-more'))) old.remove();
  else b.el.querySelector(':scope > .svc-more')?.remove();
  for (const record of records) {
    const copy = template.content.cloneNode(true) as DocumentFragment;
    fillRecord(copy, record);
    for (const node of Array.from(copy.children)) {
      node.setAttribute('data-svc-item', record._id);
      // The visitor's own records, for the page's styles (hide another's edit form, say).
      node.toggleAttribute('data-svc-mine', record._mine === true);
      b.el.appendChild(node);
    }
  }
  b.el.toggleAttribute('data-svc-empty', offset === 0 && records.length === 0);
  if (next !== undefined) {
    const more = document.createElement(b.el.tagName === 'UL' || b.el.tagName === 'OL' ? 'li' : 'div');
    more.className = 'svc-more';
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'More';
    button.addEventListener('click', () => void refresh(b, next));
    more.appendChild(button);
    b.el.appendChild(more);
  }
}

const pending = new Set<Bound>();
function refreshSoon(b: Bound): void {
  if (pending.has(b)) return;
  pending.add(b);
  queueMicrotask(() => {
    pending.delete(b);
    void refresh(b);
  });
}

function refreshCollection(collection: string): void {
  for (const b of reads.values()) if (b.collection === collection) refreshSoon(b);
}

function follow(): void {
  if (!reads.size || typeof EventSource === 'undefined') return;
  const query = [...reads.keys()].map((id) => `b=${encodeURIComponent(id)}`).join('&');
  const source = new EventSource(`${base}live?${query}`);
  source.addEventListener('change', (e) => {
    try {
      const data = JSON.parse((e as MessageEvent<string>).data) as { b: string };
      const b = reads.get(data.b);
      if (b) refreshSoon(b);
    } catch {
      // Not an event of ours: ignored.
    }
  });
  source.addEventListener('ended', () => source.close());
}

function start(): void {
  const first: Promise<void>[] = [];
  for (const b of boundWithin(document.body ?? document.documentElement)) {
    if (b.verb === 'list' || b.verb === 'one' || b.verb === 'count') {
      reads.set(b.id, b);
      first.push(refresh(b));
    } else wire(b);
  }
  follow();
  // Once every read was filled the first time (a test, or a page's own script, can wait for it).
  void Promise.allSettled(first).then(() => document.documentElement.setAttribute('data-svc-ready', ''));
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
