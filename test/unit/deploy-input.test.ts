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
    assert.deepEqual(c.service, {
      name: 'web',
      image: 'ghcr.io/acme/web:1.2',
      port: 9000,
      env: [
        { name: 'MODE', value: 'prod' },
        { name: 'EMPTY', value: '' },
      ],
      command: ['/bin/server'],
      args: ['--port', '9000'],
      volumes: [],
    });
    assert.deepEqual(c.settings, { machines: 2 });
    assert.deepEqual(parseCompose('services:\n  w:\n    image: x\n    environment: {N: 3, B: true}\n').service?.env, [
      { name: 'N', value: '3' },
      { name: 'B', value: 'true' },
    ]);
  });

  it('creates no container service from a file with only x-svc', () => {
    assert.deepEqual(parseCompose('x-svc:\n  machines: 3\n'), { settings: { machines: 3 } });
    assert.deepEqual(parseCompose('services:\n  site:\n    x-svc: {machines: 1}\n'), { settings: { machines: 1 } });
  });

  it('a service-level x-svc replaces the top-level one', () => {
    assert.deepEqual(parseCompose('x-svc: {machines: 3}\nservices:\n  w:\n    image: x\n    x-svc: {}\n').settings, {});
  });

  it('refuses what it would otherwise ignore, naming the key', () => {
    refused(() => parseCompose('services: [unclosed'), /^compose: /);
    refused(() => parseCompose('- a\n- b\n'), /must be a map/);
    refused(() => parseCompose('networks: {}\nservices: {}\n'), /top-level networks is not supported/);
    refused(() => parseCompose('services:\n  w:\n    build: .\n'), /services\.w\.build is not supported/);
    refused(() => parseCompose('services:\n  a: {image: x}\n  b: {image: y}\n'), /one container service, found 2 \(a, b\)/);
    refused(() => parseCompose('services:\n  w: {image: x, ports: ["80:8080", "443:8443"]}\n'), /2 ports/);
    refused(() => parseCompose('services:\n  w: {image: x, ports: ["http"]}\n'), /not a port/);
    refused(() => parseCompose('services:\n  w: {image: x, environment: [NOEQUALS]}\n'), /NAME=value/);
    refused(() => parseCompose('services:\n  w: {image: x, environment: {FROM_HOST: null}}\n'), /has no value/);
    refused(() => parseCompose('services:\n  w: {image: "bad image"}\n'), /image reference/);
    refused(() => parseCompose('x-svc: {machines: 99}\n'), /machines must be an integer 0-20/);
    refused(() => parseCompose('x-svc: {color: blue}\n'), /x-svc\.color is not a known setting/);
    refused(() => parseCompose('name: x\n'), /neither services nor x-svc/);
    refused(() => parseCompose('services:\n  w: {image: x}\n  w: {image: y}\n'), /^compose: /);
  });

  it('reads volumes: the service\'s mounts of declared volumes and x-svc.volumes with their sizes, the whole list', () => {
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
    assert.deepEqual(c.service?.volumes, [
      { name: 'data', path: '/var/lib/data', size: '5Gi' },
      { name: 'cache', path: '/cache' },
      { name: 'uploads', path: '/srv/uploads', size: '512Mi' },
    ]);
    // A service-level x-svc replaces the top-level one, volumes included.
    assert.deepEqual(parseCompose('x-svc: {volumes: {a: {path: /a}}}\nservices:\n  w:\n    image: x\n    x-svc: {volumes: {b: {path: /b}}}\n').service?.volumes, [{ name: 'b', path: '/b' }]);
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
    refused(() => svc('["data:/d"]', 'volumes: {data: {}}\nx-svc: {volumes: {data: {path: /e}}}\n'), /mounted at \/d but x-svc\.volumes\.data\.path says \/e/);
    refused(() => svc('[]', 'x-svc: {volumes: {data: {size: 1Gi}}}\n'), /volume data has no mount path/);
    refused(() => svc('[]', 'x-svc: {volumes: {data: {path: /d, owner: me}}}\n'), /x-svc\.volumes\.data\.owner is not a volume setting/);
    refused(() => svc('[]', 'x-svc: {volumes: {a: {path: /a}, b: {path: /b}, c: {path: /c}, d: {path: /d}, e: {path: /e}}}\n'), /has 5 volumes; at most 4/);
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
    assert.deepEqual(replaced.policy?.map((d) => [d.mode, d.field]), [['identity', 'services.w.x-svc.identity']]);
    assert.deepEqual(parseCompose('x-svc: {identity: owner}\n'), { settings: {}, policy: parseCompose('x-svc: {identity: owner}\n').policy });
    assert.equal(parseCompose('x-svc: {machines: 1}\n').policy, undefined);
  });

  it('refuses an invalid policy with a 400 naming the file and the field', () => {
    refused(() => parseCompose('x-svc:\n  auth: {emails: [bob]}\n'), /^compose: x-svc\.auth\.emails\[0\]: "bob" is not an email address/);
    refused(() => parseCompose('services:\n  w:\n    image: x\n    x-svc: {auth: {owner: false}}\n'), /^compose: services\.w\.x-svc\.auth\.owner: /);
    refused(() => parseCompose('x-svc:\n  auth: {}\n'), /^compose: x-svc\.auth: admits nobody/);
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
