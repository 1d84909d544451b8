// Handler trees of runtime/ over real HTTP: file-based routes with params, the module shapes
// (string, object, Response, per-method exports, TypeScript, CommonJS), streaming both ways, errors
// (500, logged with the stack), the deadline (504), identity from the auth proxy's headers,
// processes per request (CGI), and handler source never served as a file.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../lib/logger.js';
import { matchRoute, planHandlerRoutes } from '../../lib/handlers/routes.js';
import { createHandlerTree, parseCgiHead, type HandlerTree } from '../../runtime/handlers.js';

const ada = {
  'x-svc-auth-subject': 'usr_ada',
  'x-svc-auth-email': 'ada@example.com',
  'x-svc-auth-provider': 'email',
  'x-svc-auth-assertion': 'eyJhbGciOiJFZERTQSJ9.x.y',
};
const hasPython = (() => {
  try {
    execFileSync('python3', ['-c', 'pass']);
    return true;
  } catch {
    return false;
  }
})();

describe('handler routes', () => {
  it('maps api/ files under /api and handlers/ files under /, index files to their directory', () => {
    const { routes, problems } = planHandlerRoutes([
      'api/hello.js',
      'api/index.ts',
      'api/users/[id].js',
      'api/users/me.js',
      'api/files/[...path].mjs',
      'api/_lib/db.ts',
      'api/.hidden.js',
      'api/types.d.ts',
      'api/data.json',
      'handlers/index.js',
      'handlers/x.js',
      'handlers/run.py',
      'index.html',
      'lib/util.js',
    ]);
    assert.deepEqual(problems, []);
    assert.deepEqual(Object.fromEntries(routes.map((r) => [r.pattern, r.file])), {
      '/': 'handlers/index.js',
      '/api': 'api/index.ts',
      '/api/hello': 'api/hello.js',
      '/api/users/me': 'api/users/me.js',
      '/api/users/[id]': 'api/users/[id].js',
      '/api/files/[...path]': 'api/files/[...path].mjs',
      '/run': 'handlers/run.py',
      '/x': 'handlers/x.js',
    });
    assert.equal(routes.find((r) => r.file === 'handlers/run.py')?.runner, 'process');
    const at = (p: string) => {
      const m = matchRoute(routes, p.split('/').filter(Boolean));
      return m && [m.route.file, m.params];
    };
    assert.deepEqual(at('/api/users/42'), ['api/users/[id].js', { id: '42' }]);
    assert.deepEqual(at('/api/users/me'), ['api/users/me.js', {}], 'a static segment wins over a param');
    assert.deepEqual(at('/api/files/a/b/c.txt'), ['api/files/[...path].mjs', { path: 'a/b/c.txt' }]);
    assert.equal(at('/api/files'), undefined, '[...name] matches one segment or more');
    assert.equal(at('/api/users/42/more'), undefined);
    assert.deepEqual(at('/'), ['handlers/index.js', {}]);
  });

  it('says what it cannot serve: other languages, clashing routes, bad segments, no routes at all', () => {
    const clash = planHandlerRoutes(['api/a.js', 'api/a.ts', 'api/b/index.js', 'api/b.mjs', 'api/[x]/y.js', 'api/[z]/w.js']);
    assert.ok(clash.problems.includes('api/a.js and api/a.ts both serve /api/a'), clash.problems.join('\n'));
    assert.ok(clash.problems.includes('api/b.mjs and api/b/index.js both serve /api/b'), clash.problems.join('\n'));
    assert.equal(clash.problems.length, 2, 'different params on different paths do not clash');
    const langs = planHandlerRoutes(['api/a.rb', 'api/b.go', 'api/c.js']);
    assert.match(langs.problems[0]!, /languages the runtime does not run: api\/a\.rb, api\/b\.go/);
    assert.match(planHandlerRoutes(['api/[...a]/b.js']).problems[0]!, /must be the last segment/);
    assert.match(planHandlerRoutes(['api/[a]/[a].js']).problems[0]!, /used twice/);
    assert.match(planHandlerRoutes(['api/_lib/x.js', 'index.html']).problems[0]!, /no handler routes/);
  });

  it('parses CGI response heads: Status, a status line, Location, a default content type', () => {
    assert.deepEqual(parseCgiHead('Status: 404 Not Found\r\nContent-Type: text/html'), {
      status: 404,
      statusText: 'Not Found',
      headers: [['Content-Type', 'text/html']],
    });
    assert.equal(parseCgiHead('HTTP/1.1 201 Created\nX-A: 1').status, 201);
    assert.equal(parseCgiHead('Location: /there').status, 302);
    assert.deepEqual(parseCgiHead('X-A: 1').headers, [
      ['X-A', '1'],
      ['Content-Type', 'text/plain; charset=utf-8'],
    ]);
    assert.throws(() => parseCgiHead('hello world'), /not a response header line/);
    assert.throws(() => parseCgiHead('Status: 100'), /not a final response status/);
  });
});

