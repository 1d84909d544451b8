import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import Koa from 'koa';
import { untrustedForwardingWarning } from '../../api/middleware/forwarding.js';

describe('a forwarded request with no proxy hop trusted', () => {
  it('is warned of once, and every request still goes on', async () => {
    const warnings: unknown[][] = [];
    const app = new Koa();
    app.use(untrustedForwardingWarning({ warn: (...args: unknown[]) => void warnings.push(args) } as never));
    app.use((ctx) => {
      ctx.body = ctx.ip;
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      assert.equal(await (await fetch(url)).text(), '127.0.0.1');
      assert.equal(warnings.length, 0, 'nothing forwarded, nothing said');
      for (let i = 0; i < 3; i++) {
        const res = await fetch(url, { headers: { 'x-forwarded-for': '203.0.113.9' } });
        assert.equal(await res.text(), '127.0.0.1', 'the header is not believed');
      }
      assert.equal(warnings.length, 1);
      assert.match(String(warnings[0]![1]), /SVC_API_PROXY_HOPS is 0/);
    } finally {
      server.close();
    }
  });
});
