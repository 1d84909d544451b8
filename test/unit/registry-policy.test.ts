// The registry policy of tenants' images (lib/images/registry-policy.ts, issue 30 finding 6): a
// table of spellings parsed as containerd parses them, each judged with the rule it breaks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  judgeImage,
  parseImageReference,
  refusedImage,
  tenantImages,
  type RegistryPolicyConfig,
} from '../../lib/images/registry-policy.js';
import { loadConfig } from '../../lib/config.js';
import { machinePod, plan, specRevision } from '../../controllers/app/desired.js';
import type { App } from '../../lib/resources/index.js';

const platform: RegistryPolicyConfig = { allowed: undefined, platformRegistry: '127.0.0.1:5000' };
const sha = `sha256:${'a'.repeat(64)}`;

describe('parseImageReference', () => {
  const cases: Array<[string, string, string, string | undefined]> = [
    ['nginx', 'docker.io', 'library/nginx', undefined],
    ['nginx:1.27', 'docker.io', 'library/nginx', '1.27'],
    ['bitnami/redis:7', 'docker.io', 'bitnami/redis', '7'],
    ['docker.io/nginx', 'docker.io', 'library/nginx', undefined],
    ['index.docker.io/library/nginx', 'docker.io', 'library/nginx', undefined],
    ['Docker.IO/x', 'docker.io', 'library/x', undefined],
    ['ghcr.io/a/b/c:v1', 'ghcr.io', 'a/b/c', 'v1'],
    ['127.0.0.1:5000/busybox:abc', '127.0.0.1:5000', 'busybox', 'abc'],
    ['[::1]:5000/x', '[::1]:5000', 'x', undefined],
    ['localhost/x', 'localhost', 'x', undefined],
    // Uppercase first component: a registry, as docker's splitDockerDomain decides.
    ['LOCALHOST/x', 'localhost', 'x', undefined],
    ['registry.example.com./x', 'registry.example.com', 'x', undefined],
    // No slash: a Docker Hub name whatever it looks like (127.0.0.1 with tag 8082).
    ['127.0.0.1:8082', 'docker.io', 'library/127.0.0.1', '8082'],
    // A name without . or : is a Docker Hub user, not a host.
    ['registry/x', 'docker.io', 'registry/x', undefined],
  ];
  for (const [ref, registry, repository, tag] of cases) {
    it(`${ref} → ${registry} ${repository}`, () => {
      const r = parseImageReference(ref);
      assert.deepEqual([r.registry, r.repository, r.tag], [registry, repository, tag]);
    });
  }
  it('refuses a digest alone, which a node resolves as the ID of any image it has cached', () => {
    for (const bad of [sha, sha.toUpperCase().replace('SHA256', 'sha256'), `sha512:${'ab'.repeat(64)}`]) {
      assert.throws(() => parseImageReference(bad), /a digest alone names an image ID/, bad);
    }
    assert.equal(parseImageReference(`library/busybox@${sha}`).repository, 'library/busybox');
  });
  it('keeps a digest, and refuses an @ that introduces anything else', () => {
    assert.equal(parseImageReference(`ghcr.io/a/b@${sha}`).digest, sha);
    assert.equal(parseImageReference(`ghcr.io/a/b:v1@${sha}`).tag, 'v1');
    for (const bad of [
      'a@b/x',
      'evil.com@127.0.0.1:8082/x:latest',
      'user:pw@ghcr.io/x',
      'x@sha256:short',
      '',
      'UPPER/Case',
      'a b',
      'x/',
      '/x',
      'ghcr.io/a//b',
      'ghcr.io:99999/x',
      'ghcr.io/x:bad/tag',
    ]) {
      assert.throws(() => parseImageReference(bad), /is not an image reference/, bad);
    }
  });
});

