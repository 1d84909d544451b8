// The pure parts of the console's domains, databases and volumes pages (console/src/resources.ts):
// a domain's status and certificate in words, the records to publish and what the last check saw of
// each, what the add form refuses before asking the API, sizes and how full in words, a database's
// phase and whether it may be deleted, a volume's owner and state, and the pages' routes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bytesInWords,
  certificateInWords,
  databaseDeletable,
  databasePhaseInWords,
  databaseSizes,
  deletionInWords,
  domainInputProblem,
  domainLabel,
  domainStatusInWords,
  recordCheckInWords,
  recordRows,
  usageInWords,
  volumeOwnerInWords,
  volumeStateInWords,
  zoneLines,
  type DomainFacts,
  type VolumeFacts,
} from '../../console/src/resources.js';
import { hrefOf, routeOf, type Route } from '../../console/src/routes.js';

const domain = (over: Partial<DomainFacts> = {}): DomainFacts => ({
  name: 'shop.example.com',
  unicode_name: 'shop.example.com',
  app: 'web',
  wildcard: false,
  apex: false,
  declared: false,
  status: 'pending',
  reason: 'not checked yet: the first check runs within seconds of adding',
  records: [
    {
      purpose: 'ownership',
      type: 'TXT',
      name: '_svc-challenge.shop.example.com',
      value: 'svc-verify=3f1c9e0b7a5d42e8b1c6f0a9d3e7b2c4a8f1e5d0',
      observed: null,
      ok: null,
    },
    { purpose: 'routing', type: 'CNAME', name: 'shop.example.com', value: 'web.apps.localhost', observed: null, ok: null },
  ],
  certificate: null,
  checked_at: null,
  next_check_at: null,
  ...over,
});

const volume = (over: Partial<VolumeFacts> = {}): VolumeFacts => ({
  ref: 'shop-data-m0',
  kind: 'machine',
  app: 'shop',
  service: null,
  machine: 0,
  volume: 'data',
  database: null,
  attached: true,
  mounted_by: 'shop-m0-5c1e0a9b2d',
  ...over,
});

