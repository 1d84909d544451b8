import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { components, ConfigError, envSchema, loadComponentConfig, loadConfig, parts, readsOf } from '../../lib/config.js';

const none = { exists: () => false };

describe('loadConfig', () => {
  it('fills defaults and freezes the result', () => {
    const config = loadConfig({}, none);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.stateDir, path.resolve('.svc'));
    assert.equal(config.databaseUrl, 'postgres://svc@127.0.0.1:55432/svc');
    assert.equal(config.kubeconfig, undefined);
    assert.ok(Object.isFrozen(config));
  });

  it('uses the local platform kubeconfig when it exists and KUBECONFIG is unset', () => {
    const config = loadConfig({ SVC_STATE_DIR: '/tmp/state' }, { exists: (f) => f === '/tmp/state/kubeconfig' });
    assert.equal(config.kubeconfig, '/tmp/state/kubeconfig');
    assert.equal(loadConfig({ KUBECONFIG: '/k' }, { exists: () => true }).kubeconfig, '/k');
  });

  it('names every invalid variable and the value it got', () => {
    assert.throws(
      () => loadConfig({ SVC_LOG_LEVEL: 'loud', SVC_DATABASE_URL: 'mysql://x' }, none),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.problems.length, 2);
        assert.match(err.message, /SVC_LOG_LEVEL: .*\(got "loud"\)/);
        assert.match(err.message, /SVC_DATABASE_URL: must be a postgres:\/\/ URL \(got "mysql:\/\/x"\)/);
        return true;
      },
    );
  });

  it('derives where machines see the platform, and refuses bad ports and addresses for it', () => {
    const c = loadConfig({}, none);
    assert.deepEqual(c.machineNetwork, {
      platformCidrs: ['10.244.0.1/32', '10.244.1.1/32'],
      platformNamespace: undefined,
      clusterDns: true,
      platformPorts: [{ port: 8079 }],
    });
    assert.equal(loadConfig({ SVC_MACHINE_CLUSTER_DNS: 'false' }, none).machineNetwork.clusterDns, false);
    assert.equal(c.deploys.artifactBaseUrl, 'http://10.244.0.1:8079/artifacts');
    assert.equal(c.api.host, '127.0.0.1', 'the API itself on loopback');
    assert.deepEqual(loadConfig({ SVC_MACHINE_PLATFORM_PORTS: '8079,18000-18099' }, none).machineNetwork.platformPorts, [
      { port: 8079 },
      { port: 18000, endPort: 18099 },
    ]);
    for (const bad of ['0', '70000', '9000-8000', '8079,', 'http', '8079-99999']) {
      assert.throws(() => loadConfig({ SVC_MACHINE_PLATFORM_PORTS: bad }, none), /SVC_MACHINE_PLATFORM_PORTS/, bad);
    }
    for (const bad of ['10.244.0.1', '10.244.0.1/32,', 'everywhere']) {
      assert.throws(() => loadConfig({ SVC_MACHINE_PLATFORM_CIDRS: bad }, none), /SVC_MACHINE_PLATFORM_CIDRS/, bad);
    }
    // On a cluster (the chart): the release namespace, and no node addresses when told none.
    const onCluster = loadConfig({ SVC_PLATFORM_NAMESPACE: 'svc-system', SVC_MACHINE_PLATFORM_CIDRS: '' }, none).machineNetwork;
    assert.deepEqual([onCluster.platformNamespace, onCluster.platformCidrs], ['svc-system', []]);
    assert.throws(() => loadConfig({ SVC_PLATFORM_NAMESPACE: 'Not_A_Namespace' }, none), /SVC_PLATFORM_NAMESPACE/);
  });

  it("writes the first token to the chart's Secret when told one, and refuses a malformed name", () => {
    assert.equal(loadConfig({}, none).api.ownerTokenSecret, undefined);
    assert.deepEqual(loadConfig({ SVC_OWNER_TOKEN_SECRET: 'svc-system/svc-owner-token' }, none).api.ownerTokenSecret, {
      namespace: 'svc-system',
      name: 'svc-owner-token',
    });
    for (const bad of ['svc-owner-token', 'a/b/c', 'A/b'])
      assert.throws(() => loadConfig({ SVC_OWNER_TOKEN_SECRET: bad }, none), /SVC_OWNER_TOKEN_SECRET/, bad);
  });
});