describe('runtime handler tree', () => {
  let server: Server;
  let base: string;
  let root: string;
  let tree: HandlerTree;
  const logLines: string[] = [];
  const logged = () => logLines.map((l) => JSON.parse(l) as { msg: string; err?: { stack?: string; message?: string }; route?: string });

  before(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'svc-handlers-tree-'));
    const put = (rel: string, content: string) => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), content);
    };
    put('index.html', '<h1>home</h1>');
    put('style.css', 'h1 { color: red }');
    put('404.html', '<h1>lost</h1>');
    put('api/hello.js', "export default async function handler(req) { return 'hello from ' + new URL(req.url).pathname; }\n");
    put('api/index.js', 'export default () => ({ api: true, list: [1, 2] });\n');
    put('api/users/[id].js', 'export function handler(req, { params }) { return { id: params.id }; }\n');
    put('api/files/[...path].js', 'export default (req, ctx) => ctx.params;\n');
    put(
      'api/created.js',
      "export default () => { const h = new Headers({ 'content-type': 'application/json', 'x-extra': 'yes' }); h.append('set-cookie', 'a=1'); h.append('set-cookie', 'b=2'); " +
        'return new Response(JSON.stringify({ made: true }), { status: 201, headers: h }); };\n',
    );
    put(
      'api/items.js',
      "export const GET = () => ({ items: ['a'] });\nexport async function POST(req) { const body = await req.json(); return new Response(JSON.stringify({ got: body }), { status: 201 }); }\n",
    );
    put(
      'api/echo.js',
      "export default (req) => new Response(req.body, { headers: { 'content-type': req.headers.get('content-type') ?? 'application/octet-stream' } });\n",
    );
    put(
      'api/stream.js',
      'export default () => {\n' +
        '  let release; globalThis.__svcStreamGate = new Promise((r) => { release = r; }); globalThis.__svcRelease = () => release();\n' +
        '  const enc = new TextEncoder();\n' +
        '  return new Response(new ReadableStream({ async start(c) { c.enqueue(enc.encode("first;")); await globalThis.__svcStreamGate; c.enqueue(enc.encode("second")); c.close(); } }), { headers: { "content-type": "text/event-stream" } });\n' +
        '};\n',
    );
    put('api/throws.js', "export default () => { throw new Error('kaboom in handler'); };\n");
    put('api/broken.js', "throw new Error('kaboom at load');\nexport default () => 'never';\n");
    put('api/noexport.js', 'export const value = 1;\n');
    put(
      'api/slow.js',
      'export default (req) => new Promise((resolve) => { req.signal.addEventListener("abort", () => { globalThis.__svcSlowAborted = true; }); });\n',
    );
    put(
      'api/whoami.js',
      "export default (req) => ({ subject: req.headers.get('x-svc-auth-subject'), email: req.headers.get('x-svc-auth-email'), provider: req.headers.get('x-svc-auth-provider'), " +
        "assertion: req.headers.get('x-svc-auth-assertion'), envSubject: process.env.SVC_AUTH_SUBJECT ?? null });\n",
    );
    put('api/bytes.js', 'export default () => new Uint8Array([1, 2, 3]);\n');
    put('api/empty.js', 'export default () => undefined;\n');
    put(
      'api/data.js',
      "import { readFile } from 'node:fs/promises';\nexport default async () => JSON.parse(await readFile(new URL('./_data.json', import.meta.url), 'utf8'));\n",
    );
    put('api/_data.json', '{"from":"a data file"}');
    put('api/legacy.cjs', "module.exports = async () => 'from commonjs';\n");
    put('api/_lib/plain.js', "export const shout = (s) => s.toUpperCase() + '!';\n");
    put(
      'api/_lib/format.ts',
      'export interface Greeting { name: string }\nexport function format(g: Greeting): string { return `hi ${g.name}`; }\n',
    );
    put(
      'api/typed.ts',
      "import { format, type Greeting } from './_lib/format.ts';\nimport { shout } from './_lib/plain.js';\n" +
        'export default async function handler(req: Request, { params }: { params: Record<string, string> }): Promise<Response> {\n' +
        "  const g: Greeting = { name: new URL(req.url).searchParams.get('name') ?? 'anon' };\n" +
        '  return Response.json({ text: shout(format(g)), params });\n}\n',
    );
    put('api/badts.ts', 'export default () => { return (1 + ; };\n');
    put('handlers/page.js', "export default () => '<h1>a page</h1>';\n");
    put(
      'api/cgi/[name].sh',
      '#!/bin/sh\nbody=$(cat)\nprintf "Status: 201 Created\\r\\nContent-Type: text/plain\\r\\nX-Method: %s\\r\\n\\r\\n" "$REQUEST_METHOD"\n' +
        'printf "name=%s subject=%s query=%s body=%s header=%s" "$SVC_PARAM_NAME" "$SVC_AUTH_SUBJECT" "$QUERY_STRING" "$body" "$HTTP_X_THING"\n',
    );
    put('api/cgi-slow.sh', 'sleep 10\n');
    put('api/cgi-bad.sh', 'echo no head here\n');
    put('api/cgi-fails.sh', 'echo oops >&2\nexit 3\n');
    put(
      'api/py.py',
      'import os, sys\nsys.stdout.write("Content-Type: application/json\\n\\n")\nsys.stdout.write(\'{"provider": "%s", "path": "%s"}\' % (os.environ.get("SVC_AUTH_PROVIDER", ""), os.environ["SCRIPT_NAME"]))\n',
    );
    put('.svc-artifact', 'sha256:abc\n');
    const log = createLogger('runtime', 'debug', { write: (line: string) => void logLines.push(line) });
    tree = createHandlerTree(root, { log, timeoutMs: 1000 });
    server = createServer((req, res) => void tree(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await tree.ready;
  });
  after(async () => {
    server?.closeAllConnections();
    server?.close();
    await tree?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const get = (p: string, init: RequestInit = {}) => fetch(base + p, { redirect: 'manual', ...init });

  it('routes files to paths: strings as text or HTML, objects as JSON, params and [...rest]', async () => {
    const hello = await get('/api/hello?x=1');
    assert.equal(hello.status, 200);
    assert.equal(hello.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(await hello.text(), 'hello from /api/hello');
    assert.equal(await (await get('/api/hello/')).text(), 'hello from /api/hello/', 'a trailing slash serves the same route');
    const index = await get('/api');
    assert.equal(index.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(await index.json(), { api: true, list: [1, 2] });
    assert.deepEqual(await (await get('/api/users/42')).json(), { id: '42' });
    assert.deepEqual(await (await get('/api/users/a%20b')).json(), { id: 'a b' }, 'params are decoded');
    assert.deepEqual(await (await get('/api/files/a/b/c.txt')).json(), { path: 'a/b/c.txt' });
    const page = await get('/page');
    assert.equal(
      page.headers.get('content-type'),
      'text/html; charset=utf-8',
      'handlers/page.js serves /page; a string starting with < is HTML',
    );
    assert.equal(await page.text(), '<h1>a page</h1>');
    const bytes = await get('/api/bytes');
    assert.equal(bytes.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual([...new Uint8Array(await bytes.arrayBuffer())], [1, 2, 3]);
    assert.equal((await get('/api/empty')).status, 204);
    assert.deepEqual(
      await (await get('/api/data')).json(),
      { from: 'a data file' },
      'files next to a module are readable from import.meta.url',
    );
    assert.equal(await (await get('/api/legacy')).text(), 'from commonjs');
  });

  it('sends a returned Response as it is: status, headers, several cookies', async () => {
    const res = await get('/api/created');
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-extra'), 'yes');
    assert.deepEqual(res.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.deepEqual(await res.json(), { made: true });
  });

  it('dispatches per-method exports, HEAD through GET, 405 with Allow for the rest', async () => {
    assert.deepEqual(await (await get('/api/items')).json(), { items: ['a'] });
    const head = await get('/api/items', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    const post = await get('/api/items', {
      method: 'POST',
      body: JSON.stringify({ n: 1 }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(post.status, 201);
    assert.deepEqual(await post.json(), { got: { n: 1 } });
    const del = await get('/api/items', { method: 'DELETE' });
    assert.equal(del.status, 405);
    assert.equal(del.headers.get('allow'), 'GET, POST, HEAD');
  });

  it('streams a request body in and a response body out', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 'x');
    const echo = await get('/api/echo', { method: 'POST', body: big, headers: { 'content-type': 'application/x-test' } });
    assert.equal(echo.headers.get('content-type'), 'application/x-test');
    assert.equal((await echo.arrayBuffer()).byteLength, big.length);
    // The second chunk is produced only once the first has reached the client.
    const res = await get('/api/stream');
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    assert.equal(new TextDecoder().decode(first.value), 'first;');
    (globalThis as unknown as { __svcRelease: () => void }).__svcRelease();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    assert.equal(rest, 'second');
  });

  it('runs TypeScript handlers, transpiled, importing TypeScript and JavaScript modules', async () => {
    const res = await get('/api/typed?name=ada');
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { text: 'HI ADA!', params: {} });
    assert.ok(!existsSync(path.join(root, 'api/typed.js')), 'nothing is written into the (read-only) tree');
  });

  it('answers 500 with a generic body for a handler that throws or a module that cannot load, and logs why', async () => {
    const thrown = await get('/api/throws');
    assert.equal(thrown.status, 500);
    const body = await thrown.text();
    assert.equal(body, 'internal server error\n');
    assert.doesNotMatch(body, /kaboom/);
    const failed = logged().find((l) => l.msg === 'Handler failed');
    assert.match(failed?.err?.stack ?? '', /kaboom in handler[\s\S]*throws\.js/, 'logged with the stack');
    assert.equal(failed?.route, '/api/throws');
    for (const p of ['/api/broken', '/api/broken', '/api/noexport', '/api/badts']) assert.equal((await get(p)).status, 500, p);
    const loads = logged().filter((l) => l.msg === 'Handler module failed to load');
    assert.deepEqual(loads.map((l) => l.route).sort(), ['/api/badts', '/api/broken', '/api/noexport'], 'each logged once');
    assert.match(loads.find((l) => l.route === '/api/broken')?.err?.message ?? '', /kaboom at load/);
    assert.match(loads.find((l) => l.route === '/api/noexport')?.err?.message ?? '', /exports no handler/);
  });

  it('answers 504 when a handler does not respond in time, aborting its request signal', async () => {
    const started = Date.now();
    const res = await get('/api/slow');
    assert.equal(res.status, 504);
    assert.ok(Date.now() - started >= 900, 'after the deadline');
    assert.equal((globalThis as unknown as { __svcSlowAborted?: boolean }).__svcSlowAborted, true);
    assert.ok(logged().some((l) => l.msg === 'Handler timed out'));
  });

  it('gives handlers the identity headers of the auth proxy, never the shared environment', async () => {
    const res = await get('/api/whoami', { headers: ada });
    assert.deepEqual(await res.json(), {
      subject: 'usr_ada',
      email: 'ada@example.com',
      provider: 'email',
      assertion: ada['x-svc-auth-assertion'],
      envSubject: null,
    });
    assert.deepEqual(
      await (await get('/api/whoami')).json(),
      { subject: null, email: null, provider: null, assertion: null, envSubject: null },
      'anonymous',
    );
  });

  it('never serves handler source, route or not, however the path is spelled; serves the rest as a static site', async () => {
    for (const p of [
      '/api/hello.js',
      '/api/typed.ts',
      '/api/_lib/plain.js',
      '/api/_data.json',
      '/handlers/page.js',
      '/%61pi/hello.js',
      '/API/hello.js',
      '/x/..%2Fapi/hello.js',
      '/api/cgi-bad.sh',
    ]) {
      const res = await get(p);
      const text = await res.text();
      assert.equal(res.status, 404, p);
      assert.doesNotMatch(text, /export|handler|printf/, p);
    }
    // A raw request: fetch would normalize the dot segments itself.
    const raw = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const r = httpRequest(`${base}/x/../api/hello.js`, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      r.on('error', reject);
      r.end();
    });
    assert.equal(raw.status, 404);
    assert.doesNotMatch(raw.body, /export/);
    assert.equal((await get('/api/hello.js', { method: 'POST' })).status, 404);
    assert.equal(await (await get('/api/nothing-here')).text(), '<h1>lost</h1>', 'the site’s 404 page');
    assert.equal(await (await get('/')).text(), '<h1>home</h1>');
    assert.equal(await (await get('/style.css')).text(), 'h1 { color: red }');
    assert.equal((await get('/.svc-artifact')).status, 404);
  });

  it('runs shell handlers as a process per request, CGI style: env, params, identity, body, status', async () => {
    const res = await get('/api/cgi/bob?q=1', { method: 'POST', body: 'payload', headers: { ...ada, 'x-thing': 'th' } });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-method'), 'POST');
    assert.equal(await res.text(), 'name=bob subject=usr_ada query=q=1 body=payload header=th');
    const bad = await get('/api/cgi-bad');
    assert.equal(bad.status, 500);
    assert.equal(await bad.text(), 'internal server error\n');
    const fails = await get('/api/cgi-fails');
    assert.equal(fails.status, 500);
    assert.ok(
      logged().some(
        (l) => l.msg === 'Handler process failed' && l.route === '/api/cgi-fails' && /oops/.test((l as { stderr?: string }).stderr ?? ''),
      ),
    );
    const slow = await get('/api/cgi-slow');
    assert.equal(slow.status, 504);
  });

  it('runs Python handlers as a process per request', { skip: hasPython ? false : 'no python3 here' }, async () => {
    const res = await get('/api/py', { headers: ada });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), { provider: 'email', path: '/api/py' });
  });
});
