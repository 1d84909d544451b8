// The webhook actions (api/webhooks/actions.ts) with in-memory fakes: creating one refuses unknown
// event kinds and URLs the deliverer may not reach (before the lock), and counts the account's
// webhooks under its lock; rotating, enabling, deleting, listing deliveries and redelivering answer
// 404 for what the account does not have, with the messages the handlers answered before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Actor } from '../../api/deploys/actions.js';
import { presentCreatedWebhook, presentDeliveryDetail, presentRotatedWebhook } from '../../api/presenters/webhooks.js';
import { WebhookActions, type WebhookActionDeps } from '../../api/webhooks/actions.js';
import type { Delivery, DeliveryDetail, DeliveryPage, NewWebhook, Webhook } from '../../api/webhooks/repository.js';
import { DomainError } from '../../lib/errors.js';
import type { HostResolver } from '../../lib/webhooks/url-guard.js';
import { refusal } from '../support/answers.js';
import { FakeLock } from '../support/fake-lock.js';

const actor: Actor = { accountId: 'acc_1', namespace: 'acct-1', createdBy: 'token:t1' };
const now = new Date('2026-03-01T12:00:00Z');

type WebhooksDep = WebhookActionDeps['webhooks'];

/** The account's webhooks and deliveries, in memory, answering as the store does. */
class FakeWebhooks implements WebhooksDep {
  readonly items = new Map<string, { accountId: string; webhook: Webhook }>();
  readonly deliveryItems = new Map<string, { webhookId: string; delivery: Delivery; payload: string }>();
  readonly createdUnderLock: boolean[] = [];
  readonly redelivered: Array<{ id: string; at: Date }> = [];
  private n = 0;
  constructor(private readonly lock: FakeLock) {}
  put(accountId: string, o: Partial<Webhook> = {}): Webhook {
    const webhook: Webhook = {
      id: o.id ?? `wh_${++this.n}`,
      url: o.url ?? `https://hooks.example.com/${this.n}`,
      eventTypes: [],
      description: null,
      createdAt: now,
      disabledAt: null,
      disabledReason: null,
      failingSince: null,
      ...o,
    };
    this.items.set(webhook.id, { accountId, webhook });
    return webhook;
  }
  putDelivery(webhookId: string, id: string, eventId: number): Delivery {
    const delivery: Delivery = {
      id,
      eventId,
      eventType: 'deploy.live',
      status: 'failed',
      attempts: 3,
      nextAttemptAt: null,
      lastAttemptAt: now,
      lastStatus: 500,
      lastError: 'HTTP 500',
      createdAt: now,
    };
    this.deliveryItems.set(id, { webhookId, delivery, payload: '{}' });
    return delivery;
  }
  private mine(accountId: string, id: string): Webhook | undefined {
    const found = this.items.get(id);
    return found?.accountId === accountId ? found.webhook : undefined;
  }
  async list(accountId: string): Promise<Webhook[]> {
    return [...this.items.values()].filter((w) => w.accountId === accountId).map((w) => w.webhook);
  }
  async create(accountId: string, input: NewWebhook) {
    this.createdUnderLock.push(this.lock.held);
    if ([...this.items.values()].some((w) => w.accountId === accountId && w.webhook.url === input.url))
      throw new DomainError('conflict', `a webhook for ${input.url} already exists`);
    const webhook = this.put(accountId, { url: input.url, eventTypes: input.eventTypes, description: input.description ?? null });
    return { webhook, secret: 'whsec_new' };
  }
  async delete(accountId: string, id: string): Promise<boolean> {
    return !!this.mine(accountId, id) && this.items.delete(id);
  }
  async rotateSecret(accountId: string, id: string, at: Date) {
    const webhook = this.mine(accountId, id);
    return webhook && { webhook, secret: 'whsec_rotated', previousUntil: new Date(at.getTime() + 24 * 3600_000) };
  }
  async enable(accountId: string, id: string): Promise<Webhook | undefined> {
    const webhook = this.mine(accountId, id);
    return webhook && this.put(accountId, { ...webhook, disabledAt: null, disabledReason: null, failingSince: null });
  }
  async deliveries(accountId: string, id: string, page: DeliveryPage): Promise<Delivery[] | undefined> {
    if (!this.mine(accountId, id)) return undefined;
    return [...this.deliveryItems.values()]
      .filter((d) => d.webhookId === id && (page.beforeEventId === undefined || d.delivery.eventId < page.beforeEventId))
      .map((d) => d.delivery)
      .sort((a, b) => b.eventId - a.eventId)
      .slice(0, page.limit);
  }
  async delivery(accountId: string, id: string, deliveryId: string): Promise<DeliveryDetail | undefined> {
    const found = this.deliveryItems.get(deliveryId);
    if (!this.mine(accountId, id) || found?.webhookId !== id) return undefined;
    return { delivery: found.delivery, payload: found.payload, attempts: [] };
  }
  async redeliver(accountId: string, id: string, deliveryId: string, at: Date): Promise<Delivery | undefined> {
    const webhook = this.mine(accountId, id);
    const found = this.deliveryItems.get(deliveryId);
    if (!webhook || found?.webhookId !== id) return undefined;
    if (webhook.disabledAt)
      throw new DomainError('conflict', `the webhook is disabled (${webhook.disabledReason ?? 'by its owner'}); enable it first`);
    this.redelivered.push({ id: deliveryId, at });
    return { ...found.delivery, status: 'pending', attempts: 0, nextAttemptAt: at };
  }
}

