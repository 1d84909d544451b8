// The RFC 2136 client (lib/dns/update.ts) against a real BIND 9 (test/support/named.ts): records
// added and removed one value at a time, refusals in the server's words, and the CNAME a tenant
// points at the platform's delegation zone followed in one answer, as the ACME CA will read it.
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { after, before, describe, it } from 'node:test';
import { DnsUpdateError, Rfc2136Client } from '../../lib/dns/update.js';
import { startNamed, type Named } from '../support/named.js';

const ZONE = 'acme.platform.test';

describe('RFC 2136 updates against BIND', () => {
  let named: Named;
  let client: Rfc2136Client;

  before(async () => {
    named = await startNamed({
      zones: [ZONE, { name: 'shop.example', records: ['_acme-challenge IN CNAME shop-example.acme.platform.test.'] }],
    });
    client = new Rfc2136Client({ server: { host: named.host, port: named.port }, zone: ZONE, key: named.key, timeoutMs: 5000 });
  });
  after(async () => named?.stop());

  /** The TXT strings of `name` at `server`, joined per record and sorted; [] when there are none. */
  async function txt(name: string, server = named.server): Promise<string[]> {
    const resolver = new Resolver({ timeout: 1000, tries: 2 });
    resolver.setServers([server]);
    try {
      return (await resolver.resolveTxt(name)).map((strings) => strings.join('')).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENODATA' || (err as NodeJS.ErrnoException).code === 'ENOTFOUND') return [];
      throw err;
    }
  }

  async function refusal(promise: Promise<void>): Promise<DnsUpdateError> {
    const err = await promise.then(
      () => assert.fail('the update succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof DnsUpdateError, String(err));
    return err;
  }

  it('adds a value, a second beside it, removes one leaving the other, and removes again without error', async () => {
    const name = `_acme-challenge.app.${ZONE}`;
    assert.deepEqual(await txt(name), []);
    await client.addTxt(name, 'first-value', 60);
    assert.deepEqual(await txt(name), ['first-value']);
    // `*.app` and `app` validated at once share this name.
    await client.addTxt(name, 'second-value', 60);
    assert.deepEqual(await txt(name), ['first-value', 'second-value']);
    await client.addTxt(name, 'second-value', 60); // adding again is no change
    assert.deepEqual(await txt(name), ['first-value', 'second-value']);
    await client.removeTxt(name, 'first-value');
    assert.deepEqual(await txt(name), ['second-value']);
    await client.removeTxt(name, 'first-value');
    assert.deepEqual(await txt(name), ['second-value']);
    await client.removeTxt(name, 'second-value');
    assert.deepEqual(await txt(name), []);
    await client.removeTxt(name, 'never-added');
  });

  for (const algorithm of ['hmac-sha512', 'hmac-sha1'] as const)
    it(`updates with a ${algorithm} key too`, async () => {
      const other = await startNamed({ zones: [ZONE], algorithm });
      try {
        const updates = new Rfc2136Client({ server: { host: other.host, port: other.port }, zone: ZONE, key: other.key });
        await updates.addTxt(`algorithm.${ZONE}`, algorithm, 60);
        assert.deepEqual(await txt(`algorithm.${ZONE}`, other.server), [algorithm]);
        await updates.removeTxt(`algorithm.${ZONE}`, algorithm);
        assert.deepEqual(await txt(`algorithm.${ZONE}`, other.server), []);
      } finally {
        await other.stop();
      }
    });

  it('is refused with BADSIG under a wrong secret, and changes nothing', async () => {
    const wrong = new Rfc2136Client({
      server: { host: named.host, port: named.port },
      zone: ZONE,
      key: { ...named.key, secret: Buffer.alloc(32, 1) },
    });
    const err = await refusal(wrong.addTxt(`wrong-secret.${ZONE}`, 'v'));
    assert.deepEqual([err.reason, err.rcode, err.tsigError], ['BADSIG', 'NOTAUTH', 'BADSIG']);
    assert.match(err.message, /NOTAUTH, TSIG error BADSIG/);
    assert.deepEqual(await txt(`wrong-secret.${ZONE}`), []);
  });

  it('is refused with BADKEY under a key name the server does not know', async () => {
    const stranger = new Rfc2136Client({
      server: { host: named.host, port: named.port },
      zone: ZONE,
      key: { ...named.key, name: 'someone-else' },
    });
    const err = await refusal(stranger.addTxt(`unknown-key.${ZONE}`, 'v'));
    assert.deepEqual([err.reason, err.rcode, err.tsigError], ['BADKEY', 'NOTAUTH', 'BADKEY']);
    assert.deepEqual(await txt(`unknown-key.${ZONE}`), []);
  });

  it('is refused with NOTAUTH for a zone the server does not serve', async () => {
    const elsewhere = new Rfc2136Client({ server: { host: named.host, port: named.port }, zone: 'not-served.test', key: named.key });
    const err = await refusal(elsewhere.addTxt('_acme-challenge.not-served.test', 'v'));
    assert.deepEqual([err.reason, err.rcode, err.authenticated], ['NOTAUTH', 'NOTAUTH', true]);
  });

  it("refuses a name outside its own zone itself, though the server serves that name's zone", async () => {
    const err = await refusal(client.addTxt('_acme-challenge.shop.example', 'v'));
    assert.equal(err.reason, 'INVALID');
    const shop = new Rfc2136Client({ server: { host: named.host, port: named.port }, zone: 'shop.example', key: named.key });
    await shop.addTxt('tenant-zone-check.shop.example', 'v');
    assert.deepEqual(await txt('tenant-zone-check.shop.example'), ['v']);
    await shop.removeTxt('tenant-zone-check.shop.example', 'v');
  });

  it("answers a TXT query of a tenant's CNAME into the delegation zone with the CNAME alone", async () => {
    await client.addTxt(`shop-example.${ZONE}`, 'delegated-token', 60);
    const resolver = new Resolver({ timeout: 1000, tries: 2 });
    resolver.setServers([named.server]);
    assert.deepEqual(await resolver.resolveCname('_acme-challenge.shop.example'), [`shop-example.${ZONE}`]);
    // An authoritative server leaves the target, another zone's name, to the resolver: c-ares, a
    // stub, chases no CNAME, so it finds no TXT here, and the resolver's next question finds it.
    assert.deepEqual(await txt('_acme-challenge.shop.example'), []);
    assert.deepEqual(await txt(`shop-example.${ZONE}`), ['delegated-token']);
    await client.removeTxt(`shop-example.${ZONE}`, 'delegated-token');
  });

  it("answers it with the CNAME and the target's TXT when it answers as a resolver (recursion on)", async () => {
    const resolving = await startNamed({
      zones: [ZONE, { name: 'shop.example', records: ['_acme-challenge IN CNAME shop-example.acme.platform.test.'] }],
      recursion: true,
    });
    try {
      const updates = new Rfc2136Client({ server: { host: resolving.host, port: resolving.port }, zone: ZONE, key: resolving.key });
      await updates.addTxt(`shop-example.${ZONE}`, 'delegated-token', 60);
      const resolver = new Resolver({ timeout: 1000, tries: 2 });
      resolver.setServers([resolving.server]);
      assert.deepEqual(await resolver.resolveTxt('_acme-challenge.shop.example'), [['delegated-token']]);
      // Names outside its zones come from its own root zone: nothing is asked of the Internet.
      await assert.rejects(resolver.resolveTxt('example.com'), { code: 'ENOTFOUND' });
      await updates.removeTxt(`shop-example.${ZONE}`, 'delegated-token');
      assert.deepEqual(await txt('_acme-challenge.shop.example', resolving.server), []);
    } finally {
      await resolving.stop();
    }
  });
});
