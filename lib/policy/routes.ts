// The routes a page is served at, so a policy declared inside a page covers every URL that shows
// it. This mirrors runtime/static-site.ts (and its HTML app and Markdown variants): a page is served
// at its own path, by its clean URL, and an index page by its directory; a Markdown page's source is
// also downloadable at its own path. Missing one of them would leave the page readable unprotected.
import path from 'node:path';

export const isHtmlPage = (p: string) => /\.html?$/i.test(p);
export const isMarkdownPage = (p: string) => /\.(md|markdown)$/i.test(p);

/** The kinds of tree whose files the runtime serves (container services serve themselves). */
export type TreeKind = 'static' | 'html' | 'markdown' | 'handlers';

/**
 * Every path a page of a tree is served at. `files` is the whole tree, to know whether a
 * directory's README.md is its index. Paths are the file's own, decoded (the matcher decodes
 * requests the same way the runtime does).
 */
export function pageRoutes(file: string, kind: TreeKind, files: ReadonlySet<string>): string[] {
  const own = '/' + file;
  const routes = [own];
  const dir = path.posix.dirname(file);
  const base = path.posix.basename(file);
  const dirRoutes = dir === '.' ? ['/'] : [`/${dir}/`, `/${dir}`];
  const markdownSite = kind === 'markdown';
  // Clean URLs: the runtime tries `.html` (and `.md` on a Markdown site) after the bare path.
  const clean = /\.html$/.test(base) || (markdownSite && /\.md$/.test(base));
  if (clean) routes.push(own.replace(/\.(html|md)$/, ''));
  // Index files, in the runtime's order: index.html; on a Markdown site index.md, README.md, index.html.
  const sibling = (name: string) => files.has(dir === '.' ? name : `${dir}/${name}`);
  const index = base === 'index.html' || (markdownSite && (base === 'index.md' || (base === 'README.md' && !sibling('index.md'))));
  if (index) routes.push(...dirRoutes);
  return [...new Set(routes)];
}