describe('loadComponentConfig (each process validates only what it reads)', () => {
  it('a bad value in a variable another process reads does not stop this one, and is not seen by it', () => {
    const env = { SVC_PROXY_PORT: '99999', SVC_DATABASE_URL: 'mysql://nope', SVC_ROLLOUT_DEADLINE_SECONDS: '30' };
    const controllers = loadComponentConfig('controllers', env, none);
    assert.equal(controllers.deploys.rolloutDeadlineSeconds, 30);
    assert.deepEqual(Object.keys(controllers).sort(), [...components.controllers].sort());
    assert.equal((controllers as Record<string, unknown>).databaseUrl, undefined, 'the controllers get no database URL at all');
    assert.throws(
      () => loadComponentConfig('ingress-auth', env, none),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.problems.some((p) => p.startsWith('SVC_PROXY_PORT')) &&
        err.problems.some((p) => p.startsWith('SVC_DATABASE_URL')),
    );
    assert.throws(
      () => loadComponentConfig('api', env, none),
      (err: unknown) => err instanceof ConfigError && err.problems.length === 1 && err.problems[0]!.startsWith('SVC_DATABASE_URL'),
    );
  });

  it('derived settings follow the variables the process reads (the artifact URL from the machine port)', () => {
    const c = loadComponentConfig('controllers', { SVC_API_MACHINE_PORT: '18001' }, none);
    assert.equal(c.deploys.artifactBaseUrl, 'http://10.244.0.1:18001/artifacts');
    assert.equal(c.assertion.jwksUrl, 'http://10.244.0.1:18001/_svc/auth/jwks.json');
  });
});

