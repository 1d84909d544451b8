// Custom domain names (lib/domains/names.ts), pure: the one spelling each accepted name is stored in
// (lowercase punycode, no trailing dot, `*.` for a wildcard), whether it is an apex, and which
// top-level domains are served. Hostile spellings are test/security/domain-names.test.ts's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDomainName, type DomainName } from '../../lib/domains/names.js';

const o = { appsDomain: 'apps.localhost' };

function accepted(input: string, opts = o): DomainName {
  const parsed = parseDomainName(input, opts);
  assert.ok(parsed.ok, `${JSON.stringify(input)} refused: ${parsed.ok ? '' : parsed.message}`);
  return parsed.name;
}

function refusal(input: string, opts = o): string {
  const parsed = parseDomainName(input, opts);
  assert.ok(!parsed.ok, `${JSON.stringify(input)} accepted as ${parsed.ok ? parsed.name.name : ''}`);
  return parsed.message;
}

describe('domain names', () => {
  it('takes a domain and a subdomain, telling the apex from a name under it', () => {
    assert.deepEqual(accepted('shop.example'), {
      name: 'shop.example',
      unicode: 'shop.example',
      wildcard: false,
      base: 'shop.example',
      apex: true,
    });
    assert.deepEqual(accepted('www.shop.example'), {
      name: 'www.shop.example',
      unicode: 'www.shop.example',
      wildcard: false,
      base: 'www.shop.example',
      apex: false,
    });
    assert.equal(accepted('example.com').apex, true);
    assert.equal(accepted('a.b.example.com').apex, false);
    assert.equal(accepted('shop.co.uk').apex, true, 'the registrable domain under a two-label suffix');
    assert.equal(accepted('www.shop.co.uk').apex, false);
  });

  it('reads any letter case and one trailing dot as the same name', () => {
    for (const spelling of ['Shop.Example', 'SHOP.EXAMPLE.', 'shop.example.', 'sHoP.eXaMpLe'])
      assert.equal(accepted(spelling).name, 'shop.example');
  });

  it('takes a wildcard as the whole first label, its base the name under it', () => {
    assert.deepEqual(accepted('*.Shop.Example.'), {
      name: '*.shop.example',
      unicode: '*.shop.example',
      wildcard: true,
      base: 'shop.example',
      apex: true,
    });
    assert.equal(accepted('*.eu.shop.example').apex, false);
  });

  it('stores Unicode names in punycode and shows them as a person reads them', () => {
    assert.deepEqual(accepted('Bücher.example'), {
      name: 'xn--bcher-kva.example',
      unicode: 'bücher.example',
      wildcard: false,
      base: 'xn--bcher-kva.example',
      apex: true,
    });
    assert.equal(accepted('*.bücher.example').name, '*.xn--bcher-kva.example');
    assert.equal(accepted('*.bücher.example').unicode, '*.bücher.example');
    assert.equal(accepted('shop。example').name, 'shop.example', 'an ideographic full stop separates labels, as browsers read it');
    assert.equal(accepted('例え.テスト.example').unicode, '例え.テスト.example');
  });

  it('takes punycode typed as such when it decodes, in any case', () => {
    const n = accepted('XN--BCHER-KVA.example');
    assert.equal(n.name, 'xn--bcher-kva.example');
    assert.equal(n.unicode, 'bücher.example');
  });

  it('parses every name it stores back to itself (the API parses stored names again)', () => {
    for (const input of [
      'shop.example',
      '*.shop.example',
      'Bücher.example',
      '*.bücher.example',
      'www.shop.co.uk',
      'foo.github.io',
      'app.test',
    ]) {
      const once = accepted(input);
      assert.deepEqual(accepted(once.name), once, input);
      assert.deepEqual(accepted(once.unicode), once, `${input} as shown`);
    }
  });

  it('takes .example and .test, which local platforms and tests serve, and refuses the other reserved names', () => {
    assert.equal(accepted('app.test').name, 'app.test');
    assert.equal(accepted('shop.example').name, 'shop.example');
    assert.equal(accepted('*.app.test').name, '*.app.test');
    assert.match(refusal('foo.localhost'), /\.localhost are this machine/);
    assert.match(refusal('printer.local'), /\.local are multicast DNS names/);
    assert.match(refusal('db.internal'), /\.internal are reserved for private networks/);
    assert.match(refusal('x.invalid'), /\.invalid never exist/);
    assert.match(refusal('abc.onion'), /\.onion are Tor services/);
    assert.match(refusal('nas.home.arpa'), /\.arpa are infrastructure/);
    assert.match(refusal('1.0.0.127.in-addr.arpa'), /\.arpa are infrastructure/);
  });

  it('refuses a top-level domain the Public Suffix List does not know, and takes private-section registrations', () => {
    assert.match(refusal('intranet.corp'), /the top-level domain \.corp is not a public one/);
    assert.match(refusal('nas.lan'), /\.lan is not a public one/);
    assert.match(refusal('shop.notatld'), /\.notatld is not a public one/);
    assert.deepEqual(accepted('me.github.io'), {
      name: 'me.github.io',
      unicode: 'me.github.io',
      wildcard: false,
      base: 'me.github.io',
      apex: true,
    });
    assert.equal(accepted('docs.me.github.io').apex, false);
  });

  it('refuses the apps domain and names under it, however it is configured or spelled', () => {
    for (const appsDomain of ['apps.example.com', 'Apps.Example.Com.']) {
      const opts = { appsDomain };
      for (const input of [
        'apps.example.com',
        'web.apps.example.com',
        'WEB.APPS.EXAMPLE.COM.',
        '*.apps.example.com',
        'a.b.apps.example.com',
      ])
        assert.match(refusal(input, opts), /apps\.example\.com is the platform's apps domain/, input);
      assert.equal(accepted('example.com', opts).name, 'example.com', 'the domain above it may be a customer site');
      assert.equal(accepted('myapps.example.com', opts).name, 'myapps.example.com', 'a label ending the same is another name');
    }
  });

  it('takes the longest name whose records fit, and refuses one character more', () => {
    const labels = (n: number) => Array.from({ length: n }, () => 'a'.repeat(60)).join('.');
    const fits = `${labels(3)}.${'b'.repeat(234 - 183 - 8)}.example`;
    assert.equal(fits.length, 234);
    assert.equal(accepted(fits).name, fits);
    assert.equal(accepted(`*.${fits}`).name, `*.${fits}`);
    assert.match(refusal(`c${fits}`), /it is 235 characters long; at most 234 fit/);
  });
});