describe('console domains page: a domain in words', () => {
  it('says each status, with what to do next where there is something to do', () => {
    assert.deepEqual(domainStatusInWords(domain()), {
      text: 'Pending: the records have not been seen yet',
      tone: 'busy',
      next: 'Publish the records below; the platform checks again by itself, or check now.',
    });
    assert.deepEqual(domainStatusInWords(domain({ status: 'verified' })), { text: 'Verified: routes to web', tone: 'ok', next: undefined });
    assert.equal(domainStatusInWords(domain({ status: 'misconfigured' })).tone, 'bad');
    assert.match(domainStatusInWords(domain({ status: 'misconfigured' })).text, /not routing/);
    assert.match(domainStatusInWords(domain({ status: 'failed' })).next!, /add the domain again/);
  });

  it('names an internationalized domain as it reads, with its punycode beside', () => {
    assert.equal(domainLabel(domain()), 'shop.example.com');
    assert.equal(domainLabel({ name: 'xn--bcher-kva.example', unicode_name: 'bücher.example' }), 'bücher.example (xn--bcher-kva.example)');
  });

  it('says the certificate: none before verification, ordered, served until when, failed with why', () => {
    assert.deepEqual(certificateInWords(domain()), { text: 'None until the domain is verified', tone: 'idle' });
    assert.match(certificateInWords(domain({ status: 'verified' })).text, /ordered within seconds/);
    const cert = {
      status: 'issued' as const,
      reason: null,
      expires_at: '2027-02-25T10:00:00.000Z',
      renews_after: '2026-12-27T10:00:00.000Z',
      retry_after: null,
    };
    assert.deepEqual(certificateInWords(domain({ status: 'verified', certificate: cert })), {
      text: 'Served over HTTPS, valid until 2027-02-25, renewed after 2026-12-27',
      tone: 'ok',
    });
    assert.deepEqual(
      certificateInWords(
        domain({
          status: 'verified',
          certificate: {
            ...cert,
            status: 'failed',
            reason: 'Dns01DelegationMissing: publish CNAME _acme-challenge…',
            retry_after: '2026-11-28T10:00:00Z',
          },
        }),
      ),
      { text: 'Failed: Dns01DelegationMissing: publish CNAME _acme-challenge… (tried again after 2026-11-28)', tone: 'bad' },
    );
    assert.deepEqual(certificateInWords(domain({ certificate: { ...cert, status: 'pending', reason: null } })), {
      text: 'Being ordered',
      tone: 'busy',
    });
  });

  it('lists the records to publish exactly as the API gives them, with their purpose and last check', () => {
    const rows = recordRows(domain());
    assert.deepEqual(
      rows.map((r) => [r.type, r.name, r.value, r.check.text]),
      [
        ['TXT', '_svc-challenge.shop.example.com', 'svc-verify=3f1c9e0b7a5d42e8b1c6f0a9d3e7b2c4a8f1e5d0', 'Not checked yet'],
        ['CNAME', 'shop.example.com', 'web.apps.localhost', 'Not checked yet'],
      ],
    );
    assert.equal(rows[0]!.purpose, 'proves the name is yours');
    assert.equal(rows[1]!.purpose, 'sends its traffic to the app');
    assert.equal(new Set(rows.map((r) => r.key)).size, 2, 'keys differ');
    for (const r of rows) assert.match(r.key, /^[A-Za-z0-9_-]+$/);
    const wildcard = recordRows(
      domain({
        records: [
          { purpose: 'certificate', type: 'CNAME', name: '*.shop.example.com', value: 'x.acme.example.net', observed: null, ok: null },
        ],
      }),
    );
    assert.match(wildcard[0]!.key, /^[A-Za-z0-9_-]+$/, 'a wildcard’s * is not in the key');
    assert.match(wildcard[0]!.purpose, /wildcard certificate/);
  });

  it('says what the last check saw of a record', () => {
    assert.deepEqual(recordCheckInWords({ ok: null, observed: null }), { text: 'Not checked yet', tone: 'idle' });
    assert.deepEqual(recordCheckInWords({ ok: true, observed: ['web.apps.localhost'] }), { text: 'Right', tone: 'ok' });
    assert.deepEqual(recordCheckInWords({ ok: false, observed: [] }), { text: 'Missing: DNS answers nothing', tone: 'bad' });
    assert.deepEqual(recordCheckInWords({ ok: false, observed: ['1.2.3.4', '5.6.7.8'] }), {
      text: 'Wrong: DNS answers 1.2.3.4, 5.6.7.8',
      tone: 'bad',
    });
  });

  it('writes the records as zone file lines, a TXT value quoted', () => {
    assert.equal(
      zoneLines(domain()),
      [
        '_svc-challenge.shop.example.com. 300 IN TXT "svc-verify=3f1c9e0b7a5d42e8b1c6f0a9d3e7b2c4a8f1e5d0"',
        'shop.example.com. 300 IN CNAME web.apps.localhost.',
      ].join('\n'),
    );
    assert.equal(
      zoneLines(
        domain({ records: [{ purpose: 'routing', type: 'A', name: 'example.com', value: '203.0.113.10', observed: null, ok: null }] }),
      ),
      'example.com. 300 IN A 203.0.113.10',
    );
  });

  it('refuses in the form only what is plainly not a name, leaving the rest to the API', () => {
    assert.match(domainInputProblem('')!, /Enter a domain name/);
    assert.match(domainInputProblem('   ')!, /Enter a domain name/);
    assert.match(domainInputProblem('https://shop.example.com')!, /without http/);
    assert.match(domainInputProblem('shop.example.com/path')!, /without http/);
    assert.match(domainInputProblem('shop example.com')!, /no spaces/);
    for (const ok of ['shop.example.com', ' example.com ', '*.shop.example.com', 'bücher.example', '192.0.2.1'])
      assert.equal(domainInputProblem(ok), undefined, ok);
  });
});

