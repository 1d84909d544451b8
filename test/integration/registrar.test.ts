// Account domains through the registrar (issue 35, decision 0035): the API's five operations against
// the local double of name.com's Core API over real HTTP. Search with prices and refusals, a
// registration retried with its Idempotency-Key (one charge), a price that changed since the search
// (refused, never charged), a refused payment, a purchase whose answer never came (settled by
// looking the name up: one registration, one charge), renewals by expiry (twice, and at once: one
// renewal), the platform's auto-renew flag, and who may do what (read-only tokens cannot buy, tokens
// restricted to apps reach no account domain).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startNameComDouble, type NameComDouble } from '../../hack/namecom-double.js';
import { createAccount } from '../../lib/accounts.js';
import { repoRoot } from '../../lib/paths.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';

const contact = {
  first_name: 'Ada',
  last_name: 'Lovelace',
  address1: '12 St James Square',
  city: 'London',
  postal_code: 'SW1Y 4JH',
  country: 'GB',
  phone: '+442071234567',
  email: 'ada@example.test',
};
interface Money {
  amount: number;
  currency: string;
}
interface Found {
  name: string;
  available: boolean;
  premium: boolean;
  registration: Money | null;
  renewal: Money | null;
  reason: string | null;
}
interface Order {
  id: string;
  state: string;
  reason: string | null;
  amount: Money;
}
interface Domain {
  name: string;
  state: string;
  expires_at: string;
  auto_renew: boolean;
  locked: boolean;
  registry_statuses: string[];
}

