// The first render of an HTML app's page on the server (decision 0034): what an anonymous visitor
// may read is filled into the page as the machine serves it, so crawlers and readers without
// JavaScript see the guestbook's entries, the counter's count, the settings' title. Only reads
// anyone may make: the declaring page admits an anonymous visitor, the binding's audience is
// public and not `mine`; the same answer as `GET /_svc/data/<id>` without a session, so the page is
// the same for everyone and leaks nothing a script could not fetch. The rest stays for the client
// (client/main.ts), which reads every binding again on load and replaces what was filled here.
// Values go in as text and links only with an http(s) scheme, as the client puts them.
import { parse as parseHtml, type DefaultTreeAdapterMap } from 'parse5';
import type { CompiledBinding } from '../../lib/html-data/compile.js';
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

/**
 * The page with its anonymous reads filled, or undefined when it has none to fill. `pageUrl`
 * resolves a relative link the way the browser would.
 */
export async function firstRender(
  data: Pick<DataParts, 'store' | 'cache'>,
  app: App,
  html: string,
  pageUrl: string,
): Promise<string | undefined> {
  const reads = anonymousReads(app);
  if (reads.size === 0 || !html.includes('data-svc-id')) return undefined;
  const doc = parseHtml(html, { sourceCodeLocationInfo: true, scriptingEnabled: false });
  const found: Array<[Element, CompiledBinding]> = [];
  for (const node of descendantsOf(doc as TreeNode & Node)) {
    if (!('tagName' in node)) continue;
    const b = reads.get(idOf(node) ?? '');
    if (b) found.push([node, b]);
  }
  if (found.length === 0) return undefined;
  const replies = await Promise.all(
    found.map(([, b]) => readBinding(data, app, b, undefined, { offset: 0, ref: b.record ? { name: b.record } : undefined })),
  );
  return renderReads(
    html,
    app,
    found.map(([el, b], i) => ({ el, binding: b, reply: replies[i]! })),
    pageUrl,
  );
}

/** The page with each read's answer written into it (pure: the parsed page's elements, their bindings and answers). */
export function renderReads(
  html: string,
  app: App,
  reads: ReadonlyArray<{ el: Element; binding: CompiledBinding; reply: ReadReply }>,
  pageUrl: string,
): string {
  const fields = bindingsOf(app);
  const edits: Edit[] = [];
  for (const { el, binding, reply } of reads) {
    if (binding.verb === 'count') {
      const inner = contentsOf(el);
      if (inner) edits.push({ ...inner, text: String(reply.count ?? 0) });
    } else if (binding.verb === 'one') {
      if (!reply.record) edits.push(attributeAt(el, 'data-svc-empty', ''));
      else edits.push(...recordEdits(el, reply.record, fields, pageUrl));
    } else {
      const template = el.childNodes.find((n): n is Element => 'tagName' in n && n.tagName === 'template');
      const records = reply.records ?? [];
      const end = template?.sourceCodeLocation?.endTag?.endOffset;
      if (!template || end === undefined) continue;
      if (records.length === 0) edits.push(attributeAt(el, 'data-svc-empty', ''));
      else edits.push(insertAt(end, records.map((r) => item(html, template, r, fields, pageUrl)).join('')));
    }
  }
  return splice(html, edits);
}

/** One record of a list: its template's contents, each top element marked with the record's id, its fields filled. */
function item(
  html: string,
  template: Element,
  record: Record<string, FieldValue>,
  fields: Map<string, CompiledBinding>,
  pageUrl: string,
): string {
  const from = template.sourceCodeLocation!.startTag!.endOffset;
  const to = template.sourceCodeLocation!.endTag!.startOffset;
  const content = (template as Element & { content: { childNodes: Node[] } }).content;
  const edits: Edit[] = [];
  for (const top of content.childNodes) if ('tagName' in top) edits.push(attributeAt(top, 'data-svc-item', String(record._id)));
  edits.push(...recordEdits(content as unknown as Element, record, fields, pageUrl));
  // The template's source alone, its edits moved to match.
  return splice(
    html.slice(from, to),
    edits.map((e) => ({ at: e.at - from, end: e.end - from, text: e.text })),
  );
}

/** The edits that fill the `field` bindings under root with the record's values. */
function recordEdits(root: Element, record: Record<string, FieldValue>, fields: Map<string, CompiledBinding>, pageUrl: string): Edit[] {
  const edits: Edit[] = [];
  for (const node of descendantsOf(root as TreeNode & Node)) {
    if (!('tagName' in node)) continue;
    const b = fields.get(idOf(node) ?? '');
    if (b?.verb !== 'field') continue;
    const value = record[b.field!] ?? null;
    const inner = contentsOf(node);
    if (b.place === 'href' || b.place === 'src') {
      const url = safeUrl(value, pageUrl);
      const written = node.sourceCodeLocation?.attrs?.[b.place];
      if (written) edits.push({ at: written.startOffset, end: written.endOffset, text: url ? `${b.place}="${escapeAttribute(url)}"` : '' });
      else if (url) edits.push(attributeAt(node, b.place, url));
      // An empty link shows its address, as the client does.
      if (b.place === 'href' && inner && inner.at === inner.end) edits.push({ ...inner, text: escapeText(shown(value)) });
    } else if (inner) edits.push({ ...inner, text: escapeText(shown(value)) });
  }
  return edits;
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

/** An attribute added right after the element's tag name (`<li data-svc-item="...">`). */
function attributeAt(el: Element, name: string, value: string): Edit {
  const at = el.sourceCodeLocation!.startTag!.startOffset + 1 + el.tagName.length;
  return insertAt(at, value === '' ? ` ${name}` : ` ${name}="${escapeAttribute(value)}"`);
}
