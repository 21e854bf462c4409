import type { Doc, DocumentStore } from '../../ports/store.ts';
import type { SimpleValue } from '../contacts/schema.ts';

/**
 * Published after events are recorded, one message per contact turn (`RecordedEvents`);
 * workflows start and waiting executions resume on it.
 */
export const EVENTS_TOPIC = 'events.recorded';

export interface EventDoc extends Doc {
  projectId: string;
  contactId: string;
  name: string;
  /** Persistent values only: non-persistent ones are never stored. */
  data: Record<string, SimpleValue>;
  system: boolean;
  createdAt: string;
}

export interface EventMessage {
  projectId: string;
  contactId: string;
  eventId: string;
  name: string;
  data: Record<string, SimpleValue>;
  system: boolean;
  createdAt: string;
}

/**
 * A message of `events.recorded`: the events one contact turn recorded, in their order. One
 * message for them all: an email's `email.sent` and `email.delivery` were two queue records and
 * two handler runs each (bench/results/campaign-profile.md).
 */
export interface RecordedEvents {
  events: EventMessage[];
}

/** The events a message carries; one published before they were grouped (still queued after an upgrade) is one event. */
export const eventsIn = (message: RecordedEvents | EventMessage): EventMessage[] => ('events' in message ? message.events : [message]);

export const events = (store: DocumentStore) => store.collection<EventDoc>('events');

export async function ensureEventIndexes(store: DocumentStore): Promise<void> {
  // Lists are newest first by the event's time (ids of system events such as segment
  // membership are not in time order), so each index ends with it (and the store adds `_id`).
  await store.ensureIndexes('events', [
    { keys: { projectId: 1, createdAt: 1 } },
    { keys: { projectId: 1, name: 1, createdAt: 1 } },
    { keys: { projectId: 1, contactId: 1, createdAt: 1 } },
  ]);
}

export const eventView = (e: EventDoc) => ({
  id: e._id,
  name: e.name,
  contactId: e.contactId,
  data: e.data,
  system: e.system,
  createdAt: e.createdAt,
});

// In names.ts (no server imports), so the dashboard knows which names it may offer to delete.
export { isSystemEventName } from './names.ts';
