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