/** Answers every name with `addresses` (A records only). */
const resolverOf = (addresses: string[]): HostResolver & { asked: string[] } => {
  const asked: string[] = [];
  return {
    asked,
    resolve4: async (host) => {
      asked.push(host);
      return addresses;
    },
    resolve6: async () => [],
  };
};

function setup(o: { limit?: number; allowPrivate?: boolean; addresses?: string[] } = {}) {
  const lock = new FakeLock();
  const webhooks = new FakeWebhooks(lock);
  const resolver = resolverOf(o.addresses ?? ['93.184.216.34']);
  const actions = new WebhookActions({
    webhooks,
    quota: { lock, limits: { webhooks: o.limit ?? 3 } },
    urlGuard: { allowPrivate: o.allowPrivate ?? false, resolver },
    clock: () => now,
  });
  return { actions, webhooks, lock, resolver };
}

describe('webhook actions: create', () => {
  it('makes a webhook under the account lock and answers its secret once', async () => {
    const { actions, webhooks, lock, resolver } = setup();
    const made = await actions.create(actor, { url: 'https://hooks.example.com/in', eventTypes: ['deploy.*'], description: 'ci' });
    assert.deepEqual(webhooks.createdUnderLock, [true]);
    assert.equal(lock.holds, 1);
    assert.deepEqual(resolver.asked, ['hooks.example.com']);
    assert.deepEqual(presentCreatedWebhook(made), {
      id: made.webhook.id,
      url: 'https://hooks.example.com/in',
      events: ['deploy.*'],
      description: 'ci',
      created_at: now.toISOString(),
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
      secret: 'whsec_new',
    });
  });

  it('refuses a webhook past the account limit, naming it (403 quota_exceeded)', async () => {
    const { actions, webhooks } = setup({ limit: 2 });
    webhooks.put(actor.accountId);
    webhooks.put(actor.accountId);
    webhooks.put('acc_other');
    await assert.rejects(
      actions.create(actor, { url: 'https://hooks.example.com/in', eventTypes: [] }),
      refusal('quota_exceeded', 'the account has 2 webhooks, its limit is 2; delete one first'),
    );
    assert.deepEqual(webhooks.createdUnderLock, []);
  });

  it('refuses a URL the deliverer may not reach, before taking the lock (400)', async () => {
    const { actions, lock } = setup();
    await assert.rejects(
      actions.create(actor, { url: 'http://hooks.example.com/in', eventTypes: [] }),
      refusal('invalid', 'url must use https'),
    );
    await assert.rejects(
      actions.create(actor, { url: 'https://10.0.0.1/in', eventTypes: [] }),
      refusal('invalid', 'url must not point at a loopback, private, link-local or reserved address (10.0.0.1)'),
    );
    await assert.rejects(actions.create(actor, { url: 'not a url', eventTypes: [] }), refusal('invalid', 'url must be an absolute URL'));
    assert.equal(lock.holds, 0);
  });

  it('refuses a name that resolves to a private address, and allows it when private addresses are allowed', async () => {
    await assert.rejects(
      setup({ addresses: ['10.1.2.3'] }).actions.create(actor, { url: 'https://hooks.example.com/in', eventTypes: [] }),
      refusal('invalid', /^url must name a public host: /),
    );
    const open = setup({ addresses: ['10.1.2.3'], allowPrivate: true });
    await open.actions.create(actor, { url: 'http://hooks.example.com/in', eventTypes: [] });
    assert.deepEqual(open.resolver.asked, []);
  });

  it('refuses unknown event kinds, naming them', async () => {
    const { actions } = setup();
    await assert.rejects(
      actions.create(actor, { url: 'https://hooks.example.com/in', eventTypes: ['deploy.live', 'nope.never'] }),
      refusal('invalid', /^invalid body: events: unknown event kind "nope\.never"; known: /),
    );
  });

  it('passes on the conflict of a second webhook for the same URL', async () => {
    const { actions, webhooks } = setup();
    webhooks.put(actor.accountId, { url: 'https://hooks.example.com/in' });
    await assert.rejects(
      actions.create(actor, { url: 'https://hooks.example.com/in', eventTypes: [] }),
      refusal('conflict', 'a webhook for https://hooks.example.com/in already exists'),
    );
  });
});