describe('account domains through the registrar (name.com’s API, its local double)', () => {
  let double: NameComDouble;
  let api: TestApi;
  const suffix = Date.now().toString(36);
  const name = (label: string) => `${label}-${suffix}.com`;
  const register = (n: string, price: Money, key?: string) =>
    api.request('POST', '/api/domains', {
      body: { name: n, years: 1, contact, price },
      ...(key ? { headers: { 'idempotency-key': key } } : {}),
    });
  const search = async (q: string) =>
    (await expectJson<{ results: Found[] }>(await api.request('GET', `/api/domains/search?${q}`), 200)).results;
  const charged = (n: string) => double.charges().filter((c) => c.domainName === n).length;

  before(async () => {
    double = await startNameComDouble({ username: 'svc-test', token: 'secret', hangMs: 3_000 });
    api = await startTestApi({
      env: {
        SVC_REGISTRAR: 'namecom',
        SVC_REGISTRAR_URL: double.url,
        SVC_REGISTRAR_USERNAME: 'svc-test',
        SVC_REGISTRAR_TOKEN: 'secret',
        SVC_REGISTRAR_TIMEOUT_SECONDS: '1',
        SVC_DOMAINS_EDGE_ADDRESSES: '203.0.113.7',
      },
    });
  });
  after(async () => {
    await api?.close();
    await double?.close();
  });

  it('searches names, or a word over the TLDs offered, with prices in cents; refuses names that cannot be registered', async () => {
    const found = await search(`name=${name('ada')}&name=taken-${suffix}.com&name=premiumword.dev`);
    assert.deepEqual(found[0], {
      name: name('ada'),
      available: true,
      premium: false,
      registration: { amount: 1299, currency: 'USD' },
      renewal: { amount: 1499, currency: 'USD' },
      reason: null,
    });
    assert.equal(found[1]!.available, false);
    assert.equal(found[2]!.premium, true);
    const word = await search(`word=ada${suffix}`);
    assert.deepEqual(
      word.map((w) => w.name),
      ['com', 'net', 'org', 'dev', 'app', 'io'].map((t) => `ada${suffix}.${t}`),
    );
    for (const [q, message] of [
      ['name=shop', /single label/],
      ['name=shop.xyz', /\.xyz names are not offered here/],
      ['name=www.shop.com', /only a name directly under \.com/],
      ['name=bad_label.com', /./],
      ['name=*.shop.com', /wildcard/],
      ['word=Not A Word', /not a domain label/],
      ['', /give a name/],
      [Array.from({ length: 21 }, (_, i) => `name=n${i}.com`).join('&'), /at most 20 names/],
    ] as const) {
      const res = await api.request('GET', `/api/domains/search?${q}`);
      assert.match((await expectJson<{ error: string }>(res, 400)).error, message, q);
    }
    // Answers are reused a while: the registrar is not asked again (it would fail now).
    double.fault(name('ada'), 'unreachable');
    assert.equal((await search(`name=${name('ada')}`))[0]!.available, true);
    double.fault(name('ada'), undefined);
  });

  it('registers once per Idempotency-Key: a retried request answers the same order, and charges once', async () => {
    const n = name('ada');
    const first = await expectJson<{ order: Order; domain: Domain }>(
      await register(n, { amount: 1299, currency: 'USD' }, 'buy-ada-1'),
      201,
    );
    assert.equal(first.order.state, 'succeeded');
    assert.deepEqual(first.order.amount, { amount: 1299, currency: 'USD' });
    assert.equal(first.domain.name, n);
    assert.equal(first.domain.auto_renew, true);
    assert.equal(first.domain.locked, true);
    assert.deepEqual(first.domain.registry_statuses, ['clientTransferProhibited']);
    const again = await expectJson<{ order: Order }>(await register(n, { amount: 1299, currency: 'USD' }, 'buy-ada-1'), 201);
    assert.equal(again.order.id, first.order.id);
    assert.equal(charged(n), 1);
    assert.match(
      (await expectJson<{ error: string }>(await register(n, { amount: 1299, currency: 'USD' }), 409)).error,
      /is yours already/,
    );
    const listed = await expectJson<{ domains: Domain[]; pending: Order[] }>(await api.request('GET', '/api/domains'), 200);
    assert.deepEqual(
      listed.domains.map((d) => [d.name, d.state]),
      [[n, 'registered']],
    );
    assert.deepEqual(listed.pending, []);
    // The account is told, with the order and what it cost (never the contact).
    const { events } = await expectJson<{ events: Array<{ type: string; subject: string; data: Record<string, unknown> }> }>(
      await api.request('GET', '/api/events?kinds=domain.registered'),
      200,
    );
    const told = events.find((e) => e.subject === n);
    assert.deepEqual(told?.data, {
      domain: n,
      order: first.order.id,
      years: 1,
      amount: 1299,
      currency: 'USD',
      expires_at: first.domain.expires_at,
    });
  });

  it('refuses a price that changed since the search (never a higher charge), and a refused payment; nothing is bought', async () => {
    const n = name('grace');
    const [quote] = await search(`name=${n}`);
    double.fault(n, 'price_change');
    const changed = await expectJson<{ error: string }>(await register(n, quote!.registration!), 409);
    assert.match(changed.error, /price of .* changed: it is now 1949 USD/);
    assert.equal(charged(n), 0);
    const paid = await expectJson<{ order: Order }>(await register(n, { amount: 1949, currency: 'USD' }), 201);
    assert.equal(paid.order.state, 'succeeded');
    const m = name('card');
    double.fault(m, 'payment_refused');
    assert.match(
      (await expectJson<{ error: string }>(await register(m, { amount: 1299, currency: 'USD' }), 402)).error,
      /refused the payment/,
    );
    assert.equal(charged(m), 0);
    assert.equal((await api.request('GET', '/api/domains')).status, 200);
  });

  it('a purchase whose answer never came is settled by looking the name up: one registration, one charge', async () => {
    const n = name('lost');
    double.fault(n, 'timeout_after_charge');
    const settled = await expectJson<{ order: Order; domain: Domain }>(
      await register(n, { amount: 1299, currency: 'USD' }, 'buy-lost'),
      201,
    );
    assert.equal(settled.order.state, 'succeeded');
    assert.equal(settled.domain.name, n);
    // The buyer's retry (it never saw an answer either) gets the same order.
    assert.equal(
      (await expectJson<{ order: Order }>(await register(n, { amount: 1299, currency: 'USD' }, 'buy-lost'), 201)).order.id,
      settled.order.id,
    );
    assert.equal(charged(n), 1);
  });

  it('renews by the expiry it extends: twice with the same expiry, or two at once, renew once', async () => {
    const n = name('ada');
    const before = (await expectJson<{ domains: Domain[] }>(await api.request('GET', '/api/domains'), 200)).domains.find(
      (d) => d.name === n,
    )!;
    const body = { years: 1, expires_at: before.expires_at };
    const [a, b] = await Promise.all([
      api.request('POST', `/api/domains/${n}/renew`, { body }),
      api.request('POST', `/api/domains/${n}/renew`, { body }),
    ]);
    const first = await expectJson<{ order: Order; domain: Domain | null }>(a, a.status);
    const second = await expectJson<{ order: Order }>(b, b.status);
    assert.equal(first.order.id, second.order.id, 'one order for one period');
    const renewed = await expectJson<{ order: Order; domain: Domain }>(await api.request('POST', `/api/domains/${n}/renew`, { body }), 200);
    assert.equal(renewed.order.id, first.order.id, 'the same renewal answered again');
    assert.equal(new Date(renewed.domain.expires_at).getUTCFullYear(), new Date(before.expires_at).getUTCFullYear() + 1);
    assert.equal(double.charges().filter((c) => c.domainName === n && c.kind === 'renewal').length, 1);
    // An expiry that is neither the current one nor one renewed from: refused, look again.
    const stale = await api.request('POST', `/api/domains/${n}/renew`, { body: { years: 1, expires_at: '2020-01-01T00:00:00Z' } });
    assert.match((await expectJson<{ error: string }>(stale, 409)).error, /look again before renewing/);
    assert.equal((await api.request('POST', `/api/domains/not-mine-${suffix}.com/renew`, { body: { years: 1 } })).status, 404);
    assert.match(
      (await expectJson<{ error: string }>(await api.request('POST', `/api/domains/${n}/renew`, { body: { years: 10 } }), 400)).error,
      /past 10 years/,
    );
  });

  it('turns the platform’s auto-renew off and on', async () => {
    const n = name('ada');
    const off = await expectJson<Domain>(await api.request('POST', `/api/domains/${n}/autorenew`, { body: { enabled: false } }), 200);
    assert.equal(off.auto_renew, false);
    const listed = await expectJson<{ domains: Domain[] }>(await api.request('GET', '/api/domains'), 200);
    assert.equal(listed.domains.find((d) => d.name === n)!.auto_renew, false);
    assert.equal(
      (await expectJson<Domain>(await api.request('POST', `/api/domains/${n}/autorenew`, { body: { enabled: true } }), 200)).auto_renew,
      true,
    );
  });

  it('buys a name for an app in one call: refused before buying when the app cannot take it; its records written in the registrar’s DNS', async () => {
    type AppDomain = { name: string; status: string; records: Array<{ type: string; name: string; value: string }> };
    type Added = { domain: AppDomain; records_published: boolean; records_error: string | null };
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'shop' } }), 201);
    const price = { amount: 1299, currency: 'USD' };
    const nope = await api.request('POST', '/api/domains', { body: { name: name('nope'), years: 1, contact, price, app: 'no-such-app' } });
    assert.equal(nope.status, 404);
    assert.equal(charged(name('nope')), 0, 'nothing bought for an app that is not there');

    const n = name('shop');
    const bought = await expectJson<{ domain: Domain; app_domain: Added; app_domain_error: null }>(
      await api.request('POST', '/api/domains', { body: { name: n, years: 1, contact, price, app: 'shop' } }),
      201,
    );
    assert.equal(bought.domain.name, n);
    assert.equal(bought.app_domain.domain.name, n);
    assert.equal(bought.app_domain.records_published, true);
    // Every record the domain asks for is in the registrar's DNS, the parking page's address replaced.
    const zone = () =>
      double
        .records(n)
        .map((r) => `${r.type} ${r.host} ${r.answer}`)
        .sort();
    const relative = (fqdn: string) => (fqdn === n ? '' : fqdn.slice(0, -(n.length + 1)));
    assert.deepEqual(zone(), bought.app_domain.domain.records.map((r) => `${r.type} ${relative(r.name)} ${r.value}`).sort());
    assert.ok(zone().includes('A  203.0.113.7') && zone().some((r) => r.startsWith('TXT _svc-challenge svc-verify=')), zone().join('; '));
    const listed = await expectJson<{ domains: AppDomain[] }>(await api.request('GET', '/api/apps/shop/domains'), 200);
    assert.deepEqual(
      listed.domains.map((d) => d.name),
      [n],
    );

    // A subdomain of a name bought here, added to an app: its CNAME is written too; again, nothing changes.
    const www = await expectJson<Added>(await api.request('POST', '/api/apps/shop/domains', { body: { name: `www.${n}` } }), 201);
    assert.equal(www.records_published, true);
    assert.ok(
      zone().some((r) => /^CNAME www shop\./.test(r)),
      zone().join('; '),
    );
    const before = zone();
    assert.equal(
      (await expectJson<Added>(await api.request('POST', '/api/apps/shop/domains', { body: { name: `www.${n}` } }), 200)).records_published,
      true,
    );
    assert.deepEqual(zone(), before);
    // A name not bought here: the records are the user's to publish.
    const elsewhere = await expectJson<Added>(
      await api.request('POST', '/api/apps/shop/domains', { body: { name: `shop-${suffix}.example.org` } }),
      201,
    );
    assert.equal(elsewhere.records_published, false);
    assert.equal(charged(n), 1);
    // A name another app serves already: refused before buying, nothing charged.
    const claimed = name('claimed');
    await expectJson(await api.request('POST', '/api/apps/shop/domains', { body: { name: claimed } }), 201);
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'blog' } }), 201);
    const taken = await api.request('POST', '/api/domains', { body: { name: claimed, years: 1, contact, price, app: 'blog' } });
    assert.match((await expectJson<{ error: string }>(taken, 409)).error, /already a domain of app shop/);
    assert.equal(charged(claimed), 0);
  });

  it('read-only tokens cannot buy or renew; tokens restricted to apps reach no account domain; another account reaches none of this one’s', async () => {
    const { token: readOnly } = await api.deps.tokens.issue(api.account.id, {
      name: 'ro',
      restrictions: [{ kind: 'actions', actions: ['read'] }],
    });
    const { token: appsOnly } = await api.deps.tokens.issue(api.account.id, {
      name: 'apps',
      restrictions: [{ kind: 'apps', apps: ['shop'] }],
    });
    assert.equal((await api.request('GET', '/api/domains', { token: readOnly })).status, 200);
    const buy = { body: { name: name('ro'), years: 1, contact, price: { amount: 1299, currency: 'USD' } } };
    assert.equal((await api.request('POST', '/api/domains', { ...buy, token: readOnly })).status, 403);
    assert.equal((await api.request('POST', `/api/domains/${name('ada')}/renew`, { body: { years: 1 }, token: readOnly })).status, 403);
    for (const [method, path] of [
      ['GET', '/api/domains'],
      ['GET', `/api/domains/search?name=${name('x')}`],
    ] as const)
      assert.equal((await api.request(method, path, { token: appsOnly })).status, 403, path);
    assert.equal((await api.request('POST', '/api/domains', { ...buy, token: appsOnly })).status, 403);
    assert.equal(charged(name('ro')), 0);
    // Another account: the name is not available to it, and it cannot see, renew or change it.
    const other = await createAccount(api.db, api.kube.core, { email: `registrar-other-${suffix}@example.test` });
    const { token: theirs } = await api.deps.tokens.issue(other.id, { name: 'other' });
    try {
      const n = name('ada');
      const buyIt = { body: { name: n, years: 1, contact, price: { amount: 1299, currency: 'USD' } }, token: theirs };
      assert.match((await expectJson<{ error: string }>(await api.request('POST', '/api/domains', buyIt), 409)).error, /is not available$/);
      assert.deepEqual(
        (await expectJson<{ domains: Domain[] }>(await api.request('GET', '/api/domains', { token: theirs }), 200)).domains,
        [],
      );
      assert.equal((await api.request('POST', `/api/domains/${n}/renew`, { body: { years: 1 }, token: theirs })).status, 404);
      assert.equal((await api.request('POST', `/api/domains/${n}/autorenew`, { body: { enabled: false }, token: theirs })).status, 404);
      // Its Idempotency-Keys are its own: the same key as this account's first purchase finds nothing of it.
      const sameKey = await api.request('POST', '/api/domains', {
        body: { name: name('theirs'), years: 1, contact, price: { amount: 1299, currency: 'USD' } },
        headers: { 'idempotency-key': 'buy-ada-1' },
        token: theirs,
      });
      assert.equal((await expectJson<{ domain: Domain }>(sameKey, 201)).domain.name, name('theirs'));
      // A subdomain of this account's name on its own app: added as any name is, but nothing is
      // written in the DNS of a name it does not hold.
      const shop = name('shop');
      const zone = JSON.stringify(double.records(shop));
      await expectJson(await api.request('POST', '/api/apps', { body: { name: 'mirror' }, token: theirs }), 201);
      const added = await expectJson<{ records_published: boolean }>(
        await api.request('POST', '/api/apps/mirror/domains', { body: { name: `login.${shop}` }, token: theirs }),
        201,
      );
      assert.equal(added.records_published, false);
      assert.equal(JSON.stringify(double.records(shop)), zone);
    } finally {
      await api.kube.core.deleteNamespace({ name: other.namespace }).catch(() => undefined);
    }
  });

  it('from a terminal: svc domains search, register (asked, or --yes), ls, renew, autorenew', async () => {
    const svc = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(
          process.execPath,
          [path.join(repoRoot, 'bin/svc.js'), 'domains', ...args],
          { env: { ...process.env, SVC_API_URL: `${api.url}/api`, SVC_TOKEN: api.token } },
          (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const n = `cli-${suffix}.dev`;
    const found = await svc('search', n, `taken-${suffix}.com`);
    assert.equal(found.code, 0, found.stderr);
    assert.match(found.stdout, new RegExp(`${n.replace('.', '\\.')}\\s+yes\\s+15\\.00 USD\\s+15\\.00 USD`));
    assert.match(found.stdout, /taken-.*\s+no\s+-\s+-\s+Domain is not available/);
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'svc-contact-')), 'ada.json');
    writeFileSync(file, JSON.stringify(contact));
    const unasked = await svc('register', n, '--contact', file);
    assert.notEqual(unasked.code, 0, 'no terminal to ask at, no --yes: nothing bought');
    assert.match(unasked.stderr, /add --yes/);
    assert.equal(charged(n), 0);
    const bought = await svc('register', n, '--contact', file, '--years', '2', '--yes');
    assert.equal(bought.code, 0, bought.stderr);
    assert.match(
      bought.stdout,
      new RegExp(`${n.replace('.', '\\.')}: registered for 2 years \\(30\\.00 USD\\), expires \\d{4}-\\d\\d-\\d\\d`),
    );
    const listed = await svc('ls');
    assert.match(listed.stdout, new RegExp(`${n.replace('.', '\\.')}\\s+registered\\s+\\S+\\s+on\\s+yes\\s+15\\.00 USD`));
    const renewed = await svc('renew', n);
    assert.match(renewed.stdout, /renewed for 1 year \(15\.00 USD\)/);
    const off = await svc('autorenew', n, 'off');
    assert.match(off.stdout, /auto-renew off/);
    const json = JSON.parse((await svc('ls', '--json')).stdout) as { domains: Domain[] };
    assert.equal(json.domains.find((d) => d.name === n)?.auto_renew, false);
    assert.equal(charged(n), 2, 'one registration, one renewal');
  });
});

