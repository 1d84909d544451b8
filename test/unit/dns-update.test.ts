// The RFC 2136 client and its TSIG (lib/dns/update.ts, lib/dns/tsig.ts): MACs against vectors of
// another implementation (miekg/dns, the Go DNS library, tsig_test.go), the update's bytes, and
// answers from an in-process TCP server that a client must refuse (unsigned, badly signed, stale).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { computeMac, findTsig, signMessage, verifyMessage, type TsigKey } from '../../lib/dns/tsig.js';
import { DnsUpdateError, encodeTxtUpdate, Rfc2136Client } from '../../lib/dns/update.js';
import { freePort } from '../support/ports.js';

// miekg/dns tsig_test.go: a signed UPDATE (with a compressed name in its update section) whose
// time signed is filled in, the secret that signed it, and the time that makes it valid.
const MIEKG_WIRE =
  'c60028000001000000010001076578616d706c6503636f6d00000600010161c00c0001000100000e100004c0000201077465' +
  '73746b65790000fa00ff00000000003d0b686d61632d73686132353600' +
  '%TIME%' +
  '012c00208cf23e0081d915478a182edcea7ff48ad102948e6c7ef8e887536957d1fa5616c60000000000';
const MIEKG_SECRET = Buffer.from('NoTCJU+DMqFWywaPyxSijrDEA/eC3nK0xi3AMEZuPVk=', 'base64');
const MIEKG_TIME = 1594855491;
const miekgKey: TsigKey = { name: 'testkey.', algorithm: 'hmac-sha256', secret: MIEKG_SECRET };
const miekgMessage = (time: number) => Buffer.from(MIEKG_WIRE.replace('%TIME%', time.toString(16).padStart(12, '0')), 'hex');

const key: TsigKey = { name: 'acme-update', algorithm: 'hmac-sha256', secret: Buffer.alloc(32, 7) };
const now = () => Math.floor(Date.now() / 1000);

