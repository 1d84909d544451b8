// What kind of app a tree of files is. Pure: it sees the paths and the contents of the few files
// that decide (HTML pages), and says the kind and why, so a deploy records an explanation.
import { namesBinding } from '../../lib/html-data/compile.js';
import { invalid } from '../errors.js';

export type TreeKind = 'static' | 'html' | 'markdown' | 'handlers';

export interface Detected {
  kind: TreeKind;
  why: string;
}

export const isHtml = (p: string) => /\.html?$/i.test(p);
const isMarkdown = (p: string) => /\.(md|markdown)$/i.test(p);
/** Handler trees: modules under api/ or handlers/ (the convention of handler-tree hosts). */
const isHandler = (p: string) => /^(api|handlers)\/.+\.(js|mjs|cjs|ts|mts|cts|py|rb|go|sh)$/i.test(p);
/** What makes an HTML page an HTML app: platform bindings (as compile.ts finds them), viewer templates or policy meta tags. */
const htmlAppMarkers = [namesBinding, /\{\{\s*\$viewer\b/, /<meta\s+[^>]*name\s*=\s*["']?svc-/i];

export function detectKind(paths: readonly string[], htmlContents: ReadonlyMap<string, Buffer>): Detected {
  if (!paths.length) throw invalid('the deploy has no files');
  for (const [file, body] of htmlContents) {
    const text = body.toString('utf8');
    if (htmlAppMarkers.some((m) => m.test(text)))
      return { kind: 'html', why: `${file} uses platform bindings (data-svc, {{$viewer}} or svc- meta tags)` };
  }
  const html = paths.filter(isHtml);
  const handlers = paths.filter(isHandler);
  if (handlers.length && !html.some((p) => /(^|\/)index\.html?$/i.test(p))) {
    return { kind: 'handlers', why: `${handlers.length} handler modules under api/ or handlers/ (${handlers.slice(0, 3).join(', ')})` };
  }
  const markdown = paths.filter(isMarkdown);
  if (markdown.length && !html.length) return { kind: 'markdown', why: `${markdown.length} Markdown pages and no HTML` };
  return {
    kind: 'static',
    why: html.length ? `${html.length} HTML pages without platform bindings` : `${paths.length} files served as they are`,
  };
}
