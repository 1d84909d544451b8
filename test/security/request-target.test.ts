// Attack: path confusion between the gate and the app (issue 11 item 2). Every request-target form of
// RFC 9112 3.2, and the spellings parsers disagree on, reduce to one canonical origin-form or a 400;
// a fuzz test checks that whatever the canonicalizer lets through means the same path to the
// runtime's parser (WHATWG URL, which the runtime and handlers use) as the one the gate decided on.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BadRequestTarget, canonicalTarget, fullReading, pathOfTarget } from '../../lib/http/request-target.js';
import { decide, normalizeRequestPath } from '../../lib/policy/index.js';

/** What the runtime makes of a forwarded target: WHATWG URL on the origin-form, then decoded. */
function runtimeReading(target: string): { host: string; path: string } {
  const url = new URL(target, 'http://app.apps.localhost');
  return { host: url.host, path: decodeURIComponent(url.pathname) };
}

describe('security: the request target the gate decides on is the one the app receives', () => {
  // [raw target, decided path, forwarded target]
  const accepted: Array<[string, string, string]> = [
    ['/', '/', '/'],
    ['/admin', '/admin', '/admin'],
    ['/admin/', '/admin/', '/admin/'],
    ['//admin', '/admin', '/admin'],
    ['//x/admin', '/x/admin', '/x/admin'],
    ['///admin/', '/admin/', '/admin/'],
    ['/./admin', '/admin', '/admin'],
    ['/x/../admin', '/admin', '/admin'],
    ['/../../admin', '/admin', '/admin'],
    ['/%2e/admin', '/admin', '/admin'],
    ['/%2E%2e/admin', '/admin', '/admin'],
    ['/x/%2e%2e/admin', '/admin', '/admin'],
    ['/admin/.', '/admin/', '/admin/'],
    ['/admin/x/..', '/admin/', '/admin/'],
    ['/%61dmin', '/admin', '/admin'],
    ['/admin%2fsecret', '/admin/secret', '/admin/secret'],
    ['/admin%2F..%2F..%2Fetc', '/etc', '/etc'],
    ['/a%20b/c', '/a b/c', '/a%20b/c'],
    ['/caf%C3%A9', '/café', '/caf%C3%A9'],
    ['/%2561', '/%61', '/%2561'],
    ['/admin;x=1', '/admin;x=1', '/admin;x=1'],
    ['/a?b=/../c&d=\\e', '/a', '/a?b=/../c&d=\\e'],
    ['/a?', '/a', '/a?'],
    ['http://shop.apps.localhost/admin', '/admin', '/admin'],
    ['HTTPS://shop.apps.localhost:8081//admin?x=1', '/admin', '/admin?x=1'],
    ['http://shop.apps.localhost', '/', '/'],
    ['http://shop.apps.localhost?x', '/', '/?x'],
  ];
  for (const [raw, path, target] of accepted) {
    it(`reads ${JSON.stringify(raw)} as ${path}`, () => {
      const t = canonicalTarget(raw);
      assert.equal(t.path, path);
      assert.equal(t.target, target);
      assert.deepEqual(runtimeReading(t.target), { host: 'app.apps.localhost', path });
      assert.equal(normalizeRequestPath(t.target), path, 'the policy matcher reads the same path');
    });
  }

  const refused: Array<[string, RegExp]> = [
    ['*', /asterisk-form/],
    ['shop.apps.localhost:443', /must be a path/],
    ['admin', /must be a path/],
    ['/\\x/admin', /must be percent-encoded/],
    ['/admin\\', /must be percent-encoded/],
    ['/%5cx/admin', /backslash/],
    ['/%5Cadmin', /backslash/],
    ['/admin%00', /control character/],
    ['/admin%0d%0aX-Svc-Auth-Subject:%20a', /control character/],
    ['/admin%', /malformed/],
    ['/admin%zz', /malformed/],
    ['/admin%c3', /malformed/],
    ['/admin%ff', /malformed/],
    ['/ad min', /must be percent-encoded/],
    ['/admin#x', /must be percent-encoded/],
    ['/admin\t', /must be percent-encoded/],
    ['/\u00e9', /must be percent-encoded/],
    ['http://user@shop.apps.localhost/admin', /no usable host/],
    ['http:///admin', /no usable host/],
    ['ftp://shop.apps.localhost/admin', /must be a path/],
    ['javascript:alert(1)', /must be a path/],
  ];
  for (const [raw, why] of refused) {
    it(`refuses ${JSON.stringify(raw)}`, () => {
      assert.throws(
        () => canonicalTarget(raw),
        (err: unknown) => err instanceof BadRequestTarget && why.test(err.message),
      );
    });
  }

  it('a route gated exactly is gated through the page file behind it too (clean URLs, index pages)', () => {
    const policy = { rules: [{ mode: 'auth' as const, paths: ['/private', '/team/'] as [string, ...string[]], admit: { owner: true } }] };
    for (const raw of [
      '/private',
      '/private.html',
      '/PRIVATE.HTM',
      '/private/index.html',
      '/private/README.md',
      '/private.md',
      '/team/index.html',
      '/team.html',
    ]) {
      assert.equal(decide(policy, canonicalTarget(raw).target)?.mode, 'auth', raw);
    }
    for (const raw of ['/privateer.html', '/public.html', '/private-notes'])
      assert.equal(decide(policy, canonicalTarget(raw).target), undefined, raw);
  });

  it('reports the authority of an absolute-form target, so it can be checked against Host', () => {
    assert.equal(canonicalTarget('http://Other.Example/admin').authority, 'other.example');
    assert.equal(canonicalTarget('/admin').authority, undefined);
  });

  it('a gated path stays gated in every spelling the canonicalizer accepts', () => {
    const policy = { rules: [{ mode: 'auth' as const, paths: ['/admin/**'] as [string], admit: { owner: true } }] };
    for (const raw of [
      '/admin',
      '//admin/',
      '/x/../admin/x',
      '/%61dmin',
      '/%2e/admin',
      'http://shop/admin',
      '/admin/.',
      '/ADMIN',
      '/admin;x',
    ]) {
      assert.equal(decide(policy, canonicalTarget(raw).target)?.mode, 'auth', raw);
    }
  });
});

