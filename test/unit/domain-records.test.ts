// The records a custom domain needs (lib/domains/records.ts), pure: ownership always a TXT under
// the base, routing a CNAME to the app's hostname, or for an apex one A/AAAA per edge address; and
// an apex refused where the platform has no edge addresses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDomainName, type DomainName } from '../../lib/domains/names.js';
import { dns01Target } from '../../lib/certificates/dns01.js';
import { apexNeedsEdge, expectedRecords } from '../../lib/domains/records.js';

function domain(input: string): DomainName {
  const parsed = parseDomainName(input, { appsDomain: 'apps.example.com' });
  assert.ok(parsed.ok);
  return parsed.name;
}

const o = { token: 'tok123', appHost: 'web.apps.example.com', edgeAddresses: ['192.0.2.10', '2001:DB8:0:0::10', '198.51.100.7'] };

describe('domain records', () => {
  it('a subdomain: TXT _svc-challenge.<name> and a CNAME to the app', () => {
    assert.deepEqual(expectedRecords(domain('www.shop.example'), o), [
      { purpose: 'ownership', type: 'TXT', name: '_svc-challenge.www.shop.example', value: 'svc-verify=tok123' },
      { purpose: 'routing', type: 'CNAME', name: 'www.shop.example', value: 'web.apps.example.com' },
    ]);
  });

  it('a wildcard: ownership under its base, the CNAME on *.<base> (also over an apex)', () => {
    assert.deepEqual(expectedRecords(domain('*.shop.example'), o), [
      { purpose: 'ownership', type: 'TXT', name: '_svc-challenge.shop.example', value: 'svc-verify=tok123' },
      { purpose: 'routing', type: 'CNAME', name: '*.shop.example', value: 'web.apps.example.com' },
    ]);
  });

  it("with DNS-01, a wildcard also delegates _acme-challenge.<base> to this account's name in the platform's zone; other names do not", () => {
    const dns01 = { zone: 'acme.platform.test', accountId: 'acc_1' };
    const records = expectedRecords(domain('*.shop.example'), { ...o, dns01 });
    assert.deepEqual(records[2], {
      purpose: 'certificate',
      type: 'CNAME',
      name: '_acme-challenge.shop.example',
      value: dns01Target('acme.platform.test', 'acc_1', 'shop.example'),
    });
    assert.match(records[2].value, /^[a-z2-7]{26}\.acme\.platform\.test$/, 'one DNS label under the zone');
    assert.notEqual(records[2].value, dns01Target('acme.platform.test', 'acc_2', 'shop.example'), 'per account');
    assert.notEqual(records[2].value, dns01Target('acme.platform.test', 'acc_1', 'other.example'), 'per name');
    assert.equal(records[2].value, dns01Target('acme.platform.test', 'acc_1', 'shop.example'), 'stable');
    assert.equal(expectedRecords(domain('www.shop.example'), { ...o, dns01 }).length, 2, 'HTTP-01 serves a name that is not a wildcard');
    assert.equal(expectedRecords(domain('*.shop.example'), o).length, 2, 'no zone, no delegation asked');
  });

  it('an apex: one A per IPv4 and one AAAA per IPv6 edge address, IPv6 as DNS writes it', () => {
    assert.deepEqual(expectedRecords(domain('shop.example'), o), [
      { purpose: 'ownership', type: 'TXT', name: '_svc-challenge.shop.example', value: 'svc-verify=tok123' },
      { purpose: 'routing', type: 'A', name: 'shop.example', value: '192.0.2.10' },
      { purpose: 'routing', type: 'AAAA', name: 'shop.example', value: '2001:db8::10' },
      { purpose: 'routing', type: 'A', name: 'shop.example', value: '198.51.100.7' },
    ]);
  });

  it('names an IDN in punycode, as it must be published', () => {
    const records = expectedRecords(domain('www.bücher.example'), o);
    assert.deepEqual(
      records.map((r) => r.name),
      ['_svc-challenge.www.xn--bcher-kva.example', 'www.xn--bcher-kva.example'],
    );
  });

  it("writes the app's hostname as DNS answers compare it", () => {
    const [, cname] = expectedRecords(domain('www.shop.example'), { ...o, appHost: 'Web.Apps.Example.com.' });
    assert.equal(cname?.value, 'web.apps.example.com');
  });

  it('refuses an apex only where the platform has no edge addresses', () => {
    assert.equal(
      apexNeedsEdge(domain('shop.example'), []),
      'shop.example is an apex domain, where DNS allows no CNAME, and this platform has no edge addresses for A/AAAA records: ' +
        'add a subdomain such as www.shop.example instead',
    );
    assert.match(apexNeedsEdge(domain('shop.example'), ['not-an-address']) ?? '', /no edge addresses/, 'only addresses count');
    assert.equal(apexNeedsEdge(domain('shop.example'), ['192.0.2.10']), undefined);
    assert.equal(apexNeedsEdge(domain('www.shop.example'), []), undefined);
    assert.equal(apexNeedsEdge(domain('*.shop.example'), []), undefined, 'a wildcard over an apex is a CNAME');
  });
});
