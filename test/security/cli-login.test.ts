// Attacks on `svc login`'s device flow (api/operations/cli-login.ts, docs/security.md) on the real
// API and PostgreSQL:
// - a token (even one with admin, even one put in the console's cookie) cannot approve a login, look
//   one up, or deny one: only a console session decides, so no token can mint a longer-lived or
//   broader one for itself through a login;
// - the device code alone collects the token, once, even with two polls racing; a guessed or
//   malformed device code gets nothing; polling faster than the interval is slowed down;
// - a denied login gives nothing; an approval restricted to read gives a token that cannot write;
// - a made-up user code is 404, a malformed one never reaches the database as a path;
// - every approval is recorded with the approving session and mailed to the owner (a stolen console
//   session minting itself a CLI token shows); a full token quota is said at approval, nothing
//   approved; polls are limited per address.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { attenuate } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';

describe('security: svc login (device flow)', () => {
  let api: TestApi;
  let session: string;

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    api.request('POST', path, { token: null, body, headers });
  /** The console's way in: the session cookie, its header and the API's own Origin. */
  const asConsole = () => ({ cookie: `svc-console=${session}`, 'x-svc-console': '1', origin: api.url });
  const start = async () => {
    const res = await post('/api/cli/logins', { name: 'laptop (svc CLI)' });
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()) as { device_code: string; user_code: string; verification_url: string; interval: number };
  };
  const approve = (userCode: string, body: unknown = {}, headers = asConsole()) =>
    api.request('POST', `/api/cli/logins/${userCode}/approve`, { token: null, body, headers });
  const poll = (deviceCode: string) => post('/api/cli/logins/token', { device_code: deviceCode });

  before(async () => {
    api = await startTestApi();
    session = (await api.deps.tokens.issue(api.account.id, { name: 'console', expiresAt: new Date(Date.now() + 3600e3) })).token;
  });
  after(async () => {
    await api?.close();
  });

  it('no bearer token can look up, approve or deny a login: only a console session decides', async () => {
    const { user_code, device_code } = await start();
    for (const [method, path] of [
      ['GET', `/api/cli/logins/${user_code}`],
      ['POST', `/api/cli/logins/${user_code}/approve`],
      ['POST', `/api/cli/logins/${user_code}/deny`],
    ] as const) {
      const res = await api.request(method, path, method === 'POST' ? { body: {} } : {});
      assert.equal(res.status, 403, `${method} ${path} with the account's admin token`);
    }
    // Nor the console's cookie without its CSRF defences (a page of another origin).
    assert.equal((await approve(user_code, {}, { ...asConsole(), origin: 'http://evil.example' })).status, 403);
    // Nor a narrowed or derived token put in the console's cookie by hand: it would mint itself a
    // token outliving it, with every action.
    const narrowed = (
      (await (
        await api.request('POST', '/api/account/tokens', { body: { name: 'console', actions: ['admin'], expires_in: '1h' } })
      ).json()) as {
        token: string;
      }
    ).token;
    const planted = { cookie: `svc-console=${narrowed}`, 'x-svc-console': '1', origin: api.url };
    assert.equal((await approve(user_code, {}, planted)).status, 403);
    assert.equal((await api.request('GET', `/api/cli/logins/${user_code}`, { token: null, headers: planted })).status, 403);
    // A token made from another with no restriction but a shorter life: derived, so refused too.
    const derived = ((await (await api.request('POST', '/api/account/tokens', { body: { expires_in: '1h' } })).json()) as { token: string })
      .token;
    assert.equal((await approve(user_code, {}, { ...planted, cookie: `svc-console=${derived}` })).status, 403);
    // Nor the console's own session narrowed offline (only a later expiry added): not the token sign-in minted.
    const shorter = attenuate(session, [{ kind: 'expires', at: new Date(Date.now() + 600e3) }]);
    assert.equal((await approve(user_code, {}, { ...planted, cookie: `svc-console=${shorter}` })).status, 403);
    assert.equal((await poll(device_code)).status, 202, 'still pending');
  });

  it('the device code collects the token once, even with two polls racing; a guessed code gets nothing', async () => {
    const { user_code, device_code } = await start();
    const view = await api.request('GET', `/api/cli/logins/${user_code.toLowerCase().replace('-', '')}`, {
      token: null,
      headers: asConsole(),
    });
    assert.equal(view.status, 200);
    assert.equal(((await view.json()) as { state: string; requested_from: string }).state, 'pending');
    assert.equal((await approve(user_code)).status, 200);
    assert.equal((await approve(user_code)).status, 409, 'decided once');
    const answers = await Promise.all([poll(device_code), poll(device_code)]);
    const statuses = answers.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 410], 'one token for two racing polls');
    const won = answers.find((r) => r.status === 200)!;
    const { token, email } = (await won.json()) as { token: string; email: string };
    assert.equal(email, api.account.email);
    assert.equal((await api.request('GET', '/api/apps', { token })).status, 200, 'the token works');
    assert.equal((await poll(device_code)).status, 410, 'and is not handed out again');
    for (const guess of ['A'.repeat(43), 'short', '']) assert.equal((await poll(guess)).status, 410, guess);
  });

  it('polling faster than the interval is slowed down (429), and then goes on', async () => {
    const { device_code, interval } = await start();
    assert.equal((await poll(device_code)).status, 202);
    assert.equal((await poll(device_code)).status, 429);
    api.clock.advance(interval * 1000); // the API's clock, which the test holds
    assert.equal((await poll(device_code)).status, 202);
  });

  it('a denied login gives nothing; an approval for read gives a token that cannot write', async () => {
    const denied = await start();
    assert.equal(
      (await api.request('POST', `/api/cli/logins/${denied.user_code}/deny`, { token: null, headers: asConsole() })).status,
      200,
    );
    const res = await poll(denied.device_code);
    assert.equal(res.status, 410);
    assert.match(await res.text(), /denied/);
    assert.equal((await approve(denied.user_code)).status, 409, 'a denied login cannot be approved after');

    const readOnly = await start();
    assert.equal((await approve(readOnly.user_code, { actions: ['read'], expires_in_days: 1 })).status, 200);
    const { token, expires_at } = (await (await poll(readOnly.device_code)).json()) as { token: string; expires_at: string };
    assert.ok(new Date(expires_at).getTime() < Date.now() + 86_400_000 + 60_000, 'a day, as approved');
    assert.equal((await api.request('GET', '/api/apps', { token })).status, 200);
    assert.equal((await api.request('POST', '/api/apps', { token, body: { name: 'never-made' } })).status, 403);
  });

  it('an approval is recorded with the approving session and address, and mailed to the owner with what to do', async () => {
    const { user_code, device_code } = await start();
    const view = (await (await api.request('GET', `/api/cli/logins/${user_code}`, { token: null, headers: asConsole() })).json()) as {
      requested_from: string;
      your_address: string;
    };
    assert.equal(view.your_address, view.requested_from, 'the page can tell a login asked from elsewhere');
    assert.equal((await approve(user_code, { actions: ['read'] })).status, 200);
    const row = (await api.db('cli_logins').where({ user_code }).first()) as { approved_by: string; approved_from: string };
    assert.equal(row.approved_by, (await api.deps.tokens.authenticate(session)).nonce, "the console session's nonce");
    assert.equal(row.approved_from, view.your_address);
    const mail = (await api
      .db('mail_outbox')
      .where({ to: api.account.email, purpose: 'cli-login-approved' })
      .orderBy('id', 'desc')
      .first()) as { subject: string; text: string } | undefined;
    assert.ok(mail, 'the owner is told');
    assert.equal(mail.subject, 'A terminal signed in to your svc account');
    assert.match(mail.text, /Device \(as it named itself\): laptop \(svc CLI\)/);
    assert.match(mail.text, /The token may: read/);
    assert.match(mail.text, new RegExp(`revoke the token named "laptop \\(svc CLI\\)" at ${api.url}/console/tokens`));
    assert.equal((await poll(device_code)).status, 200);
  });

  it('with the token quota full, the approval is refused in the console and nothing is approved', async () => {
    // Its own API and account: the owner's token and the console session fill a quota of 2.
    const full = await startTestApi({ env: { SVC_ACCOUNT_MAX_TOKENS: '2' } });
    try {
      const fullSession = (await full.deps.tokens.issue(full.account.id, { name: 'console', expiresAt: new Date(Date.now() + 3600e3) }))
        .token;
      const started = (await (await full.request('POST', '/api/cli/logins', { token: null, body: { name: 'laptop' } })).json()) as {
        user_code: string;
        device_code: string;
      };
      const headers = { cookie: `svc-console=${fullSession}`, 'x-svc-console': '1', origin: full.url };
      const res = await full.request('POST', `/api/cli/logins/${started.user_code}/approve`, { token: null, body: {}, headers });
      assert.ok(res.status >= 400 && res.status < 500, `${res.status}`);
      assert.match(await res.text(), /live tokens/);
      const view = (await (await full.request('GET', `/api/cli/logins/${started.user_code}`, { token: null, headers })).json()) as {
        state: string;
      };
      assert.equal(view.state, 'pending', 'nothing approved');
      assert.equal((await full.db('mail_outbox').where({ to: full.account.email, purpose: 'cli-login-approved' })).length, 0, 'no notice');
    } finally {
      await full.close();
    }
  });

  it('polls are limited per address: a burst of 30, then 429', async () => {
    const statuses: number[] = [];
    // Up to the first refusal, read at once: the bucket gains a poll a second, so a poll made after
    // the loop on a loaded machine may find one refilled (it did, 410 instead of 429).
    let refused: Response | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const res = await poll(`svc_not-a-device-code-${i}`);
      statuses.push(res.status);
      if (res.status === 429) refused = res;
      else await res.text();
    }
    assert.ok(refused, statuses.join(' '));
    // The file's earlier polls took some of the burst: the first ones here still pass.
    assert.ok(
      statuses.slice(0, 5).every((st) => st === 410),
      statuses.join(' '),
    );
    assert.match(await refused.text(), /too many polls from this address/);
  });

  it('a made-up or malformed user code is 404; bad bodies are 400', async () => {
    for (const code of ['BCDF-GHJK', 'not-a-code', '%2e%2e%2f']) {
      assert.equal((await api.request('GET', `/api/cli/logins/${code}`, { token: null, headers: asConsole() })).status, 404, code);
    }
    assert.equal((await post('/api/cli/logins', { name: '' })).status, 400);
    assert.equal((await post('/api/cli/logins', { name: 'x', extra: 1 })).status, 400);
    // A name with a line break would write lines of its own into the owner's notice mail.
    for (const name of ['laptop\nThis was you: nothing to do', 'laptop\r\nSubject: x', 'lap\u001b[2Jtop'])
      assert.equal((await post('/api/cli/logins', { name })).status, 400, JSON.stringify(name));
    const { user_code } = await start();
    assert.equal((await approve(user_code, { actions: ['root'] })).status, 400);
    assert.equal((await approve(user_code, { expires_in_days: 367 })).status, 400);
  });
});
