// Attack: hostile custom domain names (issue 32). A name an account adds becomes a claim in
// PostgreSQL, a resource name, DNS queries and a Host ingress-auth routes, so every spelling that
// would be read two ways is refused with its reason: IP literals of any spelling (the edge or the
// resolver would reach an address, not a name), the platform's own apps domain (another app's
// hostname), public suffixes (every name under them), names public DNS never answers, characters
// outside letters, digits and hyphens (injection into DNS queries, logs, headers), and malformed
// labels. An IDN homograph is stored as its punycode, so it is its own name, never the one it mimics.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDomainName } from '../../lib/domains/names.js';

const o = { appsDomain: 'apps.example.com' };

const ip = /^it is an IP address, not a domain name/;

/** 14 different CJK characters: 41 in punycode. */
const cjk = (k: number) => Array.from({ length: 14 }, (_, i) => String.fromCodePoint(0x4e00 + k * 997 + i * 131)).join('');

// Each hostile spelling with what its refusal must say.
const refused: Array<[string, RegExp]> = [
  ['', /^the name is empty$/],
  ['.', /empty label/],
  ['a..example.com', /empty label/],
  ['.example.com', /empty label/],
  ['example.com..', /empty label/],
  [`${'a'.repeat(64)}.example.com`, /is 64 characters long; a label has at most 63$/],
  [`${Array.from({ length: 5 }, () => 'a'.repeat(50)).join('.')}.com`, /^it is 258 characters long; a domain name has at most 253$/],
  // 93 characters as typed, 255 in punycode: the limit is DNS's, on the converted name.
  [`${Array.from({ length: 6 }, (_, k) => cjk(k)).join('.')}.com`, /^it is 255 characters long; a domain name has at most 253$/],
  ['a_b.example.com', /^it contains an underscore;/],
  ['_dmarc.example.com', /^it contains an underscore;/],
  ['shop example.com', /^it contains a space;/],
  [' shop.example.com', /^it contains a space;/],
  ['shop.example.com\t', /control character \(U\+0009\)/],
  ['shop.example.com\r\nX-Injected: 1', /control character \(U\+000D\)/],
  ['shop\x00.example.com', /control character \(U\+0000\)/],
  ['shop\x7f.example.com', /control character \(U\+007F\)/],
  ['shop\u0085.example.com', /control character \(U\+0085\)/],
  ['shop%2eexample.com', /^it contains "%";/],
  ['https://shop.example.com/', /^it contains ":"/],
  ['shop.example.com/path', /^it contains "\/" \(give the domain alone/],
  ['user@shop.example.com', /^it contains "@";/],
  ['shop.example.com:443', /^it contains ":" \(a port or an address is not part of a domain name\)/],
  ['shop.example.com\\evil.com', /^it contains "\\";/],
  ['shop.example.com?x', /^it contains "\?";/],
  ['shop.example.com#x', /^it contains "#";/],
  ['"shop.example.com"', /^it contains """;/],
  ['a＿b.example.com', /^it contains an underscore;/],
  ['shop／example.com', /not a valid internationalized domain name/],
  ['-shop.example.com', /the label "-shop" starts or ends with a hyphen$/],
  ['shop-.example.com', /the label "shop-" starts or ends with a hyphen$/],
  ['xn--zz.example.com', /the label "xn--zz" starts with xn-- but is not valid punycode/],
  ['xn--.example.com', /the label "xn--" starts or ends with a hyphen|not valid punycode/],
  ['xn--abc.example.com', /the label "xn--abc" starts with xn-- but is not valid punycode/],
  ['*', /^a wildcard "\*" may only be the whole first label/],
  ['**.example.com', /^a wildcard "\*" may only be the whole first label/],
  ['*shop.example.com', /^a wildcard "\*" may only be the whole first label/],
  ['www.*.example.com', /^a wildcard "\*" may only be the whole first label/],
  ['*.*.example.com', /^a wildcard "\*" may only be the whole first label/],
  ['＊.example.com', /^a wildcard "\*" may only be the whole first label/],
  ['127.0.0.1', ip],
  ['127.0.0.1.', ip],
  ['169.254.169.254', ip],
  ['0.0.0.0', ip],
  ['[::1]', ip],
  ['::1', ip],
  ['[::ffff:127.0.0.1]', ip],
  ['::ffff:7f00:1', ip],
  ['fe80::1%eth0', ip],
  ['0x7f.1', ip],
  ['0x7f000001', ip],
  ['0177.0.0.1', ip],
  ['2130706433', ip],
  ['127.1', ip],
  ['1.2.3.4.5', ip],
  ['shop.123', ip],
  ['shop.0x1f', ip],
  ['*.127.0.0.1', ip],
  ['１２７.０.０.１', ip],
  ['localhost', /^"localhost" is a single label/],
  ['com', /^"com" is a single label/],
  ['COM.', /^"com" is a single label/],
  ['co.uk', /^co\.uk is a public suffix/],
  ['github.io', /^github\.io is a public suffix/],
  ['s3.amazonaws.com', /^s3\.amazonaws\.com is a public suffix/],
  ['*.com', /^a wildcard directly over the top-level domain \.com/],
  ['*.co.uk', /^a wildcard directly over the public suffix co\.uk/],
  ['*.github.io', /^a wildcard directly over the public suffix github\.io/],
  ['apps.example.com', /^apps\.example\.com is the platform's apps domain/],
  ['web.apps.example.com', /^apps\.example\.com is the platform's apps domain/],
  ['WEB.Apps.Example.com.', /^apps\.example\.com is the platform's apps domain/],
  ['*.apps.example.com', /^apps\.example\.com is the platform's apps domain/],
  ['localhost.localhost', /\.localhost are this machine/],
  ['metadata.google.internal', /\.internal are reserved for private networks/],
  ['printer.local', /\.local are multicast DNS names/],
  ['x.invalid', /\.invalid never exist/],
  ['1.0.0.127.in-addr.arpa', /\.arpa are infrastructure/],
  ['kubernetes.default.svc.cluster.local', /\.local are multicast DNS names/],
  ['kubernetes.default.svc', /the top-level domain \.svc is not a public one/],
  ['intranet.corp', /the top-level domain \.corp is not a public one/],
];

describe('security: custom domain names', () => {
  it(`refuses ${refused.length} hostile spellings, each with its reason`, () => {
    for (const [input, reason] of refused) {
      const parsed = parseDomainName(input, o);
      assert.ok(!parsed.ok, `${JSON.stringify(input)} accepted as ${parsed.ok ? parsed.name.name : ''}`);
      assert.match(parsed.message, reason, JSON.stringify(input));
    }
  });

  it('stores a homograph as its punycode, a name of its own, never the name it mimics', () => {
    const parsed = parseDomainName('аpple.com', o); // the first letter is Cyrillic а (U+0430)
    assert.ok(parsed.ok);
    assert.equal(parsed.name.name, 'xn--pple-43d.com');
    assert.notEqual(parsed.name.name, 'apple.com');
    assert.equal(parsed.name.base, 'xn--pple-43d.com');
    assert.equal(parsed.name.unicode, 'аpple.com');
    // A whole-script look-alike too: ԁ (U+0501) and е (U+0435).
    const mixed = parseDomainName('ԁеv.example.com', o);
    assert.ok(mixed.ok);
    assert.match(mixed.name.name, /^xn--[a-z0-9-]+\.example\.com$/);
  });

  it('refuses a homograph of the apps domain only where it is the apps domain: a look-alike is another name', () => {
    const lookalike = parseDomainName('web.аpps.example.com', o);
    assert.ok(lookalike.ok, 'its records are published under its own name, which the platform does not serve');
    assert.equal(lookalike.name.name, 'web.xn--pps-5cd.example.com');
  });

  it('reads characters browsers ignore or map as browsers do, so the name claimed is the name visited', () => {
    for (const [input, name] of [
      ['app\u200Ble.example.com', 'apple.example.com'], // a zero-width space
      ['ＳＨＯＰ.example.com', 'shop.example.com'], // full-width letters
      ['shop。example。com', 'shop.example.com'], // ideographic full stops
    ] as const) {
      const parsed = parseDomainName(input, o);
      assert.ok(parsed.ok, input);
      assert.equal(parsed.name.name, name, JSON.stringify(input));
    }
  });

  it('stores only lowercase letters, digits, hyphens and dots (and a leading *.)', () => {
    const inputs = ['Shop.Example.com.', '*.BÜCHER.example.com', 'xn--pple-43d.com', 'a-b.c-d.example.com', 'ԁеv.example.com'];
    for (const input of inputs) {
      const parsed = parseDomainName(input, o);
      assert.ok(parsed.ok, input);
      assert.match(parsed.name.name, /^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)+$/, input);
    }
  });
});
