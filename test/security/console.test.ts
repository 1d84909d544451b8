// Attacks on the console's sign-in and session (docs/decisions/0031-console.md, docs/security.md) on
// the real API and PostgreSQL, with raw HTTP so that every header is the attacker's to choose:
// - a sign-in asked under a forged Host (and an Origin to match it) still mails a link to the API's
//   configured public origin, never to the attacker's host;
// - a mailed code opens one session only; opening its link spends nothing; presented without the
//   asking browser's cookie it only names the account, and no other origin can present it;
// - a forged X-Forwarded-For does not escape the per-address limit;
// - the session cookie does nothing without the console's header, nor a write from another origin,
//   and the API answers no CORS preflight that would let a page send that header;
// - a cookie session's token revoked by sign-out is refused at once.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startTestApi, type TestApi } from '../support/api.js';
import { uniqueName } from '../support/kube.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const publicUrl = 'https://console.svc.test';

describe('security: the console sign-in and its session cookie', () => {
  let api: TestApi;
  let port: number;

  /** A request to the API with exactly these headers (Host included), as a script, not a browser, sends it. */
  const raw = (method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method, path, headers, setHost: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const own = () => `127.0.0.1:${port}`;

  /** Asks for a link for the account's address: the code the outbox holds for it, and the browser cookie the answer set. */
  const mailedCode = async (): Promise<{ link: string; code: string; browser: string }> => {
    const before = Number((await api.db('mail_outbox').max('id as id').first<{ id: string | null }>())?.id ?? 0);
    const body = JSON.stringify({ email: api.account.email });
    const answer = await raw(
      'POST',
      '/api/console/sign-in',
      {
        host: own(),
        origin: `http://${own()}`,
        'x-svc-console': '1',
        'content-type': 'application/json',
        'content-length': String(body.length),
      },
      body,
    );
    assert.equal(answer.status, 202, answer.body);
    const browser = cookieSet(answer, 'svc-console-sign-in');
    assert.ok(browser, 'the answer binds the asking browser');
    const deadline = Date.now() + 5_000;
    for (;;) {
      const row = await api
        .db('mail_outbox')
        .where('id', '>', before)
        .where({ purpose: 'console-sign-in' })
        .first<{ text: string }>('text');
      const link = row ? /https?:\/\/\S+\/console\/auth\?code=([A-Za-z0-9_-]+)/.exec(row.text) : null;
      if (link) return { link: link[0], code: link[1]!, browser };
      if (Date.now() > deadline) throw new Error('no console sign-in mail was queued');
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  /** The value a Set-Cookie of the answer gives cookie `name`, or undefined when it sets none. */
  const cookieSet = (answer: Answer, name: string): string | undefined => {
    const set = ([] as string[]).concat(answer.headers['set-cookie'] ?? []).find((c) => c.startsWith(`${name}=`));
    return set ? set.slice(name.length + 1).split(';')[0] || undefined : undefined;
  };

  /** Presents a code as the console page does (or with the headers given): the answer, and the session cookie it set. */
  const present = async (
    code: string,
    o: { browser?: string; confirm?: boolean; headers?: Record<string, string> } = {},
  ): Promise<{ answer: Answer; cookie: string | undefined }> => {
    const body = JSON.stringify({ code, confirm: o.confirm ?? false });
    const answer = await raw(
      'POST',
      '/api/console/auth',
      {
        host: own(),
        origin: `http://${own()}`,
        'x-svc-console': '1',
        'content-type': 'application/json',
        'content-length': String(body.length),
        ...(o.browser ? { cookie: `svc-console-sign-in=${o.browser}` } : {}),
        ...o.headers,
      },
      body,
    );
    return { answer, cookie: cookieSet(answer, 'svc-console') };
  };
  /** Signs in as the page of the asking browser does. */
  const redeem = async (code: string, browser: string) => present(code, { browser });

  before(async () => {
    api = await startTestApi({ env: { SVC_API_PUBLIC_URL: publicUrl, SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY: '20' } });
    port = Number(new URL(api.url).port);
  });
  after(async () => {
    await api?.close();
  });

  it('a sign-in asked under a forged Host mails a link to the configured public origin, not to the attacker', async () => {
    const before = Number((await api.db('mail_outbox').max('id as id').first<{ id: string | null }>())?.id ?? 0);
    const body = JSON.stringify({ email: api.account.email });
    // Host and Origin agree, as a script can make them: the CSRF checks pass, the link must not follow.
    const answer = await raw(
      'POST',
      '/api/console/sign-in',
      {
        host: 'evil.example',
        origin: 'http://evil.example',
        'x-svc-console': '1',
        'content-type': 'application/json',
        'content-length': String(body.length),
      },
      body,
    );
    assert.equal(answer.status, 202, answer.body);
    const deadline = Date.now() + 5_000;
    let text: string | undefined;
    while (!text && Date.now() < deadline) {
      text = (await api.db('mail_outbox').where('id', '>', before).where({ purpose: 'console-sign-in' }).first<{ text: string }>('text'))
        ?.text;
      if (!text) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(text, 'the mail was queued');
    assert.match(text, new RegExp(`${publicUrl.replace(/\./g, '\\.')}/console/auth\\?code=`));
    assert.doesNotMatch(text, /evil\.example/);
  });

  it('a mailed code opens one session; the second use sets no cookie', async () => {
    const { code, browser } = await mailedCode();
    const first = await redeem(code, browser);
    assert.equal(first.answer.status, 200, first.answer.body);
    assert.ok(first.cookie, 'a session cookie');
    const again = await redeem(code, browser);
    assert.equal(again.answer.status, 410);
    assert.equal(again.cookie, undefined, 'no second session from one code');
    // Nor by confirming.
    assert.equal((await present(code, { confirm: true })).cookie, undefined);
    // A code nobody was sent.
    assert.equal((await present('A'.repeat(43), { confirm: true })).answer.status, 410);
  });

  it('nothing spends a code but the console page: not another origin (login CSRF), not opening the link, not another browser unconfirmed', async () => {
    const { code, browser } = await mailedCode();
    const tries: Array<{ confirm: boolean; headers: Record<string, string> }> = [
      { confirm: true, headers: { 'x-svc-console': '' } },
      { confirm: true, headers: { origin: 'http://evil.example' } },
      { confirm: true, headers: { origin: 'null' } },
    ];
    for (const t of tries) {
      const { answer, cookie } = await present(code, t);
      assert.equal(answer.status, 403, answer.body);
      assert.equal(cookie, undefined);
    }
    // What a mail scanner does with a link: GET and HEAD it.
    for (const method of ['GET', 'HEAD']) {
      const opened = await raw(method, `/console/auth?code=${code}`, { host: own() });
      assert.equal(opened.status, 200);
      assert.equal(opened.headers['set-cookie'], undefined, `${method} sets no cookie`);
    }
    // Presented without the asking browser's cookie, or with another's: the account is named, nothing spent.
    for (const other of [undefined, 'B'.repeat(43)]) {
      const elsewhere = await present(code, other ? { browser: other } : {});
      assert.equal(elsewhere.answer.status, 200);
      assert.deepEqual(JSON.parse(elsewhere.answer.body), { status: 'confirm', email: api.account.email });
      assert.equal(elsewhere.cookie, undefined);
    }
    // The asking browser still signs in with it.
    assert.ok((await redeem(code, browser)).cookie);
  });

  it('the cookie does nothing without the console header, nor a write from another origin; no CORS preflight is granted', async () => {
    const { code, browser } = await mailedCode();
    const { cookie } = await redeem(code, browser);
    assert.ok(cookie);
    const name = uniqueName('csrf');
    const body = JSON.stringify({ name });
    const post = (headers: Record<string, string>) =>
      raw(
        'POST',
        '/api/apps',
        {
          host: own(),
          cookie: `svc-console=${cookie}`,
          'content-type': 'application/json',
          'content-length': String(body.length),
          ...headers,
        },
        body,
      );
    // A form or a no-cors fetch: no console header.
    assert.equal((await post({ origin: `http://${own()}` })).status, 403);
    // The header, from another origin (a page that got a preflight through, were one granted).
    assert.equal((await post({ 'x-svc-console': '1', origin: 'http://evil.example' })).status, 403);
    // No Origin at all on a write.
    assert.equal((await post({ 'x-svc-console': '1' })).status, 403);
    // A read needs the header too: a cross-site GET (an <img>, a link) carries the cookie, never the header.
    assert.equal((await raw('GET', '/api/apps', { host: own(), cookie: `svc-console=${cookie}` })).status, 403);
    const listed = await api.request('GET', '/api/apps');
    assert.ok(!JSON.stringify(await listed.json()).includes(name), 'nothing was created');
    // The preflight a page would need to send X-Svc-Console: no CORS grant of any kind.
    const preflight = await raw('OPTIONS', '/api/apps', {
      host: own(),
      origin: 'http://evil.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'x-svc-console, content-type',
    });
    for (const h of Object.keys(preflight.headers)) assert.ok(!h.startsWith('access-control-'), `${h} granted to another origin`);
    // The console's own, properly sent, works (the defences are not refusing everything).
    assert.equal((await post({ 'x-svc-console': '1', origin: `http://${own()}` })).status, 201);
  });

  it('sign-out revokes the cookie session: the same cookie is refused at once', async () => {
    const { code, browser } = await mailedCode();
    const { cookie } = await redeem(code, browser);
    assert.ok(cookie);
    const headers = { host: own(), cookie: `svc-console=${cookie}`, 'x-svc-console': '1' };
    assert.equal((await raw('GET', '/api/apps', headers)).status, 200);
    assert.equal((await raw('POST', '/api/console/sign-out', { ...headers, origin: `http://${own()}` })).status, 204);
    assert.equal((await raw('GET', '/api/apps', headers)).status, 401);
  });

  it('a forged X-Forwarded-For does not escape the per-address limit (no proxy is trusted unless configured)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const { answer } = await present('C'.repeat(43), { headers: { 'x-forwarded-for': `10.0.0.${i}` } });
      statuses.push(answer.status);
    }
    assert.ok(statuses.includes(429), `the limit held: ${statuses.join(' ')}`);
  });
});
