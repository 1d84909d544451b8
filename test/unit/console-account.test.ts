// The pure parts of the console's webhooks, usage and access pages (console/src/account.ts): their
// addresses, webhook and delivery states in words, the event kinds typed into the webhook form,
// usage by day as series per meter in units a person reads, the bars of the usage charts, and an
// app's policy and users in words.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  amountInWords,
  appUserStateInWords,
  axisTicks,
  axisTop,
  barsOf,
  deliveryStateInWords,
  parseEventFilters,
  policyInWords,
  responseInWords,
  unitOf,
  usageSeriesByDay,
  webhookStateInWords,
  webhookUrlProblem,
  type AuthProvider,
  type Delivery,
  type UsagePeriod,
} from '../../console/src/account.js';
import { hrefOf, routeOf, type Route } from '../../console/src/routes.js';

describe('console account pages: addresses', () => {
  it('names the webhooks (one open), usage and an app’s access pages, and reads them back', () => {
    assert.equal(hrefOf({ page: 'webhooks' }), '/console/webhooks');
    assert.equal(hrefOf({ page: 'webhooks', webhook: 'wh_1' }), '/console/webhooks/wh_1');
    assert.equal(hrefOf({ page: 'usage' }), '/console/usage');
    assert.equal(hrefOf({ page: 'app-access', name: 'shop' }), '/console/apps/shop/access');
    assert.deepEqual(routeOf('/console/webhooks/'), { page: 'webhooks' });
    assert.deepEqual(routeOf('/console/webhooks/wh_1'), { page: 'webhooks', webhook: 'wh_1' });
    assert.equal(routeOf('/console/webhooks/wh_1/deliveries').page, 'not-found');
    assert.equal(routeOf('/console/usage/2026').page, 'not-found');
    const routes: Route[] = [
      { page: 'webhooks' },
      { page: 'webhooks', webhook: 'wh_a b/c' },
      { page: 'usage' },
      { page: 'app-access', name: 'shop' },
      { page: 'app-access', name: 'blog--pr-3' },
    ];
    for (const route of routes) {
      const href = new URL(hrefOf(route), 'https://svc.example.com');
      assert.deepEqual(routeOf(href.pathname, href.search), route, hrefOf(route));
    }
  });
});