describe('TSIG MACs', () => {
  it('verifies a message another implementation signed, and refuses it out of time or altered', () => {
    assert.deepEqual(verifyMessage(miekgMessage(MIEKG_TIME), miekgKey, { now: MIEKG_TIME }).ok, true);
    const late = verifyMessage(miekgMessage(MIEKG_TIME), miekgKey, { now: MIEKG_TIME + 301 });
    assert.equal(late.ok ? 'ok' : late.problem, 'BADTIME');
    assert.equal(verifyMessage(miekgMessage(MIEKG_TIME), miekgKey, { now: MIEKG_TIME + 300 }).ok, true);
    // The MAC is checked before the time: a wrong time signed is a bad signature, not a bad time.
    const forged = verifyMessage(miekgMessage(MIEKG_TIME + 301), miekgKey, { now: MIEKG_TIME });
    assert.equal(forged.ok ? 'ok' : forged.problem, 'BADSIG');
    const altered = miekgMessage(MIEKG_TIME);
    altered[30] = altered[30]! ^ 1; // a letter of the update record's owner name
    const verdict = verifyMessage(altered, miekgKey, { now: MIEKG_TIME });
    assert.equal(verdict.ok ? 'ok' : verdict.problem, 'BADSIG');
    const otherKey = verifyMessage(miekgMessage(MIEKG_TIME), { ...miekgKey, name: 'otherkey' }, { now: MIEKG_TIME });
    assert.equal(otherKey.ok ? 'ok' : otherKey.problem, 'BADKEY');
  });

  it('computes the MACs of miekg/dns TestTsigGenerate (request MAC, error and other data covered)', () => {
    // Its request: opcode UPDATE, zone example.com SOA IN, nothing else, with the original ID 42
    // (the TSIG's, which miekg writes into the header before hashing); the TSIG variables are key
    // testkey., hmac-sha256, fudge 300, error BADTIME (18).
    const message = Buffer.from('002a28000001000000000000' + '076578616d706c6503636f6d00' + '00060001', 'hex');
    const cases = [
      { requestMac: '3684c225', other: '', mac: 'c110e3f62694755c10761dc8717462431ee34340b7c9d1eee09449150757c5b1' },
      { requestMac: '', other: '', mac: '385449a425c6d52b9bf2c65c0726eefa0ad8084cdaf488f24547e686605b9610' },
      { requestMac: '3684c225', other: '666f6f', mac: '15b91571ca80b3b410a77e2b44f8cc4f35ace22b26020138439dd94803e23b5d' },
    ];
    for (const c of cases) {
      const mac = computeMac(
        miekgKey,
        message,
        { timeSigned: MIEKG_TIME, fudge: 300, error: 18, otherData: Buffer.from(c.other, 'hex') },
        c.requestMac ? Buffer.from(c.requestMac, 'hex') : undefined,
      );
      assert.equal(mac.toString('hex'), c.mac, `request MAC "${c.requestMac}", other data "${c.other}"`);
    }
  });

  for (const algorithm of ['hmac-sha256', 'hmac-sha512', 'hmac-sha1'] as const) {
    it(`signs with ${algorithm} what it verifies, and the record says so`, () => {
      const k: TsigKey = { name: 'Acme-Update.', algorithm, secret: Buffer.from('a secret of any length') };
      const unsigned = encodeTxtUpdate('acme.platform.test', { op: 'add', fqdn: 'x.acme.platform.test', value: 'v', ttl: 60 }, 0x1234);
      const signed = signMessage(unsigned, k, 1_800_000_000);
      assert.equal(signed.message.readUInt16BE(10), 1, 'ARCOUNT counts the TSIG record');
      const record = findTsig(signed.message)!;
      assert.equal(record.start, unsigned.length);
      assert.deepEqual(
        { keyName: record.keyName, algorithm: record.algorithm, time: record.timeSigned, fudge: record.fudge, id: record.originalId },
        { keyName: 'acme-update', algorithm, time: 1_800_000_000, fudge: 300, id: 0x1234 },
      );
      assert.deepEqual(record.mac, signed.mac);
      assert.equal(verifyMessage(signed.message, k, { now: 1_800_000_000 }).ok, true);
      // A forwarder may change the ID: the MAC covers the original one.
      const renumbered = Buffer.from(signed.message);
      renumbered.writeUInt16BE(0x4321, 0);
      assert.equal(verifyMessage(renumbered, k, { now: 1_800_000_000 }).ok, true);
      const wrong = verifyMessage(signed.message, { ...k, secret: Buffer.from('another secret') }, { now: 1_800_000_000 });
      assert.equal(wrong.ok ? 'ok' : wrong.problem, 'BADSIG');
    });
  }
});

