// The certificate issuer's budget (lib/certificates/budget.ts): each of the CA's limits (certificates
// per registered domain per week, failed validations per name per hour, orders per 3 hours), an
// order in flight, the last retry_after, and the back-off after failures.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  consecutiveFailures,
  decideOrder,
  orderLeaseMs,
  retryAfterFailure,
  type OrderLimits,
  type OrderOutcome,
  type OrderRecord,
} from '../../lib/certificates/budget.js';
import { registeredDomainOf } from '../../lib/certificates/orders.js';

const now = new Date('2026-11-27T12:00:00Z');
const min = 60_000;
const hour = 60 * min;
const limits: OrderLimits = { certificatesPerDomainWeek: 3, failedValidationsPerHour: 2, ordersPer3h: 4 };
const ago = (ms: number) => new Date(now.getTime() - ms);

function row(domain: string, outcome: OrderOutcome, startedAgoMs: number, o: Partial<OrderRecord> = {}): OrderRecord {
  return {
    domain,
    registeredDomain: registeredDomainOf(domain),
    startedAt: ago(startedAgoMs),
    finishedAt: outcome === 'pending' ? undefined : ago(startedAgoMs - 1000),
    outcome,
    reason: undefined,
    retryAfter: undefined,
    ...o,
  };
}

const decide = (domain: string, rows: OrderRecord[], observedAt?: Date) =>
  decideOrder({ domain, registeredDomain: registeredDomainOf(domain), rows, limits, now, ...(observedAt ? { observedAt } : {}) });

describe('registeredDomainOf', () => {
  it('is the registrable domain (Public Suffix List, private section too), a wildcard by its base', () => {
    assert.equal(registeredDomainOf('www.shop.example.co.uk'), 'example.co.uk');
    assert.equal(registeredDomainOf('*.shop.example.com'), 'example.com');
    assert.equal(registeredDomainOf('me.github.io'), 'me.github.io');
  });
});