describe('the parts of the configuration (each variable declared once)', () => {
  type Reader = (e: unknown, ctx: { exists: (file: string) => boolean }) => unknown;
  const partList = Object.entries(parts) as Array<[keyof typeof parts, (typeof parts)[keyof typeof parts]]>;

  it('each variable belongs to one part, and a part uses only variables other parts own', () => {
    const owners = new Map<string, string[]>();
    for (const [name, p] of partList) for (const v of Object.keys(p.env)) owners.set(v, [...(owners.get(v) ?? []), name]);
    assert.deepEqual(
      [...owners].filter(([, o]) => o.length > 1),
      [],
      'declared by more than one part',
    );
    assert.deepEqual([...owners.keys()].sort(), Object.keys(envSchema.shape).sort());
    for (const [name, p] of partList)
      for (const [v, owner] of Object.entries(p.uses as Record<string, { env: object }>)) {
        assert.ok(Object.values(parts).includes(owner as never), `${name} uses ${v} of a part not in parts`);
        assert.ok(v in owner.env, `${name} uses ${v}, which the part it names does not own`);
        assert.ok(!(v in p.env), `${name} both owns and uses ${v}`);
      }
  });

  it('every variable is read by at least one component', () => {
    const read = new Set<string>(Object.values(components).flatMap((names) => names.flatMap((name) => readsOf[name])));
    assert.deepEqual(
      Object.keys(envSchema.shape).filter((v) => !read.has(v)),
      [],
    );
  });

  it('readsOf lists exactly the variables each part reads', () => {
    // Defaults, and the optional providers configured (the variables read only when they are).
    const envs = [
      {},
      {
        SVC_IDP_ISSUER: 'https://idp.example.com',
        SVC_IDP_CLIENT_ID: 'id',
        SVC_IDP_CLIENT_SECRET: 'secret',
        SVC_CODEHOST_CLIENT_ID: 'id',
        SVC_CODEHOST_CLIENT_SECRET: 'secret',
        SVC_REGISTRAR: 'namecom',
        SVC_REGISTRAR_USERNAME: 'svc',
        SVC_REGISTRAR_TOKEN: 'token',
        SVC_ARTIFACT_S3_ENDPOINT: 'http://127.0.0.1:8060',
        SVC_ARTIFACT_S3_BUCKET: 'svc-artifacts',
        SVC_ARTIFACT_S3_ACCESS_KEY_ID: 'id',
        SVC_ARTIFACT_S3_SECRET_ACCESS_KEY: 'secret',
      },
    ];
    for (const [name, p] of partList) {
      const touched = new Set<string>();
      for (const env of envs) {
        const e = envSchema.parse(env) as Record<string, unknown>;
        const own = Object.fromEntries(readsOf[name].map((v) => [v, e[v]]));
        const watched = new Proxy(own, {
          get: (target, key) => (touched.add(String(key)), target[key as string]),
          has: (target, key) => (touched.add(String(key)), key in target),
        });
        (p.read as Reader)(watched, none);
      }
      assert.deepEqual([...touched].sort(), [...readsOf[name]].sort(), name);
    }
  });

  it('a provider set without its credentials is refused, by the processes that read it', () => {
    const env = { SVC_IDP_ISSUER: 'https://idp.example.com', SVC_CODEHOST_CLIENT_ID: 'id' };
    assert.throws(
      () => loadConfig(env, none),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(err.problems, [
          'SVC_IDP_CLIENT_ID: required when SVC_IDP_ISSUER is set',
          'SVC_IDP_CLIENT_SECRET: required when SVC_IDP_ISSUER is set',
          'SVC_CODEHOST_CLIENT_SECRET: required when SVC_CODEHOST_CLIENT_ID is set',
        ]);
        return true;
      },
    );
    assert.equal(loadComponentConfig('controllers', env, none).deploys.artifactKey, undefined);
  });

  it('the object store of artifacts: all of endpoint, bucket and key pair or none, a bucket name S3 accepts, a prefix of whole segments', () => {
    const full = {
      SVC_ARTIFACT_S3_ENDPOINT: 'http://127.0.0.1:8060',
      SVC_ARTIFACT_S3_BUCKET: 'svc-artifacts',
      SVC_ARTIFACT_S3_ACCESS_KEY_ID: 'id',
      SVC_ARTIFACT_S3_SECRET_ACCESS_KEY: 'secret',
    };
    assert.equal(loadComponentConfig('api', {}, none).deploys.objectStore, undefined);
    assert.deepEqual(loadComponentConfig('api', { ...full, SVC_ARTIFACT_S3_PREFIX: 'prod/eu/' }, none).deploys.objectStore, {
      endpoint: 'http://127.0.0.1:8060',
      bucket: 'svc-artifacts',
      region: 'us-east-1',
      prefix: 'prod/eu/',
      accessKeyId: 'id',
      secretAccessKey: 'secret',
      pathStyle: true,
    });
    const refused = (env: Record<string, string>, problems: RegExp) =>
      assert.throws(
        () => loadComponentConfig('api', env, none),
        (err: unknown) => err instanceof ConfigError && problems.test(err.problems.join('; ')),
      );
    refused(
      { SVC_ARTIFACT_S3_ENDPOINT: full.SVC_ARTIFACT_S3_ENDPOINT },
      /SVC_ARTIFACT_S3_BUCKET: required with SVC_ARTIFACT_S3_ENDPOINT; SVC_ARTIFACT_S3_ACCESS_KEY_ID: required with SVC_ARTIFACT_S3_ENDPOINT; SVC_ARTIFACT_S3_SECRET_ACCESS_KEY/,
    );
    refused({ ...full, SVC_ARTIFACT_S3_BUCKET: 'Svc_Artifacts' }, /SVC_ARTIFACT_S3_BUCKET: must be an S3 bucket name/);
    refused({ ...full, SVC_ARTIFACT_S3_ENDPOINT: 'ftp://store' }, /SVC_ARTIFACT_S3_ENDPOINT: must be an http\(s\) URL/);
    refused({ ...full, SVC_ARTIFACT_S3_PREFIX: '../x/' }, /SVC_ARTIFACT_S3_PREFIX: must be empty or path segments/);
    refused({ ...full, SVC_ARTIFACT_S3_PREFIX: 'a/./' }, /SVC_ARTIFACT_S3_PREFIX/);
    refused({ ...full, SVC_ARTIFACT_S3_PREFIX: 'no-slash' }, /SVC_ARTIFACT_S3_PREFIX/);
  });

  it('DNS-01: a zone needs its server and key; the server is host:port with a real port, IPv6 in brackets', () => {
    const secret = Buffer.alloc(32, 7).toString('base64');
    const full = {
      SVC_DNS01_ZONE: 'acme.example.net',
      SVC_DNS01_SERVER: '[2001:db8::53]:5353',
      SVC_DNS01_TSIG_KEY_NAME: 'svc',
      SVC_DNS01_TSIG_SECRET: secret,
    };
    assert.deepEqual(loadComponentConfig('api', full, none).certificates.acme.dns01, {
      zone: 'acme.example.net',
      server: { host: '2001:db8::53', port: 5353 },
      key: { name: 'svc', algorithm: 'hmac-sha256', secret },
    });
    assert.equal(loadComponentConfig('api', {}, none).certificates.acme.dns01, undefined);
    assert.throws(
      () => loadConfig({ SVC_DNS01_ZONE: 'acme.example.net' }, none),
      (err: unknown) =>
        err instanceof ConfigError &&
        ['SVC_DNS01_SERVER', 'SVC_DNS01_TSIG_KEY_NAME', 'SVC_DNS01_TSIG_SECRET'].every((v) =>
          err.problems.includes(`${v}: required when SVC_DNS01_ZONE is set`),
        ),
    );
    for (const server of ['ns1.example.net:0', 'ns1.example.net:70000', 'ns1.example.net', '2001:db8::53:53'])
      assert.throws(
        () => loadConfig({ ...full, SVC_DNS01_SERVER: server }, none),
        (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith('SVC_DNS01_SERVER')),
        server,
      );
  });

  it("the platform's certificate by DNS-01 needs its Secret, the ACME issuer and a DNS-01 zone, all said at once", () => {
    const dns01 = {
      SVC_DNS01_ZONE: 'acme.example.net',
      SVC_DNS01_SERVER: 'ns1.example.net:53',
      SVC_DNS01_TSIG_KEY_NAME: 'svc',
      SVC_DNS01_TSIG_SECRET: Buffer.alloc(32, 7).toString('base64'),
    };
    const full = {
      ...dns01,
      SVC_APPS_DOMAIN: 'apps.example.com',
      SVC_CERTIFICATES_PLATFORM_ISSUER: 'dns01',
      SVC_CERTIFICATES_PLATFORM_SECRET: 'svc-apps-tls',
      SVC_CERTIFICATES_ISSUER: 'acme',
      SVC_ACME_DIRECTORY_URL: 'https://acme.example.net/directory',
    };
    assert.deepEqual(loadComponentConfig('api', full, none).certificates.platformDns01, { domain: '*.apps.example.com' });
    assert.equal(
      loadComponentConfig('api', { ...full, SVC_CERTIFICATES_PLATFORM_ISSUER: 'provided' }, none).certificates.platformDns01,
      undefined,
    );
    assert.throws(
      () => loadComponentConfig('api', { SVC_CERTIFICATES_PLATFORM_ISSUER: 'dns01' }, none),
      (err: unknown) =>
        err instanceof ConfigError &&
        ['SVC_CERTIFICATES_PLATFORM_SECRET', 'SVC_CERTIFICATES_ISSUER', 'SVC_DNS01_ZONE'].every((v) =>
          err.problems.some((p) => p.startsWith(`SVC_CERTIFICATES_PLATFORM_ISSUER=dns01 needs ${v}`)),
        ),
    );
    assert.throws(
      () =>
        loadComponentConfig('api', { ...full, SVC_CERTIFICATES_ISSUER: 'cert-manager', SVC_CERT_MANAGER_ISSUER: 'ClusterIssuer/le' }, none),
      (err: unknown) => err instanceof ConfigError && err.problems.length === 1 && err.problems[0]!.includes('must be acme'),
    );
  });

  it('a process that does not read the deploys part does not look for the artifact key', () => {
    const env = { SVC_STATE_DIR: '/nonexistent-svc-state' };
    assert.deepEqual(loadComponentConfig('policy-agent', env, { exists: () => true }), {
      logLevel: 'info',
      kubeconfig: '/nonexistent-svc-state/kubeconfig',
    });
    assert.throws(() => loadComponentConfig('registry-auth', env, { exists: () => true }), /ENOENT.*artifact-key/);
  });
});
