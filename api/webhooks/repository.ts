// An account's webhooks and their deliveries as the API reads and writes them: the rows of
// lib/webhooks/store.ts (PostgreSQL), read into typed records (Webhook, Delivery, Attempt). What the
// store refuses is a DomainError here: a second webhook for the same URL, a redelivery through a
// disabled one. Sending deliveries is lib/webhooks/deliverer.ts.
import type { Db } from '../../lib/db/connection.js';
import { DomainError } from '../../lib/errors.js';
import {
  createWebhook,
  deleteWebhook,
  enableWebhook,
  getDelivery,
  listDeliveries,
  listWebhooks,
  redeliver,
  rotateSecret,
  WebhookDisabledError,
  WebhookExistsError,
  type Attempt,
  type Delivery,
  type DeliveryStatus,
  type Webhook,
} from '../../lib/webhooks/store.js';

export type { Attempt, Delivery, DeliveryStatus, Webhook };

export interface NewWebhook {
  url: string;
  eventTypes: string[];
  description?: string | undefined;
}

/** A webhook just made, or its secret just rotated: the secret leaves the platform once, in this answer. */
export interface WebhookWithSecret {
  webhook: Webhook;
  secret: string;
}

export interface RotatedWebhook extends WebhookWithSecret {
  /** Until when the previous secret signs too. */
  previousUntil: Date;
}

export interface DeliveryPage {
  limit: number;
  status?: DeliveryStatus | undefined;
  /** Deliveries of events before this event id. */
  beforeEventId?: number | undefined;
}

export interface DeliveryDetail {
  delivery: Delivery;
  payload: string;
  attempts: Attempt[];
}

export class WebhookRepository {
  constructor(private readonly db: Db) {}

  /** The account's webhooks, oldest first. */
  list(accountId: string): Promise<Webhook[]> {
    return listWebhooks(this.db, accountId);
  }

  /** Makes a webhook (and records webhook.created); a second one for the same URL is a conflict. */
  async create(accountId: string, input: NewWebhook): Promise<WebhookWithSecret> {
    return createWebhook(this.db, accountId, input).catch((err: unknown) => {
      throw err instanceof WebhookExistsError ? new DomainError('conflict', err.message, err) : err;
    });
  }

  /** Deletes the webhook (and records webhook.deleted); false when the account has no such webhook. */
  delete(accountId: string, id: string): Promise<boolean> {
    return deleteWebhook(this.db, accountId, id);
  }

  /** A new secret, the previous one signing until the overlap ends; undefined: no such webhook. */
  rotateSecret(accountId: string, id: string, now: Date): Promise<RotatedWebhook | undefined> {
    return rotateSecret(this.db, accountId, id, now);
  }

  /** Enables the webhook again, its failure streak forgotten; undefined: no such webhook. */
  enable(accountId: string, id: string): Promise<Webhook | undefined> {
    return enableWebhook(this.db, accountId, id);
  }

  /** The webhook's deliveries, newest event first; undefined: no such webhook. */
  deliveries(accountId: string, id: string, page: DeliveryPage): Promise<Delivery[] | undefined> {
    return listDeliveries(this.db, accountId, id, page);
  }

  /** One delivery with its body and attempts; undefined: not the webhook's, or no such delivery. */
  delivery(accountId: string, id: string, deliveryId: string): Promise<DeliveryDetail | undefined> {
    return getDelivery(this.db, accountId, id, deliveryId);
  }

  /**
   * Sends the delivery again as a new series of attempts, due `now`; undefined: no such webhook or
   * delivery. Through a disabled webhook it is a conflict (and nothing changes).
   */
  async redeliver(accountId: string, id: string, deliveryId: string, now: Date): Promise<Delivery | undefined> {
    return redeliver(this.db, accountId, id, deliveryId, now).catch((err: unknown) => {
      throw err instanceof WebhookDisabledError ? new DomainError('conflict', err.message, err) : err;
    });
  }
}
