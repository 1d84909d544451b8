// Markdown sites: "/x" serves x.md rendered as a full HTML page, a directory serves its index.md
// (README.md as a fallback), 404.md is the not-found page, and everything else (images, CSS, and
// the .md sources themselves at their own paths) is served as a static site serves it.
//
// Safe by default: raw HTML in the Markdown is shown as text, not passed through, and links with
// script-capable schemes lose their target. A tenant who wants HTML writes an HTML app.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { Marked, type Token, type Tokens } from 'marked';
import { parse as parseYaml } from 'yaml';
import { PageCache } from './page-cache.js';
import { createStaticSite, type SiteHandler } from './static-site.js';
import { escapeHtml, viewerOf } from './viewer.js';
import { loginUrl } from '../lib/contract.js';

export interface MarkdownPage {
  /** The whole HTML document, with a placeholder where `:account` controls go. */
  html: string;
  title: string;
  frontMatter: Record<string, unknown>;
  /** The page shows the viewer (`:account`), so it is personal. */
  hasAccount: boolean;
}

// Raw HTML is escaped, so a page cannot forge this marker; the nonce makes that doubly sure.
const accountMarker = `<!--svc-account-${randomBytes(8).toString('hex')}-->`;
const accountLine = /^[ \t]{0,3}:account[ \t]*(?:\r?\n|$)/;

const safeSchemes = new Set(['http', 'https', 'mailto', 'tel']);

/** Links and images keep relative and web targets; javascript:, data:, vbscript: and the like become inert. */
function safeHref(href: string, image: boolean): string {
  // Browsers ignore whitespace and control characters inside a scheme ("java\tscript:").
  const compact = href.replace(/[\u0000-\u0020\u007f]/g, '');
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(compact);
  if (!scheme || safeSchemes.has(scheme[1]!.toLowerCase())) return href;
  // An image element never runs script, so inline images are harmless there.
  return image && /^data:image\//i.test(compact) ? href : '#';
}

function sanitize(token: Token): void {
  if (token.type === 'link' || token.type === 'image') {
    const t = token as Tokens.Link | Tokens.Image;
    t.href = safeHref(t.href, token.type === 'image');
  }
}

const marked = new Marked({
  gfm: true,
  renderer: {
    html({ text, block }) {
      return block ? `<p>${escapeHtml(text.trim())}</p>\n` : escapeHtml(text);
    },
  },
  extensions: [
    {
      name: 'svcAccount',
      level: 'block',
      start(src: string) {
        return /^[ \t]{0,3}:account[ \t]*$/m.exec(src)?.index;
      },
      tokenizer(src: string) {
        const m = accountLine.exec(src);
        return m ? { type: 'svcAccount', raw: m[0] } : undefined;
      },
      renderer() {
        return accountMarker + '\n';
      },
    },
  ],
});

const frontMatterPattern = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n?(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

/** YAML front matter and the Markdown after it; malformed front matter is dropped, not shown. */
export function splitFrontMatter(source: string): { frontMatter: Record<string, unknown>; body: string } {
  const m = frontMatterPattern.exec(source);
  if (!m) return { frontMatter: {}, body: source };
  let data: unknown;
  try {
    data = parseYaml(m[1]!);
  } catch {
    data = undefined;
  }
  const frontMatter = data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  return { frontMatter, body: source.slice(m[0].length) };
}

function plainText(tokens: Token[]): string {
  return tokens
    .map((t) => ('tokens' in t && Array.isArray(t.tokens) ? plainText(t.tokens) : 'text' in t && typeof t.text === 'string' ? t.text : ''))
    .join('');
}

const style = `body{margin:0;font:16px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#fff}
main{max-width:46rem;margin:0 auto;padding:2rem 1.25rem}
a{color:#0969da}img{max-width:100%}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f6f8fa;padding:1rem;overflow:auto;border-radius:6px}
:not(pre)>code{background:#f6f8fa;padding:.1em .3em;border-radius:4px}
table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:.3rem .6rem}
blockquote{margin:0;padding-left:1rem;border-left:.25rem solid #d0d7de;color:#59636e}
.svc-account{display:flex;gap:.75rem;justify-content:flex-end;font-size:.9em}
@media (prefers-color-scheme:dark){body{color:#e6edf3;background:#0d1117}a{color:#4493f8}pre,:not(pre)>code{background:#161b22}}`;

/** Renders a Markdown page to a full HTML document; `fallbackTitle` is used when it names none. */
export function renderMarkdown(source: string, fallbackTitle: string): MarkdownPage {
  const { frontMatter, body } = splitFrontMatter(source);
  const tokens = marked.lexer(body);
  // walkTokens returns what the callback returned for each token; sanitize is synchronous, so those are no promises.
  void marked.walkTokens(tokens, sanitize);
  let title = typeof frontMatter.title === 'string' || typeof frontMatter.title === 'number' ? String(frontMatter.title) : '';
  if (!title) {
    const heading = tokens.find((t): t is Tokens.Heading => t.type === 'heading' && (t as Tokens.Heading).depth === 1);
    title = heading ? plainText(heading.tokens).trim() : fallbackTitle;
  }
  const content = marked.parser(tokens);
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${style}</style>
</head>
<body>
<main>
${content}</main>
</body>
</html>
`;
  return { html, title, frontMatter, hasAccount: content.includes(accountMarker) };
}

/** Login, identity and logout controls for the viewer of this request. */
export function accountControls(req: IncomingMessage): string {
  const viewer = viewerOf(req);
  if (viewer.id) {
    const who = viewer.name || viewer.email || viewer.id;
    return `<nav class="svc-account"><span>Signed in as ${escapeHtml(who)}</span> <a href="/_svc/auth/logout">Sign out</a></nav>`;
  }
  const url = new URL(req.url ?? '/', 'http://site');
  return `<nav class="svc-account"><a href="${escapeHtml(loginUrl(url.pathname + url.search))}">Sign in</a></nav>`;
}

export function pageFor(page: MarkdownPage, req: IncomingMessage): string {
  return page.hasAccount ? page.html.replaceAll(accountMarker, accountControls(req)) : page.html;
}

/** A page that names no title is called by its file, or its directory's name for an index. */
function fallbackTitle(root: string, file: string): string {
  const name = path.basename(file, path.extname(file));
  if (!/^(index|readme)$/i.test(name)) return name;
  return path.dirname(file) === root ? 'Home' : path.basename(path.dirname(file));
}

export function createMarkdownSite(root: string): SiteHandler {
  const base = path.resolve(root);
  const pages = new PageCache<MarkdownPage>(
    (source, found) => renderMarkdown(source, fallbackTitle(base, found.file)),
    (page, source) => page.html.length * 2 + source.length * 2,
  );
  return createStaticSite(root, {
    indexFiles: ['index.md', 'README.md', 'index.html'],
    extensions: ['.md', '.html'],
    notFoundFiles: ['404.md', '404.html'],
    render: async (req, found) => {
      // A .md file asked for by its own name is a download of the source.
      if (found.exact || !/\.md$/i.test(found.file)) return undefined;
      const page = await pages.get(found);
      return { body: pageFor(page, req), personal: page.hasAccount };
    },
  });
}
