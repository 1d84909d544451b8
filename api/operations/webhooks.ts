// The account's webhooks: create, list, read, rotate the secret of, enable, and delete them, and
// their deliveries (list, read with attempts, redeliver). Sending them is lib/webhooks/deliverer.ts.
// The decisions (known event kinds, the URL guard, the webhook limit) are the webhook actions'
// (api/webhooks/actions.ts).
import { z } from 'zod';
import { actorOf } from '../actor.js';
import { op, type Operation } from '../operation.js';
import {
  createdWebhookSchema,
  deliveryDetailSchema,
  deliverySchema,
  deliveryStatus,
  presentCreatedWebhook,
  presentDelivery,
  presentDeliveryDetail,
  presentRotatedWebhook,
  presentWebhook,
  rotatedWebhookSchema,
  webhookSchema,
} from '../presenters/webhooks.js';
import type { ApiDeps } from '../deps.js';

type Deps = {
  webhookActions: Pick<
    ApiDeps['webhookActions'],
    'list' | 'create' | 'delete' | 'rotateSecret' | 'enable' | 'deliveries' | 'delivery' | 'redeliver'
  >;
};

const createWebhookBody = z.strictObject({
  url: z.string().min(1).max(2048),
  events: z
    .array(z.string().regex(/^[a-z_]+(\.[a-z_]+)*(\.\*)?$|^\*$/, 'must be an event kind like deploy.live or deploy.*'))
    .max(100)
    .default([]),
  description: z.string().max(500).optional(),
});

const deliveriesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  status: deliveryStatus.optional(),
  before: z.coerce.number().int().min(0).optional().describe("Deliveries of events before this event id (a previous page's next_before)"),
});

export function webhookOperations(s: Deps): Operation[] {
  return [
    op({
      method: 'GET',
      path: '/account/webhooks',
      operationId: 'listWebhooks',
      accountWide: true,
      tag: 'account',
      summary: 'List webhooks',
      action: 'read',
      response: z.object({ webhooks: z.array(webhookSchema) }),
      handler: async ({ caller }) => ({ body: { webhooks: (await s.webhookActions.list(actorOf(caller))).map(presentWebhook) } }),
    }),
    op({
      method: 'POST',
      path: '/account/webhooks',
      operationId: 'createWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Create webhook',
      action: 'admin',
      status: 201,
      body: createWebhookBody,
      response: createdWebhookSchema,
      handler: async ({ caller, body }) => {
        const made = await s.webhookActions.create(actorOf(caller), {
          url: body.url,
          eventTypes: body.events,
          description: body.description,
        });
        return { status: 201, body: presentCreatedWebhook(made) };
      },
    }),
    op({
      method: 'DELETE',
      path: '/account/webhooks/{webhookID}',
      operationId: 'deleteWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Delete webhook',
      action: 'admin',
      status: 204,
      handler: async ({ caller, params }) => {
        await s.webhookActions.delete(actorOf(caller), params.webhookID!);
        return { status: 204, body: undefined };
      },
    }),
    op({
      method: 'POST',
      path: '/account/webhooks/{webhookID}/secret',
      operationId: 'rotateWebhookSecret',
      accountWide: true,
      tag: 'account',
      summary: 'Rotate a webhook secret',
      action: 'admin',
      response: rotatedWebhookSchema,
      handler: async ({ caller, params }) => ({
        body: presentRotatedWebhook(await s.webhookActions.rotateSecret(actorOf(caller), params.webhookID!)),
      }),
    }),
    op({
      method: 'POST',
      path: '/account/webhooks/{webhookID}/enable',
      operationId: 'enableWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Enable a disabled webhook',
      action: 'admin',
      response: webhookSchema,
      handler: async ({ caller, params }) => ({ body: presentWebhook(await s.webhookActions.enable(actorOf(caller), params.webhookID!)) }),
    }),
    op({
      method: 'GET',
      path: '/account/webhooks/{webhookID}/deliveries',
      operationId: 'listWebhookDeliveries',
      accountWide: true,
      tag: 'account',
      summary: 'List deliveries of a webhook',
      action: 'read',
      query: deliveriesQuery,
      response: z.object({ deliveries: z.array(deliverySchema), next_before: z.number().nullable() }),
      handler: async ({ caller, params, query }) => {
        const page = await s.webhookActions.deliveries(actorOf(caller), params.webhookID!, {
          limit: query.limit,
          status: query.status,
          beforeEventId: query.before,
        });
        return { body: { deliveries: page.deliveries.map(presentDelivery), next_before: page.nextBefore } };
      },
    }),
    op({
      method: 'GET',
      path: '/account/webhooks/{webhookID}/deliveries/{deliveryID}',
      operationId: 'getWebhookDelivery',
      accountWide: true,
      tag: 'account',
      summary: 'Get a delivery and its attempts',
      action: 'read',
      response: deliveryDetailSchema,
      handler: async ({ caller, params }) => ({
        body: presentDeliveryDetail(await s.webhookActions.delivery(actorOf(caller), params.webhookID!, params.deliveryID!)),
      }),
    }),
    op({
      method: 'POST',
      path: '/account/webhooks/{webhookID}/deliveries/{deliveryID}/redeliver',
      operationId: 'redeliverWebhook',
      accountWide: true,
      tag: 'account',
      summary: 'Send a delivery again',
      action: 'admin',
      status: 202,
      response: deliverySchema,
      handler: async ({ caller, params }) => {
        const delivery = await s.webhookActions.redeliver(actorOf(caller), params.webhookID!, params.deliveryID!);
        return { status: 202, body: presentDelivery(delivery) };
      },
    }),
  ];
}