describe('console databases and volumes pages: in words', () => {
  it('says sizes in binary units, as the CLI does, and how full', () => {
    assert.equal(bytesInWords(512), '512 B');
    assert.equal(bytesInWords(1024 ** 3), '1 GiB');
    assert.equal(bytesInWords(41689088), '40 MiB');
    assert.equal(bytesInWords(5.5 * 1024 ** 2), '5.5 MiB');
    assert.equal(bytesInWords(5 * 1024 ** 3), '5 GiB');
    assert.equal(bytesInWords(20 * 1024 ** 3), '20 GiB');
    assert.equal(usageInWords(null, 1024 ** 3), '1 GiB, not measured yet');
    assert.equal(usageInWords(41689088, 1073741824), '40 MiB of 1 GiB used (4%)');
    assert.equal(usageInWords(0, 0), '0 B of 0 B used (0%)');
    assert.ok(
      databaseSizes.every((s) => s.bytes >= 128 * 1024 ** 2),
      'every size the form offers is one the API takes',
    );
    assert.ok(databaseSizes.some((s) => s.bytes === 1024 ** 3 && /default/.test(s.label)));
  });

  it("says a database's phase, with its message where it says why", () => {
    assert.deepEqual(databasePhaseInWords({ phase: 'Ready', message: 'PostgreSQL accepts connections at 10.96.138.39:5432' }), {
      text: 'Ready',
      tone: 'ok',
    });
    assert.deepEqual(databasePhaseInWords({ phase: 'Pending', message: 'provisioning its volume' }), {
      text: 'Starting: provisioning its volume',
      tone: 'busy',
    });
    assert.deepEqual(databasePhaseInWords({ phase: 'Failed', message: 'the image cannot be pulled' }), {
      text: 'Failed: the image cannot be pulled',
      tone: 'bad',
    });
    assert.deepEqual(databasePhaseInWords({ phase: 'Pending', message: null }), { text: 'Starting', tone: 'busy' });
    assert.equal(databasePhaseInWords({ phase: 'Deleting', message: null }).text, 'Being deleted');
  });

  it('says what deleting a database does, and refuses one that is attached', () => {
    assert.match(deletionInWords('drop'), /data is deleted/);
    assert.match(deletionInWords('retain'), /kept/);
    assert.deepEqual(databaseDeletable({ attached_to: null, phase: 'Ready' }), { ok: true });
    assert.deepEqual(databaseDeletable({ attached_to: 'shop', phase: 'Ready' }), { ok: false, why: 'detach it from shop first' });
    assert.equal(databaseDeletable({ attached_to: null, phase: 'Deleting' }).ok, false);
  });

  it('says whose a volume is, and whether it may be deleted', () => {
    assert.equal(volumeOwnerInWords(volume()), 'machine 0 of shop (volume data)');
    assert.equal(volumeOwnerInWords(volume({ service: 'worker', machine: 2 })), 'machine 2 of shop, service worker (volume data)');
    assert.equal(
      volumeOwnerInWords(volume({ kind: 'database', app: null, machine: null, volume: null, database: 'orders' })),
      'database orders',
    );
    assert.deepEqual(volumeStateInWords(volume()), { text: 'Mounted by shop-m0-5c1e0a9b2d', tone: 'ok', deletable: false });
    assert.deepEqual(volumeStateInWords(volume({ mounted_by: null })), { text: 'Declared by its app', tone: 'busy', deletable: false });
    assert.equal(volumeStateInWords(volume({ mounted_by: null, attached: false })).deletable, true);
    const db = volume({ kind: 'database', app: null, machine: null, volume: null, database: 'orders', mounted_by: null });
    assert.equal(volumeStateInWords(db).deletable, false, 'a database’s goes with it');
    assert.equal(volumeStateInWords({ ...db, attached: false }).deletable, true, 'kept by retain after its database was deleted');
  });
});

describe('console routes: domains, databases, volumes', () => {
  it('names the pages by their addresses, and back', () => {
    assert.deepEqual(routeOf('/console/apps/shop/domains'), { page: 'app-domains', name: 'shop' });
    assert.deepEqual(routeOf('/console/databases'), { page: 'databases' });
    assert.deepEqual(routeOf('/console/volumes'), { page: 'volumes' });
    assert.equal(hrefOf({ page: 'app-domains', name: 'shop' }), '/console/apps/shop/domains');
    assert.equal(hrefOf({ page: 'databases' }), '/console/databases');
    assert.equal(hrefOf({ page: 'volumes' }), '/console/volumes');
    const routes: Route[] = [
      { page: 'app-domains', name: 'shop' },
      { page: 'app-domains', name: 'a b/ü' },
      { page: 'databases' },
      { page: 'volumes' },
      { page: 'app', name: 'shop' },
    ];
    for (const route of routes) assert.deepEqual(routeOf(hrefOf(route)), route);
    assert.equal(routeOf('/console/apps/shop/domains/shop.example.com').page, 'not-found');
    assert.equal(routeOf('/console/databases/orders').page, 'not-found');
    assert.equal(routeOf('/console/volumes/x').page, 'not-found');
  });
});