describe('webhook actions: one webhook', () => {
  it("answers not found for another account's webhook or none", async () => {
    const { actions, webhooks } = setup();
    const other = webhooks.put('acc_other');
    for (const id of [other.id, 'wh_none']) {
      const gone = refusal('not_found', `webhook ${id} not found`);
      await assert.rejects(actions.delete(actor, id), gone);
      await assert.rejects(actions.rotateSecret(actor, id), gone);
      await assert.rejects(actions.enable(actor, id), gone);
      await assert.rejects(actions.deliveries(actor, id, { limit: 10 }), gone);
      await assert.rejects(actions.delivery(actor, id, 'del_1'), refusal('not_found', `delivery del_1 of webhook ${id} not found`));
      await assert.rejects(actions.redeliver(actor, id, 'del_1'), refusal('not_found', `delivery del_1 of webhook ${id} not found`));
    }
    assert.ok(webhooks.items.has(other.id));
  });

  it('deletes, rotates (the previous secret valid a day from now) and enables', async () => {
    const { actions, webhooks } = setup();
    const w = webhooks.put(actor.accountId, { disabledAt: now, disabledReason: 'failing for 3 days', failingSince: now });
    const rotated = presentRotatedWebhook(await actions.rotateSecret(actor, w.id));
    assert.equal(rotated.secret, 'whsec_rotated');
    assert.equal(rotated.previous_secret_valid_until, '2026-03-02T12:00:00.000Z');
    const enabled = await actions.enable(actor, w.id);
    assert.equal(enabled.disabledAt, null);
    assert.equal(enabled.failingSince, null);
    await actions.delete(actor, w.id);
    assert.equal(webhooks.items.has(w.id), false);
  });
});

describe('webhook actions: deliveries', () => {
  it('pages deliveries: a full page gives the next cursor, a short one null', async () => {
    const { actions, webhooks } = setup();
    const w = webhooks.put(actor.accountId);
    for (const n of [1, 2, 3]) webhooks.putDelivery(w.id, `del_${n}`, n);
    const first = await actions.deliveries(actor, w.id, { limit: 2 });
    assert.deepEqual(
      first.deliveries.map((d) => d.id),
      ['del_3', 'del_2'],
    );
    assert.equal(first.nextBefore, 2);
    const rest = await actions.deliveries(actor, w.id, { limit: 2, beforeEventId: 2 });
    assert.deepEqual(
      rest.deliveries.map((d) => d.id),
      ['del_1'],
    );
    assert.equal(rest.nextBefore, null);
  });

  it('reads a delivery with its attempts, and not one of another webhook', async () => {
    const { actions, webhooks } = setup();
    const w = webhooks.put(actor.accountId);
    const other = webhooks.put(actor.accountId);
    webhooks.putDelivery(w.id, 'del_1', 1);
    const found = presentDeliveryDetail(await actions.delivery(actor, w.id, 'del_1'));
    assert.equal(found.id, 'del_1');
    assert.equal(found.payload, '{}');
    assert.deepEqual(found.attempt_log, []);
    await assert.rejects(
      actions.delivery(actor, other.id, 'del_1'),
      refusal('not_found', `delivery del_1 of webhook ${other.id} not found`),
    );
  });

  it('redelivers now, and refuses through a disabled webhook (409)', async () => {
    const { actions, webhooks } = setup();
    const w = webhooks.put(actor.accountId);
    webhooks.putDelivery(w.id, 'del_1', 1);
    const again = await actions.redeliver(actor, w.id, 'del_1');
    assert.equal(again.status, 'pending');
    assert.deepEqual(webhooks.redelivered, [{ id: 'del_1', at: now }]);
    const off = webhooks.put(actor.accountId, { disabledAt: now, disabledReason: null });
    webhooks.putDelivery(off.id, 'del_2', 2);
    await assert.rejects(
      actions.redeliver(actor, off.id, 'del_2'),
      refusal('conflict', 'the webhook is disabled (by its owner); enable it first'),
    );
  });
});
