// The first render of an HTML app's page on the server (decision 0034): what an anonymous visitor
// may read is filled into the page as the machine serves it, so crawlers and readers without
// JavaScript see the guestbook's entries, the counter's count, the settings' title. Only reads
// anyone may make: the declaring page admits an anonymous visitor, the binding's audience is
// public and not `mine`; the same answer as `GET /_svc/data/<id>` without a session, so the page is
// the same for everyone and leaks nothing a script could not fetch. The rest stays for the client
// (client/main.ts), which reads every binding again on load and replaces what was filled here.
// Values go in as text and links only with an http(s) scheme, as the client puts them.
import { html as parse5Html, parse as parseHtml, type DefaultTreeAdapterMap } from 'parse5';
import { notText, type CompiledBinding } from '../../lib/html-data/compile.js';
import type { FieldValue } from '../../lib/html-data/values.js';
import { descendantsOf, type TreeNode } from '../../lib/html/tree.js';
import { escapeAttribute, escapeText, insertAt, splice, type Edit } from '../../lib/html/splice.js';
import type { App } from '../../lib/resources/index.js';
import { bindingsOf, pageVerdict, readBinding, type DataParts, type ReadReply } from './routes.js';
import { safeUrl, shown } from './shown.js';

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

const fillable = new WeakMap<App, Map<string, CompiledBinding>>();

/**
 * The reads of the App an anonymous visitor may make, by id: decided once per App object (the
 * informer replaces it when the App, its policy or its bindings change). Empty for an app without.
 */
export function anonymousReads(app: App): Map<string, CompiledBinding> {
  let out = fillable.get(app);
  if (out) return out;
  out = new Map();
  for (const [id, b] of bindingsOf(app)) {
    if (b.verb !== 'list' && b.verb !== 'one' && b.verb !== 'count') continue;
    if (b.mine || !b.audience.includes('public')) continue;
    if (pageVerdict(app, b.file, undefined, {}).kind !== 'forward') continue;
    out.set(id, b);
  }
  fillable.set(app, out);
  return out;
}

/** Past this much filled in, a page is sent as the machine wrote it (a tenant's page copying ids cannot make it grow without bound). */
export const firstRenderMaxAdded = 1024 * 1024;

/** Lists filled on the server: where the parser keeps a template's elements as the list's children (a `<p>` would not). */
const fillableLists = new Set(['ul', 'ol', 'menu', 'dl', 'div', 'section', 'article', 'main', 'aside', 'nav', 'header', 'footer', 'tbody']);

/**
 * The page with its anonymous reads filled, or undefined when it has none to fill (or it would
 * grow past firstRenderMaxAdded). `pageUrl` resolves a relative link the way the browser would.
 * Only elements the runtime annotated count (`data-svc` beside `data-svc-id`), each read once.
 */
export async function firstRender(
  data: Pick<DataParts, 'store' | 'cache'>,
  app: App,
  html: string,
  pageUrl: string,
): Promise<string | undefined> {
  const reads = anonymousReads(app);
  // A page that names none of the app's anonymous reads is not parsed at all.
  if (reads.size === 0 || ![...reads.keys()].some((id) => html.includes(`data-svc-id="${id}"`))) return undefined;
  const doc = parseHtml(html, { sourceCodeLocationInfo: true, scriptingEnabled: false });
  const found = new Map<string, { el: Element; binding: CompiledBinding }>();
  for (const node of descendantsOf(doc as TreeNode & Node)) {
    if (!('tagName' in node) || !bound(node)) continue;
    const id = idOf(node)!;
    const b = reads.get(id);
    if (!b || found.has(id)) continue;
    if (b.verb === 'list' && !fillableLists.has(node.tagName)) continue;
    found.set(id, { el: node, binding: b });
  }
  if (found.size === 0) return undefined;
  const entries = [...found.values()];
  const replies = await Promise.all(
    entries.map(({ binding: b }) => readBinding(data, app, b, undefined, { offset: 0, ref: b.record ? { name: b.record } : undefined })),
  );
  return renderReads(
    html,
    app,
    entries.map((e, i) => ({ ...e, reply: replies[i]! })),
    pageUrl,
  );
}

