// How `svc domains` writes an app's domains (cli/domains.ts): the list, the records to publish
// exactly as they must be published, the next step, and names in commands and paths.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeDomain, domainPath, domainsTable, shellWord, type DomainBody } from '../../cli/domains.js';

const token = 'svc-verify=3f9a1c0b7e2d4c5a8b6e';

function domain(over: Partial<DomainBody> = {}): DomainBody {
  return {
    name: 'shop.example.com',
    unicode_name: 'shop.example.com',
    app: 'web',
    wildcard: false,
    apex: false,
    declared: false,
    status: 'pending',
    reason: `publish TXT _svc-challenge.shop.example.com with the value ${token}`,
    records: [
      { purpose: 'ownership', type: 'TXT', name: '_svc-challenge.shop.example.com', value: token, observed: null, ok: null },
      { purpose: 'routing', type: 'CNAME', name: 'shop.example.com', value: 'web.apps.localhost', observed: null, ok: null },
    ],
    certificate: null,
    created_at: '2026-11-27T19:00:00.000Z',
    checked_at: null,
    verified_at: null,
    next_check_at: '2026-11-27T19:00:02.000Z',
    ...over,
  };
}

const issued = {
  status: 'issued' as const,
  reason: 'the certificate is served until 2027-02-25T12:00:00.000Z',
  expires_at: '2027-02-25T12:00:00.000Z',
  renews_after: '2027-01-24T03:00:00.000Z',
  retry_after: null,
};
const pendingCert = {
  status: 'pending' as const,
  reason: 'a certificate is being ordered from the CA',
  expires_at: null,
  renews_after: null,
  retry_after: null,
};

