// Markdown sites of runtime/ over real HTTP: pages rendered to documents, sources downloadable,
// raw HTML escaped, the :account directive, personal caching where it appears.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createMarkdownSite, renderMarkdown, splitFrontMatter } from '../../runtime/markdown.js';
import { scratchDir } from '../support/scratch.js';

const signedIn = { 'x-svc-auth-subject': 'usr_ada', 'x-svc-auth-name': 'Ada & co', 'x-svc-auth-email': 'ada@example.com' };

function put(root: string, rel: string, content: string): void {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), content);
}

describe('runtime Markdown site', () => {
  let server: Server;
  let base: string;
  let bareBase: string;
  const servers: Server[] = [];

  const listen = async (root: string) => {
    const site = createMarkdownSite(root);
    const s = createServer((req, res) => void site(req, res));
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  };

  before(async () => {
    const root = scratchDir('svc-md-');
    put(root, 'index.md', '---\ntitle: Home & Away\nauth: owner\n---\n# Welcome\n\nHello **world**. See [docs](/docs/).\n');
    put(
      root,
      'guide.md',
      '# The *Guide*\n\nText <script>alert(1)</script> and <b>bold?</b>\n\n<div onclick="x">block</div>\n\n[click](javascript:alert(1)) ![pic](logo.png)\n',
    );
    put(root, 'members.md', '# Members\n\nWelcome.\n:account\n\n```\n:account\n```\n');
    put(root, 'docs/README.md', 'No heading here.\n');
    put(root, 'docs/page.md', '---\ntitle: [not, a, string]\n---\n## Only h2\n');
    put(root, 'logo.png', 'PNG');
    put(root, 'style.css', 'body{}');
    put(root, '404.md', '# Not here\n\n:account\n');
    base = await listen(root);
    const bare = scratchDir('svc-md-');
    put(bare, 'index.md', 'hi');
    bareBase = await listen(bare);
    server = servers[0]!;
  });
  after(() => servers.forEach((s) => s.close()));

  const get = (p: string, headers: Record<string, string> = {}, at = base) => fetch(at + p, { headers, redirect: 'manual' });

  it('renders / from index.md to a full document titled by front matter, front matter stripped', async () => {
    const res = await get('/');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'public, max-age=0, must-revalidate');
    const html = await res.text();
    assert.match(html, /^<!doctype html>/);
    assert.match(html, /<title>Home &amp; Away<\/title>/);
    assert.match(html, /<h1>Welcome<\/h1>/);
    assert.match(html, /Hello <strong>world<\/strong>/);
    assert.doesNotMatch(html, /auth: owner|---/);
    const etag = res.headers.get('etag')!;
    assert.equal((await get('/', { 'if-none-match': etag })).status, 304);
  });

  it('serves /x from x.md, titled by its first heading; escapes raw HTML and script links', async () => {
    const html = await (await get('/guide')).text();
    assert.match(html, /<title>The Guide<\/title>/);
    assert.match(html, /<h1>The <em>Guide<\/em><\/h1>/);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(html, /&lt;b&gt;bold\?&lt;\/b&gt;/);
    assert.match(html, /&lt;div onclick=&quot;x&quot;&gt;block&lt;\/div&gt;/);
    assert.doesNotMatch(html, /<script>|<b>|<div onclick|javascript:/);
    assert.match(html, /<a href="#">click<\/a>/);
    assert.match(html, /<img src="logo.png" alt="pic">/);
  });

  it('serves directory indexes, README.md as a fallback, and redirects a directory to its slash', async () => {
    const docs = await (await get('/docs/')).text();
    assert.match(docs, /<title>docs<\/title>/);
    assert.match(docs, /No heading here\./);
    assert.equal((await get('/docs')).status, 308);
    assert.match(await (await get('/docs/page')).text(), /<title>page<\/title>/, 'a non-string title is ignored');
  });

  it('lets .md sources be downloaded at their own path, and serves other files as they are', async () => {
    const src = await get('/guide.md');
    assert.equal(src.headers.get('content-type'), 'text/markdown; charset=utf-8');
    assert.match(await src.text(), /^# The \*Guide\*/);
    const png = await get('/logo.png');
    assert.equal(png.headers.get('content-type'), 'image/png');
    assert.equal(await png.text(), 'PNG');
    assert.equal(await (await get('/style.css')).text(), 'body{}');
  });

  it(':account shows a sign-in link to the anonymous, with the page to return to', async () => {
    const res = await get('/members?tab=1');
    const html = await res.text();
    assert.match(html, /<a href="\/_svc\/auth\/login\?next=%2Fmembers%3Ftab%3D1">Sign in<\/a>/);
    assert.match(html, /<pre><code>:account\n<\/code><\/pre>/, 'not inside a code block');
    assert.match(html, /<p>Welcome\.<\/p>/, 'ends the paragraph before it');
    assert.equal(res.headers.get('cache-control'), 'private, no-cache');
    assert.match(res.headers.get('vary')!, /x-svc-auth-subject/);
  });

  it(':account shows who is signed in and a logout link', async () => {
    const res = await get('/members', signedIn);
    const html = await res.text();
    assert.match(html, /Signed in as Ada &amp; co/);
    assert.match(html, /<a href="\/_svc\/auth\/logout">/);
    assert.doesNotMatch(html, /_svc\/auth\/login/);
    const byEmail = await (await get('/members', { 'x-svc-auth-subject': 'usr_x', 'x-svc-auth-email': 'x@example.com' })).text();
    assert.match(byEmail, /Signed in as x@example\.com/);
    const etag = res.headers.get('etag')!;
    assert.equal((await get('/members', { ...signedIn, 'if-none-match': etag })).status, 304);
    assert.equal((await get('/members', { 'if-none-match': etag })).status, 200);
  });

  it('renders 404.md for unknown paths, or a plain 404 without one', async () => {
    const res = await get('/nope/deeper');
    assert.equal(res.status, 404);
    const html = await res.text();
    assert.match(html, /<h1>Not here<\/h1>/);
    assert.match(html, /next=%2Fnope%2Fdeeper/);
    assert.equal(res.headers.get('cache-control'), 'private, no-cache');
    const plain = await get('/nope', {}, bareBase);
    assert.equal(plain.status, 404);
    assert.match(await (await get('/', {}, bareBase)).text(), /<title>Home<\/title>/);
    assert.equal(await plain.text(), 'not found\n');
    assert.equal((await get('/.svc-artifact')).status, 404);
    assert.ok(server.listening);
  });

  it('splits front matter and renders without a server', () => {
    assert.deepEqual(splitFrontMatter('---\na: 1\n---\nbody'), { frontMatter: { a: 1 }, body: 'body' });
    assert.deepEqual(splitFrontMatter('---\n: [broken\n---\nbody'), { frontMatter: {}, body: 'body' });
    assert.deepEqual(splitFrontMatter('no front matter\n---\n'), { frontMatter: {}, body: 'no front matter\n---\n' });
    const page = renderMarkdown('text only', 'Fallback');
    assert.equal(page.title, 'Fallback');
    assert.equal(page.hasAccount, false);
  });
});
