// HTML apps: a static site whose .html pages may name the viewer. `{{$viewer.<field>}}` is
// replaced, HTML-escaped, with what the auth proxy's identity headers say (empty when anonymous).
// Pages that name the viewer are personal (private, varied on the identity headers); pages that
// do not are served exactly like a static site's, with its shared caching.
//
// A page with `data-svc` data bindings (compiled and checked at deploy: lib/html-data, decision 0034)
// is served with each binding's id written beside it and the platform's client script, which fills
// them from ingress-auth's /_svc/data/ endpoints, and with a Content-Security-Policy that keeps the
// page's forms, base URL and framing to its own origin.
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { annotatePage } from '../lib/html-data/compile.js';
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

/**
 * What a data page adds to its response: no plugins, its own base URL, forms posted to its own
 * origin only, framed only by its own pages (a delete button under another site's overlay).
 */
export const dataPageHeaders = {
  'Content-Security-Policy': "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'",
  'X-Content-Type-Options': 'nosniff',
};

/** A page as served: its template (viewer fields), the page itself when bindings were annotated, and whether it has bindings. */
interface Page {
  template: Template;
  source: string | undefined;
}

export function createHtmlApp(root: string): SiteHandler {
  const pages = new PageCache<Page>(
    (source, found) => {
      const file = path.relative(root, found.file).split(path.sep).join('/');
      const annotated = annotatePage(file, source);
      return { template: parseTemplate(annotated ?? source), source: annotated };
    },
    (page, source) => (page.template || page.source ? source.length * 4 : 64),
  );
  return createStaticSite(root, {
    render: async (req, found) => {
      if (!/\.html?$/i.test(found.file) || found.size > maxTemplateBytes) return undefined;
      const page = await pages.get(found);
      const headers = page.source ? dataPageHeaders : undefined;
      if (page.template) return { body: fillTemplate(page.template, viewerOf(req)), personal: true, ...(headers ? { headers } : {}) };
      if (page.source) return { body: page.source, personal: false, headers: dataPageHeaders };
      return undefined;
    },
  });
}