describe('the renewer: auto-renew by the fleet’s leader, back-off, events and mail', () => {
  let double: NameComDouble;
  let a: TestApi;
  let b: TestApi;
  const suffix = `r${Date.now().toString(36)}`;
  const name = (label: string) => `${label}-${suffix}.com`;
  type Event = { type: string; subject: string; data: Record<string, unknown> };
  const events = async (api: TestApi, kind: string, subject: string) =>
    (await expectJson<{ events: Event[] }>(await api.request('GET', `/api/events?kinds=${kind}`), 200)).events.filter(
      (e) => e.subject === subject,
    );
  const domainOf = async (api: TestApi, n: string) =>
    (
      await expectJson<{ domains: Array<Domain & { auto_renew_failure: { failures: number; message: string } | null }> }>(
        await api.request('GET', '/api/domains'),
        200,
      )
    ).domains.find((d) => d.name === n);
  const charges = (n: string, kind: string) => double.charges().filter((c) => c.domainName === n && c.kind === kind).length;

  before(async () => {
    double = await startNameComDouble({ username: 'svc-test', token: 'secret' });
    // A window of 400 days: a name bought for a year is due at once.
    const env = {
      SVC_REGISTRAR: 'namecom',
      SVC_REGISTRAR_URL: double.url,
      SVC_REGISTRAR_USERNAME: 'svc-test',
      SVC_REGISTRAR_TOKEN: 'secret',
      SVC_REGISTRAR_RENEW_DAYS: '400',
      SVC_REGISTRAR_RENEW_RETRY_SECONDS: '1',
      SVC_REGISTRAR_RENEWER_INTERVAL_SECONDS: '1',
    };
    a = await startTestApi({ env });
    // A second API process of the same platform: the same database and Lease, its own renewer.
    b = await startTestApi({ env, sharing: a });
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await double?.close();
  });

  it('renews a name once when its window opens, with two API processes running; the charge is in usage', async () => {
    const n = name('steady');
    await expectJson(
      await a.request('POST', '/api/domains', { body: { name: n, years: 1, contact, price: { amount: 1299, currency: 'USD' } } }),
      201,
    );
    // Bought for a year, and due at once: the leader may renew it before the answer above was written.
    const year = new Date().getUTCFullYear() + 1;
    await eventually('the leader renewed it', async () => {
      const d = await domainOf(a, n);
      return d && new Date(d.expires_at).getUTCFullYear() === year + 1;
    });
    // More passes of both processes: the new expiry is out of the window, and the period is renewed.
    await Promise.all([a.workers.domainRenewer!.pass(), b.workers.domainRenewer!.pass()]);
    await Promise.all([a.workers.domainRenewer!.pass(), b.workers.domainRenewer!.pass()]);
    assert.equal(charges(n, 'renewal'), 1);
    const renewals = await a.db('domain_orders').where({ domain: n, kind: 'renew' });
    assert.deepEqual(
      renewals.map((o: { state: string }) => o.state),
      ['succeeded'],
    );
    assert.match((renewals[0] as { idempotency_key: string }).idempotency_key, /^auto-renew:/);
    assert.equal((await events(a, 'domain.renewed', n)).length, 1);
    // Both processes renewing the next period at the same moment (a leader that lost its Lease
    // and does not know it yet): one order, one charge.
    const actor = { accountId: a.account.id, namespace: a.account.namespace, createdBy: 'test' };
    const held = (await a.deps.registrar!.list(actor)).domains.find((d) => d.name === n)!;
    const [first, second] = await Promise.all([a.deps.registrar!.autoRenew(held), b.deps.registrar!.autoRenew(held)]);
    assert.equal(first.id, second.id);
    assert.equal(charges(n, 'renewal'), 2);
    assert.equal((await events(a, 'domain.renewed', n)).length, 2);
    // Its charges: the registration and the renewals, by currency, in minor units (the APIs' clocks
    // stand still in tests: a moment past now, all are in the month so far).
    a.clock.now = new Date(Date.now() + 1000);
    const usage = await expectJson<{ meters: Record<string, number>; charges: Record<string, Record<string, number>> }>(
      await a.request('GET', '/api/account/usage'),
      200,
    );
    assert.equal(usage.meters.domain_registrations, 3);
    assert.deepEqual(usage.charges, { domain_registrations: { USD: 1299 + 1499 * 2 } });
    const history = await expectJson<{ history: Array<{ charges: Record<string, Record<string, number>> }> }>(
      await a.request('GET', '/api/account/usage/history?months=1'),
      200,
    );
    assert.deepEqual(history.history[0]!.charges, { domain_registrations: { USD: 4297 } });
  });

  it('a name not set to renew is told of once; a failing renewal backs off, is told by event and mail, and renews once paid', async () => {
    const n = name('card');
    await expectJson(
      await a.request('POST', '/api/domains', {
        body: { name: n, years: 1, contact, price: { amount: 1299, currency: 'USD' }, auto_renew: false },
      }),
      201,
    );
    const mails = () =>
      a
        .db('mail_outbox')
        .where({ purpose: 'domain-expiring', to: a.account.email })
        .orderBy('created_at')
        .select<Array<{ subject: string }>>('subject');
    await eventually('told it will not renew', async () => (await events(a, 'domain.expiring', n)).length === 1);
    const [off] = await events(a, 'domain.expiring', n);
    assert.equal(off!.data.auto_renew, false);
    assert.equal(off!.data.days, 400);
    assert.match((await mails())[0]!.subject, new RegExp(`^${n.replace(/\./g, '\\.')} expires in 36\\d days$`));
    await Promise.all([a.workers.domainRenewer!.pass(), b.workers.domainRenewer!.pass()]);
    assert.equal((await events(a, 'domain.expiring', n)).length, 1, 'told once for this expiry and threshold');

    // Auto-renew on, and the card refused: retried with back-off, each failure told once.
    double.fault(n, 'payment_refused');
    await a.request('POST', `/api/domains/${n}/autorenew`, { body: { enabled: true } });
    await eventually('two failed tries', async () => ((await domainOf(a, n))?.auto_renew_failure?.failures ?? 0) >= 2);
    const failing = (await domainOf(a, n))!;
    assert.match(failing.auto_renew_failure!.message, /Insufficient funds|refused/i);
    const failed = await events(a, 'domain.renewal_failed', n);
    assert.ok(failed.length >= 2);
    assert.equal(failed[0]!.data.reason, 'payment_refused');
    assert.deepEqual(
      failed.map((e) => e.data.failures),
      failed.map((_, i) => i + 1),
      'one event per try, from one process',
    );
    const told = (await events(a, 'domain.expiring', n)).find((e) => e.data.auto_renew === true);
    assert.match(String(told?.data.renewal_error), /Insufficient funds|refused/i);
    const subjects = (await mails()).map((m) => m.subject);
    assert.equal(subjects.length, 2);
    assert.match(subjects[1]!, /: renewal failed$/);
    assert.equal(charges(n, 'renewal'), 0);

    // Paid: the next try (after its back-off) renews it, once, and the failure is cleared.
    double.fault(n, undefined);
    await eventually(
      'renewed after the card was fixed',
      async () => (await domainOf(a, n))?.auto_renew_failure === null && charges(n, 'renewal') === 1,
      {
        timeoutMs: 60_000,
      },
    );
    await Promise.all([a.workers.domainRenewer!.pass(), b.workers.domainRenewer!.pass()]);
    assert.equal(charges(n, 'renewal'), 1);
    assert.equal((await events(a, 'domain.renewed', n)).length, 1);
  });
});
