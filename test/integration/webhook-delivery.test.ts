// Webhook delivery against the real API and PostgreSQL, to receivers on loopback: every delivery
// verified by the standardwebhooks package's own verifier; retries on the injected clock (no real
// waiting), Retry-After, 410 and five days of failures disabling an endpoint, a disabled endpoint
// getting nothing, no redirect followed, the 15 s timeout, secret rotation signing with both
// secrets, redelivery, every attempt readable, and a deliverer process killed mid-retry losing nothing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook as Verifier } from 'standardwebhooks';
import { recordEvent } from '../../lib/events.js';
import { repoRoot } from '../../lib/paths.js';
import { WebhookDeliverer } from '../../lib/webhooks/deliverer.js';
import { webhookDispatcher } from '../../lib/webhooks/guarded-dispatcher.js';
import { createLogger } from '../../lib/logger.js';
import { startTestApi, TestClock, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on loopback that records each request and answers as `respond` says. */
async function receiver(respond: (n: number, req: IncomingMessage, res: ServerResponse) => void = (_n, _q, res) => res.end('ok')) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      respond(received.length, req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

describe('Webhook delivery', () => {
  let api: TestApi;
  const verify = (secret: string, r: Received) =>
    new Verifier(secret).verify(r.body, {
      'webhook-id': String(r.headers['webhook-id']),
      'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    }) as {
      type: string;
      timestamp: string;
      data: { id: number; type: string; subject: string };
    };

  async function endpoint(
    url: string,
    events: string[] = ['deploy.*'],
  ): Promise<{ id: string; secret: string; remove: () => Promise<void> }> {
    const res = await api.request('POST', '/api/account/webhooks', { body: { url, events } });
    assert.equal(res.status, 201, await res.clone().text());
    const { id, secret } = (await res.json()) as { id: string; secret: string };
    return { id, secret, remove: async () => void (await api.request('DELETE', `/api/account/webhooks/${id}`)) };
  }
  const deliveries = async (id: string) =>
    (
      (await (await api.request('GET', `/api/account/webhooks/${id}/deliveries`)).json()) as {
        deliveries: Array<{
          id: string;
          status: string;
          attempts: number;
          next_attempt_at: string | null;
          last_status: number | null;
          last_error: string | null;
          event_type: string;
        }>;
      }
    ).deliveries;
  const delivery = async (hook: string, id: string) =>
    (await (await api.request('GET', `/api/account/webhooks/${hook}/deliveries/${id}`)).json()) as {
      status: string;
      payload: string;
      attempt_log: Array<{
        attempt: number;
        status: number | null;
        error: string | null;
        duration_ms: number;
        response_excerpt: string | null;
      }>;
    };
  const publish = (type = 'deploy.live', app = 'shop') => recordEvent(api.db, api.account.id, type, app, { deploy: `dep_${Date.now()}` });
  /** Moves the injected clock and has the deliverer look at once. */
  const advance = (ms: number) => {
    api.clock.advance(ms);
    api.workers.webhookDeliverer.wake();
  };

  before(async () => {
    api = await startTestApi({ env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true' } });
  });
  after(async () => {
    await api?.close();
  });

  it('delivers an event the moment it is recorded, signed so that the standardwebhooks verifier accepts it', async () => {
    const rx = await receiver();
    const hook = await endpoint(rx.url, ['token.*']);
    try {
      const made = await api.request('POST', '/api/account/tokens', { body: { name: 'ci' } });
      assert.equal(made.status, 201);
      await publish('deploy.live'); // not of its kinds: never sent
      await eventually('the delivery', () => rx.received.length === 1);
      const payload = verify(hook.secret, rx.received[0]!);
      assert.equal(payload.type, 'token.created');
      assert.equal(payload.data.type, 'token.created');
      assert.match(String(rx.received[0]!.headers['webhook-id']), /^msg_/);
      assert.equal(rx.received[0]!.headers['content-type'], 'application/json');
      // The bytes signed are the bytes sent, and the stored body is what was sent.
      const [d] = await eventually('the outcome written', async () => {
        const list = await deliveries(hook.id);
        return list[0]?.status === 'succeeded' ? list : undefined;
      });
      assert.equal(d!.event_type, 'token.created');
      const full = await delivery(hook.id, d!.id);
      assert.equal(full.payload, rx.received[0]!.body);
      assert.equal(full.attempt_log.length, 1);
      assert.equal(full.attempt_log[0]!.status, 200);
      assert.equal(full.attempt_log[0]!.response_excerpt, 'ok');
      assert.ok(full.attempt_log[0]!.duration_ms >= 0);
      // A tampered body fails the same verifier.
      assert.throws(() =>
        verify(hook.secret, { ...rx.received[0]!, body: rx.received[0]!.body.replace('token.created', 'token.revoked') }),
      );
      assert.equal(rx.received.length, 1);
    } finally {
      await hook.remove();
      await rx.close();
    }
  });

  it('retries a receiver that fails twice, after 5 s and then 5 min of the injected clock, and records each attempt', async () => {
    const rx = await receiver((n, _q, res) => {
      res.statusCode = n <= 2 ? 500 : 200;
      res.end(n <= 2 ? `broken ${n}` : 'ok');
    });
    const hook = await endpoint(rx.url);
    try {
      await publish();
      await eventually('the first attempt', async () => (await deliveries(hook.id))[0]?.attempts === 1);
      let [d] = await deliveries(hook.id);
      assert.equal(d!.status, 'pending');
      const wait = Date.parse(d!.next_attempt_at!) - api.clock.now.getTime();
      assert.ok(wait >= 5000 && wait <= 5500, `first retry after 5 s plus jitter, got ${wait} ms`);
      advance(4000);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(rx.received.length, 1, 'not retried before its time');
      advance(1600);
      await eventually('the second attempt', async () => (await deliveries(hook.id))[0]?.attempts === 2);
      [d] = await deliveries(hook.id);
      const wait2 = Date.parse(d!.next_attempt_at!) - api.clock.now.getTime();
      assert.ok(wait2 >= 300_000 && wait2 <= 330_000, `second retry after 5 min plus jitter, got ${wait2} ms`);
      advance(331_000);
      await eventually('the third attempt succeeds', async () => (await deliveries(hook.id))[0]?.status === 'succeeded');
      const full = await delivery(hook.id, d!.id);
      assert.deepEqual(
        full.attempt_log.map((a) => [a.attempt, a.status, a.response_excerpt]),
        [
          [1, 500, 'broken 1'],
          [2, 500, 'broken 2'],
          [3, 200, 'ok'],
        ],
      );
      // Every attempt carries the same webhook-id (receivers dedupe by it) and verifies.
      assert.equal(new Set(rx.received.map((r) => r.headers['webhook-id'])).size, 1);
      for (const r of rx.received) verify(hook.secret, r);
      // The endpoint is no longer failing.
      const [w] = (
        (await (await api.request('GET', '/api/account/webhooks')).json()) as {
          webhooks: Array<{ id: string; failing_since: string | null }>;
        }
      ).webhooks.filter((x) => x.id === hook.id);
      assert.equal(w!.failing_since, null);
    } finally {
      await hook.remove();
      await rx.close();
    }
  });

  it('honours Retry-After when it asks for longer than the schedule', async () => {
    const rx = await receiver((n, _q, res) => {
      if (n === 1) {
        res.statusCode = 503;
        res.setHeader('retry-after', '120');
      }
      res.end();
    });
    const hook = await endpoint(rx.url);
    try {
      await publish();
      await eventually('the first attempt', async () => (await deliveries(hook.id))[0]?.attempts === 1);
      const [d] = await deliveries(hook.id);
      assert.equal(Date.parse(d!.next_attempt_at!) - api.clock.now.getTime(), 120_000);
      advance(60_000);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(rx.received.length, 1, 'not before Retry-After');
      advance(60_000);
      await eventually('the retry', async () => (await deliveries(hook.id))[0]?.status === 'succeeded');
    } finally {
      await hook.remove();
      await rx.close();
    }
  });

  it('follows no redirect: a 3XX is a failed attempt and its target gets nothing', async () => {
    const target = await receiver();
    const rx = await receiver((_n, _q, res) => {
      res.statusCode = 307;
      res.setHeader('location', target.url);
      res.end();
    });
    const hook = await endpoint(rx.url);
    try {
      await publish();
      await eventually('the attempt', async () => (await deliveries(hook.id))[0]?.attempts === 1);
      const [d] = await deliveries(hook.id);
      assert.equal(d!.status, 'pending');
      assert.equal(d!.last_status, 307);
      assert.equal(target.received.length, 0);
    } finally {
      await hook.remove();
      await rx.close();
      await target.close();
    }
  });

  it('disables an endpoint that answers 410: an event says why, and a disabled endpoint gets nothing until enabled', async () => {
    let gone = true;
    const rx = await receiver((_n, _q, res) => {
      res.statusCode = gone ? 410 : 200;
      res.end();
    });
    const hook = await endpoint(rx.url);
    try {
      await publish();
      await eventually('the endpoint disabled', async () => {
        const list = (
          (await (await api.request('GET', '/api/account/webhooks')).json()) as {
            webhooks: Array<{ id: string; disabled_at: string | null; disabled_reason: string | null }>;
          }
        ).webhooks;
        return list.find((w) => w.id === hook.id)?.disabled_reason === 'the endpoint answered 410 Gone';
      });
      const events = (
        (await (await api.request('GET', '/api/events?kinds=webhook.disabled')).json()) as {
          events: Array<{ subject: string; data: { reason: string } }>;
        }
      ).events;
      assert.ok(events.some((e) => e.subject === hook.id && e.data.reason === 'the endpoint answered 410 Gone'));
      await publish();
      await publish();
      advance(86_400_000);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(rx.received.length, 1, 'nothing after the 410');
      assert.equal((await deliveries(hook.id)).length, 1, 'no delivery enqueued for a disabled endpoint');
      // Redelivery to a disabled endpoint is refused, naming why.
      const [d] = await deliveries(hook.id);
      const refused = await api.request('POST', `/api/account/webhooks/${hook.id}/deliveries/${d!.id}/redeliver`);
      assert.equal(refused.status, 409);
      assert.match(((await refused.json()) as { error: string }).error, /disabled \(the endpoint answered 410 Gone\)/);
      // Enabled again, it gets what comes next.
      gone = false;
      assert.equal((await api.request('POST', `/api/account/webhooks/${hook.id}/enable`)).status, 200);
      await publish();
      await eventually('a delivery after enabling', () => rx.received.length === 2);
    } finally {
      await hook.remove();
      await rx.close();
    }
  });

  it('disables an endpoint whose every attempt has failed for five days', async () => {
    const rx = await receiver((_n, _q, res) => {
      res.statusCode = 500;
      res.end();
    });
    const hook = await endpoint(rx.url);
    try {
      await publish();
      await eventually('the first failure', async () => (await deliveries(hook.id))[0]?.attempts === 1);
      advance(5 * 86_400_000 - 60_000);
      await publish();
      await eventually(
        'a failure just before five days',
        async () => (await deliveries(hook.id)).filter((d) => d.attempts > 0).length === 2 && rx.received.length >= 2,
      );
      const before = (
        (await (await api.request('GET', '/api/account/webhooks')).json()) as {
          webhooks: Array<{ id: string; disabled_at: string | null; failing_since: string | null }>;
        }
      ).webhooks.find((w) => w.id === hook.id)!;
      assert.equal(before.disabled_at, null);
      assert.ok(before.failing_since);
      advance(120_000);
      await publish();
      await eventually('disabled after five days of failures', async () => {
        const w = (
          (await (await api.request('GET', '/api/account/webhooks')).json()) as {
            webhooks: Array<{ id: string; disabled_reason: string | null }>;
          }
        ).webhooks.find((x) => x.id === hook.id)!;
        return /every attempt has failed since/.test(w.disabled_reason ?? '');
      });
      const list = await deliveries(hook.id);
      assert.ok(
        list.every((d) => d.status !== 'pending'),
        'its pending deliveries are canceled',
      );
    } finally {
      await hook.remove();
      await rx.close();
    }
  });

  it('signs with both the new and the previous secret during a rotation, and redelivers on request', async () => {
    const rx = await receiver();
    const hook = await endpoint(rx.url);
    try {
      const res = await api.request('POST', `/api/account/webhooks/${hook.id}/secret`);
      assert.equal(res.status, 200);
      const rotated = (await res.json()) as { secret: string; previous_secret_valid_until: string };
      assert.notEqual(rotated.secret, hook.secret);
      assert.equal(Date.parse(rotated.previous_secret_valid_until) - api.clock.now.getTime(), 86_400_000);
      await publish();
      await eventually('the delivery', () => rx.received.length === 1);
      assert.equal(String(rx.received[0]!.headers['webhook-signature']).split(' ').length, 2);
      verify(rotated.secret, rx.received[0]!);
      verify(hook.secret, rx.received[0]!);
      // After the overlap, only the new secret signs.
      advance(86_400_000 + 1000);
      const [d] = await deliveries(hook.id);
      const again = await api.request('POST', `/api/account/webhooks/${hook.id}/deliveries/${d!.id}/redeliver`);
      assert.equal(again.status, 202);
      await eventually('the redelivery', () => rx.received.length === 2);
      assert.equal(rx.received[1]!.headers['webhook-id'], rx.received[0]!.headers['webhook-id']);
      assert.equal(rx.received[1]!.body, rx.received[0]!.body);
      verify(rotated.secret, rx.received[1]!);
      assert.throws(() => verify(hook.secret, rx.received[1]!));
      const full = await delivery(hook.id, d!.id);
      assert.equal(full.attempt_log.length, 2);
      // Another account's deliveries are not found; a bad filter is refused naming it.
      const other = await api.request('GET', `/api/account/webhooks/wh_nosuch/deliveries`);
      assert.equal(other.status, 404);
      assert.equal((await api.request('GET', `/api/account/webhooks/${hook.id}/deliveries/msg_nosuch`)).status, 404);
      assert.equal((await api.request('POST', `/api/account/webhooks/${hook.id}/deliveries/msg_nosuch/redeliver`)).status, 404);
      const badStatus = await api.request('GET', `/api/account/webhooks/${hook.id}/deliveries?status=lost`);
      assert.equal(badStatus.status, 400);
      assert.match(((await badStatus.json()) as { error: string }).error, /status/);
    } finally {
      await hook.remove();
      await rx.close();
    }
  });

  it('gives up an attempt with no answer within the timeout, recorded as such', async () => {
    const rx = await receiver(() => undefined); // never answers
    const hook = await endpoint(rx.url);
    await api.workers.webhookDeliverer.stop();
    const clock = new TestClock(api.clock.now);
    const quick = new WebhookDeliverer({
      db: api.db,
      log: createLogger('webhooks', 'silent'),
      clock: clock.read,
      dispatcher: webhookDispatcher({ isAllowed: () => true }),
      timeoutMs: 300,
      pollMs: 50,
    });
    try {
      await publish();
      quick.start();
      await eventually('the attempt to time out', async () => (await deliveries(hook.id))[0]?.attempts === 1);
      const [d] = await deliveries(hook.id);
      const full = await delivery(hook.id, d!.id);
      assert.equal(full.attempt_log[0]!.status, null);
      assert.equal(full.attempt_log[0]!.error, 'no answer within the timeout');
      assert.ok(full.attempt_log[0]!.duration_ms >= 300 && full.attempt_log[0]!.duration_ms < 2000);
    } finally {
      await quick.stop();
      await hook.remove();
      await rx.close();
    }
  });

  it('loses nothing when the delivering process is killed mid-retry', async () => {
    // Only the child process delivers (stopping twice is harmless).
    await api.workers.webhookDeliverer.stop();
    let hold = false;
    const rx = await receiver((n, _q, res) => {
      if (n === 1) {
        res.statusCode = 500;
        res.end();
        hold = true;
      } else if (n === 2) {
        // The retry: held open, and the process sending it is killed meanwhile.
      } else res.end('ok');
    });
    const hook = await endpoint(rx.url);
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'dist/test/support/webhook-deliverer-process.js'), api.deps.config.databaseUrl],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await publish();
      // The child's clock is the wall clock: its retry comes after 5 s, and hangs.
      await eventually('the retry to be in flight', () => hold && rx.received.length === 2, { timeoutMs: 15_000 });
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const [d] = await deliveries(hook.id);
      assert.equal(d!.status, 'pending');
      assert.equal(d!.attempts, 1, 'the killed attempt wrote no outcome');
      // Another process, once the dead one's claim runs out (30 s on its clock), tries it again.
      const clock = new TestClock(new Date());
      const survivor = new WebhookDeliverer({
        db: api.db,
        log: createLogger('webhooks', 'silent'),
        clock: clock.read,
        dispatcher: webhookDispatcher({ isAllowed: () => true }),
        pollMs: 50,
      });
      survivor.start();
      try {
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(rx.received.length, 2, 'not while the claim holds');
        clock.advance(31_000);
        await eventually('the retry delivered by the survivor', async () => (await deliveries(hook.id))[0]?.status === 'succeeded');
      } finally {
        await survivor.stop();
      }
      assert.equal(rx.received.length, 3);
      assert.equal(new Set(rx.received.map((r) => r.headers['webhook-id'])).size, 1);
      for (const r of rx.received) verify(hook.secret, r);
      const full = await delivery(hook.id, d!.id);
      assert.deepEqual(
        full.attempt_log.map((a) => a.status),
        [500, 200],
      );
    } finally {
      child.kill('SIGKILL');
      await hook.remove();
      await rx.close();
    }
  });
  it('checks the address at connect time: an endpoint that now points at a private address gets nothing', async () => {
    // Accepted when this API allowed private addresses; the production deliverer refuses to connect.
    await api.workers.webhookDeliverer.stop();
    const rx = await receiver();
    const hook = await endpoint(rx.url);
    const guarded = new WebhookDeliverer({
      db: api.db,
      log: createLogger('webhooks', 'silent'),
      clock: api.clock.read,
      dispatcher: webhookDispatcher(),
      pollMs: 50,
    });
    try {
      await publish();
      guarded.start();
      await eventually('the refused attempt', async () => (await deliveries(hook.id))[0]?.attempts === 1);
      const [d] = await deliveries(hook.id);
      assert.equal(d!.status, 'pending');
      assert.match(d!.last_error ?? '', /127\.0\.0\.1 is not a public address/);
      assert.equal(rx.received.length, 0);
    } finally {
      await guarded.stop();
      await hook.remove();
      await rx.close();
    }
  });
});