describe('console webhooks page', () => {
  const delivery = (d: Partial<Delivery>): Delivery => ({
    id: 'msg_1',
    event_id: 1,
    event_type: 'deploy.live',
    status: 'pending',
    attempts: 0,
    next_attempt_at: null,
    last_attempt_at: null,
    last_status: null,
    last_error: null,
    created_at: '2026-11-25T09:00:00.000Z',
    ...d,
  });

  it('says each delivery status in words, with the last answer', () => {
    assert.deepEqual(deliveryStateInWords(delivery({ status: 'pending' })), { text: 'Sending', tone: 'busy' });
    assert.deepEqual(deliveryStateInWords(delivery({ status: 'succeeded', attempts: 1, last_status: 200 })), {
      text: 'Delivered (HTTP 200)',
      tone: 'ok',
    });
    assert.deepEqual(deliveryStateInWords(delivery({ status: 'pending', attempts: 2, last_status: 500 })), {
      text: 'Retrying: attempt 2 failed (HTTP 500)',
      tone: 'busy',
    });
    assert.deepEqual(deliveryStateInWords(delivery({ status: 'pending', attempts: 1, last_error: 'connection refused' })), {
      text: 'Retrying: attempt 1 failed (connection refused)',
      tone: 'busy',
    });
    assert.deepEqual(deliveryStateInWords(delivery({ status: 'failed', attempts: 10, last_status: 503 })), {
      text: 'Failed after 10 attempts (HTTP 503)',
      tone: 'bad',
    });
    assert.deepEqual(
      deliveryStateInWords(delivery({ status: 'failed', attempts: 1, last_status: 410 })).text,
      'Failed after 1 attempt (HTTP 410)',
    );
    assert.deepEqual(deliveryStateInWords(delivery({ status: 'canceled', attempts: 3 })), {
      text: 'Canceled: its webhook was disabled',
      tone: 'idle',
    });
    assert.equal(responseInWords(null, null), 'no answer');
    assert.equal(responseInWords(204, null), 'HTTP 204');
  });

  it('says a webhook’s state: active, failing since when, disabled and why', () => {
    const none = { disabled_at: null, disabled_reason: null, failing_since: null };
    assert.deepEqual(webhookStateInWords(none), { text: 'Active', tone: 'ok' });
    assert.deepEqual(webhookStateInWords({ ...none, failing_since: '2026-11-25T09:30:12.000Z' }), {
      text: 'Failing: every attempt has failed since 2026-11-25 09:30 UTC',
      tone: 'busy',
    });
    assert.deepEqual(
      webhookStateInWords({
        disabled_at: '2026-11-25T10:00:00.000Z',
        disabled_reason: 'the endpoint answered 410 Gone',
        failing_since: null,
      }),
      { text: 'Disabled: the endpoint answered 410 Gone', tone: 'bad' },
    );
    assert.equal(webhookStateInWords({ ...none, disabled_at: '2026-11-25T10:00:00.000Z' }).text, 'Disabled: by its owner');
  });

  it('reads the event kinds typed, and names those the API would refuse', () => {
    assert.deepEqual(parseEventFilters(''), { filters: [], unknown: [] });
    assert.deepEqual(parseEventFilters(' deploy.*, machine.crashed  token.created,deploy.*'), {
      filters: ['deploy.*', 'machine.crashed', 'token.created'],
      unknown: [],
    });
    assert.deepEqual(parseEventFilters('*'), { filters: ['*'], unknown: [] });
    assert.deepEqual(parseEventFilters('deploy.done, nosuch.*, deploy.live'), {
      filters: ['deploy.done', 'nosuch.*', 'deploy.live'],
      unknown: ['deploy.done', 'nosuch.*'],
    });
  });

  it('refuses a URL that cannot be a webhook’s, saying why', () => {
    assert.equal(webhookUrlProblem('https://hooks.example.com/svc'), undefined);
    assert.equal(webhookUrlProblem(' http://127.0.0.1:9000/hook '), undefined);
    assert.equal(webhookUrlProblem('  '), 'Enter the URL to send the events to.');
    assert.match(webhookUrlProblem('hooks.example.com')!, /is not a URL/);
    assert.match(webhookUrlProblem('ftp://hooks.example.com/')!, /not ftp/);
  });
});

