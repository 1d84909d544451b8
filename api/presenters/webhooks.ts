// A webhook and its deliveries as the API shows them: the response schemas and their presenters.
import { z } from 'zod';
import type { Attempt, Delivery, DeliveryDetail, RotatedWebhook, Webhook, WebhookWithSecret } from '../webhooks/repository.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().nullable(),
  created_at: z.string(),
  disabled_at: z.string().nullable(),
  disabled_reason: z.string().nullable(),
  failing_since: z.string().nullable(),
});

/** A webhook as made: its secret, shown this once. */
export const createdWebhookSchema = webhookSchema.extend({ secret: z.string() });

/** A webhook whose secret was rotated: the new secret, shown this once, and until when the previous one signs. */
export const rotatedWebhookSchema = webhookSchema.extend({ secret: z.string(), previous_secret_valid_until: z.string() });

export const deliveryStatus = z.enum(['pending', 'succeeded', 'failed', 'canceled']);

export const deliverySchema = z.object({
  id: z.string(),
  event_id: z.number(),
  event_type: z.string(),
  status: deliveryStatus,
  attempts: z.number(),
  next_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  last_status: z.number().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
});

export const attemptSchema = z.object({
  attempt: z.number(),
  attempted_at: z.string(),
  duration_ms: z.number(),
  status: z.number().nullable(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable(),
});

/** A delivery with its body and every attempt. */
export const deliveryDetailSchema = deliverySchema.extend({ payload: z.string(), attempt_log: z.array(attemptSchema) });

export const presentWebhook = (w: Webhook): z.infer<typeof webhookSchema> => ({
  id: w.id,
  url: w.url,
  events: w.eventTypes,
  description: w.description,
  created_at: iso(w.createdAt)!,
  disabled_at: iso(w.disabledAt),
  disabled_reason: w.disabledReason,
  failing_since: iso(w.failingSince),
});

export const presentCreatedWebhook = (made: WebhookWithSecret): z.infer<typeof createdWebhookSchema> => ({
  ...presentWebhook(made.webhook),
  secret: made.secret,
});

export const presentRotatedWebhook = (rotated: RotatedWebhook): z.infer<typeof rotatedWebhookSchema> => ({
  ...presentWebhook(rotated.webhook),
  secret: rotated.secret,
  previous_secret_valid_until: rotated.previousUntil.toISOString(),
});

export const presentDelivery = (d: Delivery): z.infer<typeof deliverySchema> => ({
  id: d.id,
  event_id: d.eventId,
  event_type: d.eventType,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: iso(d.nextAttemptAt),
  last_attempt_at: iso(d.lastAttemptAt),
  last_status: d.lastStatus,
  last_error: d.lastError,
  created_at: iso(d.createdAt)!,
});

export const presentAttempt = (a: Attempt): z.infer<typeof attemptSchema> => ({
  attempt: a.attempt,
  attempted_at: a.attemptedAt.toISOString(),
  duration_ms: a.durationMs,
  status: a.status,
  error: a.error,
  response_excerpt: a.responseExcerpt,
});

export const presentDeliveryDetail = (found: DeliveryDetail): z.infer<typeof deliveryDetailSchema> => ({
  ...presentDelivery(found.delivery),
  payload: found.payload,
  attempt_log: found.attempts.map(presentAttempt),
});
