// What one check makes of a domain's status and schedule (lib/domains/lifecycle.ts): verified when
// both records are right, misconfigured (checked fast again) when a verified one's records go,
// pending with a growing wait otherwise, failed and released after seven days unverified.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { afterCheck, pendingLimitMs, type DomainState } from '../../lib/domains/lifecycle.js';

const t0 = new Date('2026-11-27T10:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);
const ok = { ok: true, reason: 'Verified', message: '' };
const missing = { ok: false, reason: 'OwnershipMissing', message: 'publish TXT _svc-challenge.shop.example' };
const pending = (o: Partial<DomainState> = {}): DomainState => ({
  phase: 'Pending',
  createdAt: t0,
  verifiedAt: undefined,
  phaseSince: t0,
  backoffMs: 0,
  ...o,
});
const opts = { recheckMs: 600_000 };

describe('domain lifecycle', () => {
  it('verifies a pending domain whose records are right: told once, checked again after the recheck interval', () => {
    const step = afterCheck(pending(), ok, at(5000), opts);
    assert.equal(step.phase, 'Verified');
    assert.equal(step.event, 'domain.verified');
    assert.deepEqual(step.verifiedAt, at(5000));
    assert.deepEqual(step.nextCheckAt, at(5000 + 600_000));
    const again = afterCheck({ ...pending(), phase: 'Verified', verifiedAt: at(5000) }, ok, at(700_000), opts);
    assert.equal(again.event, undefined, 'still verified: nothing to tell');
    assert.deepEqual(again.verifiedAt, at(5000), 'verified since the first time');
  });

  it('backs off while pending: 2 s, then half as long again each time, at most 60 s in the first hour and 10 min after', () => {
    let state = pending();
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      const step = afterCheck(state, missing, at(i * 1000), opts);
      assert.equal(step.phase, 'Pending');
      assert.equal(step.message, missing.message);
      waits.push(step.backoffMs);
      state = { ...state, backoffMs: step.backoffMs };
    }
    assert.deepEqual(waits.slice(0, 4), [2000, 3000, 4500, 6750]);
    assert.equal(Math.max(...waits), 60_000);
    assert.equal(afterCheck({ ...state, backoffMs: 60_000 }, missing, at(2 * 3600_000), opts).backoffMs, 90_000);
    assert.equal(afterCheck({ ...state, backoffMs: 600_000 }, missing, at(2 * 3600_000), opts).backoffMs, 600_000);
  });

  it('marks a verified domain misconfigured when a record goes, told once, and checks it again in 2 s', () => {
    const verified = pending({ phase: 'Verified', verifiedAt: at(1000), phaseSince: at(1000) });
    const step = afterCheck(verified, missing, at(900_000), opts);
    assert.equal(step.phase, 'Misconfigured');
    assert.equal(step.event, 'domain.misconfigured');
    assert.match(step.message, /no longer routes: publish TXT/);
    assert.deepEqual(step.nextCheckAt, at(902_000));
    const still = afterCheck({ ...verified, phase: 'Misconfigured', backoffMs: 2000 }, missing, at(902_000), opts);
    assert.equal(still.phase, 'Misconfigured');
    assert.equal(still.event, undefined);
    assert.equal(still.release, false, 'a name once verified stays the account’s');
    const back = afterCheck({ ...verified, phase: 'Misconfigured' }, ok, at(910_000), opts);
    assert.equal(back.event, 'domain.verified');
  });

  it('gives a name up after seven days without the right records: failed, told, the claim released', () => {
    const step = afterCheck(pending({ backoffMs: 600_000 }), missing, at(pendingLimitMs), opts);
    assert.equal(step.phase, 'Failed');
    assert.equal(step.event, 'domain.failed');
    assert.equal(step.release, true);
    assert.match(step.message, /no right records in 7 days: the name is released/);
    assert.equal(afterCheck(pending(), missing, at(pendingLimitMs - 1), opts).phase, 'Pending');
  });
});
