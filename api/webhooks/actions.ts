// What the account decides about its webhooks: making one (its event filters known, its URL one the
// deliverer may reach, counted against the account's limit under its lock), rotating its secret,
// enabling it again, deleting it, and reading and resending its deliveries. Handlers parse,
// authorize and present; the decisions are made here and raise domain errors (lib/errors.ts). The
// store records webhook.created and webhook.deleted in the transaction that makes the change.
import { unknownFiltersMessage } from '../../lib/event-kinds.js';
import { DomainError } from '../../lib/errors.js';
import { webhookUrlProblemResolved, type HostResolver } from '../../lib/webhooks/url-guard.js';
import type { Actor } from '../deploys/actions.js';
import { within, type AccountLock } from '../quotas.js';
import type {
  Delivery,
  DeliveryDetail,
  DeliveryPage,
  NewWebhook,
  RotatedWebhook,
  Webhook,
  WebhookRepository,
  WebhookWithSecret,
} from './repository.js';

export interface WebhookActionDeps {
  webhooks: Pick<WebhookRepository, 'list' | 'create' | 'delete' | 'rotateSecret' | 'enable' | 'deliveries' | 'delivery' | 'redeliver'>;
  /** The account's webhook limit, checked and taken under its lock (api/quotas.ts). */
  quota: { lock: Pick<AccountLock, 'hold'>; limits: { webhooks: number } };
  /** The URL guard: whether private addresses are allowed (SVC_WEBHOOK_ALLOW_PRIVATE), and what resolves a URL's host. */
  urlGuard: { allowPrivate: boolean; resolver: HostResolver };
  clock: () => Date;
}

const webhookNotFound = (id: string) => new DomainError('not_found', `webhook ${id} not found`);
const deliveryNotFound = (id: string, deliveryId: string) =>
  new DomainError('not_found', `delivery ${deliveryId} of webhook ${id} not found`);

export class WebhookActions {
  constructor(private readonly d: WebhookActionDeps) {}

  list(actor: Actor): Promise<Webhook[]> {
    return this.d.webhooks.list(actor.accountId);
  }

  /**
   * A webhook for `input.url`: its filters must name known event kinds, its URL must be one the
   * deliverer may reach (https, no credentials, a public host as far as it resolves now), and the
   * account under its webhook limit, counted and made under its lock.
   */
  async create(actor: Actor, input: NewWebhook): Promise<WebhookWithSecret> {
    const unknownKinds = unknownFiltersMessage(input.eventTypes);
    if (unknownKinds) throw new DomainError('invalid', `invalid body: events: ${unknownKinds}`);
    const problem = await webhookUrlProblemResolved(input.url, this.d.urlGuard);
    if (problem) throw new DomainError('invalid', problem);
    return this.d.quota.lock.hold(actor.accountId, async () => {
      within((await this.d.webhooks.list(actor.accountId)).length, 1, this.d.quota.limits.webhooks, 'webhooks', 'delete one first');
      return this.d.webhooks.create(actor.accountId, input);
    });
  }

  async delete(actor: Actor, id: string): Promise<void> {
    if (!(await this.d.webhooks.delete(actor.accountId, id))) throw webhookNotFound(id);
  }

  /** A new secret; the previous one signs too until the overlap ends (lib/webhooks/store.ts rotationOverlapMs). */
  async rotateSecret(actor: Actor, id: string): Promise<RotatedWebhook> {
    const rotated = await this.d.webhooks.rotateSecret(actor.accountId, id, this.d.clock());
    if (!rotated) throw webhookNotFound(id);
    return rotated;
  }

  async enable(actor: Actor, id: string): Promise<Webhook> {
    const webhook = await this.d.webhooks.enable(actor.accountId, id);
    if (!webhook) throw webhookNotFound(id);
    return webhook;
  }

  /** A page of the webhook's deliveries; `nextBefore` is the cursor of the next page, null after a short one. */
  async deliveries(actor: Actor, id: string, page: DeliveryPage): Promise<{ deliveries: Delivery[]; nextBefore: number | null }> {
    const deliveries = await this.d.webhooks.deliveries(actor.accountId, id, page);
    if (!deliveries) throw webhookNotFound(id);
    const last = deliveries.length === page.limit ? deliveries[deliveries.length - 1] : undefined;
    return { deliveries, nextBefore: last?.eventId ?? null };
  }

  async delivery(actor: Actor, id: string, deliveryId: string): Promise<DeliveryDetail> {
    const found = await this.d.webhooks.delivery(actor.accountId, id, deliveryId);
    if (!found) throw deliveryNotFound(id, deliveryId);
    return found;
  }

  /** Sends a delivery again, due now; through a disabled webhook it is refused (409). */
  async redeliver(actor: Actor, id: string, deliveryId: string): Promise<Delivery> {
    const delivery = await this.d.webhooks.redeliver(actor.accountId, id, deliveryId, this.d.clock());
    if (!delivery) throw deliveryNotFound(id, deliveryId);
    return delivery;
  }
}