describe('the UPDATE message', () => {
  const zone = '0461636d6508706c6174666f726d047465737400'; // acme.platform.test
  const owner = '0f5f61636d652d6368616c6c656e6765' + '0178' + zone; // _acme-challenge.x.acme.platform.test

  it('adds one TXT record of class IN in the zone section given', () => {
    const bytes = encodeTxtUpdate(
      'Acme.Platform.Test.',
      { op: 'add', fqdn: '_acme-challenge.X.acme.platform.test', value: 'abc', ttl: 60 },
      0xbeef,
    );
    const expected =
      'beef' +
      '2800' +
      '0001' +
      '0000' +
      '0001' +
      '0000' +
      zone +
      '0006' +
      '0001' +
      owner +
      '0010' +
      '0001' +
      '0000003c' +
      '0004' +
      '03616263';
    assert.equal(bytes.toString('hex'), expected);
  });

  it('removes that one record: class NONE, TTL 0', () => {
    const bytes = encodeTxtUpdate('acme.platform.test', { op: 'remove', fqdn: '_acme-challenge.x.acme.platform.test', value: 'abc' }, 1);
    assert.equal(bytes.subarray(-(owner.length / 2 + 14)).toString('hex'), owner + '0010' + '00fe' + '00000000' + '0004' + '03616263');
  });

  it('refuses names outside the zone, bad labels, values that are not one string, bad TTLs', () => {
    const refused = [
      { op: 'add', fqdn: '_acme-challenge.shop.example', value: 'v', ttl: 60 },
      { op: 'add', fqdn: 'evilacme.platform.test', value: 'v', ttl: 60 },
      { op: 'add', fqdn: 'platform.test', value: 'v', ttl: 60 },
      { op: 'add', fqdn: '*.acme.platform.test', value: 'v', ttl: 60 },
      { op: 'add', fqdn: 'a b.acme.platform.test', value: 'v', ttl: 60 },
      { op: 'add', fqdn: 'a..acme.platform.test', value: 'v', ttl: 60 },
      { op: 'add', fqdn: `${'a'.repeat(64)}.acme.platform.test`, value: 'v', ttl: 60 },
      { op: 'add', fqdn: 'x.acme.platform.test', value: 'v'.repeat(256), ttl: 60 },
      { op: 'add', fqdn: 'x.acme.platform.test', value: 'é'.repeat(128), ttl: 60 },
      { op: 'add', fqdn: 'x.acme.platform.test', value: '', ttl: 60 },
      { op: 'add', fqdn: 'x.acme.platform.test', value: 'v', ttl: -1 },
      { op: 'add', fqdn: 'x.acme.platform.test', value: 'v', ttl: 1.5 },
      { op: 'remove', fqdn: 'x.acme.platform.test.evil', value: 'v' },
    ] as const;
    for (const change of refused)
      assert.throws(
        () => encodeTxtUpdate('acme.platform.test', change, 1),
        (err) => err instanceof DnsUpdateError && err.reason === 'INVALID',
        JSON.stringify(change),
      );
    assert.equal(
      encodeTxtUpdate('acme.platform.test', { op: 'add', fqdn: 'x.acme.platform.test', value: 'v'.repeat(255), ttl: 0 }, 1).length > 0,
      true,
    );
  });
});

/** What the fake server answers a request with; undefined: no answer at all. */
type Answer = (request: Buffer) => Buffer | undefined;

/** A TSIG record written out field by field (not with signMessage), as a server would. */
function tsigRecord(k: TsigKey, f: { time: number; fudge?: number; mac: Buffer; id: number; error?: number; other?: Buffer }): Buffer {
  const name = (n: string) =>
    Buffer.concat([
      ...n
        .replace(/\.$/, '')
        .split('.')
        .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
      Buffer.from([0]),
    ]);
  const other = f.other ?? Buffer.alloc(0);
  const rdata = Buffer.alloc(16 + f.mac.length + other.length);
  rdata.writeUIntBE(f.time, 0, 6);
  rdata.writeUInt16BE(f.fudge ?? 300, 6);
  rdata.writeUInt16BE(f.mac.length, 8);
  f.mac.copy(rdata, 10);
  rdata.writeUInt16BE(f.id, 10 + f.mac.length);
  rdata.writeUInt16BE(f.error ?? 0, 12 + f.mac.length);
  rdata.writeUInt16BE(other.length, 14 + f.mac.length);
  other.copy(rdata, 16 + f.mac.length);
  const alg = name(k.algorithm);
  const fixed = Buffer.from([0, 250, 0, 255, 0, 0, 0, 0, 0, 0]);
  fixed.writeUInt16BE(alg.length + rdata.length, 8);
  return Buffer.concat([name(k.name), fixed, alg, rdata]);
}

