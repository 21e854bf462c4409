// The Dashboard API of event webhooks: endpoints, their delivery log, the test event and replay.
import type { z } from 'zod';
import type { Platform } from '../../runtime/platform.ts';
import { notFound } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { decodeTimeCursor, encodeTimeCursor, olderThan } from '../time-cursor.ts';
import { deliveryView, webhookDeliveries, webhooks, webhookView, type WebhookDoc } from './collection.ts';
import { attemptTestDelivery, createDelivery } from './deliveries.ts';
import { testPayload } from './payload.ts';
import type { createWebhookSchema, patchWebhookSchema } from './schema.ts';
import { newSigningSecret } from './signing.ts';

/** The most deliveries one "replay since" call sends again. */
export const MAX_REPLAY = 1000;

async function owned(p: Platform, projectId: string, id: string): Promise<WebhookDoc> {
  const doc = await webhooks(p.store).findOne({ _id: id });
  if (!doc || doc.projectId !== projectId) throw notFound('Webhook');
  return doc;
}

export async function createWebhook(p: Platform, projectId: string, body: z.output<typeof createWebhookSchema>) {
  const now = nowIso();
  const doc: WebhookDoc = {
    _id: newId(),
    projectId,
    url: body.url,
    description: body.description ?? null,
    events: body.events,
    enabled: body.enabled,
    secret: newSigningSecret(),
    disabledReason: null,
    createdAt: now,
    updatedAt: now,
  };
  await webhooks(p.store).insertOne(doc);
  return { ...webhookView(doc), secret: doc.secret };
}

export async function getWebhook(p: Platform, projectId: string, id: string) {
  return webhookView(await owned(p, projectId, id));
}

/** Newest first, in the generic list envelope. */
export async function listWebhooks(p: Platform, projectId: string, query: { limit: number; cursor?: string }) {
  const after = query.cursor === undefined ? {} : olderThan(decodeTimeCursor(query.cursor));
  const collection = webhooks(p.store);
  const [docs, total] = await Promise.all([
    collection.find({ projectId, ...after }, { sort: { createdAt: -1, _id: -1 }, limit: query.limit + 1 }),
    collection.countDocuments({ projectId }),
  ]);
  return page(docs, query.limit, total, webhookView);
}

export async function patchWebhook(p: Platform, projectId: string, id: string, body: z.output<typeof patchWebhookSchema>) {
  await owned(p, projectId, id);
  const set: Record<string, unknown> = { updatedAt: nowIso() };
  if (body.url !== undefined) set.url = body.url;
  if (body.events !== undefined) set.events = body.events;
  if (body.description !== undefined) set.description = body.description;
  if (body.enabled !== undefined) {
    set.enabled = body.enabled;
    set.disabledReason = null;
  }
  const doc = await webhooks(p.store).findOneAndUpdate({ _id: id, projectId }, { $set: set });
  if (!doc) throw notFound('Webhook');
  return webhookView(doc);
}

/** The endpoint and its log go; deliveries still pending find no record and end. */
export async function deleteWebhook(p: Platform, projectId: string, id: string): Promise<void> {
  await owned(p, projectId, id);
  await webhooks(p.store).deleteOne({ _id: id, projectId });
  await webhookDeliveries(p.store).deleteMany({ webhookId: id });
}

/** A new signing secret; the old one signs nothing from now on. */
export async function rotateWebhookSecret(p: Platform, projectId: string, id: string) {
  await owned(p, projectId, id);
  const doc = await webhooks(p.store).findOneAndUpdate({ _id: id, projectId }, { $set: { secret: newSigningSecret(), updatedAt: nowIso() } });
  if (!doc) throw notFound('Webhook');
  return { ...webhookView(doc), secret: doc.secret };
}

/** The endpoint's delivery log, newest first, in the generic list envelope. */
export async function listDeliveries(p: Platform, projectId: string, id: string, query: { limit: number; cursor?: string }) {
  await owned(p, projectId, id);
  const after = query.cursor === undefined ? {} : olderThan(decodeTimeCursor(query.cursor));
  const collection = webhookDeliveries(p.store);
  const [docs, total] = await Promise.all([
    collection.find({ webhookId: id, ...after }, { sort: { createdAt: -1, _id: -1 }, limit: query.limit + 1 }),
    collection.countDocuments({ webhookId: id }),
  ]);
  return page(docs, query.limit, total, deliveryView);
}

/** `POST /webhooks/:id/test`: a `webhook.test` event, sent at once; answers with the first attempt (a disabled endpoint gets nothing: the attempt says so). */
export async function sendTestEvent(p: Platform, projectId: string, id: string) {
  const webhook = await owned(p, projectId, id);
  return deliveryView(await attemptTestDelivery(p, webhook, testPayload(newId(), nowIso())));
}

/**
 * A replay is a new delivery of the same payload (the same `eventId`, a new `webhook-id`): the
 * original's retries are over, and a receiver that deduplicates by `webhook-id` would drop it
 * otherwise. Receivers that must not act twice deduplicate by `data.eventId`.
 */
export async function replayDelivery(p: Platform, projectId: string, id: string, deliveryId: string) {
  const webhook = await owned(p, projectId, id);
  const original = await webhookDeliveries(p.store).findOne({ _id: deliveryId });
  if (!original || original.webhookId !== id) throw notFound('Delivery');
  const replay = await createDelivery(p, webhook, original.payload, original._id);
  return deliveryView(replay);
}

/** Replays every delivery to the endpoint created at or after `since` (replays excluded), oldest first. */
export async function replaySince(p: Platform, projectId: string, id: string, since: string) {
  const webhook = await owned(p, projectId, id);
  const originals = await webhookDeliveries(p.store).find(
    { webhookId: id, createdAt: { $gte: new Date(since).toISOString() }, replayOf: null },
    { sort: { createdAt: 1, _id: 1 }, limit: MAX_REPLAY + 1 },
  );
  const sent = originals.slice(0, MAX_REPLAY);
  const replays = [];
  for (const original of sent) replays.push(deliveryView(await createDelivery(p, webhook, original.payload, original._id)));
  return { replayed: replays.length, hasMore: originals.length > MAX_REPLAY, deliveries: replays };
}

function page<D extends { _id: string; createdAt: string }, V>(docs: D[], limit: number, total: number, view: (d: D) => V) {
  const hasMore = docs.length > limit;
  const items = docs.slice(0, limit);
  const last = items[items.length - 1];
  return { items: items.map(view), nextCursor: hasMore ? encodeTimeCursor({ createdAt: last.createdAt, id: last._id }) : null, hasMore, total };
}
