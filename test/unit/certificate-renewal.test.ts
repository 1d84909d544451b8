// When a certificate is renewed (lib/certificates/renewal.ts): a third of its lifetime before it
// expires, less a jitter of up to a tenth of it; and whether a domain needs an order now.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { needsCertificate, renewAfterOf } from '../../lib/certificates/renewal.js';

const day = 24 * 3600_000;
const notBefore = new Date('2026-11-27T00:00:00Z');
const notAfter = new Date(notBefore.getTime() + 90 * day);

describe('renewAfterOf', () => {
  it('is a third of the lifetime before expiry with no jitter', () => {
    assert.equal(renewAfterOf(notBefore, notAfter, () => 0).toISOString(), new Date(notAfter.getTime() - 30 * day).toISOString());
  });

  it('subtracts a jitter uniform up to a tenth of the lifetime', () => {
    assert.equal(renewAfterOf(notBefore, notAfter, () => 0.5).getTime(), notAfter.getTime() - 30 * day - 4.5 * day);
    // Just under 1: just under a tenth (9 days of 90).
    const earliest = renewAfterOf(notBefore, notAfter, () => 0.999999);
    assert.ok(earliest.getTime() > notAfter.getTime() - 39 * day);
    assert.ok(earliest.getTime() < notAfter.getTime() - 38.99 * day);
  });

  it('holds for short lifetimes too (6 days: renewed 2 days before, up to 0.6 day earlier)', () => {
    const end = new Date(notBefore.getTime() + 6 * day);
    assert.equal(renewAfterOf(notBefore, end, () => 1).getTime(), end.getTime() - 2 * day - 0.6 * day);
  });

  it('keeps a random source out of range within the jitter', () => {
    assert.equal(renewAfterOf(notBefore, notAfter, () => -3).getTime(), notAfter.getTime() - 30 * day);
    assert.equal(renewAfterOf(notBefore, notAfter, () => 7).getTime(), notAfter.getTime() - 39 * day);
  });
});

describe('needsCertificate', () => {
  const now = new Date('2027-01-01T00:00:00Z');
  const later = new Date(now.getTime() + day);
  const earlier = new Date(now.getTime() - day);

  it('never for a name that is not verified, with or without a certificate', () => {
    assert.deepEqual(needsCertificate({ verified: false, secret: false, renewAfter: undefined, now }), { need: false, why: 'unverified' });
    assert.deepEqual(needsCertificate({ verified: false, secret: true, renewAfter: earlier, now }), { need: false, why: 'unverified' });
  });

  it('for a verified name without a certificate, or with one that cannot be read', () => {
    assert.deepEqual(needsCertificate({ verified: true, secret: false, renewAfter: undefined, now }), { need: true, why: 'missing' });
    assert.deepEqual(needsCertificate({ verified: true, secret: true, renewAfter: undefined, now }), { need: true, why: 'missing' });
  });

  it('not while the certificate is fresh; a renewal from renewAfter on', () => {
    assert.deepEqual(needsCertificate({ verified: true, secret: true, renewAfter: later, now }), { need: false, why: 'fresh' });
    assert.deepEqual(needsCertificate({ verified: true, secret: true, renewAfter: now, now }), { need: true, why: 'renewal' });
    assert.deepEqual(needsCertificate({ verified: true, secret: true, renewAfter: earlier, now }), { need: true, why: 'renewal' });
  });
});
