// Attacks on the console's sign-in and session (docs/decisions/0031-console.md, docs/security.md) on
// the real API and PostgreSQL, with raw HTTP so that every header is the attacker's to choose:
// - a sign-in asked under a forged Host (and an Origin to match it) still mails a link to the API's
//   configured public origin, never to the attacker's host;
// - a mailed code opens one session only;
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

  /** Asks for a link for the account's address and returns the code the outbox holds for it. */
  const mailedCode = async (): Promise<{ link: string; code: string }> => {
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
    const deadline = Date.now() + 5_000;
    for (;;) {
      const row = await api
        .db('mail_outbox')
        .where('id', '>', before)
        .where({ purpose: 'console-sign-in' })
        .first<{ text: string }>('text');
      const link = row ? /https?:\/\/\S+\/console\/auth\?code=([A-Za-z0-9_-]+)/.exec(row.text) : null;
      if (link) return { link: link[0], code: link[1]! };
      if (Date.now() > deadline) throw new Error('no console sign-in mail was queued');
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  /** Redeems a code: the session cookie's value, or undefined when none was set. */
  const redeem = async (code: string): Promise<{ answer: Answer; cookie: string | undefined }> => {
    const answer = await raw('GET', `/console/auth?code=${code}`, { host: own() });
    const set = ([] as string[]).concat(answer.headers['set-cookie'] ?? []).find((c) => c.startsWith('svc-console='));
    return { answer, cookie: set ? set.slice('svc-console='.length).split(';')[0] : undefined };
  };

  before(async () => {
    api = await startTestApi({ env: { SVC_API_PUBLIC_URL: publicUrl } });
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
    const { code } = await mailedCode();
    const first = await redeem(code);
    assert.equal(first.answer.status, 303);
    assert.ok(first.cookie, 'a session cookie');
    const again = await redeem(code);
    assert.equal(again.answer.status, 303);
    assert.equal(again.cookie, undefined, 'no second session from one code');
    assert.match(String(again.answer.headers.location), /sign-in\?link=invalid/);
    // A code nobody was sent.
    assert.equal((await redeem('A'.repeat(43))).cookie, undefined);
  });

  it('the cookie does nothing without the console header, nor a write from another origin; no CORS preflight is granted', async () => {
    const { code } = await mailedCode();
    const { cookie } = await redeem(code);
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
    const { code } = await mailedCode();
    const { cookie } = await redeem(code);
    assert.ok(cookie);
    const headers = { host: own(), cookie: `svc-console=${cookie}`, 'x-svc-console': '1' };
    assert.equal((await raw('GET', '/api/apps', headers)).status, 200);
    assert.equal((await raw('POST', '/api/console/sign-out', { ...headers, origin: `http://${own()}` })).status, 204);
    assert.equal((await raw('GET', '/api/apps', headers)).status, 401);
  });
});