/** The server's answer to `request`: its header and zone section echoed, QR set, `rcode`, signed as told. */
function answer(
  request: Buffer,
  rcode: number,
  sign: { key: TsigKey; time?: number; error?: number; emptyMac?: boolean; withoutRequestMac?: boolean; other?: Buffer } | 'unsigned',
): Buffer {
  const req = findTsig(request)!;
  const body = Buffer.from(request.subarray(0, req.start));
  body.writeUInt16BE(0x8000 | (5 << 11) | rcode, 2);
  body.writeUInt16BE(0, 8); // the update section is not echoed
  body.writeUInt16BE(0, 10);
  const zoneEnd = body.indexOf(Buffer.from('00060001', 'hex'), 12) + 4;
  const unsigned = body.subarray(0, zoneEnd);
  if (sign === 'unsigned') return unsigned;
  const time = sign.time ?? now();
  const fields = { timeSigned: time, fudge: 300, error: sign.error ?? 0, otherData: sign.other ?? Buffer.alloc(0) };
  const mac = sign.emptyMac ? Buffer.alloc(0) : computeMac(sign.key, unsigned, fields, sign.withoutRequestMac ? undefined : req.mac);
  const out = Buffer.concat([
    unsigned,
    tsigRecord(sign.key, { time, mac, id: req.originalId, error: fields.error, other: fields.otherData }),
  ]);
  out.writeUInt16BE(1, 10);
  return out;
}

