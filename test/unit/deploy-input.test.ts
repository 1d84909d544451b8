// Deploy input read without a cluster: compose files and kind detection.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCompose } from '../../api/deploys/compose.js';
import { detectKind } from '../../api/deploys/detect.js';
import { ApiError } from '../../api/errors.js';

const refused = (fn: () => unknown, pattern: RegExp) =>
  assert.throws(fn, (err: unknown) => err instanceof ApiError && err.status === 400 && pattern.test(err.message));

describe('compose files', () => {
  it('reads one service: image, container port, environment, entrypoint and command', () => {
    const c = parseCompose(`
services:
  web:
    image: ghcr.io/acme/web:1.2
    entrypoint: /bin/server
    command: [--port, "9000"]
    ports: ["127.0.0.1:80:9000/tcp"]
    environment:
      - MODE=prod
      - EMPTY=
x-svc:
  machines: 2
`);
    assert.deepEqual(c.services, [
      {
        name: 'web',
        image: 'ghcr.io/acme/web:1.2',
        port: 9000,
        ports: [9000],
        env: [
          { name: 'MODE', value: 'prod' },
          { name: 'EMPTY', value: '' },
        ],
        command: ['/bin/server'],
        args: ['--port', '9000'],
        volumes: [],
        machines: 2,
        dependsOn: [],
        aliases: [],
      },
    ]);
    assert.deepEqual(c.settings, { machines: 2 });
    assert.deepEqual(parseCompose('services:\n  w:\n    image: x\n    environment: {N: 3, B: true}\n').services[0]?.env, [
      { name: 'N', value: '3' },
      { name: 'B', value: 'true' },
    ]);
  });

  it('creates no container service from a file with only x-svc', () => {
    assert.deepEqual(parseCompose('x-svc:\n  machines: 3\n'), { services: [], settings: { machines: 3 }, envFiles: [] });
    assert.deepEqual(parseCompose('services:\n  site:\n    x-svc: {machines: 1}\n'), {
      services: [],
      settings: { machines: 1 },
      envFiles: [],
    });
  });

  it("top-level x-svc.machines is every service's default; a service's own x-svc.machines or deploy.replicas wins", () => {
    assert.deepEqual(parseCompose('x-svc: {machines: 3}\nservices:\n  w:\n    image: x\n    x-svc: {}\n').settings, { machines: 3 });
    assert.deepEqual(parseCompose('x-svc: {machines: 3}\nservices:\n  w:\n    image: x\n    x-svc: {machines: 1}\n').settings, {
      machines: 1,
    });
    assert.deepEqual(parseCompose('services:\n  w:\n    image: x\n    deploy: {replicas: 2}\n').settings, { machines: 2 });
  });

  it('refuses what it would otherwise ignore, naming the key', () => {
    refused(() => parseCompose('services: [unclosed'), /^compose: /);
    refused(() => parseCompose('- a\n- b\n'), /must be a map/);
    refused(() => parseCompose('networks: {}\nservices: {}\n'), /top-level networks is not supported/);
    refused(() => parseCompose('services:\n  w:\n    build: .\n'), /services\.w\.build is not supported/);
    refused(
      () => parseCompose('services:\n  w: {image: x, user: root}\n'),
      /services\.w\.user is not supported \(machines always run as the platform's unprivileged user\)/,
    );
    refused(() => parseCompose('services:\n  w: {image: x, ports: ["http"]}\n'), /not a port/);
    refused(() => parseCompose('services:\n  w: {image: x, environment: [NOEQUALS]}\n'), /NAME=value/);
    refused(() => parseCompose('services:\n  w: {image: x, environment: {FROM_HOST: null}}\n'), /has no value/);
    refused(() => parseCompose('services:\n  w: {image: "bad image"}\n'), /image reference/);
    refused(() => parseCompose('x-svc: {machines: 99}\n'), /machines must be an integer 0-20/);
    refused(() => parseCompose('x-svc: {color: blue}\n'), /x-svc\.color is not a known setting/);
    refused(() => parseCompose('name: x\n'), /neither services nor x-svc/);
    refused(() => parseCompose('services:\n  w: {image: x}\n  w: {image: y}\n'), /^compose: /);
  });

  it("reads volumes: the service's mounts of declared volumes and x-svc.volumes with their sizes, the whole list", () => {
    const c = parseCompose(`
services:
  web:
    image: x
    volumes:
      - data:/var/lib/data
      - {type: volume, source: cache, target: /cache}
volumes:
  data: {}
  cache:
x-svc:
  volumes:
    data: {size: 5Gi}
    uploads: {path: /srv/uploads, size: 512Mi}
`);
    assert.deepEqual(c.services[0]?.volumes, [
      { name: 'data', path: '/var/lib/data', size: '5Gi' },
      { name: 'cache', path: '/cache' },
      { name: 'uploads', path: '/srv/uploads', size: '512Mi' },
    ]);
    // A service-level x-svc.volumes replaces the top-level one; what it leaves out is refused, not ignored.
    assert.deepEqual(parseCompose('services:\n  w:\n    image: x\n    x-svc: {volumes: {b: {path: /b}}}\n').services[0]?.volumes, [
      { name: 'b', path: '/b' },
    ]);
    refused(
      () => parseCompose('x-svc: {volumes: {a: {path: /a}}}\nservices:\n  w:\n    image: x\n    x-svc: {volumes: {b: {path: /b}}}\n'),
      /x-svc\.volumes a: mounted by no service/,
    );
  });

  it('refuses volumes it cannot honour, naming them', () => {
    const svc = (volumes: string, extra = '') => parseCompose(`services:\n  w:\n    image: x\n    volumes: ${volumes}\n${extra}`);
    refused(() => svc('["./src:/app"]'), /\.\/src is a path on the host; machines mount named volumes only/);
    refused(() => svc('["/var/data"]'), /anonymous volume: name it/);
    refused(() => svc('["data:/d:ro"]', 'volumes: {data: {}}\n'), /only name:\/path or name:\/path:rw/);
    refused(() => svc('["data:/d"]'), /mounts data, which the top-level volumes do not declare/);
    refused(() => svc('[{type: bind, source: /x, target: /y}]'), /type must be volume \(bind is not supported\)/);
    refused(() => svc('["data:/tmp/x"]', 'volumes: {data: {}}\n'), /its path \/tmp\/x cannot be \/tmp or under it/);
    refused(() => svc('["data:/a", "logs:/a"]', 'volumes: {data: {}, logs: {}}\n'), /two volumes share a mount path/);
    refused(() => svc('["data:/d"]', 'volumes: {data: {driver: nfs}}\n'), /volumes\.data takes no options here/);
    refused(() => svc('["Data:/d"]', 'volumes: {Data: {}}\n'), /a volume name is 1-20 lowercase letters/);
    refused(() => svc('["data:/d"]', 'volumes: {data: {}}\nx-svc: {volumes: {data: {size: 5GB}}}\n'), /size must be a size such as 512Mi/);
    refused(
      () => svc('["data:/d"]', 'volumes: {data: {}}\nx-svc: {volumes: {data: {path: /e}}}\n'),
      /mounted at \/d but x-svc\.volumes\.data\.path says \/e/,
    );
    refused(
      () => svc('[]', 'x-svc: {volumes: {data: {size: 1Gi}}}\n'),
      /x-svc\.volumes data: mounted by no service \(mount it in a service's volumes, or give it a path\)/,
    );
    refused(() => svc('[]', 'x-svc: {volumes: {data: {path: /d, owner: me}}}\n'), /x-svc\.volumes\.data\.owner is not a volume setting/);
    refused(
      () => svc('[]', 'x-svc: {volumes: {a: {path: /a}, b: {path: /b}, c: {path: /c}, d: {path: /d}, e: {path: /e}}}\n'),
      /has 5 volumes; at most 4/,
    );
    refused(() => parseCompose('x-svc: {volumes: {data: {path: /d}}}\n'), /volumes belong to a container service/);
  });

  it('reads x-svc.auth and x-svc.identity as policy declarations; a service-level policy replaces the top-level one', () => {
    const c = parseCompose('x-svc:\n  machines: 2\n  auth: {emails: [Ada@X.io], except: [/health]}\nservices:\n  w:\n    image: x\n');
    assert.deepEqual(c.settings, { machines: 2 });
    assert.deepEqual(
      c.policy?.map((d) => [d.mode, d.field, d.paths, d.except, d.admit]),
      [['auth', 'x-svc.auth', ['/**'], ['/health'], { emails: ['ada@x.io'] }]],
    );
    const replaced = parseCompose('x-svc: {auth: owner}\nservices:\n  w:\n    image: x\n    x-svc: {identity: idp}\n');
    assert.deepEqual(
      replaced.policy?.map((d) => [d.mode, d.field]),
      [['identity', 'services.w.x-svc.identity']],
    );
    assert.deepEqual(parseCompose('x-svc: {identity: owner}\n'), {
      services: [],
      settings: {},
      envFiles: [],
      policy: parseCompose('x-svc: {identity: owner}\n').policy,
    });
    assert.equal(parseCompose('x-svc: {machines: 1}\n').policy, undefined);
  });

  it('refuses an invalid policy with a 400 naming the file and the field', () => {
    refused(() => parseCompose('x-svc:\n  auth: {emails: [bob]}\n'), /^compose: x-svc\.auth\.emails\[0\]: "bob" is not an email address/);
    refused(
      () => parseCompose('services:\n  w:\n    image: x\n    x-svc: {auth: {owner: false}}\n'),
      /^compose: services\.w\.x-svc\.auth\.owner: /,
    );
    refused(() => parseCompose('x-svc:\n  auth: {}\n'), /^compose: x-svc\.auth: admits nobody/);
  });
});

describe('compose files with several services', () => {
  const file = `
x-svc:
  auth: owner
services:
  worker:
    image: registry.local/worker:1
    command: python3 worker.py
    env_file: [worker.env]
    environment: {QUEUE: jobs}
    restart: on-failure
    depends_on:
      cache: {condition: service_healthy}
      migrate: {condition: service_completed_successfully}
  web:
    image: registry.local/web:1
    ports: ["8000", "9100"]
    working_dir: /srv
    depends_on: [cache]
    deploy: {replicas: 2}
    healthcheck: {test: ["CMD", "true"], interval: 1s, timeout: 500ms, retries: 2, start_period: 1m30s}
  cache:
    image: registry.local/cache:1
    expose: [6379]
    container_name: redis
    volumes: [data:/data]
    healthcheck: {test: "nc -z localhost 6379"}
  migrate:
    image: registry.local/web:1
    command: [migrate]
    restart: "no"
volumes:
  data:
`;
  const files = (p: string) => (p === 'worker.env' ? '# comment\nexport TOKEN="a b"\nQUEUE=overridden\nPLAIN=x # note\n' : undefined);

  it('reads each service; the one publishing a port is public and comes first', () => {
    const c = parseCompose(file, files);
    assert.deepEqual(
      c.services.map((s) => s.name),
      ['web', 'worker', 'cache', 'migrate'],
    );
    const [web, worker, cache, migrate] = c.services;
    assert.deepEqual(web, {
      name: 'web',
      image: 'registry.local/web:1',
      port: 8000,
      ports: [8000, 9100],
      env: [],
      workingDir: '/srv',
      volumes: [],
      machines: 2,
      healthcheck: { command: ['true'], intervalSeconds: 1, timeoutSeconds: 1, retries: 2, startPeriodSeconds: 90 },
      dependsOn: [{ service: 'cache', condition: 'started' }],
      aliases: [],
    });
    assert.deepEqual(worker?.env, [
      { name: 'TOKEN', value: 'a b' },
      { name: 'QUEUE', value: 'jobs' },
      { name: 'PLAIN', value: 'x' },
    ]);
    assert.equal(worker?.restart, 'on-failure');
    assert.deepEqual(worker?.args, ['python3', 'worker.py']);
    assert.deepEqual(worker?.dependsOn, [
      { service: 'cache', condition: 'healthy' },
      { service: 'migrate', condition: 'completed' },
    ]);
    assert.equal(worker?.port, undefined);
    assert.deepEqual(
      [cache?.port, cache?.ports, cache?.aliases, cache?.volumes],
      [6379, [6379], ['redis'], [{ name: 'data', path: '/data' }]],
    );
    assert.deepEqual(cache?.healthcheck?.command, ['/bin/sh', '-c', 'nc -z localhost 6379']);
    assert.equal(migrate?.restart, 'no');
    assert.deepEqual(c.settings, { machines: 2 });
    assert.deepEqual(c.envFiles, ['worker.env']);
    // The top-level policy is the public service's.
    assert.deepEqual(
      c.policy?.map((d) => [d.field, d.admit]),
      [['x-svc.auth', { owner: true }]],
    );
  });

  it('x-svc.public chooses the public service; a service-level policy replaces the top-level one (rule 3)', () => {
    const c = parseCompose(
      'x-svc: {auth: owner}\nservices:\n  api: {image: a, ports: ["80"]}\n  site:\n    image: b\n    ports: ["81"]\n    x-svc: {public: true, auth: {emails: [ada@x.io]}}\n',
    );
    assert.deepEqual(
      c.services.map((s) => s.name),
      ['site', 'api'],
    );
    assert.deepEqual(
      c.policy?.map((d) => [d.field, d.admit]),
      [['services.site.x-svc.auth', { emails: ['ada@x.io'] }]],
    );
  });

  it('refuses ambiguous or impossible files, naming the services', () => {
    refused(
      () => parseCompose('services:\n  web: {image: a, ports: ["80"]}\n  admin: {image: b, ports: ["81"]}\n'),
      /services web, admin all publish a port; .*mark it with x-svc\.public: true/,
    );
    refused(() => parseCompose('services:\n  a: {image: a}\n  b: {image: b}\n'), /none of the services a, b publishes a port/);
    refused(
      () => parseCompose('services:\n  a: {image: a, x-svc: {public: true}}\n  b: {image: b, x-svc: {public: true}}\n'),
      /services a and b are both marked x-svc\.public/,
    );
    refused(
      () => parseCompose('services:\n  web: {image: a, ports: ["80"]}\n  w: {image: b, x-svc: {auth: owner}}\n'),
      /services\.w\.x-svc\.auth: w does not receive the app's hostname \(web does\)/,
    );
    refused(
      () => parseCompose('services:\n  web: {image: a, ports: ["80"], depends_on: [db]}\n'),
      /depends_on\.db: the file has no service db/,
    );
    refused(
      () => parseCompose('services:\n  web: {image: a, ports: ["80"], depends_on: [w]}\n  w: {image: b, depends_on: [web]}\n'),
      /depends_on has a cycle: web -> w -> web/,
    );
    refused(
      () => parseCompose('services:\n  web: {image: a, ports: ["80"], depends_on: {w: {condition: service_healthy}}}\n  w: {image: b}\n'),
      /service_healthy needs a healthcheck on w/,
    );
    refused(
      () =>
        parseCompose(
          'services:\n  web: {image: a, ports: ["80"], depends_on: {w: {condition: service_completed_successfully}}}\n  w: {image: b}\n',
        ),
      /needs w to end/,
    );
    refused(
      () => parseCompose('services:\n  web: {image: a, ports: ["80"], restart: "no"}\n  w: {image: b}\n'),
      /the service receiving the app's hostname always restarts/,
    );
    refused(
      () =>
        parseCompose('services:\n  web: {image: a, ports: ["80"], volumes: [d:/d]}\n  w: {image: b, volumes: [d:/d]}\nvolumes: {d: {}}\n'),
      /volume d is mounted by web and w/,
    );
    refused(() => parseCompose('services:\n  Web_1: {image: a}\n'), /services\.Web_1: a service name here is/);
    refused(
      () => parseCompose('services:\n  web: {image: a, ports: ["80"]}\n  w: {image: b, container_name: web}\n'),
      /services web and w both answer to web/,
    );
    refused(() => parseCompose('services:\n  w: {image: a, env_file: missing.env}\n'), /missing\.env was not sent with the deploy/);
    refused(() => parseCompose('services:\n  w: {image: a, restart: "on-failure:3"}\n'), /a number of retries is not supported/);
    refused(() => parseCompose('services:\n  w: {image: a, deploy: {resources: {}}}\n'), /services\.w\.deploy\.resources is not supported/);
    refused(
      () => parseCompose('services:\n  w: {image: a, healthcheck: {test: [CMD], start_interval: 1s}}\n'),
      /healthcheck\.start_interval is not supported/,
    );
    refused(() => parseCompose('services:\n  w: {image: a, healthcheck: {test: [CMD]}}\n'), /test must be/);
    refused(() => parseCompose('services:\n  w: {image: a, ports: ["53:53/udp"]}\n'), /UDP port/);
    refused(
      () => parseCompose('services:\n  w: {image: a, networks: [x]}\n'),
      /services\.w\.networks is not supported \(the app's services share the app's network/,
    );
    assert.equal(parseCompose('services:\n  w: {image: a, env_file: [{path: gone.env, required: false}]}\n').services[0]?.env.length, 0);
  });

  it('reads $$ as a literal $ and refuses variables from the deploying environment', () => {
    assert.deepEqual(parseCompose('services:\n  w: {image: a, command: ["sh", "-c", "echo $$HOME costs $$$$5"]}\n').services[0]?.args, [
      'sh',
      '-c',
      'echo $HOME costs $$5',
    ]);
    refused(
      () => parseCompose('services:\n  w: {image: "a:${TAG}"}\n'),
      /services\.w\.image: \$\{TAG\} takes a variable from the deploying environment/,
    );
    refused(
      () => parseCompose('services:\n  w: {image: a, environment: {X: "$$$HOME"}}\n'),
      /services\.w\.environment\.X: \$HOME takes a variable/,
    );
  });
});

describe('kind detection', () => {
  const none = new Map<string, Buffer>();
  it('static when HTML has no platform bindings, or there are only assets', () => {
    assert.equal(detectKind(['index.html', 'app.css'], new Map([['index.html', Buffer.from('<h1>hi</h1>')]])).kind, 'static');
    assert.equal(detectKind(['logo.png'], none).kind, 'static');
  });
  it('html when a page uses data-svc bindings, {{$viewer}} or svc- meta tags', () => {
    for (const page of ['<ul data-svc="todos"></ul>', '<p>Hello {{ $viewer.name }}</p>', '<meta name="svc-auth" content="idp">']) {
      assert.equal(detectKind(['index.html'], new Map([['index.html', Buffer.from(page)]])).kind, 'html', page);
    }
  });
  it('markdown when there are Markdown pages and no HTML', () => {
    assert.equal(detectKind(['index.md', 'img/a.png'], none).kind, 'markdown');
    assert.equal(detectKind(['index.md', 'index.html'], new Map([['index.html', Buffer.from('x')]])).kind, 'static');
  });
  it('handlers for modules under api/ or handlers/ without an index page', () => {
    assert.equal(detectKind(['api/hello.ts'], none).kind, 'handlers');
    assert.equal(detectKind(['api/hello.js', 'index.html'], new Map([['index.html', Buffer.from('x')]])).kind, 'static');
  });
  it('refuses an empty tree', () => {
    refused(() => detectKind([], none), /no files/);
  });
});
