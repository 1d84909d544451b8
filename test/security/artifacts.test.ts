// Attack: downloading an app's whole tree (gated pages, handler source) from the API's artifact
// endpoint by its digest (issue 11 item 4). The digest opens nothing; only a credential the App
// controller minted for that digest, unexpired, does; bad paths are 4XX, never 500. Real API,
// PostgreSQL and apiserver; the deploy is served by real machines that fetch with their credential.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { checkArtifactCredential, mintArtifactCredential } from '../../lib/artifacts/credential.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';

describe('security: the artifact endpoint', () => {
  let api: TestApi;
  let digest: string;
  let key: Buffer;
  const hour = 3600_000;

  before(async () => {
    // Artifacts as files (the directory store; every other test API keeps them in a bucket).
    api = await startTestApi({ objectStore: false });
    key = api.deps.config.deploys.artifactKey!;
    assert.ok(key, 'the test platform has an artifact key (hack/dev.sh makes it)');
    assert.equal((await api.request('POST', '/api/apps', { body: { name: 'vault' } })).status, 201);
    const files = { 'index.html': '<p>public</p>', 'admin/index.html': '<meta name="svc-auth-owner" content="true"><p>SECRET</p>' };
    const res = await api.request('POST', '/api/apps/vault/deploy', { body: { files } });
    assert.equal(res.status, 202, await res.clone().text());
    digest = (await api.deps.apps.find(api.account.namespace, 'vault'))!.spec.source!.digest;
  });
  after(async () => api?.close());

  const download = (path: string, credential?: string, method = 'GET') =>
    fetch(`${api.url}${path}`, { method, headers: credential === undefined ? {} : { authorization: `Bearer ${credential}` } });

  it('the machines of a deploy fetch with their credential: the deploy goes live', async () => {
    await eventually(
      'the deploy to be live',
      async () => {
        const list = (await (await api.request('GET', '/api/apps/vault/deploys')).json()) as { deploys: Array<{ status: string }> };
        return list.deploys[0]?.status === 'live';
      },
      { timeoutMs: 60_000 },
    );
  });

  it('a valid credential for the digest downloads exactly those bytes, privately cacheable only', async () => {
    const res = await download(`/artifacts/${digest}`, mintArtifactCredential(key, digest, new Date(api.clock.now.getTime() + hour)));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('cache-control') ?? '', /^private/);
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, digest);
  });

  const other = `sha256:${'0'.repeat(64)}`;
  const refusals: Array<[string, () => string | undefined, number, RegExp]> = [
    ['no credential (the digest alone)', () => undefined, 401, /credential is required/],
    ['an empty bearer', () => '', 401, /credential is required/],
    ['a malformed credential', () => 'v1.abc.def', 401, /malformed/],
    ['the platform token format', () => 'svc_abcdef', 401, /malformed/],
    [
      'a credential for another digest',
      () => mintArtifactCredential(key, other, new Date(api.clock.now.getTime() + hour)),
      403,
      /does not open/,
    ],
    ['an expired credential', () => mintArtifactCredential(key, digest, new Date(api.clock.now.getTime() - 1000)), 403, /expired/],
    [
      'a credential made with another key',
      () => mintArtifactCredential(Buffer.alloc(32, 7), digest, new Date(api.clock.now.getTime() + hour)),
      403,
      /does not open/,
    ],
    [
      'a credential whose expiry was pushed back',
      () => {
        const [v, , m] = mintArtifactCredential(key, digest, new Date(api.clock.now.getTime() - 1000)).split('.');
        return `${v}.${Math.floor(api.clock.now.getTime() / 1000) + 86_400}.${m}`;
      },
      403,
      /does not open/,
    ],
  ];
  for (const [what, credential, status, message] of refusals) {
    it(`refuses ${what} with ${status}`, async () => {
      const res = await download(`/artifacts/${digest}`, credential());
      assert.equal(res.status, status);
      assert.match(((await res.json()) as { error: string }).error, message);
      assert.equal(res.headers.get('content-type')?.startsWith('application/json'), true);
    });
  }

  const badPaths: Array<[string, number]> = [
    ['/artifacts/%zz', 400],
    ['/artifacts/%', 400],
    ['/artifacts/sha256:%E0%A4%A', 400],
    ['/artifacts/..%2F..%2Fpackage.json', 400],
    // fetch resolves the dot segments first: the API sees /etc/passwd, which is no route.
    ['/artifacts/sha256:../../../etc/passwd', 404],
    [`/artifacts/SHA256:${'A'.repeat(64)}`, 400],
    [`/artifacts/sha256:${'a'.repeat(64)}/..`, 400],
    ['/artifacts/', 400],
  ];
  for (const [path, status] of badPaths) {
    it(`answers ${status} to the path ${path}, with a credential or without`, async () => {
      for (const credential of [undefined, mintArtifactCredential(key, digest, new Date(api.clock.now.getTime() + hour))]) {
        const res = await download(path, credential);
        assert.equal(res.status, status, `${path} ${credential ? 'with' : 'without'} a credential`);
        assert.ok(((await res.json()) as { error?: string }).error);
      }
    });
  }

  it('allows only GET and HEAD', async () => {
    const res = await download(
      `/artifacts/${digest}`,
      mintArtifactCredential(key, digest, new Date(api.clock.now.getTime() + hour)),
      'DELETE',
    );
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
  });

  it('credentials: constant-time check of the MAC, then the expiry; one digest only', () => {
    const now = api.clock.read();
    const c = mintArtifactCredential(key, digest, new Date(now.getTime() + 60_000));
    assert.deepEqual(checkArtifactCredential(key, digest, c, now), { ok: true });
    assert.equal(checkArtifactCredential(key, other, c, now).ok, false);
    assert.equal(checkArtifactCredential(key, digest, c, new Date(now.getTime() + 61_000)).ok, false);
    assert.equal(checkArtifactCredential(key, digest, `${c}x`, now).ok, false);
  });
});
