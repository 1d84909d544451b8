// Attack: a machine (tenant code in a pod) reaching past the API's machine listener, the one port of
// the platform the nodes' firewall lets pods reach. It serves artifacts and the identity keys and
// nothing else: the API's routes, with or without a token, and any path spelled to reach them, are
// refused with a 4XX. Real API on the test database.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApi, type TestApi } from '../support/api.js';
import { rawRequest } from '../support/raw-request.js';

const raw = (base: string, target: string, method = 'GET', headers: Record<string, string> = {}) =>
  rawRequest(base, target, { method, headers });

describe('security: the machine listener serves machines only what they need', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => api?.close());

  it('publishes the identity keys and refuses other methods on them', async () => {
    const keys = await raw(api.machineUrl, '/_svc/auth/jwks.json');
    assert.equal(keys.status, 200);
    assert.ok(Array.isArray((JSON.parse(keys.body) as { keys: unknown[] }).keys));
    assert.equal((await raw(api.machineUrl, '/_svc/auth/jwks.json', 'POST')).status, 405);
  });

  it('refuses every API route, with the owner token too, and every spelling that aims at one', async () => {
    const auth = { authorization: `Bearer ${api.token}` };
    assert.equal((await raw(api.url, '/api/account', 'GET', auth)).status, 200, 'the API itself answers it');
    for (const target of [
      '/api/account',
      '/api/apps',
      '/api/openapi.json',
      '/api/health',
      '//api/account',
      '/API/account',
      '/artifacts/../api/account',
      '/artifacts/..%2fapi%2faccount',
      '/_svc/auth/jwks.json/../../api/account',
      '/_svc/auth/login',
      'http://127.0.0.1/api/account',
    ]) {
      for (const method of ['GET', 'POST', 'DELETE']) {
        const r = await raw(api.machineUrl, target, method, auth);
        assert.ok(r.status >= 400 && r.status < 500, `${method} ${target}: ${r.status} ${r.body.slice(0, 120)}`);
        assert.doesNotMatch(r.body, /"email"|"namespace"|"openapi"/, `${method} ${target} leaked an API answer`);
      }
    }
  });

  it('answers artifacts as the API does: no credential, no bytes', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    assert.equal((await raw(api.machineUrl, `/artifacts/${digest}`)).status, 401);
    assert.equal((await raw(api.machineUrl, '/artifacts/not-a-digest')).status, 400);
  });
});
