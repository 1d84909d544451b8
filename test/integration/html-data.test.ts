// HTML apps that hold data (issue 34): a guestbook, a todo list and a counter deployed through the
// API as a new user would, served by real machines (the runtime writes each binding's id beside it),
// their bindings used through ingress-auth with sessions from the real OpenID provider (ada, bob) and
// the owner's link. Every rule is attacked: admission of the declaring page, audiences, ownership,
// `mine`, forged ids, another origin, the forms' declarations, rates; live updates with resume and
// their end at sign-out; the export and the data going with the app.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { CompiledBinding, DataModel } from '../../lib/html-data/compile.js';
import path from 'node:path';
import { repoRoot } from '../../lib/paths.js';
import { launchChromium } from '../support/browser.js';
import { Browser, fragmentSecret, type Answer } from '../support/ingress.js';
import { uniqueName } from '../support/kube.js';
import { startProviderPlatform, type ProviderPlatform } from '../support/providers.js';
import { eventually } from '../support/wait.js';

export const guestbookPage = `<!doctype html>
<html><head><meta name="svc-identity" content="idp"><meta name="svc-auth-owner" content="true"><title>Guestbook</title>
<style>#entries li:not([data-svc-mine]) form { display: none }</style></head>
<body>
<ul id="entries" data-svc="list entries order=-_created limit=20">
  <template>
    <li><b data-svc="field name"></b>: <span class="message" data-svc="field message"></span>
      <form data-svc="update entries"><textarea name="message" maxlength="500" required></textarea><button>Save</button></form>
      <button class="delete" data-svc="delete entries">Delete</button></li>
  </template>
</ul>
<p><span id="count" data-svc="count entries"></span> entries</p>
<form id="sign" data-svc="create entries">
  <input name="name" maxlength="80" required>
  <textarea name="message" maxlength="500" required></textarea>
  <button>Sign</button>
</form>
<div id="counter" data-svc="one counters record=main"><span id="clicks" data-svc="field clicks"></span> clicks</div>
<button id="plus" data-svc="increment counters.clicks record=main for=public">+1</button>
</body></html>`;

export const todosPage = `<!doctype html>
<meta name="svc-auth" content="idp"><meta name="svc-auth-owner" content="true">
<title>Todos</title>
<ul id="todos" data-svc="list todos mine order=_created">
  <template><li><span data-svc="field title"></span>
    <button class="toggle" data-svc="toggle todos.done">done</button>
    <button class="remove" data-svc="delete todos">remove</button></li></template>
</ul>
<form id="add" data-svc="create todos"><input name="title" maxlength="200" required><input type="checkbox" name="done"><button>Add</button></form>`;

