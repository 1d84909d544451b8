// The renewer's decisions (api/registrar/renewer.ts) and the records written for a name bought here
// (lib/registrar/registrar.ts recordChanges): pure, over plain values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dueNotices, dueRenewals, expiringMail, noticeDays, retryDelayMs } from '../../api/registrar/renewer.js';
import type { ExpiringDomain } from '../../api/registrar/store.js';
import { recordChanges } from '../../lib/registrar/registrar.js';

const now = new Date('2026-11-29T10:00:00Z');
const day = 86_400_000;
const domain = (name: string, daysLeft: number, o: Partial<ExpiringDomain> = {}): ExpiringDomain => ({
  name,
  accountId: 'acc',
  email: 'owner@example.test',
  registeredAt: new Date('2025-11-29T10:00:00Z'),
  expiresAt: new Date(now.getTime() + daysLeft * day),
  autoRenew: true,
  locked: true,
  statuses: ['clientTransferProhibited'],
  renewal: { cents: 1499, currency: 'USD' },
  updatedAt: now,
  renewFailures: 0,
  renewAfter: null,
  renewError: null,
  noticedExpiry: null,
  noticedDays: null,
  ...o,
});

describe('the renewer’s decisions', () => {
  it('renews auto-renew names inside the window whose back-off is over, and no others', () => {
    const due = dueRenewals(
      [
        domain('in.com', 29),
        domain('edge.com', 30),
        domain('out.com', 31),
        domain('off.com', 5, { autoRenew: false }),
        domain('waiting.com', 5, { renewFailures: 1, renewAfter: new Date(now.getTime() + 1000) }),
        domain('retry.com', 5, { renewFailures: 2, renewAfter: new Date(now.getTime() - 1000) }),
        domain('expired.com', -3),
        domain('gone.com', -31),
      ],
      now,
      30,
    );
    assert.deepEqual(
      due.map((d) => d.name),
      ['in.com', 'edge.com', 'retry.com', 'expired.com'],
    );
  });

  it('backs off doubling from the first wait, to a day at most', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => retryDelayMs(n, 3600_000)),
      [3600_000, 7200_000, 14_400_000, 28_800_000],
    );
    assert.equal(retryDelayMs(20, 3600_000), day);
    assert.deepEqual(noticeDays(30), [30, 7, 1]);
    assert.deepEqual(noticeDays(5), [5, 1]);
    assert.deepEqual(noticeDays(7), [7, 1]);
  });

  it('tells of a name that will not renew at the nearest threshold reached, once per expiry and threshold', () => {
    const off = domain('off.com', 20, { autoRenew: false });
    assert.deepEqual(
      dueNotices([off], now, 30).map((n) => [n.domain.name, n.days, n.why]),
      [['off.com', 30, 'auto_renew_off']],
    );
    // Told at 30 for this expiry: nothing until 7.
    const told = { noticedExpiry: off.expiresAt, noticedDays: 30 };
    assert.deepEqual(dueNotices([{ ...off, ...told }], now, 30), []);
    const week = domain('off.com', 6, { autoRenew: false, noticedDays: 30 });
    week.noticedExpiry = week.expiresAt;
    assert.deepEqual(
      dueNotices([week], now, 30).map((n) => n.days),
      [7],
    );
    // A notice about an earlier expiry does not count for this one.
    assert.equal(dueNotices([{ ...off, noticedExpiry: new Date('2020-01-01'), noticedDays: 1 }], now, 30).length, 1);
    // Renewing by itself: nothing to tell; its renewal failing: told, with why.
    assert.deepEqual(dueNotices([domain('fine.com', 3)], now, 30), []);
    assert.deepEqual(
      dueNotices([domain('card.com', 3, { renewFailures: 1, renewError: 'Insufficient funds' })], now, 30).map((n) => [n.days, n.why]),
      [[7, 'renewal_failing']],
    );
    // Outside the window: nothing.
    assert.deepEqual(dueNotices([domain('far.com', 45, { autoRenew: false })], now, 30), []);
    // Expired: the last threshold, once.
    assert.deepEqual(
      dueNotices([domain('gone.com', -2, { autoRenew: false })], now, 30).map((n) => n.days),
      [1],
    );
  });

  it('mails what happened and what to do, to the account’s address', () => {
    const failing = domain('card.com', 6.5, {
      renewFailures: 2,
      renewError: 'Insufficient funds',
      renewAfter: new Date(now.getTime() + 7200_000),
    });
    const mail = expiringMail(failing, 'renewal_failing', now);
    assert.equal(mail.to, 'owner@example.test');
    assert.equal(mail.subject, 'card.com expires in 7 days: renewal failed');
    assert.match(mail.text, /renewing it failed: Insufficient funds/);
    assert.match(mail.text, /svc domains renew card\.com/);
    const off = expiringMail(domain('off.com', 1, { autoRenew: false }), 'auto_renew_off', now);
    assert.equal(off.subject, 'off.com expires in 1 day');
    assert.match(off.text, /svc domains autorenew off\.com on/);
    assert.equal(expiringMail(domain('gone.com', -1, { autoRenew: false }), 'auto_renew_off', now).subject, 'gone.com has expired');
  });
});

