import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import {
  createWebhookSchema,
  deliverySchema,
  patchWebhookSchema,
  replaySinceSchema,
  webhookSchema,
  webhookWithSecretSchema,
} from '../../../domain/webhooks/schema.ts';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  patchWebhook,
  replayDelivery,
  replaySince,
  rotateWebhookSecret,
  sendTestEvent,
} from '../../../domain/webhooks/service.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';
import { cursorParam, idParams, limitParam } from './common.ts';

const listQuery = z.object({ limit: limitParam(), cursor: cursorParam().optional() });
const listOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable(), hasMore: z.boolean(), total: z.number().int() });
const deliveryParams = idParams.extend({ deliveryId: z.string().min(1).max(LIMITS.id) });

const DELIVERY_RULES =
  'Each matching event is POSTed as JSON `{type, timestamp, data: {eventId, contact, event: {name, data}, email?}}`, signed in the Standard Webhooks format ' +
  '(`webhook-id` = the delivery id, the same on every retry; `webhook-timestamp`; `webhook-signature`, HMAC-SHA256 with the secret). ' +
  'A 2xx ends a delivery; any other answer or none is retried with exponential backoff and jitter for 24 h (first retry within 10 s); 410 Gone disables the endpoint at once, ' +
  'and an endpoint nothing reached for 24 h is disabled and the project admins are emailed.';

export function webhookRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/webhooks', tag: 'Webhooks', auth: 'secret', status: 201,
      summary: 'Subscribe an endpoint to events; the signing secret is shown in this answer only',
      description: DELIVERY_RULES,
      body: createWebhookSchema,
      response: webhookWithSecretSchema,
      handle: ({ auth, body }) => createWebhook(p, auth.projectId, body),
    }),
    route({
      method: 'get', path: '/webhooks', tag: 'Webhooks', auth: 'secret',
      summary: 'The endpoints of the project, newest first (generic list envelope, cursor paging)',
      query: listQuery,
      response: listOf(webhookSchema),
      handle: ({ auth, query }) => listWebhooks(p, auth.projectId, query),
    }),
    route({
      method: 'get', path: '/webhooks/:id', tag: 'Webhooks', auth: 'secret', errors: [404],
      summary: 'One endpoint (without its secret)',
      params: idParams,
      response: webhookSchema,
      handle: ({ auth, params }) => getWebhook(p, auth.projectId, params.id),
    }),
    route({
      method: 'patch', path: '/webhooks/:id', tag: 'Webhooks', auth: 'secret', errors: [404],
      summary: 'Change the URL, events, description or enabled flag',
      params: idParams,
      body: patchWebhookSchema,
      response: webhookSchema,
      handle: ({ auth, params, body }) => patchWebhook(p, auth.projectId, params.id, body),
    }),
    route({
      method: 'delete', path: '/webhooks/:id', tag: 'Webhooks', auth: 'secret', status: 204, errors: [404],
      summary: 'Delete an endpoint and its delivery log; pending deliveries stop',
      params: idParams,
      handle: ({ auth, params }) => deleteWebhook(p, auth.projectId, params.id),
    }),
    route({
      method: 'post', path: '/webhooks/:id/secret/rotate', tag: 'Webhooks', auth: 'secret', errors: [404],
      summary: 'A new signing secret, shown in this answer only; the old one signs nothing from now on',
      params: idParams,
      response: webhookWithSecretSchema,
      handle: ({ auth, params }) => rotateWebhookSecret(p, auth.projectId, params.id),
    }),
    route({
      method: 'get', path: '/webhooks/:id/deliveries', tag: 'Webhooks', auth: 'secret', errors: [404],
      summary: 'The delivery log of an endpoint, newest first: every attempt with its status, latency and the first 1 KB of the answer',
      params: idParams,
      query: listQuery,
      response: listOf(deliverySchema),
      handle: ({ auth, params, query }) => listDeliveries(p, auth.projectId, params.id, query),
    }),
    route({
      method: 'post', path: '/webhooks/:id/test', tag: 'Webhooks', auth: 'secret', errors: [404],
      summary: 'Send a `webhook.test` event now and answer with the delivery and its first attempt',
      description: 'Retried like any delivery if it fails. A disabled endpoint gets nothing: the delivery is FAILED with the reason.',
      params: idParams,
      response: deliverySchema,
      handle: ({ auth, params }) => sendTestEvent(p, auth.projectId, params.id),
    }),
    route({
      method: 'post', path: '/webhooks/:id/deliveries/:deliveryId/replay', tag: 'Webhooks', auth: 'secret', status: 202, errors: [404],
      summary: 'Send a delivery again: a new delivery (new `webhook-id`, `replayOf` the original) of the same payload, same `data.eventId`',
      params: deliveryParams,
      response: deliverySchema,
      handle: ({ auth, params }) => replayDelivery(p, auth.projectId, params.id, params.deliveryId),
    }),
    route({
      method: 'post', path: '/webhooks/:id/replay', tag: 'Webhooks', auth: 'secret', status: 202, errors: [404],
      summary: 'Send again every delivery to the endpoint created since a time (replays excluded, oldest first, at most 1,000 a call)',
      params: idParams,
      body: replaySinceSchema,
      response: z.object({ replayed: z.number().int(), hasMore: z.boolean(), deliveries: z.array(deliverySchema) }),
      handle: ({ auth, params, body }) => replaySince(p, auth.projectId, params.id, body.since),
    }),
  ];
}
