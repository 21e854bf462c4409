// What recording events on a contact does besides inserting them, shared by the contact's turns
// (actor.ts) and the system events recorded outside them (system-events.ts).
import { eventKey } from '../../domain/contacts/collection.ts';
import type { SimpleValue } from '../../domain/contacts/schema.ts';
import { EVENTS_TOPIC, type EventDoc, type EventMessage, type RecordedEvents } from '../../domain/events/collection.ts';
import { actedOn } from '../../domain/events/recorded.ts';
import type { Platform } from '../../runtime/platform.ts';

export type ContactUpdate = Record<string, Record<string, unknown>>;

/** Adds `events` to the contact's `eventStats` in `update`: a count, the first and the last time, per name. */
export function countEvents(update: ContactUpdate, events: Pick<EventDoc, 'name' | 'createdAt'>[]): ContactUpdate {
  for (const { name, createdAt: when } of events) {
    const key = `eventStats.${eventKey(name)}`;
    const inc = (update.$inc ??= {});
    const min = (update.$min ??= {});
    const max = (update.$max ??= {});
    inc[`${key}.count`] = ((inc[`${key}.count`] as number | undefined) ?? 0) + 1;
    // Two of one name in a turn: the earlier is `first`, the later `last`.
    if (!min[`${key}.first`] || when < (min[`${key}.first`] as string)) min[`${key}.first`] = when;
    if (!max[`${key}.last`] || when > (max[`${key}.last`] as string)) max[`${key}.last`] = when;
  }
  return update;
}

/**
 * `events.recorded` for recorded events, one message per contact (each list of `byContact` is one
 * contact's, in order), with only the events that anything acts on (actedOn).
 */
export async function publishRecorded(p: Platform, byContact: EventDoc[][], transient: Record<string, SimpleValue> = {}): Promise<void> {
  const messages: RecordedEvents[] = [];
  // Asked once per project: a group of an email campaign's deliveries is many contacts of one.
  const tests = new Map<string, Promise<(name: string) => boolean>>();
  for (const all of byContact) {
    if (all.length === 0) continue;
    const { projectId } = all[0];
    if (!tests.has(projectId)) tests.set(projectId, actedOn(p, projectId));
    const acts = await tests.get(projectId)!;
    const recorded = all.filter((event) => acts(event.name));
    if (recorded.length === 0) continue;
    messages.push({
      events: recorded.map(
        (event): EventMessage => ({
          projectId: event.projectId,
          contactId: event.contactId,
          eventId: event._id,
          name: event.name,
          // Non-persistent values travel with the event to workflows and are stored nowhere.
          data: event.system ? event.data : { ...event.data, ...transient },
          system: event.system,
          createdAt: event.createdAt,
        }),
      ),
    });
  }
  if (messages.length > 0) await p.pubsub.publishMany<RecordedEvents>(EVENTS_TOPIC, messages);
}