describe('judgeImage', () => {
  // Every one of these reached a host-local or internal address through containerd before.
  const refused: Array<[string, string]> = [
    ['127.0.0.1:8082/rt/x:latest', 'loopback'],
    ['127.0.0.1:10250/x', 'loopback'],
    ['127.1:5001/x', 'loopback'],
    ['0x7f.1:8082/x', 'loopback'],
    ['0177.0.0.1:8082/x', 'loopback'],
    ['2130706433:8082/x', 'loopback'],
    ['0x7f000001:8082/x', 'loopback'],
    ['127.000.000.001:8082/x', 'loopback'],
    ['[::1]:5000/x', 'loopback'],
    ['[0:0:0:0:0:0:0:1]:5000/x', 'loopback'],
    ['[::ffff:127.0.0.1]:8082/x', 'loopback'],
    ['[::ffff:7f00:1]:8082/x', 'loopback'],
    ['[::127.0.0.1]:8082/x', 'loopback'],
    ['[64:ff9b::a9fe:a9fe]/x', 'link-local'],
    ['localhost/x', 'local-name'],
    ['localhost:8082/x', 'local-name'],
    ['LOCALHOST:8082/x', 'local-name'],
    ['LocalHost./x', 'local-name'],
    ['localhost.:5000/x', 'local-name'],
    ['api.localhost:8080/x', 'local-name'],
    ['169.254.169.254/latest', 'link-local'],
    ['169.254.169.254:80/x', 'link-local'],
    ['[fe80::1]:5000/x', 'link-local'],
    ['metadata.google.internal/x', 'local-name'],
    ['Metadata.Google.Internal./x', 'local-name'],
    ['registry.svc.cluster.local/x', 'local-name'],
    ['router.home.arpa/x', 'local-name'],
    ['myregistry:5000/x', 'local-name'],
    ['10.0.0.1/x', 'private'],
    ['10.96.0.1:443/x', 'private'],
    ['172.16.0.10:5000/x', 'private'],
    ['192.168.1.1/x', 'private'],
    ['100.64.0.1/x', 'private'],
    ['192.0.2.2:8079/x', 'non-public'],
    ['[fd00::1]:5000/x', 'unique-local'],
    ['[fc00::5]/x', 'unique-local'],
    ['0.0.0.0:8082/x', 'unspecified'],
    ['0:8082/x', 'unspecified'],
    ['[::]:8082/x', 'unspecified'],
    ['224.0.0.1/x', 'non-public'],
    ['999.1.1.1/x', 'non-public'],
    ['a@b/x', 'invalid-reference'],
    ['evil.example@127.0.0.1:8082/x:latest', 'invalid-reference'],
  ];
  for (const [ref, rule] of refused) {
    it(`refuses ${ref} (${rule})`, () => {
      const v = judgeImage(ref, platform);
      assert.equal(v.ok, false);
      if (v.ok) return;
      assert.equal(v.rule, rule);
      assert.ok(v.message.startsWith(`image ${ref}: `), v.message);
      if (rule !== 'invalid-reference')
        assert.match(v.message, /; images come from public registries or the platform's own \(SVC_IMAGE_REGISTRIES\)$/);
    });
  }
  it('names the rule in words', () => {
    const v = judgeImage('127.0.0.1:8082/rt/x:latest', platform);
    assert.equal(
      !v.ok && v.message,
      "image 127.0.0.1:8082/rt/x:latest: registry 127.0.0.1:8082 is a loopback address; images come from public registries or the platform's own (SVC_IMAGE_REGISTRIES)",
    );
    assert.match(
      (judgeImage('169.254.169.254/x', platform) as { message: string }).message,
      /registry 169\.254\.169\.254 is a link-local address/,
    );
    assert.match((judgeImage('10.0.0.1/x', platform) as { message: string }).message, /registry 10\.0\.0\.1 is a private address/);
  });

  for (const ref of [
    'nginx',
    'nginx:1.27',
    'bitnami/redis:7',
    'ghcr.io/a/b:v1',
    `quay.io/x/y@${sha}`,
    'registry.invalid/gone:1',
    'public.ecr.aws/x/y',
    '8.8.8.8/x',
    '[2606:4700::1111]/x',
    '127.0.0.1:5000/busybox:abc',
    '127.0.0.1:8082',
  ]) {
    it(`allows ${ref}`, () => assert.equal(judgeImage(ref, platform).ok, true));
  }

  it("allows the platform's own registry only as configured: not another port or spelling of it", () => {
    assert.equal(judgeImage('127.0.0.1:5000/builds/acct/app:b1', platform).ok, true);
    for (const other of ['127.0.0.1:5001/x', 'localhost:5000/x', '127.1:5000/x', '[::1]:5000/x'])
      assert.equal(judgeImage(other, platform).ok, false, other);
    // Without one configured, the local registry is loopback like any other.
    assert.equal(judgeImage('127.0.0.1:5000/x', { allowed: undefined, platformRegistry: undefined }).ok, false);
    // SVC_BUILD_REGISTRY may name a path under the registry.
    assert.equal(
      judgeImage('127.0.0.1:5000/x', {
        allowed: undefined,
        platformRegistry: loadConfig({ SVC_BUILD_REGISTRY: '127.0.0.1:5000/builds' }, { exists: () => false }).images.platformRegistry,
      }).ok,
      true,
    );
  });

  it('holds to an allow-list: exact hosts, wildcards of public names, * for any public registry', () => {
    const list: RegistryPolicyConfig = {
      allowed: ['ghcr.io', '*.example.com', 'docker.io', '10.1.2.3:5000'],
      platformRegistry: '127.0.0.1:5000',
    };
    for (const ok of [
      'ghcr.io/a/b',
      'ghcr.io:443/a',
      'r.example.com/x',
      'a.b.example.com/x',
      'nginx',
      'index.docker.io/library/nginx',
      '10.1.2.3:5000/x',
      '127.0.0.1:5000/x',
    ])
      assert.equal(judgeImage(ok, list).ok, true, ok);
    for (const [bad, rule] of [
      ['quay.io/x', 'not-allowed'],
      ['example.com/x', 'not-allowed'],
      ['r.example.com:8443/x', 'not-allowed'],
      ['ghcr.io:5000/x', 'not-allowed'],
      ['evilexample.com/x', 'not-allowed'],
      ['10.1.2.3:5001/x', 'private'],
      ['10.1.2.3/x', 'private'],
      ['127.0.0.1:8082/x', 'loopback'],
    ] as const) {
      const v = judgeImage(bad, list);
      assert.equal(v.ok ? 'ok' : v.rule, rule, bad);
    }
    assert.match(
      (judgeImage('quay.io/x', list) as { message: string }).message,
      /^image quay\.io\/x: registry quay\.io is not in the allowed registries \(ghcr\.io, \*\.example\.com, docker\.io, 10\.1\.2\.3:5000\)/,
    );
    // A wildcard never matches an address or a local name.
    assert.equal(judgeImage('127.0.0.1/x', { allowed: ['*'], platformRegistry: undefined }).ok, false);
    assert.equal(judgeImage('x.internal/x', { allowed: ['*.internal'], platformRegistry: undefined }).ok, false);
  });

  it('judges every image of an App spec, services included, and none of a runtime app', () => {
    const spec = { kind: 'container', image: 'nginx', services: [{ image: 'redis' }, { image: '127.0.0.1:8082/x' }] };
    assert.deepEqual(tenantImages(spec), ['nginx', 'redis', '127.0.0.1:8082/x']);
    assert.match(
      refusedImage(tenantImages(spec), platform) ?? '',
      /^image 127\.0\.0\.1:8082\/x: registry 127\.0\.0\.1:8082 is a loopback address/,
    );
    assert.deepEqual(tenantImages({ kind: 'static', image: '127.0.0.1:8082/x' }), []);
  });
});

describe('SVC_IMAGE_REGISTRIES', () => {
  it('is a comma-separated list, empty meaning any public registry', () => {
    const none = { exists: () => false };
    assert.deepEqual(
      loadConfig({ SVC_IMAGE_REGISTRIES: 'ghcr.io, *.example.com,registry.local:5000,[fd00::1]:5000,*' }, none).images.allowed,
      ['ghcr.io', '*.example.com', 'registry.local:5000', '[fd00::1]:5000', '*'],
    );
    assert.equal(loadConfig({ SVC_IMAGE_REGISTRIES: '' }, none).images.allowed, undefined);
    assert.equal(loadConfig({}, none).images.allowed, undefined);
    for (const bad of ['ghcr.io/path', 'a,,b', 'http://ghcr.io', '*example.com'])
      assert.throws(() => loadConfig({ SVC_IMAGE_REGISTRIES: bad }, none), /SVC_IMAGE_REGISTRIES: must be comma-separated registries/, bad);
  });
});

describe('the App controller and a refused image (an App applied with kubectl)', () => {
  const settings = {
    site: { appsDomain: 'apps.localhost', appsUrlSuffix: ':8081', secure: false },
    runtimeImage: 'svc/runtime:latest',
    artifactBaseUrl: 'http://10.244.0.1:8080/artifacts',
    rolloutDeadlineMs: 60_000,
    assertionIssuer: 'http://apps.localhost:8081/_svc/auth',
    jwksUrl: 'http://10.244.0.1:8080/_svc/auth/jwks.json',
    images: platform,
  };
  const now = new Date('2026-01-01T00:00:00Z');
  const app = (spec: Partial<App['spec']>, status?: App['status']): App => ({
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'shop', namespace: 'ns', uid: 'u1', generation: 2 },
    spec: { kind: 'container', image: 'nginx', port: 8080, machines: 1, ...spec },
    ...(status ? { status } : {}),
  });

  it('makes no machine, fails the rollout and says why in Ready', () => {
    for (const spec of [
      { image: '127.0.0.1:8082/rt/x:latest' },
      { service: 'web', services: [{ name: 'cache', image: '169.254.169.254/x' }] },
    ]) {
      const p = plan(app(spec), [], settings, now);
      assert.deepEqual(p.create, [], 'no machine');
      assert.equal(p.ready.ok, false);
      assert.equal(p.ready.reason, 'ImageRefused');
      assert.match(
        p.ready.message,
        /^image (127\.0\.0\.1:8082\/rt\/x:latest: registry 127\.0\.0\.1:8082 is a loopback address|169\.254\.169\.254\/x: registry 169\.254\.169\.254 is a link-local address)/,
      );
      assert.equal(p.status.rollout?.state, 'Failed');
      assert.equal(p.conditions.find((c) => c.type === 'Progressing')?.reason, 'RolloutFailed');
    }
    // The same App with an allowed image gets its machine.
    assert.equal(plan(app({}), [], settings, now).create.length, 1);
  });

  it('deletes a machine made with the refused image, and keeps the last live revision serving', () => {
    const good = app({});
    const goodRevision = specRevision(good, settings);
    const live = { revision: goodRevision, since: now.toISOString(), spec: { kind: 'container', image: 'nginx', port: 8080 } };
    const bad = app({ image: '10.0.0.1/x' }, { live });
    const p = plan(bad, [machinePod(bad, 0, settings)], settings, now);
    assert.equal(p.delete.length, 1, 'the refused machine goes');
    assert.deepEqual(
      p.create.map((x) => x.spec?.containers[0]?.image),
      ['nginx'],
      'the live revision is what runs',
    );
    assert.match(
      p.conditions.find((c) => c.type === 'Progressing')?.message ?? '',
      /registry 10\.0\.0\.1 is a private address.*the last live revision keeps serving/,
    );
  });
});