describe('Rfc2136Client against an in-process server', () => {
  let server: net.Server;
  let port: number;
  let respond: Answer = () => undefined;
  let connections = 0;
  const requests: Buffer[] = [];

  before(async () => {
    server = net.createServer((socket) => {
      connections++;
      let got = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        got = Buffer.concat([got, chunk]);
        if (got.length < 2 || got.length < 2 + got.readUInt16BE(0)) return;
        const request = got.subarray(2, 2 + got.readUInt16BE(0));
        requests.push(request);
        const reply = respond(request);
        if (!reply) return;
        const length = Buffer.alloc(2);
        length.writeUInt16BE(reply.length);
        socket.write(Buffer.concat([length, reply]));
      });
      socket.on('error', () => {});
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as net.AddressInfo).port;
  });
  after(() => server.close());

  const client = (timeoutMs = 2000) =>
    new Rfc2136Client({ server: { host: '127.0.0.1', port }, zone: 'acme.platform.test', key, timeoutMs });

  async function refused(promise: Promise<void>): Promise<DnsUpdateError> {
    const err = await promise.then(
      () => assert.fail('the update succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof DnsUpdateError, String(err));
    return err;
  }

  it('takes a NOERROR signed over its request MAC, and sends a signed request', async () => {
    respond = (req) => answer(req, 0, { key });
    await client().addTxt('_acme-challenge.x.acme.platform.test', 'v1', 60);
    await client().removeTxt('_acme-challenge.x.acme.platform.test', 'v1');
    const sent = requests.at(-1)!;
    const verdict = verifyMessage(sent, key, { now: now() });
    assert.equal(verdict.ok, true, 'the request verifies with the key');
  });

  it('refuses an unsigned NOERROR', async () => {
    respond = (req) => answer(req, 0, 'unsigned');
    const err = await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'));
    assert.deepEqual([err.reason, err.rcode, err.authenticated], ['UNSIGNED', 'NOERROR', false]);
  });

  it('refuses a NOERROR signed with another secret', async () => {
    respond = (req) => answer(req, 0, { key: { ...key, secret: Buffer.alloc(32, 8) } });
    const err = await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'));
    assert.deepEqual([err.reason, err.authenticated], ['BADSIG', false]);
  });

  it('refuses a NOERROR signed with the key but not over the request MAC (a replayed answer)', async () => {
    respond = (req) => answer(req, 0, { key, withoutRequestMac: true });
    assert.equal((await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'BADSIG');
  });

  it('refuses a NOERROR signed with another key name', async () => {
    respond = (req) => answer(req, 0, { key: { ...key, name: 'other-key' } });
    assert.equal((await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'BADKEY');
  });

  it('refuses a NOERROR signed too long ago', async () => {
    respond = (req) => answer(req, 0, { key, time: now() - 1000 });
    assert.equal((await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'BADTIME');
  });

  it("reports the server's signed BADTIME", async () => {
    const serverTime = Buffer.alloc(6);
    serverTime.writeUIntBE(now() + 3600, 0, 6);
    respond = (req) => answer(req, 9, { key, time: findTsig(req)!.timeSigned, error: 18, other: serverTime });
    const err = await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'));
    assert.deepEqual([err.reason, err.rcode, err.tsigError, err.authenticated], ['BADTIME', 'NOTAUTH', 'BADTIME', true]);
  });

  it("reports the server's unsigned BADSIG and BADKEY (it could not verify the request)", async () => {
    for (const [error, word] of [
      [16, 'BADSIG'],
      [17, 'BADKEY'],
    ] as const) {
      respond = (req) => answer(req, 9, { key, error, emptyMac: true });
      const err = await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'));
      assert.deepEqual([err.reason, err.rcode, err.tsigError, err.authenticated], [word, 'NOTAUTH', word, false]);
      assert.match(err.message, new RegExp(`NOTAUTH, TSIG error ${word}`));
    }
  });

  it('reports signed RCODEs by name', async () => {
    for (const [rcode, word] of [
      [5, 'REFUSED'],
      [9, 'NOTAUTH'],
      [10, 'NOTZONE'],
      [2, 'SERVFAIL'],
    ] as const) {
      respond = (req) => answer(req, rcode, { key });
      const err = await refused(client().removeTxt('_acme-challenge.x.acme.platform.test', 'v'));
      assert.deepEqual([err.reason, err.rcode, err.authenticated], [word, word, true]);
    }
  });

  it('refuses an answer to another message, or bytes that are not one', async () => {
    respond = (req) => {
      const a = answer(req, 0, { key });
      a.writeUInt16BE(a.readUInt16BE(0) ^ 1, 0);
      return a;
    };
    assert.equal((await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'MALFORMED');
    respond = (req) => Buffer.concat([answer(req, 0, { key }).subarray(0, 40)]);
    assert.equal((await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'MALFORMED');
    respond = (req) => Buffer.concat([answer(req, 0, { key }), Buffer.from([0])]);
    assert.equal((await refused(client().addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'MALFORMED');
  });

  it('gives up on a server that does not answer, and on one that is not there', async () => {
    respond = () => undefined;
    const started = Date.now();
    assert.equal((await refused(client(200).addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'TIMEOUT');
    assert.ok(Date.now() - started < 1500);
    const nobody = new Rfc2136Client({ server: { host: '127.0.0.1', port: await freePort() }, zone: 'acme.platform.test', key });
    assert.equal((await refused(nobody.addTxt('_acme-challenge.x.acme.platform.test', 'v'))).reason, 'UNREACHABLE');
  });

  it('refuses a name outside the zone before connecting', async () => {
    const before = connections;
    for (const fqdn of ['_acme-challenge.shop.example', 'acme.platform.test.evil', '_acme challenge.acme.platform.test']) {
      const err = await refused(client().addTxt(fqdn, 'v'));
      assert.equal(err.reason, 'INVALID');
      assert.equal((await refused(client().removeTxt(fqdn, 'v'))).reason, 'INVALID');
    }
    assert.equal(connections, before);
  });

  it('refuses settings it cannot use', () => {
    const base = { server: { host: '127.0.0.1', port: 53 }, zone: 'acme.platform.test', key };
    for (const settings of [
      { ...base, zone: 'bad zone' },
      { ...base, server: { host: '127.0.0.1', port: 0 } },
      { ...base, key: { ...key, secret: Buffer.alloc(0) } },
      { ...base, key: { ...key, algorithm: 'hmac-md5' as TsigKey['algorithm'] } },
    ])
      assert.throws(
        () => new Rfc2136Client(settings),
        (err) => err instanceof DnsUpdateError && err.reason === 'INVALID',
      );
  });
});
