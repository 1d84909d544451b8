// The registrar client (lib/registrar/namecom.ts, name.com's Core API v1) against the local double
// of the same API (hack/namecom-double.ts) over real HTTP on loopback: prices in cents, a purchase
// at a price that changed refused, payment refusals, rate limits, no answer at all, and a purchase
// whose answer was lost found again by looking the name up (one charge, never two).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startNameComDouble, type NameComDouble } from '../../hack/namecom-double.js';
import { NameCom } from '../../lib/registrar/namecom.js';
import { RegistrarError, type Contact } from '../../lib/registrar/registrar.js';

const ada: Contact = {
  firstName: 'Ada',
  lastName: 'Lovelace',
  address1: '12 St James Square',
  city: 'London',
  postalCode: 'SW1Y 4JH',
  country: 'GB',
  phone: '+442071234567',
  email: 'ada@example.test',
};
const usd = (cents: number) => ({ cents, currency: 'USD' });

describe('registrar: name.com Core API v1 against its local double', () => {
  let double: NameComDouble;
  let registrar: NameCom;
  const kindOf = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'ok';
    } catch (err) {
      assert.ok(err instanceof RegistrarError, String(err));
      return err.kind;
    }
  };

  before(async () => {
    double = await startNameComDouble({ username: 'svc-test', token: 'secret', hangMs: 2_000 });
    registrar = new NameCom({ url: double.url, username: 'svc-test', token: 'secret', timeoutMs: 500 });
  });
  after(async () => double?.close());

  it('checks names: available ones with a year’s price and renewal in cents, premium flagged, the rest with why', async () => {
    const found = await registrar.check(['ada-lovelace.com', 'taken-name.com', 'premiumword.dev', 'ada.nosuchtld']);
    assert.deepEqual(found, [
      { name: 'ada-lovelace.com', available: true, premium: false, registration: usd(1299), renewal: usd(1499) },
      { name: 'taken-name.com', available: false, premium: false, reason: 'Domain is not available' },
      { name: 'premiumword.dev', available: true, premium: true, registration: usd(250000), renewal: usd(250000) },
      { name: 'ada.nosuchtld', available: false, premium: false, reason: 'TLD not supported' },
    ]);
    await assert.rejects(registrar.check(Array.from({ length: 51 }, (_, i) => `n${i}.com`)), /at most 50/);
  });

  it('registers for whole years at the quoted price, once; the name is then held and no longer available', async () => {
    const bought = await registrar.register({ name: 'ada-lovelace.com', years: 2, contact: ada, price: usd(1299) });
    assert.deepEqual(bought.paid, usd(2598));
    assert.equal(bought.domain.expiresAt.getUTCFullYear() - bought.domain.createdAt.getUTCFullYear(), 2);
    assert.deepEqual(bought.domain.statuses, ['clientTransferProhibited']);
    assert.equal(bought.domain.locked, true);
    assert.equal(await kindOf(registrar.register({ name: 'ada-lovelace.com', years: 1, contact: ada, price: usd(1299) })), 'unavailable');
    assert.equal((await registrar.check(['ada-lovelace.com']))[0]!.available, false);
    assert.equal((await registrar.get('ada-lovelace.com'))?.expiresAt.getTime(), bought.domain.expiresAt.getTime());
    assert.equal(await registrar.get('never-bought.com'), undefined);
    assert.equal(double.charges().filter((c) => c.domainName === 'ada-lovelace.com').length, 1);
  });

  it('renews by whole years at the renewal price', async () => {
    const before = (await registrar.get('ada-lovelace.com'))!.expiresAt;
    const renewed = await registrar.renew({ name: 'ada-lovelace.com', years: 1, price: usd(1499) });
    assert.equal(renewed.domain.expiresAt.getUTCFullYear(), before.getUTCFullYear() + 1);
    assert.deepEqual(renewed.paid, usd(1499));
    assert.equal(await kindOf(registrar.renew({ name: 'ada-lovelace.com', years: 1, price: usd(1299) })), 'price_changed');
    assert.equal(await kindOf(registrar.renew({ name: 'not-ours.com', years: 1, price: usd(1499) })), 'refused');
  });

  it('refuses a purchase at a price that changed since the check; the new price is quoted and can be paid', async () => {
    const [quote] = await registrar.check(['grace-hopper.com']);
    double.fault('grace-hopper.com', 'price_change');
    assert.equal(
      await kindOf(registrar.register({ name: 'grace-hopper.com', years: 1, contact: ada, price: quote!.registration! })),
      'price_changed',
    );
    const [now] = await registrar.check(['grace-hopper.com']);
    assert.deepEqual(now!.registration, usd(1949));
    assert.deepEqual(
      (await registrar.register({ name: 'grace-hopper.com', years: 1, contact: ada, price: now!.registration })).paid,
      usd(1949),
    );
  });

  it('tells a refused payment, a rate limit and no answer apart; nothing is charged for them', async () => {
    const charged = double.charges().length;
    double.fault('refused-card.com', 'payment_refused');
    assert.equal(
      await kindOf(registrar.register({ name: 'refused-card.com', years: 1, contact: ada, price: usd(1299) })),
      'payment_refused',
    );
    double.fault('busy.com', 'rate_limit');
    const limited = await registrar.check(['busy.com']).catch((e: unknown) => e);
    assert.ok(limited instanceof RegistrarError && limited.kind === 'rate_limited' && limited.retryAfterSeconds === 1);
    double.fault('down.com', 'unreachable');
    assert.equal(await kindOf(registrar.register({ name: 'down.com', years: 1, contact: ada, price: usd(1299) })), 'unknown_outcome');
    assert.equal(double.charges().length, charged);
    assert.equal(await kindOf(new NameCom({ url: double.url, username: 'svc-test', token: 'wrong' }).check(['x.com'])), 'refused');
  });

  it('a purchase whose answer never comes is an unknown outcome; looking the name up finds it bought, charged once', async () => {
    double.fault('lost-answer.com', 'timeout_after_charge');
    assert.equal(
      await kindOf(registrar.register({ name: 'lost-answer.com', years: 1, contact: ada, price: usd(1299) })),
      'unknown_outcome',
    );
    const found = await registrar.get('lost-answer.com');
    assert.ok(found, 'held: the purchase was made');
    assert.equal(double.charges().filter((c) => c.domainName === 'lost-answer.com').length, 1);
  });
});
