// From a recorded event to deliveries, in two steps so that the event's handler does one small
// write: the event goes into the outbox with the endpoints that want it, and an endpoint's queue
// (actors/webhook-queue) later makes one delivery per endpoint of it, with an id derived from the
// event and the endpoint (a redelivered event, or two queues at once, create nothing twice).
import { attemptDelivery } from '../../actors/webhook-queue/attempt.ts';
import { webhookQueueClient } from '../../actors/webhook-queue/client.ts';
import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import type { EventMessage } from '../events/collection.ts';
import { derivedId, newId, nowIso } from '../ids.ts';
import { webhookDeliveries, webhookOutbox, webhooks, type DeliveryDoc, type DeliveryPayload, type WebhookDoc } from './collection.ts';
import { payloadOf } from './payload.ts';
import { wantsEvent } from './patterns.ts';

/** How long the test button's delivery is left to its request before a queue may take it (a crash in between). */
const TEST_CLAIM_MS = 60_000;

/** Outbox entries a queue turns into deliveries at a time. */
const EXPAND_BATCH = 100;
/** Kicks of one endpoint's queue from one process are this far apart at most often (a call per event cost a tenth of /v1/track). */
const KICK_EVERY_MS = 20;
const scheduledKicks = new WeakMap<Platform, Set<string>>();

/** Kicks the queue soon: after the write that needs it, so no entry is left unseen, and once for every event meanwhile. */
function kickSoon(p: Platform, webhookId: string): void {
  let scheduled = scheduledKicks.get(p);
  if (!scheduled) scheduledKicks.set(p, (scheduled = new Set()));
  if (scheduled.has(webhookId)) return;
  scheduled.add(webhookId);
  setTimeout(() => {
    scheduled.delete(webhookId);
    // Not kicked (the runtime stopping, an outage): the entry waits in the outbox for the start-up resume or the next kick.
    webhookQueueClient(p, webhookId).kick().catch((err) => p.log.warn({ webhookId, err: (err as Error).message }, 'could not kick a webhook queue'));
  }, KICK_EVERY_MS);
}

/** The project's enabled endpoints (a cached read). */
const enabledWebhooks = (p: Platform, projectId: string) => webhooks(p.store).find({ projectId, enabled: true }, { shared: true });

/** The project's enabled endpoints that want events of `name`. */
async function webhooksWanting(p: Platform, projectId: string, name: string): Promise<WebhookDoc[]> {
  return (await enabledWebhooks(p, projectId)).filter((w) => wantsEvent(w.events, name));
}

/** Which event names an enabled endpoint of the project wants: one cached read for any number of names. */
export async function webhooksWant(p: Platform, projectId: string): Promise<(name: string) => boolean> {
  const enabled = await enabledWebhooks(p, projectId);
  return (name) => enabled.some((w) => wantsEvent(w.events, name));
}

