// createApiClient (lib/client) against a tiny node:http server: the bearer token sent, typed bodies
// parsed, the API's {error} answers and an unreachable API turned into errors that say what happened.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApiError, ApiUnreachableError, body, createApiClient } from '../../lib/client/index.js';

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

const domain = {
  name: '*.shop.example',
  unicode_name: '*.shop.example',
  app: 'web',
  wildcard: true,
  apex: false,
  declared: false,
  status: 'pending',
  reason: 'publish TXT _svc-challenge.shop.example',
  records: [{ purpose: 'ownership', type: 'TXT', name: '_svc-challenge.shop.example', value: 'svc-verify=1', observed: null, ok: null }],
  certificate: null,
  created_at: '2026-11-28T00:00:00.000Z',
  checked_at: null,
  verified_at: null,
  next_check_at: null,
};

describe('createApiClient', () => {
  const seen: Seen[] = [];
  let baseUrl = '';
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        body: text,
      });
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      if (req.url === '/api/apps/web/domains' && req.method === 'GET') return json(200, { domains: [domain] });
      if (req.url === '/api/apps/web/domains' && req.method === 'POST') return json(201, { domain });
      if (req.url === '/api/apps/web/domains/%2A.shop.example' && req.method === 'DELETE') return res.writeHead(204).end();
      if (req.url === '/api/apps/locked/domains') return json(403, { error: 'token lacks action "write"' }, { 'x-request-id': 'req-403' });
      if (req.url === '/api/apps/gone/domains') return json(401, { error: 'invalid token: revoked' });
      res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>');
    });
  });

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  });
  after(() => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))));

  it('sends the bearer token and parses the typed body', async () => {
    const api = createApiClient({ baseUrl, token: 'svc_test_1' });
    const { domains } = await body(api.GET('/apps/{appID}/domains', { params: { path: { appID: 'web' } } }));
    assert.equal(domains.length, 1);
    const [d] = domains;
    // Typed by the document: status is the enum, records' ok a boolean or null.
    const status: 'pending' | 'verified' | 'misconfigured' | 'failed' = d!.status;
    assert.equal(status, 'pending');
    assert.equal(d!.records[0]!.ok, null);
    const last = seen.at(-1)!;
    assert.equal(last.authorization, 'Bearer svc_test_1');
    assert.equal(last.method, 'GET');
    assert.equal(last.contentType, undefined, 'no body, no Content-Type');
  });

  it('sends a JSON body, and a wildcard domain in the path as %2A', async () => {
    const api = createApiClient({ baseUrl: `${baseUrl}/`, token: 'svc_test_2' });
    const created = await body(api.POST('/apps/{appID}/domains', { params: { path: { appID: 'web' } }, body: { name: '*.shop.example' } }));
    assert.equal(created.domain.wildcard, true);
    assert.deepEqual(JSON.parse(seen.at(-1)!.body), { name: '*.shop.example' });
    assert.equal(seen.at(-1)!.contentType, 'application/json');
    const removed = await api.DELETE('/apps/{appID}/domains/{domain}', { params: { path: { appID: 'web', domain: '*.shop.example' } } });
    assert.equal(removed.response.status, 204);
    assert.equal(seen.at(-1)!.url, '/api/apps/web/domains/%2A.shop.example');
  });

  it("turns a 403 into an ApiError with the API's message and request id", async () => {
    const api = createApiClient({ baseUrl, token: 'svc_test_3' });
    await assert.rejects(
      api.POST('/apps/{appID}/domains', { params: { path: { appID: 'locked' } }, body: { name: 'a.example' } }),
      (err: unknown) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.status, 403);
        assert.equal(err.apiMessage, 'token lacks action "write"');
        assert.equal(err.requestId, 'req-403');
        // The words the CLI has always printed.
        assert.equal(err.message, '403 token lacks action "write"');
        return true;
      },
    );
  });

  it('keeps the words of a 401, and shows a body that is not the API’s as it came', async () => {
    const api = createApiClient({ baseUrl, token: 'svc_revoked' });
    await assert.rejects(api.GET('/apps/{appID}/domains', { params: { path: { appID: 'gone' } } }), {
      name: 'ApiError',
      message: '401 invalid token: revoked',
    });
    await assert.rejects(api.GET('/apps/{appID}/domains', { params: { path: { appID: 'other' } } }), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 502);
      assert.equal(err.message, '502 <h1>Bad gateway</h1>');
      assert.equal(err.requestId, undefined);
      return true;
    });
  });

  it('says in words when the API cannot be reached', async () => {
    // A port that was just free: nothing listens there.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const api = createApiClient({ baseUrl: `http://127.0.0.1:${port}/api`, token: 'svc_test_4' });
    await assert.rejects(api.GET('/apps/{appID}/domains', { params: { path: { appID: 'web' } } }), (err: unknown) => {
      assert.ok(err instanceof ApiUnreachableError);
      assert.equal(err.message, `cannot reach the API at http://127.0.0.1:${port}/api: connect ECONNREFUSED 127.0.0.1:${port}`);
      assert.doesNotMatch(err.message, /\n\s+at /, 'no stack in the words');
      return true;
    });
  });

  it('uses the fetch it is given', async () => {
    const urls: string[] = [];
    const api = createApiClient({
      baseUrl: 'http://api.invalid/api',
      token: 'svc_test_5',
      fetch: (request) => {
        urls.push(`${request.method} ${request.url} ${request.headers.get('authorization')}`);
        return Promise.resolve(Response.json({ domains: [] }));
      },
    });
    assert.deepEqual(await body(api.GET('/apps/{appID}/domains', { params: { path: { appID: 'web' } } })), { domains: [] });
    assert.deepEqual(urls, ['GET http://api.invalid/api/apps/web/domains Bearer svc_test_5']);
  });
});
