// Attack: server-side request forgery through webhook URLs (issue 11 item 12). Every spelling of a
// loopback, private, link-local, reserved or tunnelling address is refused when the webhook is made;
// names are resolved (through a DNS server the test runs on loopback) and refused when any answer is
// not public; and at delivery time the connection goes only to the addresses checked at that moment,
// so a name that rebinds to a private address after passing the first check reaches nothing, and a
// redirect is not followed. No traffic leaves loopback: "public" addresses in the connection tests are
// chosen loopback addresses the test declares public.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { webhookDispatcher } from '../../lib/webhooks/guarded-dispatcher.js';
import {
  isPublicAddress,
  publicAddressesOf,
  resolverFor,
  webhookUrlProblem,
  webhookUrlProblemResolved,
} from '../../lib/webhooks/url-guard.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { startTestDns, type TestDns } from '../support/dns.js';

describe('security: webhook URLs', () => {
  const refused = [
    'https://127.0.0.1/x',
    'https://127.1/x',
    'https://2130706433/x',
    'https://0x7f000001/x',
    'https://0177.0.0.1/x',
    'https://0x7f.1/x',
    'https://0/x',
    'https://10.1.2.3/x',
    'https://172.16.0.1/x',
    'https://192.168.1.1/x',
    'https://100.64.0.1/x',
    'https://169.254.169.254/latest',
    'https://192.0.0.8/x',
    'https://198.18.0.1/x',
    'https://192.0.2.1/x',
    'https://224.0.0.1/x',
    'https://255.255.255.255/x',
    'https://[::1]/x',
    'https://[::]/x',
    'https://[::127.0.0.1]/x',
    'https://[::ffff:127.0.0.1]/x',
    'https://[::ffff:a00:1]/x',
    'https://[::ffff:0:a00:1]/x',
    'https://[64:ff9b::a00:1]/x',
    'https://[64:ff9b::7f00:1]/x',
    'https://[64:ff9b:1::1]/x',
    'https://[2002:a00:1::1]/x',
    'https://[2002:7f00:1::]/x',
    'https://[2001::1]/x',
    'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x',
    'https://[fec0::1]/x',
    'https://[fd00::1]/x',
    'https://[fe80::1]/x',
    'https://[ff02::1]/x',
    'https://[2001:db8::1]/x',
    'https://[100::1]/x',
    'https://localhost/x',
    'https://localhost./x',
    'https://app.localhost/x',
    'https://svc.internal/x',
    'https://printer.local/x',
    'https://router.home.arpa/x',
    'https://intranet/x',
    'http://hooks.example.com/x',
    'https://user:pw@hooks.example.com/x',
    'ftp://hooks.example.com/x',
    'not a url',
  ];
  for (const url of refused) {
    it(`refuses ${url}`, () => assert.match(webhookUrlProblem(url, { allowPrivate: false }) ?? 'accepted', /url must/));
  }
  for (const url of [
    'https://93.184.216.34/x',
    'https://[2606:4700:4700::1111]/x',
    'https://hooks.example.com/x',
    'https://8.8.8.8:8443/x',
  ]) {
    it(`accepts ${url}`, () => assert.equal(webhookUrlProblem(url, { allowPrivate: false }), undefined));
  }

  it('isPublicAddress: embedded IPv4 in every IPv6 form is judged as not public', () => {
    for (const a of ['::a00:1', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '2001:0:808:808::1', 'fe80::1%eth0'])
      assert.equal(isPublicAddress(a), false, a);
    for (const a of ['8.8.8.8', '2606:4700:4700::1111', '1.1.1.1']) assert.equal(isPublicAddress(a), true, a);
  });

  describe('names, resolved through a DNS server on loopback', () => {
    let dns: TestDns;
    let api: TestApi;
    const servers: Server[] = [];
    /** A server on `address` that counts what reaches it. */
    const listen = async (address: string, handler: Parameters<typeof createServer>[1] = (_q, s) => void s.end('reached')) => {
      const s = createServer(handler);
      let hits = 0;
      s.on('request', () => hits++);
      s.listen(0, address);
      await once(s, 'listening');
      servers.push(s);
      return { port: (s.address() as AddressInfo).port, hits: () => hits };
    };
    // In the connection tests 127.0.0.2 plays a public address; everything else keeps the real rule.
    const isAllowed = (a: string) => a === '127.0.0.2' || isPublicAddress(a);

    before(async () => {
      dns = await startTestDns();
      api = await startTestApi({ env: { SVC_WEBHOOK_DNS_SERVERS: dns.server } });
    });
    after(async () => {
      for (const s of servers) s.close();
      await api?.close();
      await dns?.close();
    });

    it('refuses at creation a name any of whose answers is not public, through the API (400, nothing created)', async () => {
      dns.set('private.hooks.test', ['10.0.0.5']);
      dns.set('mixed.hooks.test', ['93.184.216.34', '192.168.1.9']);
      dns.set('v6.hooks.test', ['2606:4700:4700::1111', '::1']);
      dns.set('nat64.hooks.test', ['64:ff9b::a00:5']);
      dns.set('meta.hooks.test', ['169.254.169.254']);
      for (const host of ['private', 'mixed', 'v6', 'nat64', 'meta']) {
        const res = await api.request('POST', '/api/account/webhooks', { body: { url: `https://${host}.hooks.test/x` } });
        assert.equal(res.status, 400, host);
        assert.match(
          ((await res.json()) as { error: string }).error,
          /url must name a public host: .* resolves to an address that is not public/,
        );
      }
      assert.deepEqual(((await (await api.request('GET', '/api/account/webhooks')).json()) as { webhooks: unknown[] }).webhooks, []);
      dns.set('good.hooks.test', ['93.184.216.34']);
      assert.equal((await api.request('POST', '/api/account/webhooks', { body: { url: 'https://good.hooks.test/x' } })).status, 201);
    });

    it('a name that rebinds after the check reaches nothing: the connection uses the addresses checked then', async () => {
      const inside = await listen('127.0.0.1');
      // First answer (the check at creation) plays public; every later one points inside.
      dns.set('rebind.hooks.test', [['127.0.0.2'], ['127.0.0.1']]);
      const resolver = resolverFor([dns.server]);
      assert.deepEqual(await publicAddressesOf('rebind.hooks.test', resolver, isAllowed), ['127.0.0.2']);
      const dispatcher = webhookDispatcher({ resolver, isAllowed });
      await assert.rejects(request(`http://rebind.hooks.test:${inside.port}/`, { dispatcher }), /not (a )?public/);
      assert.equal(inside.hits(), 0, 'nothing reached the inside address');
      assert.ok(dns.asked('rebind.hooks.test') >= 2, 'the connection asked DNS itself, after the first check');
      await dispatcher.close();
    });

    it('connects to the checked address when it is allowed, and follows no redirect to an inside one', async () => {
      const inside = await listen('127.0.0.1');
      const outside = await listen(
        '127.0.0.2',
        (_req, res) => void res.writeHead(302, { location: `http://127.0.0.1:${inside.port}/` }).end(),
      );
      dns.set('hook.hooks.test', ['127.0.0.2']);
      const dispatcher = webhookDispatcher({ resolver: resolverFor([dns.server]), isAllowed });
      const res = await request(`http://hook.hooks.test:${outside.port}/deliver`, { method: 'POST', body: '{}', dispatcher });
      assert.equal(res.statusCode, 302, 'the redirect is the answer, not followed');
      await res.body.text();
      assert.equal(outside.hits(), 1);
      assert.equal(inside.hits(), 0);
      // An IP literal is checked too (no lookup happens for it).
      await assert.rejects(request(`http://127.0.0.1:${inside.port}/`, { dispatcher }), /not (a )?public/);
      await assert.rejects(request(`http://[::1]:${inside.port}/`, { dispatcher }), /not (a )?public/);
      assert.equal(inside.hits(), 0);
      await dispatcher.close();
    });

    it('a name with a private answer among public ones is refused at connect time too', async () => {
      const inside = await listen('127.0.0.1');
      dns.set('half.hooks.test', ['127.0.0.2', '127.0.0.1']);
      const dispatcher = webhookDispatcher({ resolver: resolverFor([dns.server]), isAllowed });
      await assert.rejects(request(`http://half.hooks.test:${inside.port}/`, { dispatcher }), /not (a )?public/);
      assert.equal(inside.hits(), 0);
      await dispatcher.close();
    });

    it('unresolvable names are accepted at creation (deliveries check again), resolvable private ones are not', async () => {
      assert.equal(
        await webhookUrlProblemResolved('https://nowhere.hooks.test/x', { allowPrivate: false, resolver: resolverFor([dns.server]) }),
        undefined,
      );
      assert.match(
        (await webhookUrlProblemResolved('https://private.hooks.test/x', { allowPrivate: false, resolver: resolverFor([dns.server]) })) ??
          '',
        /not (a )?public/,
      );
    });
  });
});
