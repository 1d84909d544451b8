// HTML apps: a static site whose .html pages may name the viewer. `{{$viewer.<field>}}` is
// replaced, HTML-escaped, with what the auth proxy's identity headers say (empty when anonymous).
// Pages that name the viewer are personal (private, varied on the identity headers); pages that
// do not are served exactly like a static site's, with its shared caching.
//
// `data-svc` data bindings are compiled and checked at deploy (lib/html-data, decision 0034); they
// are not served yet, so the runtime passes those attributes through untouched.
import type { IncomingMessage } from 'node:http';
import { PageCache } from './page-cache.js';
import { createStaticSite, type SiteHandler } from './static-site.js';
import { escapeHtml, viewerOf, type Viewer } from './viewer.js';

const placeholder = /\{\{\s*\$viewer\.(id|name|email|provider|verified|owner)\s*\}\}/g;
// Larger pages are sent as they are rather than held in memory to be filled in.
const maxTemplateBytes = 8 * 1024 * 1024;

/** Literal text and viewer fields alternating; undefined when the page names no viewer field. */
export type Template = (string | { field: keyof Viewer })[] | undefined;

export function parseTemplate(source: string): Template {
  const parts: (string | { field: keyof Viewer })[] = [];
  let last = 0;
  for (const m of source.matchAll(placeholder)) {
    parts.push(source.slice(last, m.index), { field: m[1] as keyof Viewer });
    last = m.index + m[0].length;
  }
  if (parts.length === 0) return undefined;
  parts.push(source.slice(last));
  return parts;
}

export function fillTemplate(template: NonNullable<Template>, viewer: Viewer): string {
  return template.map((p) => (typeof p === 'string' ? p : escapeHtml(viewer[p.field]))).join('');
}

export function renderHtml(source: string, req: IncomingMessage): string {
  const template = parseTemplate(source);
  return template ? fillTemplate(template, viewerOf(req)) : source;
}

export function createHtmlApp(root: string): SiteHandler {
  const templates = new PageCache<Template>(parseTemplate, (template, source) => (template ? source.length * 2 : 64));
  return createStaticSite(root, {
    render: async (req, found) => {
      if (!/\.html?$/i.test(found.file) || found.size > maxTemplateBytes) return undefined;
      const template = await templates.get(found);
      if (!template) return undefined;
      return { body: fillTemplate(template, viewerOf(req)), personal: true };
    },
  });
}