describe('records written for a name bought here', () => {
  const current = [
    { id: 1, host: '', type: 'A' as const, answer: '192.0.2.10', ttl: 300 },
    { id: 2, host: '', type: 'AAAA' as const, answer: '2001:db8::10', ttl: 300 },
    { id: 3, host: 'mail', type: 'A' as const, answer: '198.51.100.1', ttl: 300 },
    { id: 4, host: '_svc-challenge', type: 'TXT' as const, answer: 'other-verification', ttl: 300 },
    { id: 5, host: 'www', type: 'A' as const, answer: '192.0.2.10', ttl: 300 },
  ];

  it('points every routed host at the app alone: others of a type changed, the rest removed; TXT added beside', () => {
    const wanted = [
      { host: '', type: 'A' as const, answer: '203.0.113.7', ttl: 300 },
      { host: '', type: 'A' as const, answer: '203.0.113.8', ttl: 300 },
      { host: '_svc-challenge', type: 'TXT' as const, answer: 'svc-verify=abc', ttl: 300 },
      { host: 'www', type: 'CNAME' as const, answer: 'shop.apps.example.com', ttl: 300 },
    ];
    // The parking AAAA would still answer beside the app's addresses, the A at www beside a CNAME
    // (which DNS refuses): both go; mail's A and the other TXT are not the app's business.
    assert.deepEqual(recordChanges(current, wanted), {
      remove: [2, 5],
      update: [{ id: 1, record: wanted[0] }],
      create: [wanted[1], wanted[2], wanted[3]],
    });
  });

  it('writes nothing when every record is there (a trailing dot and case aside)', () => {
    const there = [{ id: 6, host: 'www', type: 'CNAME' as const, answer: 'Shop.Apps.Example.com.', ttl: 300 }];
    assert.deepEqual(recordChanges(there, [{ host: 'www', type: 'CNAME', answer: 'shop.apps.example.com', ttl: 300 }]), {
      remove: [],
      create: [],
      update: [],
    });
    // One of two addresses there: the other is added, the one there is not moved.
    const one = [{ id: 7, host: '', type: 'A' as const, answer: '203.0.113.7', ttl: 300 }];
    assert.deepEqual(
      recordChanges(one, [
        { host: '', type: 'A', answer: '203.0.113.7', ttl: 300 },
        { host: '', type: 'A', answer: '203.0.113.8', ttl: 300 },
      ]),
      { remove: [], create: [{ host: '', type: 'A', answer: '203.0.113.8', ttl: 300 }], update: [] },
    );
  });
});