/** The `events.recorded` handler of event webhooks. An event no endpoint wants costs one cached read. */
export async function deliverEvent(p: Platform, event: EventMessage): Promise<void> {
  const wanting = await webhooksWanting(p, event.projectId, event.name);
  if (wanting.length === 0) return;
  try {
    await webhookOutbox(p.store).insertOne({
      _id: event.eventId, // a redelivered event finds its entry
      projectId: event.projectId,
      // A tracked event's data is read from the event when its deliveries are made: its non-persistent values are stored nowhere.
      event: event.system ? event : { ...event, data: {} },
      webhookIds: wanting.map((w) => w._id),
      createdAt: nowIso(),
    });
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
  for (const webhook of wanting) kickSoon(p, webhook._id);
}

/**
 * Turns up to a batch of the project's outbox into deliveries (the contact as it is now, which is
 * when the delivery is created) and kicks the queues of the other endpoints named. Returns how
 * many entries it took. Each entry goes once its deliveries are recorded: a crash in between
 * makes them again under the same ids.
 */
export async function expandOutbox(p: Platform, projectId: string, kickedBy: string): Promise<number> {
  const outbox = webhookOutbox(p.store);
  const entries = await outbox.find({ projectId }, { sort: { createdAt: 1, _id: 1 }, limit: EXPAND_BATCH });
  if (entries.length === 0) return 0;
  const endpoints = new Map((await webhooks(p.store).find({ projectId, enabled: true })).map((w) => [w._id, w]));
  const docs: DeliveryDoc[] = [];
  const named = new Set<string>();
  const now = nowIso();
  for (const entry of entries) {
    const wanting = entry.webhookIds.map((id) => endpoints.get(id)).filter((w) => w !== undefined);
    if (wanting.length === 0) continue; // disabled or deleted meanwhile: nothing goes to it
    const payload = await payloadOf(p, entry.event);
    for (const webhook of wanting) {
      docs.push(deliveryDoc(webhook, payload, { id: derivedId('webhook-delivery', entry.event.eventId, webhook._id), replayOf: null, due: now }));
      named.add(webhook._id);
    }
  }
  await insertNew(p, docs);
  for (const entry of entries) await outbox.deleteOne({ _id: entry._id });
  for (const webhookId of named) if (webhookId !== kickedBy) await webhookQueueClient(p, webhookId).kick();
  return entries.length;
}

/** A replay: a new delivery of a stored payload, sent by the endpoint's queue. */
export async function createDelivery(p: Platform, webhook: WebhookDoc, payload: DeliveryPayload, replayOf: string): Promise<DeliveryDoc> {
  const doc = deliveryDoc(webhook, payload, { id: newId(), replayOf, due: nowIso() });
  await webhookDeliveries(p.store).insertOne(doc);
  await webhookQueueClient(p, webhook._id).kick();
  return doc;
}

/**
 * The test button: a delivery attempted within the request, so it can answer with the attempt.
 * It is recorded due a minute later, so the queue leaves it to the request unless that crashes;
 * the queue is kicked afterwards to keep a retry's reminder.
 */
export async function attemptTestDelivery(p: Platform, webhook: WebhookDoc, payload: DeliveryPayload): Promise<DeliveryDoc> {
  const doc = deliveryDoc(webhook, payload, { id: newId(), replayOf: null, due: new Date(Date.now() + TEST_CLAIM_MS).toISOString() });
  await webhookDeliveries(p.store).insertOne(doc);
  const attempted = await attemptDelivery(p, { ...doc, nextAttemptAt: nowIso() });
  await webhookQueueClient(p, webhook._id).kick();
  return attempted;
}

function deliveryDoc(webhook: WebhookDoc, payload: DeliveryPayload, options: { id: string; replayOf: string | null; due: string }): DeliveryDoc {
  const now = nowIso();
  return {
    _id: options.id,
    projectId: webhook.projectId,
    webhookId: webhook._id,
    eventId: payload.data.eventId,
    type: payload.type,
    status: 'PENDING',
    attempts: [],
    nextAttemptAt: options.due,
    replayOf: options.replayOf,
    payload,
    createdAt: now,
    updatedAt: now,
  };
}

/** Inserts the deliveries of one event at once; after a redelivered event, only those not recorded yet. */
async function insertNew(p: Platform, docs: DeliveryDoc[]): Promise<void> {
  const collection = webhookDeliveries(p.store);
  try {
    await collection.insertMany(docs);
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    for (const doc of docs) {
      try {
        await collection.insertOne(doc);
      } catch (again) {
        if (!(again instanceof DuplicateKeyError)) throw again;
      }
    }
  }
}

/** At start-up: runs the queue of every endpoint with a pending delivery or an outbox entry (which also sets its reminder again). */
export async function resumeDeliveries(p: Platform): Promise<number> {
  const [pending, waiting] = await Promise.all([
    webhookDeliveries(p.store).find({ status: 'PENDING' }, { projection: { webhookId: 1 } }),
    webhookOutbox(p.store).find({}, { projection: { webhookIds: 1 } }),
  ]);
  const endpoints = [...new Set([...pending.map((d) => d.webhookId), ...waiting.flatMap((e) => e.webhookIds)])];
  for (const webhookId of endpoints) {
    for (let attempt = 1; ; attempt++) {
      try {
        await webhookQueueClient(p, webhookId).kick();
        break;
      } catch (err) {
        // Right after a restart the runtime may not place actors yet: try again for a while.
        if (attempt >= 30) {
          p.log.error({ webhookId, err: (err as Error).message }, 'could not resume a webhook queue');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }
  return endpoints.length;
}
