// The webhook retry schedule (lib/webhooks/outbox.ts) and signatures (lib/webhooks/signature.ts),
// pure: the Standard Webhooks waits with bounded jitter, Retry-After in both forms, and a signature
// the standardwebhooks package's verifier accepts, with two secrets during a rotation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { maxAttempts, parseRetryAfter, retryDelayMs, retryDelaysMs } from '../../lib/webhooks/outbox.js';
import { signedHeaders } from '../../lib/webhooks/signature.js';

describe('webhook schedule', () => {
  it('waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, with up to 10 % jitter, then gives up after ten attempts', () => {
    const hours = (h: number) => h * 3600_000;
    assert.deepEqual(retryDelaysMs, [5000, 300_000, 1_800_000, hours(2), hours(5), hours(10), hours(14), hours(20), hours(24)]);
    assert.equal(maxAttempts, 10);
    assert.equal(
      retryDelayMs(1, undefined, () => 0),
      5000,
    );
    assert.equal(
      retryDelayMs(1, undefined, () => 0.999999),
      5500,
    );
    assert.equal(
      retryDelayMs(9, undefined, () => 1),
      hours(24),
      'never beyond a day',
    );
    assert.equal(retryDelayMs(10), undefined);
    const total = retryDelaysMs.reduce((a, b) => a + b, 0);
    assert.ok(total > hours(72) && total < hours(80), 'about three days in all');
  });

  it('honours a Retry-After longer than the wait, up to a day, and reads both of its forms', () => {
    const now = new Date('2026-11-25T10:00:00Z');
    assert.equal(
      retryDelayMs(1, 120_000, () => 0),
      120_000,
    );
    assert.equal(
      retryDelayMs(2, 1000, () => 0),
      300_000,
      'a shorter one does not hasten the schedule',
    );
    assert.equal(
      retryDelayMs(1, 10 * 86_400_000, () => 0),
      86_400_000,
    );
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 10:01:00 GMT', now), 60_000);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });

  it('signs so that the standardwebhooks verifier accepts either secret of a rotation', () => {
    const [a, b] = ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD'];
    const body = '{"type":"deploy.live"}';
    const ts = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([a, b], 'msg_1', ts, body);
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    for (const secret of [a, b]) assert.deepEqual(new Webhook(secret).verify(body, headers), { type: 'deploy.live' });
    assert.throws(() => new Webhook('whsec_' + Buffer.alloc(24, 7).toString('base64')).verify(body, headers));
  });
});
