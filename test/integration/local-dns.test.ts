// The local platform's DNS server, which custom domains are verified against
// (docs/decisions/0027-app-domains.md): records published through its management API with
// test/support/dns.ts are answered over real DNS (node's resolver, UDP) by the running
// pebble-challtestsrv (the `dns` part hack/nodes.sh starts), and gone once unpublished; a name
// nobody published gets no address at all (its default answer for every name is off, or it would
// verify any domain).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { after, before, describe, it } from 'node:test';
import { dnsServers, publish, unpublish, type DnsRecord } from '../support/dns.js';

/** A name of this run's own under the reserved `.test` domain: runs side by side never share one. */
const zone = `${randomBytes(6).toString('hex')}.local-dns.test`;

async function assertNoAnswer(lookup: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(lookup, (err: NodeJS.ErrnoException) => {
    assert.ok(err.code === 'ENODATA' || err.code === 'ENOTFOUND', `${what}: ${err.code} ${err.message}`);
    return true;
  });
}

describe('local DNS server (pebble-challtestsrv: its management API and real DNS queries)', () => {
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  const published: DnsRecord[] = [];
  const add = async (record: DnsRecord) => {
    published.push(record);
    await publish(record);
  };

  before(() => {
    resolver.setServers(dnsServers());
  });
  after(async () => {
    for (const r of published) await unpublish(r).catch(() => undefined);
  });

  it('answers a published TXT record, every value of it, and nothing once it is removed', async () => {
    const name = `_svc-challenge.${zone}`;
    await add({ type: 'TXT', name, value: 'svc-verify=first' });
    await add({ type: 'TXT', name, value: 'svc-verify=second' });
    const txt = (await resolver.resolveTxt(name)).map((chunks) => chunks.join('')).sort();
    assert.deepEqual(txt, ['svc-verify=first', 'svc-verify=second']);
    await unpublish({ type: 'TXT', name });
    await assertNoAnswer(resolver.resolveTxt(name), 'TXT after unpublish');
  });

  it('answers a published CNAME, follows it to the target’s addresses, and nothing once it is removed', async () => {
    const name = `www.${zone}`;
    const target = `app.apps.${zone}`;
    await add({ type: 'CNAME', name, value: target });
    await add({ type: 'A', name: target, value: '192.0.2.7' });
    assert.deepEqual(await resolver.resolveCname(name), [target]);
    assert.deepEqual(await resolver.resolve4(name), ['192.0.2.7'], 'an A query of the alias gets the target’s');
    await unpublish({ type: 'CNAME', name });
    await assertNoAnswer(resolver.resolveCname(name), 'CNAME after unpublish');
    await assertNoAnswer(resolver.resolve4(name), 'A of the former alias');
  });

  it('answers published A and AAAA records, and nothing once they are removed', async () => {
    const name = zone;
    await add({ type: 'A', name, value: ['127.0.0.1', '192.0.2.10'] });
    await add({ type: 'AAAA', name: name.toUpperCase(), value: ['::1', '2001:db8::10'] });
    assert.deepEqual((await resolver.resolve4(name)).sort(), ['127.0.0.1', '192.0.2.10']);
    assert.deepEqual((await resolver.resolve6(name)).sort(), ['2001:db8::10', '::1']);
    await unpublish({ type: 'A', name });
    await unpublish({ type: 'AAAA', name: `${name}.` });
    await assertNoAnswer(resolver.resolve4(name), 'A after unpublish');
    await assertNoAnswer(resolver.resolve6(name), 'AAAA after unpublish');
  });

  it('gives a name nobody published no address (no default answer)', async () => {
    const name = `nobody.${zone}`;
    await assertNoAnswer(resolver.resolve4(name), 'A of an unpublished name');
    await assertNoAnswer(resolver.resolve6(name), 'AAAA of an unpublished name');
    await assertNoAnswer(resolver.resolveTxt(name), 'TXT of an unpublished name');
    // Not even a name that has other records: a TXT alone does not make it resolve.
    const txtOnly = `_svc-challenge.nobody.${zone}`;
    await add({ type: 'TXT', name: txtOnly, value: 'svc-verify=x' });
    await assertNoAnswer(resolver.resolve4(txtOnly), 'A of a name with only a TXT record');
  });

  it('throws with the server’s answer when the management API refuses a record', async () => {
    await assert.rejects(publish({ type: 'A', name: `empty.${zone}`, value: [] }), /answered 400/);
  });
});