describe('svc domains formatting', () => {
  it('lists name, status, and the reason or where it routes', () => {
    assert.deepEqual(
      domainsTable('web', [
        domain(),
        domain({ name: 'www.example.com', unicode_name: 'www.example.com', status: 'verified', reason: null, certificate: issued }),
        domain({ name: 'api.example.com', unicode_name: 'api.example.com', status: 'verified', reason: null, certificate: pendingCert }),
        domain({ name: 'old.example.com', unicode_name: 'old.example.com', status: 'failed', reason: null }),
      ]),
      [
        'NAME              STATUS    HTTPS             REASON',
        `shop.example.com  pending   -                 publish TXT _svc-challenge.shop.example.com with the value ${token}`,
        'www.example.com   verified  until 2027-02-25  routes to web',
        'api.example.com   verified  pending           routes to web',
        'old.example.com   failed    -                 -',
      ],
    );
  });

  it('says how to add one when the app has none', () => {
    assert.deepEqual(domainsTable('web', []), ['app web has no domains; add one: svc domains add web NAME']);
  });

  it('prints a pending domain, its records with their exact values, and the next step', () => {
    const lines = describeDomain(domain());
    assert.deepEqual(lines, [
      'shop.example.com: pending: the records have not been seen yet',
      `publish TXT _svc-challenge.shop.example.com with the value ${token}`,
      `TYPE   NAME                             ${'VALUE'.padEnd(token.length)}  OK`,
      `TXT    _svc-challenge.shop.example.com  ${token}  -`,
      `CNAME  shop.example.com                 ${'web.apps.localhost'.padEnd(token.length)}  -`,
      'publish the records above, then run: svc domains verify web shop.example.com',
    ]);
    // The VALUE column is the record's value and nothing else: no quotes, no trailing dot.
    const valueAt = lines[2]!.indexOf('VALUE');
    assert.equal(lines[3]!.slice(valueAt).split('  ')[0], token);
    assert.equal(lines[4]!.slice(valueAt).trimEnd().split(/ {2,}/)[0], 'web.apps.localhost');
  });

  it('says a verified domain routes to its app, with no next step', () => {
    const d = domain({
      status: 'verified',
      reason: null,
      records: domain().records.map((r) => ({ ...r, ok: true, observed: [r.value] })),
    });
    assert.deepEqual(describeDomain(d), [
      'shop.example.com: verified: routes to web',
      'https: no certificate yet: it is ordered within seconds of verification',
      `TYPE   NAME                             ${'VALUE'.padEnd(token.length)}  OK`,
      `TXT    _svc-challenge.shop.example.com  ${token}  yes`,
      `CNAME  shop.example.com                 ${'web.apps.localhost'.padEnd(token.length)}  yes`,
    ]);
  });

  it('says when a verified domain’s certificate is served until, or why it is not', () => {
    assert.equal(
      describeDomain(domain({ status: 'verified', reason: null, certificate: issued }))[1],
      'https: served, certificate valid until 2027-02-25T12:00:00.000Z, renewed after 2027-01-24T03:00:00.000Z',
    );
    const failed = { ...pendingCert, status: 'failed' as const, reason: 'the CA refused: too many certificates for example.com this week' };
    assert.equal(
      describeDomain(domain({ status: 'verified', reason: null, certificate: failed }))[1],
      'https: failed: the CA refused: too many certificates for example.com this week',
    );
  });

  it('shows what DNS answered for a wrong record, and how to get a misconfigured domain routing again', () => {
    const d = domain({
      status: 'misconfigured',
      reason: 'CNAME shop.example.com points to elsewhere.example.net, not web.apps.localhost',
      records: [
        { ...domain().records[0]!, ok: true, observed: [token] },
        { ...domain().records[1]!, ok: false, observed: ['elsewhere.example.net'] },
      ],
    });
    const lines = describeDomain(d);
    assert.equal(lines[0], 'shop.example.com: misconfigured: not routing until the records are right again');
    assert.match(lines[4]!, /^CNAME {2}shop\.example\.com {2,}web\.apps\.localhost {2,}no \(found elsewhere\.example\.net\)$/);
    assert.equal(lines.at(-1), 'put the records marked "no" right again, then run: svc domains verify web shop.example.com');
    const gone = describeDomain({ ...d, records: [{ ...d.records[0]!, ok: false, observed: [] }, d.records[1]!] });
    assert.match(gone[3]!, /no \(none found\)$/);
  });

  it('tells a failed domain to add it again', () => {
    const lines = describeDomain(domain({ status: 'failed', reason: 'no TXT record at _svc-challenge.shop.example.com in 7 days' }));
    assert.equal(lines[0], 'shop.example.com: failed: no right records in 7 days, the name was released');
    assert.equal(lines.at(-1), 'publish the records above, then add it again: svc domains add web shop.example.com');
  });

  it('prints an apex with one A record per edge address, and an IDN both ways', () => {
    const d = domain({
      name: 'xn--bcher-kva.example',
      unicode_name: 'bücher.example',
      apex: true,
      records: [
        { purpose: 'ownership', type: 'TXT', name: '_svc-challenge.xn--bcher-kva.example', value: token, observed: null, ok: null },
        { purpose: 'routing', type: 'A', name: 'xn--bcher-kva.example', value: '203.0.113.10', observed: null, ok: null },
        { purpose: 'routing', type: 'AAAA', name: 'xn--bcher-kva.example', value: '2001:db8::10', observed: null, ok: null },
      ],
    });
    const lines = describeDomain(d);
    assert.equal(lines[0], 'xn--bcher-kva.example (bücher.example): pending: the records have not been seen yet');
    assert.deepEqual(
      lines.slice(3, 6).map((l) => l.split(/ {2,}/)),
      [
        ['TXT', '_svc-challenge.xn--bcher-kva.example', token, '-'],
        ['A', 'xn--bcher-kva.example', '203.0.113.10', '-'],
        ['AAAA', 'xn--bcher-kva.example', '2001:db8::10', '-'],
      ],
    );
    assert.equal(lines.at(-1), 'publish the records above, then run: svc domains verify web xn--bcher-kva.example');
  });

  it('quotes a wildcard in the command to copy, never in the records', () => {
    const d = domain({
      name: '*.shop.example',
      unicode_name: '*.shop.example',
      wildcard: true,
      records: [
        { purpose: 'ownership', type: 'TXT', name: '_svc-challenge.shop.example', value: token, observed: null, ok: null },
        { purpose: 'routing', type: 'CNAME', name: '*.shop.example', value: 'web.apps.localhost', observed: null, ok: null },
      ],
    });
    const lines = describeDomain(d);
    assert.match(lines[4]!, /^CNAME {2}\*\.shop\.example {2,}web\.apps\.localhost {2,}-$/);
    assert.equal(lines.at(-1), "publish the records above, then run: svc domains verify web '*.shop.example'");
  });

  it('writes names for the shell and for paths', () => {
    assert.equal(shellWord('shop.example.com'), 'shop.example.com');
    assert.equal(shellWord('*.shop.example'), "'*.shop.example'");
    assert.equal(shellWord("it's"), `'it'\\''s'`);
    assert.equal(domainPath('web', '*.shop.example'), '/apps/web/domains/%2A.shop.example');
    assert.equal(domainPath('web', 'bücher.example'), '/apps/web/domains/b%C3%BCcher.example');
  });
});
