// Everything a recorded event sets off, in one subscription (the pub/sub takes one per topic in a
// process): workflows first, then event webhooks. Both are idempotent, so a redelivery after a
// failure in either repeats nothing that was done.
import type { Platform } from '../../runtime/platform.ts';
import { deliverEvent } from '../webhooks/deliveries.ts';
import { onEventRecorded } from '../workflows/triggers.ts';
import { EVENTS_TOPIC, type EventMessage } from './collection.ts';

export function startRecordedEventHandlers(p: Platform): void {
  p.pubsub.subscribe<EventMessage>(EVENTS_TOPIC, async (event) => {
    await onEventRecorded(p, event);
    await deliverEvent(p, event);
  });
}