describe('html data: bindings served on the real platform', () => {
  let p: ProviderPlatform;
  const app = uniqueName('guestbook');
  let model: DataModel;
  let ada: Browser;
  let bob: Browser;
  let owner: Browser;
  let anon: Browser;

  const binding = (verb: string, collection: string, file = 'index.html'): CompiledBinding => {
    const b = model.bindings.find((x) => x.verb === verb && x.collection === collection && x.file === file);
    assert.ok(b, `${verb} ${collection} in ${file}`);
    return b;
  };
  const origin = () => `http://${p.host(app)}`;
  /** A page's script: same-origin fetch with JSON (a browser sends Origin on every POST). */
  const call = async (b: Browser, method: string, id: string, query = '', body?: unknown, headers: Array<[string, string]> = []) => {
    const r = await b.request(p.host(app), `/_svc/data/${id}${query}`, {
      method,
      headers: [
        ['Accept', 'application/json'],
        ['Sec-Fetch-Mode', 'cors'],
        ...(method === 'POST'
          ? ([
              ['Origin', origin()],
              ['Sec-Fetch-Site', 'same-origin'],
              ['Content-Type', 'application/json'],
            ] as Array<[string, string]>)
          : []),
        ...headers,
      ],
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return r;
  };
  const json = <T>(r: Answer, status: number): T => {
    assert.equal(r.status, status, r.body);
    return (r.body ? JSON.parse(r.body) : {}) as T;
  };
  type Rec = Record<string, unknown> & { _id: string; _author: string | null };

  before(async () => {
    p = await startProviderPlatform({
      apps: {},
      idpAccounts: [
        { sub: 'ada', email: 'ada@example.test', emailVerified: true, name: 'Ada' },
        { sub: 'bob', email: 'bob@example.test', emailVerified: true, name: 'Bob' },
      ],
      codehostUsers: [],
    });
    [ada, bob, owner, anon] = [0, 1, 2, 3].map(() => new Browser(p.ia.url)) as [Browser, Browser, Browser, Browser];
    assert.equal((await p.api.request('POST', '/api/apps', { body: { name: app } })).status, 201);
    const res = await p.api.request('POST', `/api/apps/${app}/deploy`, {
      body: { files: { 'index.html': guestbookPage, 'todos.html': todosPage } },
    });
    assert.equal(res.status, 202, await res.clone().text());
    const deploy = (await res.json()) as { id: string; summary: { data: unknown } };
    assert.deepEqual(deploy.summary.data, { bindings: 15, collections: ['counters', 'entries', 'todos'] });
    await eventually(
      'the deploy live',
      async () => ((await (await p.api.request('GET', `/api/deploys/${deploy.id}`)).json()) as { status: string }).status === 'live',
      { timeoutMs: 90_000 },
    );
    model = (await p.api.deps.apps.find(p.api.account.namespace, app))!.spec.data as DataModel;
    await eventually('the app in the ingress', async () => (await anon.request(p.host(app), '/')).status === 200, { timeoutMs: 30_000 });
    for (const [b, who] of [
      [ada, 'ada'],
      [bob, 'bob'],
    ] as const)
      assert.equal((await p.providerSignIn(b, app, 'idp', who)).status, 200);
    const link = (await (await p.api.request('POST', `/api/apps/${app}/auth/owner-link`, { body: { next: '/' } })).json()) as {
      url: string;
    };
    assert.equal((await owner.redeem(p.host(app), fragmentSecret(link.url))).status, 200);
  });
  after(async () => p?.close());

  it('serves the page with each binding’s id beside it, the client script and a CSP', async () => {
    const page = await anon.request(p.host(app), '/', { headers: [['Accept', 'text/html']] });
    assert.equal(page.status, 200);
    const ids = [...page.body.matchAll(/data-svc-id="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(
      ids,
      model.bindings.filter((b) => b.file === 'index.html').map((b) => b.id),
    );
    assert.match(page.body, /<script src="\/_svc\/data\/client\.js" defer><\/script><\/head>/);
    assert.match(
      String(page.headers['content-security-policy']),
      /object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'/,
    );
    const client = await anon.request(p.host(app), '/_svc/data/client.js');
    assert.equal(client.status, 200);
    assert.match(String(client.headers['content-type']), /^text\/javascript/);
    assert.match(client.body, /data-svc-id/);
  });

  it('deploys the reference’s examples as written: each page served with its bindings, each read answering', async () => {
    const doc = readFileSync(path.join(repoRoot, 'docs', 'api', 'html-data.md'), 'utf8');
    const [guestbook, todos, settings] = [...doc.matchAll(/```html\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const docsApp = `${app}-docs`;
    assert.equal((await p.api.request('POST', '/api/apps', { body: { name: docsApp } })).status, 201);
    const res = await p.api.request('POST', `/api/apps/${docsApp}/deploy`, {
      body: { files: { 'index.html': guestbook!, 'todos.html': todos!, 'settings.html': settings! } },
    });
    assert.equal(res.status, 202, await res.clone().text());
    const { id } = (await res.json()) as { id: string };
    await eventually(
      'the examples live',
      async () => ((await (await p.api.request('GET', `/api/deploys/${id}`)).json()) as { status: string }).status === 'live',
      { timeoutMs: 90_000 },
    );
    const docsModel = (await p.api.deps.apps.find(p.api.account.namespace, docsApp))!.spec.data as DataModel;
    const host = p.host(docsApp);
    await eventually('the examples in the ingress', async () => (await anon.request(host, '/')).status === 200, { timeoutMs: 30_000 });
    for (const [file, path_] of [
      ['index.html', '/'],
      ['settings.html', '/settings'],
    ] as const) {
      const page = await anon.request(host, path_, { headers: [['Accept', 'text/html']] });
      assert.equal([...page.body.matchAll(/data-svc-id="/g)].length, docsModel.bindings.filter((b) => b.file === file).length, file);
    }
    const read = (verb: string, file: string) => docsModel.bindings.find((b) => b.verb === verb && b.file === file)!.id;
    const get = (b: Browser, bindingId: string) =>
      b.request(host, `/_svc/data/${bindingId}`, { headers: [['Accept', 'application/json']] });
    assert.equal((await get(anon, read('list', 'index.html'))).status, 200, 'the guestbook is public to read');
    assert.equal((await get(anon, read('list', 'todos.html'))).status, 401, 'the todo list is gated');
    const plus = await anon.request(host, `/_svc/data/${read('increment', 'settings.html')}`, {
      method: 'POST',
      headers: [['Accept', 'application/json']],
    });
    assert.equal(plus.status, 200, plus.body);
    const settingsForm = await anon.request(host, `/_svc/data/${read('update', 'settings.html')}`, {
      method: 'POST',
      headers: [
        ['Accept', 'application/json'],
        ['Content-Type', 'application/json'],
      ],
      body: JSON.stringify({ per_page: 10, theme: 'dark' }),
    });
    assert.equal(settingsForm.status, 401, 'owner-only settings: nobody signed in');
  });

  it('a guestbook: everyone reads, signed-in people write, authors edit their own, the owner any', async () => {
    const list = binding('list', 'entries');
    const create = binding('create', 'entries');
    const update = binding('update', 'entries');
    const del = binding('delete', 'entries');
    assert.deepEqual(json<{ records: Rec[] }>(await call(anon, 'GET', list.id), 200).records, []);
    // Anonymous: refused with where to sign in (the binding is $verified by default), nothing stored.
    const refused = json<{ login_url: string }>(await call(anon, 'POST', create.id, '', { name: 'x', message: 'y' }), 401);
    assert.match(refused.login_url, /\/_svc\/auth\/login\?next=%2Findex\.html$/);
    const mine = json<{ record: Rec }>(
      await call(ada, 'POST', create.id, '', { name: 'Ada', message: '<img src=x onerror=alert(1)>' }),
      201,
    ).record;
    assert.equal(mine._author, 'idp:ada');
    assert.equal(mine._mine, true);
    assert.equal(mine.message, '<img src=x onerror=alert(1)>', 'kept as written; shown as text by the client');
    const seen = json<{ records: Rec[] }>(await call(bob, 'GET', list.id), 200).records;
    assert.deepEqual(
      seen.map((r) => [r._id, r.name, r._mine]),
      [[mine._id, 'Ada', undefined]],
    );
    // bob may not change ada's entry; ada may; the owner may delete any.
    assert.match(
      json<{ error: string }>(await call(bob, 'POST', update.id, `?record=${mine._id}`, { message: 'bob was here' }), 403).error,
      /is for \$author, \$owner/,
    );
    assert.equal(
      json<{ record: Rec }>(await call(ada, 'POST', update.id, `?record=${mine._id}`, { message: 'edited' }), 200).record.message,
      'edited',
    );
    assert.equal((await call(bob, 'POST', del.id, `?record=${mine._id}`)).status, 403);
    assert.equal((await call(owner, 'POST', del.id, `?record=${mine._id}`)).status, 204);
    assert.equal((await call(owner, 'POST', del.id, `?record=${mine._id}`)).status, 404, 'gone');
    assert.equal(json<{ count: number }>(await call(anon, 'GET', binding('count', 'entries').id), 200).count, 0);
  });

  it('refuses forged ids, other origins, undeclared fields and bad values, naming them', async () => {
    const create = binding('create', 'entries');
    assert.equal((await call(ada, 'GET', 'AAAAAAAAAAAAAAAA')).status, 404, 'a forged id');
    assert.equal((await call(ada, 'GET', '../../api/apps')).status, 404);
    assert.equal((await call(ada, 'GET', create.id)).status, 405, 'a create is not read');
    const cross = await call(ada, 'POST', create.id, '', { name: 'x', message: 'y' }, [['Origin', 'http://evil.example']]);
    assert.match(json<{ error: string }>(cross, 403).error, /another site/);
    const site = await ada.request(p.host(app), `/_svc/data/${create.id}`, {
      method: 'POST',
      headers: [
        ['Sec-Fetch-Site', 'cross-site'],
        ['Content-Type', 'application/x-www-form-urlencoded'],
      ],
      body: 'name=x&message=y',
    });
    assert.equal(site.status, 403, 'a cross-site form post without Origin');
    for (const [body, why] of [
      [{ name: 'Ada', message: 'hi', _author: 'idp:bob' }, /_author is not a field of this form/],
      [{ name: 'Ada' }, /message is required/],
      [{ name: 'x'.repeat(81), message: 'hi' }, /name is at most 80 characters/],
      [{ name: 'Ada', message: 'bell\u0007' }, /message holds a control character/],
    ] as const)
      assert.match(json<{ error: string }>(await call(ada, 'POST', create.id, '', body), 400).error, why);
    const left = json<{ records: Rec[] }>(await call(ada, 'GET', binding('list', 'entries').id), 200).records;
    assert.deepEqual(left, [], 'nothing half-written');
  });

  it('a todo list: each person sees and changes only their own; the gated page’s bindings need its admission', async () => {
    const list = binding('list', 'todos', 'todos.html');
    const create = binding('create', 'todos', 'todos.html');
    const toggle = binding('toggle', 'todos', 'todos.html');
    const anonymous = json<{ login_url: string }>(await call(anon, 'GET', list.id), 401);
    assert.match(anonymous.login_url, /next=%2Ftodos\.html/, 'the page is gated: its admission first');
    const todo = json<{ record: Rec }>(await call(ada, 'POST', create.id, '', { title: 'write the docs' }), 201).record;
    assert.equal(todo.done, false, 'an unchecked checkbox is false');
    assert.deepEqual(json<{ records: Rec[] }>(await call(bob, 'GET', list.id), 200).records, [], 'bob sees none of ada’s');
    assert.match(json<{ error: string }>(await call(bob, 'POST', toggle.id, `?record=${todo._id}`), 403).error, /only your own/);
    assert.equal(json<{ record: Rec }>(await call(ada, 'POST', toggle.id, `?record=${todo._id}`), 200).record.done, true);
    assert.deepEqual(
      json<{ records: Rec[] }>(await call(ada, 'GET', list.id), 200).records.map((r) => [r.title, r.done]),
      [['write the docs', true]],
    );
  });

  it('a counter anyone can add to', async () => {
    const plus = binding('increment', 'counters');
    const one = binding('one', 'counters');
    assert.equal(json<{ record: Rec | null }>(await call(anon, 'GET', one.id), 200).record, null, 'not written yet');
    for (let i = 0; i < 3; i++) await call(anon, 'POST', plus.id);
    assert.equal(json<{ record: Rec }>(await call(anon, 'GET', one.id), 200).record.clicks, 3);
  });

  it('first render: a public page’s reads are in the HTML itself (crawlers, no JavaScript); gated and `mine` reads are left to the client', async () => {
    const payload = '<script>window.__x=1</script>"><img src=x onerror=alert(1)>';
    const entry = json<{ record: Rec }>(
      await call(ada, 'POST', binding('create', 'entries').id, '', { name: 'Ada & co', message: payload }),
      201,
    ).record;
    const todo = json<{ record: Rec }>(
      await call(ada, 'POST', binding('create', 'todos', 'todos.html').id, '', { title: 'first render todo', done: false }),
      201,
    ).record;
    const chromium = await launchChromium();
    try {
      const page = await anon.request(p.host(app), '/', { headers: [['Accept', 'text/html']] });
      assert.equal(page.status, 200);
      assert.match(page.body, new RegExp(`<li data-svc-item="${entry._id}"><b data-svc="field name" data-svc-id="[^"]+">Ada &amp; co</b>`));
      assert.ok(
        page.body.includes('&lt;script&gt;window.__x=1&lt;/script&gt;"&gt;&lt;img src=x onerror=alert(1)&gt;'),
        'the message as text',
      );
      assert.ok(!page.body.includes(payload), 'never as markup');
      assert.match(page.body, /<span id="count" data-svc="count entries" data-svc-id="[^"]+">1<\/span>/);
      assert.match(page.body, /<span id="clicks" data-svc="field clicks" data-svc-id="[^"]+">3<\/span>/, 'the named counter');
      assert.equal(page.headers.etag, undefined, 'filled: not the page the machine’s ETag names');
      assert.equal(Number(page.headers['content-length']), Buffer.byteLength(page.body));
      // Signed in, the same first render (what anyone may read; the client marks one's own after).
      const adas = await ada.request(p.host(app), '/', { headers: [['Accept', 'text/html']] });
      assert.ok(adas.body.includes(`data-svc-item="${entry._id}"`));
      assert.doesNotMatch(adas.body, /<li[^>]* data-svc-mine/, 'not marked as hers on the server');
      // The todo page is gated and its list `mine`: ada's own page comes as written, filled by its script.
      const todos = await ada.request(p.host(app), '/todos.html', { headers: [['Accept', 'text/html']] });
      assert.equal(todos.status, 200);
      assert.ok(!todos.body.includes('first render todo') && !todos.body.includes('data-svc-item'), 'nothing filled');
      // A reader without JavaScript sees the entries, as text.
      const context = await chromium.newContext({ javaScriptEnabled: false });
      const tab = await context.newPage();
      await tab.goto(`${origin()}/`);
      assert.equal(await tab.locator(`#entries li[data-svc-item="${entry._id}"] .message`).textContent(), payload);
      assert.equal(await tab.locator('#entries img').count(), 0);
      assert.equal(await tab.textContent('#count'), '1');
      await tab.screenshot({ path: path.join(repoRoot, 'docs', 'examples', 'html-data-first-render.png'), fullPage: true });
      // With JavaScript, the client reads them again and replaces the filled items: one item, not two.
      const live = await (await chromium.newContext()).newPage();
      await live.goto(`${origin()}/`);
      await live.waitForSelector('html[data-svc-ready]');
      assert.equal(await live.locator(`#entries li[data-svc-item="${entry._id}"]`).count(), 1);
    } finally {
      await chromium.close();
      assert.equal((await call(ada, 'POST', binding('delete', 'entries').id, `?record=${entry._id}`)).status, 204);
      assert.equal((await call(ada, 'POST', binding('delete', 'todos', 'todos.html').id, `?record=${todo._id}`)).status, 204);
    }
  });

  it('live updates: another visitor sees a write at once, filtered by the same rules, resumed by Last-Event-ID, ended at sign-out and at the owner’s revocation', async () => {
    const list = binding('list', 'entries');
    const todos = binding('list', 'todos', 'todos.html');
    const create = binding('create', 'entries');
    const bobStream = await openStream(p.ia.port, p.host(app), bob, `/_svc/data/live?b=${list.id}&b=${todos.id}`);
    assert.equal(bobStream.status, 200);
    const started = performance.now();
    const entry = json<{ record: Rec }>(await call(ada, 'POST', create.id, '', { name: 'Ada', message: 'live' }), 201).record;
    await bobStream.waitFor((t) => t.includes(entry._id));
    const ms = performance.now() - started;
    assert.ok(ms < 2_000, `seen after ${ms} ms`);
    // ada's todo is not sent to bob's stream of his own todos.
    const todo = json<{ record: Rec }>(
      await call(ada, 'POST', binding('create', 'todos', 'todos.html').id, '', { title: 'private' }),
      201,
    ).record;
    const marker = json<{ record: Rec }>(await call(ada, 'POST', create.id, '', { name: 'Ada', message: 'after' }), 201).record;
    await bobStream.waitFor((t) => t.includes(marker._id));
    assert.ok(!bobStream.text().includes(todo._id) && !bobStream.text().includes('private'), 'no event of ada’s todo');
    // Resume: what was written while away comes first.
    const last = [...bobStream.text().matchAll(/^id: (\d+)$/gm)].pop()![1]!;
    bobStream.close();
    const missed = json<{ record: Rec }>(await call(ada, 'POST', create.id, '', { name: 'Ada', message: 'missed' }), 201).record;
    const resumed = await openStream(p.ia.port, p.host(app), bob, `/_svc/data/live?b=${list.id}`, last);
    await resumed.waitFor((t) => t.includes(missed._id));
    // An anonymous stream of the gated page's reads is refused; a forged id is 404.
    assert.equal((await openStream(p.ia.port, p.host(app), anon, `/_svc/data/live?b=${todos.id}`)).status, 401);
    assert.equal((await openStream(p.ia.port, p.host(app), bob, `/_svc/data/live?b=AAAAAAAAAAAAAAAA`)).status, 404);
    // Signing out ends the stream (the revocation reaches every ingress-auth process).
    const out = await bob.request(p.host(app), '/_svc/auth/logout', {
      method: 'POST',
      headers: [
        ['Origin', origin()],
        ['Accept', 'application/json'],
      ],
    });
    assert.ok(out.status < 400, out.body);
    await resumed.ended;
    assert.match(resumed.text(), /event: ended/);
    // The owner revoking the app's sessions ends their streams too (the path a disabled app user's
    // sessions take: AppUsers.disable revokes them the same way); ada signs in again after.
    const adaStream = await openStream(p.ia.port, p.host(app), ada, `/_svc/data/live?b=${list.id}`);
    assert.equal(adaStream.status, 200);
    const revoked = await p.api.request('POST', `/api/apps/${app}/auth/sessions/revoke`, { body: {} });
    assert.ok(revoked.status < 300, await revoked.clone().text());
    await Promise.race([
      adaStream.ended,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`not ended in 10 s: ${adaStream.text()}`)), 10_000).unref()),
    ]);
    assert.match(adaStream.text(), /event: ended/);
    assert.equal((await p.providerSignIn(ada, app, 'idp', 'ada')).status, 200);
  });

  it('in Chromium: two people see each other’s entries live, cannot edit each other’s, and markup stays text', async () => {
    // ada and bob signed in again (bob signed out above), their sessions carried into two browsers.
    await p.providerSignIn(bob, app, 'idp', 'bob');
    const chromium = await launchChromium();
    try {
      const open = async (who: Browser) => {
        const context = await chromium.newContext();
        const jar = who.cookies.get(`${app}.apps.localhost`) ?? new Map<string, string>();
        await context.addCookies([...jar].map(([name, value]) => ({ name, value, domain: `${app}.apps.localhost`, path: '/' })));
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${origin()}/`);
        await page.waitForSelector('html[data-svc-ready]');
        return { page, errors };
      };
      const a = await open(ada);
      const b = await open(bob);
      const payload = '<img src=x onerror="window.__xss=1">';
      await a.page.fill('#sign input[name=name]', 'Ada');
      await a.page.fill('#sign textarea[name=message]', payload);
      await a.page.click('#sign button');
      // bob's page shows it without a reload (the live stream), as text.
      const bobsItem = b.page.locator('#entries li[data-svc-item]', { hasText: payload });
      await bobsItem.waitFor({ timeout: 5_000 });
      assert.equal(await b.page.locator('#entries img').count(), 0, 'no element made of the record');
      assert.equal(await b.page.evaluate('typeof window.__xss'), 'undefined', 'no script of it ran');
      assert.equal(await a.page.locator('#sign textarea').inputValue(), '', 'the form was reset');
      assert.equal(await bobsItem.getAttribute('data-svc-mine'), null, 'not bob’s: his page hides its edit form');
      assert.equal(await bobsItem.locator('form').isVisible(), false);
      await b.page.waitForFunction("document.querySelector('#count').textContent !== ''", undefined, { timeout: 5_000 });
      // bob cannot delete ada's entry: refused, shown, still there.
      await bobsItem.locator('button.delete').click();
      await b.page.waitForSelector('#entries .svc-problem');
      assert.match((await b.page.textContent('#entries .svc-problem')) ?? '', /\$author, \$owner/);
      assert.equal(await a.page.locator('#entries li[data-svc-item]', { hasText: payload }).count(), 1);
      // ada edits her own (the form was filled with it); both pages show the new text.
      const adasItem = a.page.locator('#entries li[data-svc-item]', { hasText: payload });
      assert.equal(await adasItem.getAttribute('data-svc-mine'), '');
      assert.equal(await adasItem.locator('textarea').inputValue(), payload, 'the update form shows the record');
      await adasItem.locator('textarea').fill('edited in the browser');
      await adasItem.locator('form button').click();
      await b.page.locator('#entries li[data-svc-item]', { hasText: 'edited in the browser' }).waitFor({ timeout: 5_000 });
      await b.page.screenshot({ path: path.join(repoRoot, 'docs', 'examples', 'html-data-guestbook.png'), fullPage: true });
      // The todo page: each sees only their own.
      await a.page.goto(`${origin()}/todos.html`);
      await a.page.waitForSelector('html[data-svc-ready]');
      await a.page.fill('#add input[name=title]', 'only for ada');
      await a.page.click('#add button');
      await a.page.locator('#todos li', { hasText: 'only for ada' }).waitFor({ timeout: 5_000 });
      await b.page.goto(`${origin()}/todos.html`);
      await b.page.waitForSelector('html[data-svc-ready]');
      assert.equal(await b.page.locator('#todos li', { hasText: 'only for ada' }).count(), 0);
      assert.deepEqual([...a.errors, ...b.errors], [], 'no script error on either page');
    } finally {
      await chromium.close();
    }
  });

  it('limits how fast one address changes an app’s data', async () => {
    // The write bucket of this address (30 at once, then 5 a second): the burst ends in 429 with Retry-After.
    const plus = binding('increment', 'counters');
    const statuses: number[] = [];
    let retryAfter: unknown;
    for (let i = 0; i < 40; i++) {
      const r = await call(anon, 'POST', plus.id);
      statuses.push(r.status);
      if (r.status === 429) retryAfter ??= r.headers['retry-after'];
    }
    const limited = statuses.indexOf(429);
    assert.ok(limited > 0 && statuses.slice(0, limited).every((s) => s === 200), statuses.join(','));
    assert.equal(retryAfter, '1');
    assert.equal((await call(anon, 'GET', binding('one', 'counters').id)).status, 200, 'reads have their own bucket');
  });

  it('counts the requests and the records’ size into usage, and tells the owner of a limit reached', async () => {
    await p.ia.data.usage.flush();
    // The API's clock stood still since it started: the period it answers now ends past the minutes counted.
    p.api.clock.now = new Date(Date.now() + 120_000);
    const usage = (await (await p.api.request('GET', '/api/account/usage')).json()) as { meters: Record<string, number> };
    assert.ok(usage.meters.data_requests! >= 40, `data_requests ${usage.meters.data_requests}`);
    assert.ok(usage.meters.data_bytes! > 0, `data_bytes ${usage.meters.data_bytes}`);
    // What a refused write tells the owner: the collection and the counts, never the contents.
    const served = p.ia.ingress.routes.app(app)!;
    p.ia.data.usage.limitReached(served, 'entries', 'entries holds 10000 records, its most: delete some first');
    p.ia.data.usage.limitReached(served, 'entries', 'again within the hour: not told twice');
    await eventually(
      'the data.limit_reached event',
      async () => {
        const r = await p.api.request('GET', '/api/events?kinds=data.limit_reached');
        const events = ((await r.json()) as { events: Array<{ data: Record<string, unknown> }> }).events;
        return events.length === 1 && events[0]!.data.collection === 'entries' && typeof events[0]!.data.records === 'number';
      },
      { timeoutMs: 5_000 },
    );
  });

  it('exports the app’s data as NDJSON, and deletes it with the app', async () => {
    const res = await p.api.request('GET', `/api/apps/${app}/data`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/x-ndjson/);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Rec & { collection: string });
    assert.deepEqual([...new Set(lines.map((l) => l.collection))].sort(), ['counters', 'entries', 'todos']);
    assert.ok(lines.some((l) => l.collection === 'counters' && l._name === 'main'));
    // The CLI prints the same lines.
    const cli = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [path.join(repoRoot, 'bin/svc.js'), 'data', 'export', app],
        { env: { ...process.env, SVC_API_URL: `${p.api.url}/api`, SVC_TOKEN: p.api.token } },
        (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
      ),
    );
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(
      cli.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Rec),
      lines,
    );
    // A fork starts with no data, unless asked: then with every record as it was (ids, authors, times).
    const exportOf = async (name: string) =>
      (await (await p.api.request('GET', `/api/apps/${name}/data`)).text()).trim().split('\n').filter(Boolean);
    const bare = await p.api.request('POST', `/api/apps/${app}/fork`, { body: { name: `${app}-bare` } });
    assert.equal(bare.status, 201, await bare.clone().text());
    assert.equal(((await bare.json()) as { data_records?: number }).data_records, undefined);
    assert.deepEqual(await exportOf(`${app}-bare`), []);
    const full = await p.api.request('POST', `/api/apps/${app}/fork`, { body: { name: `${app}-full`, data: true } });
    assert.equal(full.status, 201, await full.clone().text());
    assert.equal(((await full.json()) as { data_records?: number }).data_records, lines.length);
    assert.deepEqual(
      (await exportOf(`${app}-full`)).map((l) => JSON.parse(l) as Rec),
      lines,
    );
    assert.equal((await p.api.request('POST', `/api/apps/${app}/fork`, { body: { name: `${app}-x`, data: 'yes' } })).status, 400);
    for (const name of [`${app}-bare`, `${app}-full`]) assert.ok((await p.api.request('DELETE', `/api/apps/${name}`)).status < 300);
    const uid = (await p.api.deps.apps.find(p.api.account.namespace, app))!.id;
    assert.equal((await p.api.request('DELETE', `/api/apps/${app}`)).status < 300, true);
    await eventually('the data to go with the app', async () => (await p.ia.data.store.size(uid)).records === 0, { timeoutMs: 30_000 });
  });
});

interface OpenStream {
  status: number;
  text(): string;
  waitFor(pred: (text: string) => boolean, ms?: number): Promise<void>;
  ended: Promise<void>;
  close(): void;
}

/** A browser's EventSource, by hand: GET with the browser's cookies, the text as it comes. */
function openStream(port: number, host: string, b: Browser, path: string, lastEventId?: string): Promise<OpenStream> {
  const jar = b.cookies.get(host.replace(/:\d+$/, ''));
  const headers: Record<string, string> = { host, accept: 'text/event-stream' };
  if (jar?.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  if (lastEventId) headers['last-event-id'] = lastEventId;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res: IncomingMessage) => {
      let text = '';
      const waiters: Array<() => void> = [];
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
        for (const w of waiters.splice(0)) w();
      });
      const ended = new Promise<void>((r) => res.on('close', () => r()));
      resolve({
        status: res.statusCode ?? 0,
        text: () => text,
        ended,
        close: () => req.destroy(),
        waitFor: async (pred, ms = 5_000) => {
          const deadline = Date.now() + ms;
          while (!pred(text)) {
            if (Date.now() > deadline) throw new Error(`not seen in ${ms} ms; the stream says:\n${text}`);
            await new Promise<void>((r) => {
              waiters.push(r);
              setTimeout(r, 100);
            });
          }
        },
      });
    });
    req.on('error', reject);
    req.end();
  });
}
