// From a recorded event to deliveries: one record per matching enabled endpoint, with an id
// derived from the event and the endpoint, so a redelivered event creates nothing twice; each is
// then driven by its WebhookDeliveryActor's reminders (durable across restarts).
import { webhookDeliveryClient } from '../../actors/webhook-delivery/client.ts';
import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import type { EventMessage } from '../events/collection.ts';
import { derivedId, newId, nowIso } from '../ids.ts';
import { webhookDeliveries, webhooks, type DeliveryDoc, type DeliveryPayload, type WebhookDoc } from './collection.ts';
import { payloadOf } from './payload.ts';
import { wantsEvent } from './patterns.ts';

/** The `events.recorded` handler of event webhooks. An event no endpoint wants costs one cached read. */
export async function deliverEvent(p: Platform, event: EventMessage): Promise<void> {
  const enabled = await webhooks(p.store).find({ projectId: event.projectId, enabled: true });
  const wanting = enabled.filter((w) => wantsEvent(w.events, event.name));
  if (wanting.length === 0) return;
  const payload = await payloadOf(p, event);
  for (const webhook of wanting) {
    await createDelivery(p, webhook, payload, { id: derivedId('webhook-delivery', event.eventId, webhook._id), replayOf: null });
  }
}

/** Records a delivery and starts it; an id already recorded (a redelivered event) is started again, which is harmless. */
export async function createDelivery(
  p: Platform,
  webhook: WebhookDoc,
  payload: DeliveryPayload,
  options: { id?: string; replayOf: string | null; startNow?: boolean },
): Promise<DeliveryDoc> {
  const now = nowIso();
  const doc: DeliveryDoc = {
    _id: options.id ?? newId(),
    projectId: webhook.projectId,
    webhookId: webhook._id,
    eventId: payload.data.eventId,
    type: payload.type,
    status: 'PENDING',
    attempts: [],
    nextAttemptAt: now,
    replayOf: options.replayOf,
    payload,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await webhookDeliveries(p.store).insertOne(doc);
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
  // The test button attempts in its own request instead (a crash before it leaves one for the start-up resume).
  if (!options.startNow) await webhookDeliveryClient(p, doc._id).start(now);
  return doc;
}

/**
 * At start-up: wakes every PENDING delivery that is due. A reminder should do that, but it is one
 * record in one runtime; with `rearm` (Dapr) the ones not yet due get their reminder again too.
 */
export async function resumeDeliveries(p: Platform, options: { rearm: boolean }): Promise<number> {
  const now = nowIso();
  const pending = await webhookDeliveries(p.store).find({ status: 'PENDING' }, { projection: { nextAttemptAt: 1 } });
  const due = pending.filter((d) => options.rearm || !d.nextAttemptAt || d.nextAttemptAt <= now);
  for (const { _id } of due) {
    for (let attempt = 1; ; attempt++) {
      try {
        await webhookDeliveryClient(p, _id).wake();
        break;
      } catch (err) {
        // Right after a restart the runtime may not place actors yet: try again for a while.
        if (attempt >= 30) {
          p.log.error({ deliveryId: _id, err: (err as Error).message }, 'could not resume a webhook delivery');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }
  return due.length;
}
