// One check of a custom domain's records (lib/domains/check.ts) against a resolver built from a
// table, which fails as node's resolver does (errors with node's codes): when ownership and
// routing hold, the reason and the words when they do not, a wildcard checked on a random name
// under it, and DNS failures kept apart from "no such records".
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { describe, it } from 'node:test';
import { checkDomain, DnsUnavailableError, type DomainResolver } from '../../lib/domains/check.js';
import { parseDomainName, type DomainName } from '../../lib/domains/names.js';
import { dns01Target } from '../../lib/certificates/dns01.js';
import { expectedRecords } from '../../lib/domains/records.js';

/** `'<TYPE> <name>'` to the answer, or to the code the query fails with; a name not there is NXDOMAIN (ENOTFOUND). */
type Table = Record<string, string[] | string[][] | string>;

function fakeResolver(table: Table): DomainResolver & { asked: string[] } {
  const asked: string[] = [];
  const answer =
    <T>(type: string) =>
    async (name: string): Promise<T[]> => {
      asked.push(`${type} ${name}`);
      const a = table[`${type} ${name}`] ?? 'ENOTFOUND';
      if (typeof a === 'string')
        throw Object.assign(new Error(`query${type === 'TXT' ? 'Txt' : type} ${a} ${name}`), { code: a, hostname: name });
      return a as T[];
    };
  return {
    asked,
    resolveTxt: answer<string[]>('TXT'),
    resolveCname: answer<string>('CNAME'),
    resolve4: answer<string>('A'),
    resolve6: answer<string>('AAAA'),
  };
}

function domain(input: string): DomainName {
  const parsed = parseDomainName(input, { appsDomain: 'apps.example.com' });
  assert.ok(parsed.ok);
  return parsed.name;
}

const edge = ['192.0.2.10', '2001:db8::10'];
const app = 'web.apps.example.com';
const txt = 'svc-verify=tok123';

async function check(input: string, table: Table, o: { edgeAddresses?: string[]; randomLabel?: () => string } = {}) {
  const d = domain(input);
  const edgeAddresses = o.edgeAddresses ?? edge;
  const expected = expectedRecords(d, { token: 'tok123', appHost: app, edgeAddresses });
  const resolver = fakeResolver(table);
  return { result: await checkDomain(d, expected, resolver, { ...o, edgeAddresses }), asked: resolver.asked };
}

