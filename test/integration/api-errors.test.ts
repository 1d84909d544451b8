// Every error class of the API answers {"error": ...} JSON with the right status, through the
// real middleware chain, against a real database.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '../../api/errors.js';
import { op } from '../../api/operation.js';
import { allOperations } from '../../api/server.js';
import { attenuate } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';

async function expectError(res: Response, status: number, message?: RegExp): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = JSON.parse(text) as { error: unknown };
  assert.equal(typeof body.error, 'string');
  assert.deepEqual(Object.keys(body), ['error']);
  if (message) assert.match(body.error as string, message);
  assert.ok(res.headers.get('x-request-id'), 'every answer carries a request id');
  return body.error as string;
}

describe('API errors', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({
      env: { SVC_API_BODY_LIMIT_BYTES: '2048' },
      operations: (s) => [
        ...allOperations(s),
        op({
          method: 'GET',
          path: '/test/boom',
          operationId: 'boom',
          tag: 'system',
          summary: 'fails',
          action: 'read',
          handler: async () => {
            throw new Error('secret internal detail at /srv/db password=hunter2');
          },
        }),
        op({
          method: 'GET',
          path: '/test/unavailable',
          operationId: 'unavailable',
          tag: 'system',
          summary: 'fails',
          action: 'read',
          handler: async () => {
            throw new ApiError('unavailable', 'database unavailable');
          },
        }),
      ],
    });
  });
  after(async () => {
    await api?.close();
  });

  it('400 for malformed JSON', async () => {
    await expectError(await api.request('POST', '/api/account/tokens', { body: '{"name": ' }), 400, /malformed JSON/);
  });

  it('400 for an invalid body, naming the field', async () => {
    await expectError(await api.request('POST', '/api/account/tokens', { body: { name: 'x'.repeat(101) } }), 400, /^invalid body: name: /);
    await expectError(await api.request('POST', '/api/account/tokens', { body: { actions: ['fly'] } }), 400, /actions\.0: /);
    await expectError(await api.request('POST', '/api/account/tokens', { body: { bogus: 1 } }), 400, /Unrecognized key: "bogus"/);
    await expectError(await api.request('POST', '/api/account/tokens', { body: '[1,2]' }), 400, /invalid body/);
    await expectError(await api.request('GET', '/api/account/events?limit=0'), 400, /^invalid query: limit: /);
  });

  it('401 without a token, with a distinct message for each bad token', async () => {
    const missing = await api.request('GET', '/api/account', { token: null });
    await expectError(missing, 401, /authentication required/);
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer/);
    await expectError(await api.request('GET', '/api/account', { token: 'svc_nope' }), 401, /^malformed token/);
    const tampered = api.token.slice(0, -6) + (api.token.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA');
    const msg = await expectError(await api.request('GET', '/api/account', { token: tampered }), 401);
    assert.match(msg, /malformed token|signature does not match/);
    const widened = attenuate(api.token, [{ kind: 'apps', apps: ['shop'] }]).replace(/.{8}$/, 'AAAAAAAA');
    await expectError(await api.request('GET', '/api/account', { token: widened }), 401, /malformed token|signature/);
  });

  it('403 naming the lacking action or app', async () => {
    const readOnly = attenuate(api.token, [{ kind: 'actions', actions: ['read'] }]);
    await expectError(await api.request('POST', '/api/account/tokens', { token: readOnly, body: {} }), 403, /^token lacks action "admin"$/);
    const shopOnly = attenuate(api.token, [{ kind: 'apps', apps: ['shop'] }]);
    await expectError(await api.request('GET', '/api/apps/blog', { token: shopOnly }), 403, /^token lacks app "blog"$/);
    await expectError(await api.request('GET', '/api/account/tokens', { token: shopOnly }), 403, /token lacks account-wide access/);
    // Allowed through to the operation (the app does not exist): the restriction holds.
    await expectError(await api.request('GET', '/api/apps/shop/deploys', { token: shopOnly }), 404, /^app shop not found$/);
  });

  it('404 for unknown routes and unknown resources', async () => {
    await expectError(await api.request('GET', '/api/nope'), 404, /no route GET \/api\/nope/);
    await expectError(await api.request('GET', '/elsewhere', { token: null }), 404);
    await expectError(await api.request('DELETE', '/api/account/webhooks/wh_missing'), 404, /webhook wh_missing not found/);
    await expectError(await api.request('DELETE', '/api/account/tokens/AAAAAAAAAAAAAAAAAAAAAAAA'), 404, /token .* not found/);
  });

  it('405 with Allow for a known route and another method', async () => {
    const res = await api.request('PUT', '/api/account/tokens');
    await expectError(res, 405, /method PUT not allowed/);
    assert.equal(res.headers.get('allow'), 'GET, POST');
  });

  it('409 on a conflict', async () => {
    const body = { url: 'https://hooks.example.com/a' };
    assert.equal((await api.request('POST', '/api/account/webhooks', { body })).status, 201);
    await expectError(await api.request('POST', '/api/account/webhooks', { body }), 409, /already/);
  });

  it('413 for a body over the limit, before reading it', async () => {
    await expectError(
      await api.request('POST', '/api/account/tokens', { body: { name: 'x'.repeat(4096) } }),
      413,
      /larger than 2048 bytes/,
    );
  });

  it('415 for a JSON write without Content-Type: application/json', async () => {
    await expectError(
      await api.request('POST', '/api/account/tokens', { body: '{}', headers: { 'content-type': 'text/plain' } }),
      415,
      /Content-Type: application\/json/,
    );
  });

  it('429 with Retry-After once the token is over its rate', async () => {
    const slow = await startTestApi({ env: { SVC_API_RATE_PER_SECOND: '0.5', SVC_API_RATE_BURST: '5' } });
    try {
      const limited = { token: slow.token };
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 8; i++) {
        const res = await slow.request('GET', '/api/account', { token: limited.token });
        statuses.push(res.status);
        if (res.status === 429) {
          retryAfter = res.headers.get('retry-after');
          await expectError(res, 429, /rate limit exceeded/);
        } else await res.body?.cancel();
      }
      assert.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200]);
      assert.ok(
        statuses.slice(5).every((s) => s === 429),
        statuses.join(','),
      );
      assert.match(retryAfter ?? '', /^[1-9]\d*$/);
      // A narrowed copy shares its root's budget.
      const copy = attenuate(limited.token, [{ kind: 'actions', actions: ['read'] }]);
      await expectError(await slow.request('GET', '/api/account', { token: copy }), 429);
      // Other tokens have their own budget.
      const other = await slow.deps.tokens.issue(slow.account.id, { name: 'other' });
      assert.equal((await slow.request('GET', '/api/account', { token: other.token })).status, 200);
    } finally {
      await slow.close();
    }
  });

  it('500 and 503 without internals, and the log line carries the request id', async () => {
    const res = await api.request('GET', '/api/test/boom');
    const message = await expectError(res, 500, /^internal error \(request id [\w-]+\)$/);
    assert.ok(!message.includes('hunter2'));
    const id = res.headers.get('x-request-id');
    assert.ok(api.logLines.some((l) => l.requestId === id && l.msg === 'Unhandled error'));
    await expectError(await api.request('GET', '/api/test/unavailable'), 503, /database unavailable/);
  });

  it('503 for the registrar’s operations on a platform without a registrar, after authentication', async () => {
    await expectError(
      await api.request('GET', '/api/domains'),
      503,
      /^domain registration is not set up on this platform \(SVC_REGISTRAR\)$/,
    );
    await expectError(await api.request('GET', '/api/domains', { token: null }), 401);
  });

  it('keeps an incoming sane request id, and never logs tokens or cookies', async () => {
    const res = await api.request('GET', '/api/account', { headers: { 'x-request-id': 'trace-123', cookie: 'svc_session=zzz' } });
    assert.equal(res.headers.get('x-request-id'), 'trace-123');
    await res.body?.cancel();
    const bad = await api.request('GET', '/api/account', { headers: { 'x-request-id': 'bad id "with" spaces' } });
    assert.match(bad.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    await bad.body?.cancel();
    const text = JSON.stringify(api.logLines);
    assert.ok(!text.includes(api.token.slice(4, 40)), 'token leaked into logs');
    assert.ok(!text.includes('zzz'), 'cookie leaked into logs');
    assert.ok(api.logLines.some((l) => l.requestId === 'trace-123' && l.status === 200));
  });
});
