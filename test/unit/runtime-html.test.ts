// HTML apps of runtime/ over real HTTP: viewer placeholders filled from the auth proxy's identity
// headers, personal caching for pages that name the viewer, static serving for everything else.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { annotatePage } from '../../lib/html-data/compile.js';
import { createHtmlApp, parseTemplate } from '../../runtime/html-app.js';
import { scratchDir } from '../support/scratch.js';

const ada = {
  'x-svc-auth-subject': 'usr_ada',
  'x-svc-auth-name': 'Ada <Lovelace>',
  'x-svc-auth-email': 'ada@example.com',
  'x-svc-auth-provider': 'email',
  'x-svc-auth-verified': 'true',
  'x-svc-auth-owner': 'false',
};

/** The ids the deploy gives a page's bindings (compileBindings and annotatePage agree: html-data-serving.test.ts). */
const ids = (file: string) => {
  const pages: Record<string, string> = {
    'index.html': '<ul data-svc="list todos"><template><li data-svc="field title">{{title}}</li></template></ul>',
    'data/board.html': '<span data-svc="count notes"></span>',
  };
  return [...annotatePage(file, pages[file]!)!.matchAll(/data-svc-id="([^"]+)"/g)].map((m) => m[1]);
};

describe('runtime HTML app', () => {
  let server: Server;
  let base: string;
  before(async () => {
    const root = scratchDir('svc-html-');
    const put = (rel: string, content: string) => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), content);
    };
    put(
      'index.html',
      '<p>id={{$viewer.id}} name={{$viewer.name}} email={{ $viewer.email }} provider={{$viewer.provider}} ' +
        'verified={{$viewer.verified}} owner={{$viewer.owner}} other={{$viewer.secret}}</p>' +
        '<ul data-svc="list todos"><template><li data-svc="field title">{{title}}</li></template></ul>',
    );
    put('data/board.html', '<html><head><title>b</title></head><body><span data-svc="count notes"></span></body></html>');
    put('about.html', '<h1>about, no viewer here</h1>');
    put('team/index.html', '<p>hi {{$viewer.name}}</p>');
    put('404.html', '<p>lost, {{$viewer.name}}</p>');
    put('.svc-artifact', 'sha256:abc\n');
    put('app.js', 'const t = "{{$viewer.id}}";');
    const app = createHtmlApp(root);
    server = createServer((req, res) => void app(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server?.close());

  const get = (p: string, headers: Record<string, string> = {}, method = 'GET') => fetch(base + p, { headers, method, redirect: 'manual' });

  it('fills viewer fields, HTML-escaped, and leaves everything else alone', async () => {
    const res = await get('/', ada);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(
      await res.text(),
      '<p>id=usr_ada name=Ada &lt;Lovelace&gt; email=ada@example.com provider=email verified=true owner=false other={{$viewer.secret}}</p>' +
        `<ul data-svc="list todos" data-svc-id="${ids('index.html')[0]}"><template><li data-svc="field title" data-svc-id="${ids('index.html')[1]}">{{title}}</li></template></ul>` +
        '<script src="/_svc/data/client.js" defer></script>',
      'and each data binding’s id beside it, with the client',
    );
  });

  it('serves a page with data bindings with their ids, the client before </head>, a CSP, and shared caching', async () => {
    const res = await get('/data/board');
    assert.equal(res.status, 200);
    assert.equal(
      await res.text(),
      `<html><head><title>b</title><script src="/_svc/data/client.js" defer></script></head><body><span data-svc="count notes" data-svc-id="${ids('data/board.html')[0]}"></span></body></html>`,
    );
    assert.equal(
      res.headers.get('content-security-policy'),
      "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'",
    );
    assert.equal(res.headers.get('cache-control'), 'public, max-age=0, must-revalidate', 'nothing personal in it');
    const again = await get('/data/board', { 'if-none-match': res.headers.get('etag')! });
    assert.equal(again.status, 304);
  });

  it('fills empty strings for an anonymous viewer', async () => {
    const text = await (await get('/')).text();
    assert.match(text, /^<p>id= name= email= provider= verified= owner= other=/);
  });

  it('renders clean URLs, index files and the 404 page', async () => {
    assert.equal(await (await get('/team/', ada)).text(), '<p>hi Ada &lt;Lovelace&gt;</p>');
    assert.equal((await get('/team', ada)).status, 308);
    const lost = await get('/nowhere', ada);
    assert.equal(lost.status, 404);
    assert.equal(await lost.text(), '<p>lost, Ada &lt;Lovelace&gt;</p>');
    assert.equal(lost.headers.get('cache-control'), 'private, no-cache');
  });

  it('caches personal pages privately, varies them on identity, and never shares an ETag between viewers', async () => {
    const mine = await get('/', ada);
    assert.equal(mine.headers.get('cache-control'), 'private, no-cache');
    const vary = mine.headers.get('vary')!.toLowerCase();
    for (const h of Object.keys(ada)) assert.ok(vary.includes(h), `Vary names ${h}`);
    const etag = mine.headers.get('etag')!;
    assert.equal((await get('/', { ...ada, 'if-none-match': etag })).status, 304);
    const theirs = await get('/', { ...ada, 'x-svc-auth-subject': 'usr_bob', 'if-none-match': etag });
    assert.equal(theirs.status, 200, 'another viewer does not revalidate against my page');
    assert.notEqual(theirs.headers.get('etag'), etag);
    // Byte-identical pages (no name to show) for two viewers still carry different tags.
    const a = await get('/about-none', { 'x-svc-auth-subject': 'a' });
    const b = await get('/about-none', { 'x-svc-auth-subject': 'b' });
    assert.notEqual(a.headers.get('etag'), b.headers.get('etag'));
  });

  it('serves pages without viewer fields and non-HTML files as a static site does', async () => {
    const about = await get('/about', ada);
    assert.equal(about.headers.get('cache-control'), 'public, max-age=0, must-revalidate');
    assert.equal(about.headers.get('vary'), null);
    assert.match(about.headers.get('etag')!, /^"[0-9a-f]+-[0-9a-f]+"$/);
    const js = await get('/app.js', ada);
    assert.equal(await js.text(), 'const t = "{{$viewer.id}}";');
    assert.equal((await get('/app.js', { range: 'bytes=0-4' })).status, 206);
  });

  it('answers HEAD for a rendered page without a body', async () => {
    const head = await get('/', ada, 'HEAD');
    assert.equal(head.status, 200);
    assert.ok(Number(head.headers.get('content-length')) > 0);
    assert.equal(await head.text(), '');
  });

  it('never serves the artifact marker or other reserved names', async () => {
    for (const p of ['/.svc-artifact', '/.svc-artifact/', '/%2esvc-artifact', '/team/../.svc-artifact']) {
      const res = await get(p);
      assert.equal(res.status, 404, p);
      assert.doesNotMatch(await res.text(), /sha256/);
    }
  });

  it('parses templates once: no placeholder, no template', () => {
    assert.equal(parseTemplate('<p>plain {{name}}</p>'), undefined);
    assert.deepEqual(parseTemplate('a{{$viewer.id}}b'), ['a', { field: 'id' }, 'b']);
  });
});