describe('domain check', () => {
  it('verifies a subdomain: its TXT (in chunks) and its CNAME (any case, a trailing dot)', async () => {
    const { result } = await check('www.shop.example', {
      'TXT _svc-challenge.www.shop.example': [['v=spf1 -all'], ['svc-verify=', 'tok123']],
      'CNAME www.shop.example': ['Web.Apps.Example.COM.'],
    });
    assert.deepEqual(result, {
      records: [
        {
          purpose: 'ownership',
          type: 'TXT',
          name: '_svc-challenge.www.shop.example',
          value: txt,
          observed: ['v=spf1 -all', txt],
          ok: true,
        },
        { purpose: 'routing', type: 'CNAME', name: 'www.shop.example', value: app, observed: [app], ok: true },
      ],
      ownership: true,
      routing: true,
      reason: 'Verified',
      message: 'the ownership and routing records are published',
    });
  });

  it('says what to publish when nothing is there', async () => {
    const { result } = await check('www.shop.example', {});
    assert.equal(result.reason, 'RecordsMissing');
    assert.equal(result.ownership, false);
    assert.equal(result.routing, false);
    assert.deepEqual(
      result.records.map((r) => r.observed),
      [[], []],
    );
    assert.equal(
      result.message,
      `publish TXT _svc-challenge.www.shop.example with the value ${txt}; ` +
        `publish CNAME www.shop.example with the value ${app} (or A/AAAA records to the platform's edge: 192.0.2.10, 2001:db8::10)`,
    );
  });

  it('tells a missing record from a wrong one, ownership first', async () => {
    const cname = { 'CNAME www.shop.example': [app] };
    const right = { 'TXT _svc-challenge.www.shop.example': [[txt]] };

    let { result } = await check('www.shop.example', cname);
    assert.equal(result.reason, 'OwnershipMissing');
    assert.deepEqual([result.ownership, result.routing], [false, true]);
    assert.equal(result.message, `publish TXT _svc-challenge.www.shop.example with the value ${txt}`);

    ({ result } = await check('www.shop.example', { ...cname, 'TXT _svc-challenge.www.shop.example': [['svc-verify=someone-else']] }));
    assert.equal(result.reason, 'OwnershipWrong');
    assert.equal(
      result.message,
      `_svc-challenge.www.shop.example has the TXT values "svc-verify=someone-else", none of them ${txt}: ` +
        `publish TXT _svc-challenge.www.shop.example with the value ${txt}`,
    );

    ({ result } = await check('www.shop.example', right, { edgeAddresses: [] }));
    assert.equal(result.reason, 'RoutingMissing');
    assert.equal(result.message, `publish CNAME www.shop.example with the value ${app}`);

    ({ result } = await check(
      'www.shop.example',
      { ...right, 'CNAME www.shop.example': ['other.apps.example.com'] },
      { edgeAddresses: [] },
    ));
    assert.equal(result.reason, 'RoutingWrong');
    assert.deepEqual(result.records[1]?.observed, ['other.apps.example.com']);
    assert.equal(
      result.message,
      `www.shop.example is a CNAME to other.apps.example.com, not ${app}: publish CNAME www.shop.example with the value ${app}`,
    );

    ({ result } = await check('www.shop.example', { ...right, 'A www.shop.example': ['203.0.113.5'] }, { edgeAddresses: [] }));
    assert.equal(result.reason, 'RoutingWrong', 'addresses where the CNAME belongs are something, not nothing');
    assert.deepEqual(result.records[1]?.observed, ['203.0.113.5']);
    assert.match(
      result.message,
      /^www\.shop\.example has the addresses 203\.0\.113\.5, which are not the platform's: replace them with CNAME/,
    );

    ({ result } = await check('www.shop.example', { 'TXT _svc-challenge.www.shop.example': [['svc-verify=old']] }));
    assert.equal(result.reason, 'OwnershipWrong', 'one is wrong, so not all is missing');
    assert.match(result.message, /none of them svc-verify=tok123: publish TXT .*; publish CNAME www\.shop\.example/);
  });

  it("shortens the TXT values it quotes: they are the domain's to choose", async () => {
    const values = ['x'.repeat(300), 'a', 'b', 'c', 'd'].map((v) => [v]);
    const { result } = await check('www.shop.example', { 'TXT _svc-challenge.www.shop.example': values, 'CNAME www.shop.example': [app] });
    assert.equal(result.records[0]?.observed.length, 5, 'the status keeps every value');
    assert.match(
      result.message,
      new RegExp(`^_svc-challenge.www.shop.example has the TXT values "${'x'.repeat(100)}…", "a", "b" and 2 more, none`),
    );
  });

  it("takes a subdomain whose addresses are all the edge's instead of a CNAME, where the platform has edge addresses", async () => {
    const right = { 'TXT _svc-challenge.www.shop.example': [[txt]] };
    let { result } = await check('www.shop.example', {
      ...right,
      'A www.shop.example': ['192.0.2.10'],
      'AAAA www.shop.example': ['2001:db8::10'],
    });
    assert.equal(result.reason, 'Verified');
    assert.deepEqual(result.records[1]?.observed, ['192.0.2.10', '2001:db8::10']);

    ({ result } = await check('www.shop.example', { ...right, 'A www.shop.example': ['192.0.2.10', '203.0.113.5'] }));
    assert.equal(result.reason, 'RoutingWrong', 'one foreign address sends some visitors elsewhere');

    ({ result } = await check('www.shop.example', { ...right, 'A www.shop.example': ['192.0.2.10'] }, { edgeAddresses: [] }));
    assert.equal(result.reason, 'RoutingWrong', 'without edge addresses only the CNAME routes');
  });

  it('verifies an apex by its A/AAAA answers, all of them at the edge', async () => {
    const right = { 'TXT _svc-challenge.shop.example': [[txt]] };
    const first = await check('shop.example', {
      ...right,
      'A shop.example': ['192.0.2.10'],
      'AAAA shop.example': ['2001:db8::10'],
    });
    let result = first.result;
    assert.equal(result.reason, 'Verified');
    assert.deepEqual(
      result.records.slice(1).map((r) => [r.type, r.value, r.observed, r.ok]),
      [
        ['A', '192.0.2.10', ['192.0.2.10'], true],
        ['AAAA', '2001:db8::10', ['2001:db8::10'], true],
      ],
    );
    assert.ok(!first.asked.some((q) => q.startsWith('CNAME')), 'an apex has no CNAME to ask for');

    ({ result } = await check('shop.example', { ...right, 'A shop.example': ['192.0.2.10'] }));
    assert.equal(result.routing, true, 'any of the records routes');
    assert.deepEqual(
      result.records.slice(1).map((r) => r.ok),
      [true, false],
      'the row of the address not published says so',
    );

    ({ result } = await check('shop.example', { ...right, 'A shop.example': ['192.0.2.10'], 'AAAA shop.example': ['2001:db8::99'] }));
    assert.equal(result.reason, 'RoutingWrong');
    assert.equal(
      result.message,
      "shop.example has the addresses 2001:db8::99, which are not the platform's: " +
        'replace them with A shop.example with the value 192.0.2.10 and AAAA shop.example with the value 2001:db8::10',
    );

    ({ result } = await check('shop.example', right));
    assert.equal(result.reason, 'RoutingMissing');
    assert.equal(result.message, 'publish A shop.example with the value 192.0.2.10 and AAAA shop.example with the value 2001:db8::10');
  });

  it('compares addresses as DNS writes them, whatever the configured spelling', async () => {
    const { result } = await check(
      'shop.example',
      { 'TXT _svc-challenge.shop.example': [[txt]], 'AAAA shop.example': ['2001:db8::10'] },
      { edgeAddresses: ['2001:0DB8:0000::0010'] },
    );
    assert.equal(result.reason, 'Verified');
  });

  it('checks a wildcard on a random name under it, and ownership under its base', async () => {
    const table = { 'TXT _svc-challenge.shop.example': [[txt]], 'CNAME svc-check-0badc0de.shop.example': [app] };
    const { result, asked } = await check('*.shop.example', table, { randomLabel: () => 'svc-check-0badc0de' });
    assert.equal(result.reason, 'Verified');
    assert.deepEqual(
      result.records.map((r) => [r.type, r.name, r.observed]),
      [
        ['TXT', '_svc-challenge.shop.example', [txt]],
        ['CNAME', '*.shop.example', [app]],
      ],
    );
    assert.ok(asked.includes('CNAME svc-check-0badc0de.shop.example'));

    const missing = await check(
      '*.shop.example',
      { 'TXT _svc-challenge.shop.example': [[txt]] },
      { randomLabel: () => 'svc-check-0badc0de' },
    );
    assert.equal(missing.result.reason, 'RoutingMissing');
    assert.match(
      missing.result.message,
      /^publish CNAME \*\.shop\.example with the value web\.apps\.example\.com .*\(svc-check-0badc0de\.shop\.example, a name under the wildcard, was asked\)$/,
    );
  });

  it("checks a wildcard's DNS-01 delegation beside, never deciding verification: said, and kept apart when DNS fails there", async () => {
    const d = domain('*.shop.example');
    const target = dns01Target('acme.platform.test', 'acc_1', 'shop.example');
    const expected = expectedRecords(d, {
      token: 'tok123',
      appHost: app,
      edgeAddresses: edge,
      dns01: { zone: 'acme.platform.test', accountId: 'acc_1' },
    });
    const base: Table = { 'TXT _svc-challenge.shop.example': [[txt]], 'CNAME x.shop.example': [app] };
    const run = (t: Table) => checkDomain(d, expected, fakeResolver({ ...base, ...t }), { edgeAddresses: edge, randomLabel: () => 'x' });
    let r = await run({});
    assert.equal(r.reason, 'Verified');
    assert.deepEqual(r.records[2], { ...expected[2], observed: [], ok: false });
    assert.equal(
      r.message,
      `the ownership and routing records are published; for its certificate, publish CNAME _acme-challenge.shop.example with the value ${target}`,
    );
    r = await run({ 'CNAME _acme-challenge.shop.example': ['elsewhere.example.'] });
    assert.equal(r.reason, 'Verified');
    assert.match(r.message, /_acme-challenge\.shop\.example is a CNAME to elsewhere\.example, not /);
    r = await run({ 'CNAME _acme-challenge.shop.example': 'ESERVFAIL' });
    assert.equal(r.reason, 'Verified', 'a failure on the delegation does not fail the check');
    assert.equal(r.records[2]!.ok, false);
    r = await run({ 'CNAME _acme-challenge.shop.example': [`${target.toUpperCase()}.`] });
    assert.deepEqual(r.records[2], { ...expected[2], observed: [target], ok: true });
    assert.equal(r.message, 'the ownership and routing records are published');
    r = await run({ 'TXT _svc-challenge.shop.example': [] });
    assert.equal(r.reason, 'OwnershipMissing');
    assert.match(r.message, /; for its certificate, publish CNAME _acme-challenge/);
  });

  it('makes up a fresh label for each check of a wildcard', async () => {
    const first = await check('*.shop.example', {});
    const second = await check('*.shop.example', {});
    const probe = (asked: string[]) => asked.find((q) => q.startsWith('CNAME '))!.slice('CNAME '.length);
    assert.match(probe(first.asked), /^svc-check-[0-9a-f]{8}\.shop\.example$/);
    assert.notEqual(probe(first.asked), probe(second.asked));
  });

  it('counts NXDOMAIN and NODATA answers as no records', async () => {
    for (const code of ['ENOTFOUND', 'ENODATA', 'NXDOMAIN']) {
      const { result } = await check('www.shop.example', { 'TXT _svc-challenge.www.shop.example': code, 'CNAME www.shop.example': code });
      assert.equal(result.reason, 'RecordsMissing', code);
    }
  });

  it('throws DnsUnavailableError when DNS fails, rather than calling the domain misconfigured', async () => {
    for (const code of ['ESERVFAIL', 'ETIMEOUT', 'ECONNREFUSED', 'EREFUSED']) {
      const err = await check('www.shop.example', { 'TXT _svc-challenge.www.shop.example': [[txt]], 'CNAME www.shop.example': code }).then(
        () => assert.fail(`${code} taken as an answer`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof DnsUnavailableError, code);
      assert.equal(err.code, code);
      assert.equal(err.query, 'CNAME www.shop.example');
      assert.equal(err.message, `the CNAME www.shop.example query failed (${code})`);
      assert.ok(err.cause instanceof Error);
    }
    const d = domain('shop.example');
    const broken: DomainResolver = {
      resolveTxt: () => Promise.reject(new Error('socket hang up')),
      resolveCname: async () => [],
      resolve4: async () => [],
      resolve6: async () => [],
    };
    await assert.rejects(checkDomain(d, expectedRecords(d, { token: 't', appHost: app, edgeAddresses: edge }), broken), {
      name: 'DnsUnavailableError',
      message: 'the TXT _svc-challenge.shop.example query failed',
      code: undefined,
    });
  });

  it("takes node's resolver as it is", () => {
    const resolver: DomainResolver = new Resolver();
    assert.equal(typeof resolver.resolveTxt, 'function');
  });
});