describe('console usage page', () => {
  const day = (date: string, meters: Partial<UsagePeriod['meters']>): UsagePeriod => ({
    start: `${date}T00:00:00.000Z`,
    end: `${date}T23:59:59.999Z`,
    meters: {
      machine_seconds: 0,
      build_seconds: 0,
      sandbox_seconds: 0,
      stored_bytes: 0,
      data_requests: 0,
      data_bytes: 0,
      domain_registrations: 0,
      ...meters,
    },
    charges: { domain_registrations: {} },
  });

  it('makes a meter’s series by day, oldest first, in a unit fit for its largest day', () => {
    // The API answers newest first.
    const history = [
      day('2026-11-25', { machine_seconds: 7200, stored_bytes: 3 * 1024 ** 2 }),
      day('2026-11-24', { machine_seconds: 1800 }),
      day('2026-11-23', { machine_seconds: 0, stored_bytes: 512 * 1024 }),
    ];
    assert.deepEqual(usageSeriesByDay(history, 'machine_seconds'), {
      unit: 'hours',
      days: [
        { day: '2026-11-23', value: 0 },
        { day: '2026-11-24', value: 0.5 },
        { day: '2026-11-25', value: 2 },
      ],
    });
    assert.deepEqual(usageSeriesByDay(history, 'stored_bytes'), {
      unit: 'MiB',
      days: [
        { day: '2026-11-23', value: 0.5 },
        { day: '2026-11-24', value: 0 },
        { day: '2026-11-25', value: 3 },
      ],
    });
    assert.deepEqual(usageSeriesByDay(history, 'build_seconds').unit, 'seconds', 'all zero: the smallest unit');
    assert.deepEqual(usageSeriesByDay([], 'sandbox_seconds'), { unit: 'seconds', days: [] });
  });

  it('says amounts with their unit', () => {
    assert.equal(amountInWords('machine_seconds', 183902.4), '51.08 hours');
    assert.equal(amountInWords('build_seconds', 90), '1.5 minutes');
    assert.equal(amountInWords('sandbox_seconds', 0), '0 seconds');
    assert.equal(amountInWords('stored_bytes', 40 * 1024 ** 2), '40 MiB');
    assert.equal(amountInWords('stored_bytes', 1536 * 1024 ** 3), '1.5 TiB');
    assert.deepEqual(unitOf('stored_bytes', 1023), { name: 'bytes', size: 1 });
  });

  it('scales the bars to a round top, evenly spaced, a small positive value still visible', () => {
    assert.equal(axisTop(0), 1);
    assert.equal(axisTop(0.3), 0.5);
    assert.equal(axisTop(7), 10);
    assert.equal(axisTop(20), 20);
    assert.equal(axisTop(21), 25);
    assert.equal(axisTop(260), 500);
    assert.deepEqual(axisTicks(20), [0, 5, 10, 15, 20]);
    const box = { width: 140, height: 120, left: 40, right: 0, top: 10, bottom: 10 };
    const { top, bars, y } = barsOf([10, 0, 5, 0.001], box);
    assert.equal(top, 10);
    assert.equal(y(10), 10);
    assert.equal(y(0), 110);
    assert.equal(bars.length, 4);
    // Slots of 25 units with a gap of 4.
    assert.deepEqual(bars[0], { x: 42, y: 10, width: 21, height: 100 });
    assert.deepEqual(bars[1], { x: 67, y: 110, width: 21, height: 0 });
    assert.deepEqual(bars[2], { x: 92, y: 60, width: 21, height: 50 });
    assert.deepEqual(bars[3], { x: 117, y: 109, width: 21, height: 1 });
    assert.deepEqual(barsOf([], box).bars, []);
  });
});

describe('console access page', () => {
  const providers = (admitted: Array<AuthProvider['name']>, unconfigured: Array<AuthProvider['name']> = []): AuthProvider[] =>
    (['email', 'passkey', 'svc', 'idp', 'codehost'] as const).map((name) => ({
      name,
      in_policy: admitted.includes(name),
      configured: !unconfigured.includes(name),
    }));

  it('says the policy in words: public, or whom it admits and which cannot sign in yet', () => {
    assert.deepEqual(policyInWords(providers([])), {
      public: true,
      lines: ['Public: the app declares no authentication policy, so anyone can open it.'],
    });
    assert.deepEqual(policyInWords(providers(['email', 'passkey', 'svc'], ['email'])), {
      public: false,
      lines: [
        'Protected: a visitor must sign in as one of these.',
        'App users signing in with an emailed link (not set up on this platform: nobody can sign in this way yet)',
        'App users signing in with a passkey',
        'The owning account (signed in to this platform)',
      ],
    });
  });

  it('says an app user’s state', () => {
    assert.deepEqual(appUserStateInWords({ disabled: true, active_sessions: 0 }), { text: 'Disabled: cannot sign in', tone: 'bad' });
    assert.equal(appUserStateInWords({ disabled: false, active_sessions: 0 }).text, 'Active, not signed in now');
    assert.equal(appUserStateInWords({ disabled: false, active_sessions: 1 }).text, 'Active, 1 session');
    assert.equal(appUserStateInWords({ disabled: false, active_sessions: 3 }).text, 'Active, 3 sessions');
  });
});
