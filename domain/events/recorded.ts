// Everything a contact turn's recorded events set off, in one subscription (the pub/sub takes one
// per topic in a process): workflows first, then event webhooks. Both are idempotent, so a
// redelivery after a failure in either repeats nothing that was done.
import type { Platform } from '../../runtime/platform.ts';
import { deliverEvent } from '../webhooks/deliveries.ts';
import { onEventsRecorded } from '../workflows/triggers.ts';
import { EVENTS_TOPIC, eventsIn, type EventMessage, type RecordedEvents } from './collection.ts';

export function startRecordedEventHandlers(p: Platform): void {
  p.pubsub.subscribe<RecordedEvents | EventMessage>(EVENTS_TOPIC, async (message) => {
    const recorded = eventsIn(message);
    await onEventsRecorded(p, recorded);
    for (const event of recorded) await deliverEvent(p, event);
  });
}
