// Event webhooks: a project's endpoints (`webhooks`, written by the dashboard endpoints and by
// the delivery rules that disable one) and their deliveries (`webhook_deliveries`, each written
// by its endpoint's WebhookQueueActor after creation).
import type { Doc, DocumentStore } from '../../ports/store.ts';
import type { EventMessage } from '../events/collection.ts';

export interface WebhookDoc extends Doc {
  projectId: string;
  url: string;
  description: string | null;
  /** Exact event names or patterns (`email.*`, `segment.*.entry`, `*`): see patterns.ts. */
  events: string[];
  enabled: boolean;
  /** The Standard Webhooks signing secret, `whsec_<base64>`: shown on create and rotate only. */
  secret: string;
  /** Why the platform turned it off (410 Gone, 24 h of failures); cleared when it is enabled again. */
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

export interface DeliveryAttempt {
  at: string;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why there was no answer (a timeout, a refused address, a broken connection). */
  error?: string;
  durationMs: number;
  /** The first 1 KB of the receiver's answer. */
  response?: string;
}

/** What is POSTed: DESIGN.md's payload, kept as sent so every retry and replay sends the same bytes. */
export interface DeliveryPayload {
  type: string;
  timestamp: string;
  data: {
    eventId: string;
    contact: { id: string; email: string | null; subscribed: boolean | null; data: Record<string, unknown> } | null;
    event: { name: string; data: Record<string, unknown> };
    email?: { id: string; campaignId?: string; workflowId?: string };
  };
}

export interface DeliveryDoc extends Doc {
  projectId: string;
  webhookId: string;
  eventId: string;
  /** The event's name (DESIGN's `type`). */
  type: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  /** When the next attempt is due, while PENDING. */
  nextAttemptAt: string | null;
  /** The delivery this one replays, for a replay. */
  replayOf: string | null;
  payload: DeliveryPayload;
  createdAt: string;
  updatedAt: string;
}

/**
 * An event some endpoints want, recorded as it happens (one small write, whatever the number of
 * endpoints); the endpoints' queues turn it into deliveries when the process has time to spare.
 */
export interface OutboxDoc extends Doc {
  projectId: string;
  event: EventMessage;
  /** The endpoints that wanted it when it was recorded. */
  webhookIds: string[];
  createdAt: string;
}

export const webhookOutbox = (store: DocumentStore) => store.collection<OutboxDoc>('webhook_outbox');
export const webhooks = (store: DocumentStore) => store.collection<WebhookDoc>('webhooks');
export const webhookDeliveries = (store: DocumentStore) => store.collection<DeliveryDoc>('webhook_deliveries');

export async function ensureWebhookIndexes(store: DocumentStore): Promise<void> {
  // A project's endpoints (few): the list, and the enabled ones each event looks up (the index holds no booleans).
  await store.ensureIndexes('webhooks', [{ keys: { projectId: 1, createdAt: 1 } }]);
  // The log of an endpoint newest first; an endpoint's queue, its due deliveries first; the pending ones at start-up.
  await store.ensureIndexes('webhook_deliveries', [
    { keys: { webhookId: 1, createdAt: 1 } },
    { keys: { webhookId: 1, status: 1, nextAttemptAt: 1 } },
    { keys: { status: 1, nextAttemptAt: 1 } },
  ]);
  // A project's events waiting to become deliveries, oldest first.
  await store.ensureIndexes('webhook_outbox', [{ keys: { projectId: 1, createdAt: 1 } }]);
  // Every recorded event looks up its project's enabled endpoints: no endpoint must cost nothing.
  store.cacheReads('webhooks');
}

export const webhookView = (doc: WebhookDoc) => ({
  id: doc._id,
  url: doc.url,
  description: doc.description,
  events: doc.events,
  enabled: doc.enabled,
  disabledReason: doc.disabledReason,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});

export const deliveryView = (doc: DeliveryDoc) => ({
  id: doc._id,
  webhookId: doc.webhookId,
  eventId: doc.eventId,
  type: doc.type,
  status: doc.status,
  attempts: doc.attempts,
  nextAttemptAt: doc.nextAttemptAt,
  replayOf: doc.replayOf,
  createdAt: doc.createdAt,
});

export type DeliveryView = ReturnType<typeof deliveryView>;