/** The page with each read's answer written into it (pure: the parsed page's elements, their bindings and answers); undefined past the size it may add. */
export function renderReads(
  html: string,
  app: App,
  reads: ReadonlyArray<{ el: Element; binding: CompiledBinding; reply: ReadReply }>,
  pageUrl: string,
): string | undefined {
  const fields = bindingsOf(app);
  const edits: Edit[] = [];
  let added = 0;
  const add = (e: Edit) => {
    added += e.text.length;
    edits.push(e);
  };
  for (const { el, binding, reply } of reads) {
    if (binding.verb === 'count') {
      const inner = contentsOf(el);
      if (inner) add({ ...inner, text: String(reply.count ?? 0) });
    } else if (binding.verb === 'one') {
      const at = attributeAt(html, el, 'data-svc-empty', '');
      if (!reply.record) {
        if (at) add(at);
      } else for (const e of recordEdits(html, el, reply.record, fields, pageUrl)) add(e);
    } else {
      const template = el.childNodes.find((n): n is Element => 'tagName' in n && n.tagName === 'template');
      const records = reply.records ?? [];
      const end = template?.sourceCodeLocation?.endTag?.endOffset;
      if (!template || end === undefined) continue;
      if (records.length === 0) {
        const at = attributeAt(html, el, 'data-svc-empty', '');
        if (at) add(at);
        continue;
      }
      let items = '';
      for (const r of records) {
        items += item(html, template, r, fields, pageUrl);
        if (added + items.length > firstRenderMaxAdded) return undefined;
      }
      add(insertAt(end, items));
    }
    if (added > firstRenderMaxAdded) return undefined;
  }
  return splice(html, edits);
}

/** One record of a list: its template's top elements (text between them is left out), each marked with the record's id, its fields filled. */
function item(
  html: string,
  template: Element,
  record: Record<string, FieldValue>,
  fields: Map<string, CompiledBinding>,
  pageUrl: string,
): string {
  const content = (template as Element & { content: { childNodes: Node[] } }).content;
  let out = '';
  for (const top of content.childNodes) {
    if (!('tagName' in top)) continue;
    const loc = top.sourceCodeLocation;
    if (!loc) continue;
    const from = loc.startOffset;
    const edits: Edit[] = [];
    const mark = attributeAt(html, top, 'data-svc-item', String(record._id));
    if (mark) edits.push(mark);
    edits.push(...recordEdits(html, top, record, fields, pageUrl, true));
    // This element's source alone, its edits moved to match.
    out += splice(
      html.slice(from, loc.endOffset),
      edits.map((e) => ({ at: e.at - from, end: e.end - from, text: e.text })),
    );
  }
  return out;
}

/** The edits that fill the `field` bindings at or under root with the record's values (each field once). */
function recordEdits(
  html: string,
  root: Element,
  record: Record<string, FieldValue>,
  fields: Map<string, CompiledBinding>,
  pageUrl: string,
  self = false,
): Edit[] {
  const edits: Edit[] = [];
  const seen = new Set<string>();
  const nodes = self ? [root, ...descendantsOf(root as TreeNode & Node)] : descendantsOf(root as TreeNode & Node);
  for (const node of nodes) {
    if (!('tagName' in node) || !bound(node) || notText.includes(node.tagName)) continue;
    const id = idOf(node)!;
    const b = fields.get(id);
    if (b?.verb !== 'field' || seen.has(id)) continue;
    seen.add(id);
    const value = record[b.field!] ?? null;
    const inner = contentsOf(node);
    if (b.place === 'href' || b.place === 'src') {
      const url = safeUrl(value, pageUrl);
      const written = node.sourceCodeLocation?.attrs?.[b.place];
      if (written) edits.push({ at: written.startOffset, end: written.endOffset, text: url ? `${b.place}="${escapeAttribute(url)}"` : '' });
      else if (url) {
        const at = attributeAt(html, node, b.place, url);
        if (at) edits.push(at);
      }
      // An empty link shows its address, as the client does.
      if (b.place === 'href' && inner && inner.at === inner.end) edits.push({ ...inner, text: escapeText(shown(value)) });
    } else if (inner) edits.push({ ...inner, text: escapeText(shown(value)) });
  }
  return edits;
}

/** An element the runtime annotated: an HTML element with its `data-svc` and the id beside it. */
function bound(el: Element): boolean {
  return (
    el.namespaceURI === parse5Html.NS.HTML && el.attrs.some((a) => a.name === 'data-svc') && el.attrs.some((a) => a.name === 'data-svc-id')
  );
}

function idOf(el: Element): string | undefined {
  return el.attrs.find((a) => a.name === 'data-svc-id')?.value;
}

/** An element's contents as written, when it has an end tag to bound them. */
function contentsOf(el: Element): { at: number; end: number } | undefined {
  const loc = el.sourceCodeLocation;
  if (!loc?.startTag || !loc.endTag) return undefined;
  return { at: loc.startTag.endOffset, end: loc.endTag.startOffset };
}

/**
 * An attribute added right after the element's tag name as written (`<li data-svc-item="...">`);
 * undefined for an element the parser made without a source of its own.
 */
function attributeAt(html: string, el: Element, name: string, value: string): Edit | undefined {
  const start = el.sourceCodeLocation?.startTag?.startOffset;
  if (start === undefined) return undefined;
  const tag = /^<[^\s/>]+/.exec(html.slice(start, start + 100))?.[0];
  if (!tag) return undefined;
  return insertAt(start + tag.length, value === '' ? ` ${name}` : ` ${name}="${escapeAttribute(value)}"`);
}