describe('security: request-target fuzzing against the runtime parser', () => {
  // Targets built from the characters that matter: separators, dots, escapes of them, backslash,
  // percent, query marks and ordinary letters.
  const pieces = [
    '/',
    '//',
    '.',
    '..',
    '%2e',
    '%2E',
    '%2f',
    '%2F',
    '%5c',
    '\\',
    '%',
    '%25',
    '?',
    '#',
    'a',
    'B',
    ';',
    '@',
    ':',
    '%00',
    '%c3%a9',
    '%ff',
    ' ',
    'http:',
    '\t',
  ];
  const targets = fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 12 }).map((xs) => xs.join(''));
  const absolute = fc.tuple(fc.constantFrom('http://shop', 'HTTP://shop:80', 'https://x'), targets).map(([a, t]) => a + t);

  it('whatever is accepted means the same path to the runtime, and canonicalizing is idempotent', () => {
    fc.assert(
      fc.property(fc.oneof(targets, absolute), (raw) => {
        let t;
        try {
          t = canonicalTarget(raw);
        } catch (err) {
          assert.ok(err instanceof BadRequestTarget, String(err));
          return;
        }
        // One leading slash, never a host: the WHATWG parser keeps our host and reads our path.
        assert.ok(t.target.startsWith('/') && !t.target.startsWith('//'), t.target);
        assert.deepEqual(runtimeReading(t.target), { host: 'app.apps.localhost', path: t.path });
        // The policy matcher's own normalizer reads the same path.
        assert.equal(normalizeRequestPath(t.target), t.path);
        // Forwarding it again changes nothing (the runtime canonicalizes what it receives too).
        const again = canonicalTarget(t.target);
        assert.deepEqual(again, { path: t.path, target: t.target });
        assert.equal(pathOfTarget(again.target).includes('\\'), false);
      }),
      { numRuns: 20_000, seed: 11 },
    );
  });

  it('the shortcut for targets already canonical reads each exactly as the full reading does', () => {
    // The pieces above, and the characters the shortcut lets through (pchars that need no escape).
    const canonicalish = fc
      .array(fc.constantFrom(...pieces, '-', '_', '~', '!', '*', "'", '(', ')', '$', '&', '+', ',', '=', 'z9', '.a', 'a.', '...'), {
        minLength: 1,
        maxLength: 12,
      })
      .map((xs) => xs.join(''));
    const read = (f: (raw: string) => unknown, raw: string) => {
      try {
        return f(raw);
      } catch (err) {
        assert.ok(err instanceof BadRequestTarget, String(err));
        return `refused: ${err.message}`;
      }
    };
    fc.assert(
      fc.property(
        fc.oneof(
          targets,
          canonicalish,
          canonicalish.map((t) => `/${t}`),
          absolute,
        ),
        (raw) => {
          assert.deepEqual(read(canonicalTarget, raw), read(fullReading, raw), raw);
        },
      ),
      { numRuns: 50_000, seed: 19 },
    );
    for (const raw of [
      '/',
      '/a/',
      '/a/b.c',
      '/a/.b',
      '/a/..b/',
      '/a?x=1&y=%2F',
      '/a?x=\\',
      '/a/.',
      '/a/..',
      '/a//b',
      '/(x)*',
      '/a;b=c:d@e',
    ]) {
      assert.deepEqual(read(canonicalTarget, raw), read(fullReading, raw), raw);
    }
  });
});