describe('decideOrder', () => {
  it('allows the first order of a name', () => {
    assert.deepEqual(decide('shop.example.com', []), { allowed: true });
  });

  it(`refuses a ${limits.certificatesPerDomainWeek + 1}th certificate under one registered domain in 7 days, until the oldest leaves the week`, () => {
    const rows = [
      row('a.example.com', 'issued', 6 * 24 * hour),
      row('b.example.com', 'renewed', 2 * 24 * hour),
      row('c.example.com', 'issued', hour),
    ];
    const d = decide('d.example.com', rows);
    assert.equal(d.allowed, false);
    if (d.allowed) return;
    assert.equal(d.reason, 'CertificatesPerDomainLimit');
    assert.equal(d.until.getTime(), rows[0]!.finishedAt!.getTime() + 7 * 24 * hour);
    // Another registered domain is not counted; nor are certificates older than a week.
    assert.deepEqual(decide('d.example.org', rows), { allowed: true });
    assert.deepEqual(decide('d.example.com', [row('a.example.com', 'issued', 8 * 24 * hour), ...rows.slice(1)]), { allowed: true });
    // Failed orders are not certificates.
    assert.deepEqual(decide('d.example.com', [row('a.example.com', 'failed', 3 * hour), ...rows.slice(1)]), { allowed: true });
  });

  it(`refuses a name that failed ${limits.failedValidationsPerHour} times in the last hour, until the older failure is an hour old`, () => {
    const rows = [row('shop.example.com', 'failed', 50 * min), row('shop.example.com', 'failed', 10 * min)];
    const d = decide('shop.example.com', rows);
    assert.equal(d.allowed, false);
    if (d.allowed) return;
    assert.equal(d.reason, 'FailedValidationsLimit');
    assert.equal(d.until.getTime(), rows[0]!.finishedAt!.getTime() + hour);
    // Per name: another name of the same domain may go.
    assert.deepEqual(decide('www.example.com', rows), { allowed: true });
    assert.deepEqual(decide('shop.example.com', [row('shop.example.com', 'failed', 70 * min), rows[1]!]), { allowed: true });
  });

  it(`refuses a ${limits.ordersPer3h + 1}th order of the platform in 3 hours (refusals are no orders)`, () => {
    const rows = [
      row('a.one.example', 'issued', 170 * min),
      row('b.two.example', 'failed', 100 * min),
      row('c.three.example', 'pending', 5 * min),
      row('d.four.example', 'renewed', 60 * min),
    ];
    const d = decide('e.five.example', rows);
    assert.equal(d.allowed, false);
    if (d.allowed) return;
    assert.equal(d.reason, 'OrdersLimit');
    assert.equal(d.until.getTime(), rows[0]!.startedAt.getTime() + 3 * hour);
    assert.deepEqual(decide('e.five.example', [...rows.slice(1), row('a.one.example', 'refused', 10 * min)]), { allowed: true });
    assert.deepEqual(decide('e.five.example', [...rows.slice(1), row('a.one.example', 'issued', 190 * min)]), { allowed: true });
  });

  it("waits for the name's last retry_after", () => {
    const retryAfter = new Date(now.getTime() + 20 * min);
    const d = decide('shop.example.com', [row('shop.example.com', 'failed', 40 * min, { retryAfter })]);
    assert.deepEqual(d.allowed ? d : [d.reason, d.until.toISOString()], ['BackingOff', retryAfter.toISOString()]);
    assert.deepEqual(decide('shop.example.com', [row('shop.example.com', 'failed', 3 * hour, { retryAfter: ago(min) })]), {
      allowed: true,
    });
    assert.deepEqual(decide('www.example.com', [row('shop.example.com', 'failed', 40 * min, { retryAfter })]), { allowed: true });
  });

  it('never orders a name twice at once; an abandoned order (past its lease) no longer holds it', () => {
    const d = decide('shop.example.com', [row('shop.example.com', 'pending', 2 * min)]);
    assert.equal(d.allowed ? 'allowed' : d.reason, 'OrderInFlight');
    assert.deepEqual(decide('shop.example.com', [row('shop.example.com', 'pending', orderLeaseMs + min)]), { allowed: true });
  });

  it('still counts an abandoned order against the weekly and 3-hour limits (the CA may have issued it)', () => {
    const abandoned = [1, 2, 3].map((k) => row(`n${k}.example.com`, 'pending', orderLeaseMs + k * min));
    const week = decide('shop.example.com', abandoned);
    assert.equal(week.allowed ? 'allowed' : week.reason, 'CertificatesPerDomainLimit');
    const elsewhere = [1, 2, 3, 4].map((k) => row(`n${k}.example${k}.net`, 'pending', orderLeaseMs + k * min));
    const orders = decide('shop.example.com', elsewhere);
    assert.equal(orders.allowed ? 'allowed' : orders.reason, 'OrdersLimit');
  });

  it('skips a name issued after the caller looked at the certificates (another replica was first)', () => {
    const rows = [row('shop.example.com', 'issued', 30_000)];
    const d = decide('shop.example.com', rows, ago(60_000));
    assert.equal(d.allowed ? 'allowed' : d.reason, 'IssuedMeanwhile');
    assert.deepEqual(decide('shop.example.com', rows, ago(10_000)), { allowed: true });
  });
});

describe('back-off', () => {
  it('counts the failures and refusals since the last certificate', () => {
    const rows = [
      row('shop.example.com', 'failed', 10 * hour),
      row('shop.example.com', 'issued', 9 * hour),
      row('shop.example.com', 'failed', 5 * hour),
      row('shop.example.com', 'refused', 3 * hour),
      row('shop.example.com', 'failed', 1 * hour),
      row('www.example.com', 'failed', 1 * hour),
    ];
    assert.equal(consecutiveFailures(rows, 'shop.example.com'), 3);
    assert.equal(consecutiveFailures(rows.slice(0, 2), 'shop.example.com'), 0);
    assert.equal(consecutiveFailures([], 'shop.example.com'), 0);
  });

  it('waits 1 h after a first failure, doubling per failure in a row, at most 24 h', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7, 20].map((n) => (retryAfterFailure(n, now).getTime() - now.getTime()) / hour);
    assert.deepEqual(waits, [1, 2, 4, 8, 16, 24, 24, 24]);
  });

  it("takes the CA's Retry-After when it gives one in the future", () => {
    const ca = new Date(now.getTime() + 3 * hour + 7 * min);
    assert.equal(retryAfterFailure(1, now, ca).toISOString(), ca.toISOString());
    assert.equal(retryAfterFailure(2, now, ago(min)).getTime(), now.getTime() + 2 * hour);
  });
});
