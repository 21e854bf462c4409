// Everything a contact turn's recorded events set off, in one subscription (the pub/sub takes one
// per topic in a process): workflows first, then event webhooks. Both are idempotent, so a
// redelivery after a failure in either repeats nothing that was done.
import type { Platform } from '../../runtime/platform.ts';
import { deliverEvent, webhooksWant } from '../webhooks/deliveries.ts';
import { onEventsRecorded, workflowsWant } from '../workflows/triggers.ts';
import { EVENTS_TOPIC, eventsIn, type EventMessage, type RecordedEvents } from './collection.ts';

export function startRecordedEventHandlers(p: Platform): void {
  p.pubsub.subscribe<RecordedEvents | EventMessage>(EVENTS_TOPIC, async (message) => {
    const recorded = eventsIn(message);
    await onEventsRecorded(p, recorded);
    for (const event of recorded) await deliverEvent(p, event);
  });
}

/**
 * Whether a handler above could act on events of a name in the project: those it could not are
 * not published at all. An email's `email.sent` and `email.delivery`, in a project without
 * workflows or webhooks for them, were a queue record, a handler run and an executions query each
 * time, a tenth of a campaign's event loop (bench/results/campaign-profile.md, session 11). The
 * reads are cached; a workflow or endpoint set up later sees the events recorded from then on, as
 * it would have if the event had been handled before it was set up.
 */
export async function actedOn(p: Platform, projectId: string): Promise<(name: string) => boolean> {
  const [workflowsAct, webhooksAct] = await Promise.all([workflowsWant(p, projectId), webhooksWant(p, projectId)]);
  return (name) => workflowsAct(name) || webhooksAct(name);
}
