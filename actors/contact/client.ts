import type { ContactData, SimpleValue } from '../../domain/contacts/schema.ts';
import type { Platform } from '../../runtime/platform.ts';
import { CONTACT_ACTOR, type ContactResult } from './actor.ts';

/** Typed calls to one ContactActor; every call is one turn of that contact. */
export function contactActorClient(p: Platform, contactId: string) {
  const call = (method: string, input?: unknown) => p.actors.invoke<ContactResult>(CONTACT_ACTOR, contactId, method, input);
  return {
    upsert: (input: { subscribed?: boolean; data?: ContactData }) => call('upsert', input),
    patch: (input: { email?: string; subscribed?: boolean; data?: ContactData }) => call('patch', input),
    track: (input: {
      subscribed?: boolean;
      data?: ContactData;
      transient?: Record<string, SimpleValue>;
      /** `once`: when an event with this id is recorded already, the call does nothing. */
      event?: { id: string; name: string; once?: boolean };
    }) => call('track', input),
    setSubscribed: (subscribed: boolean) => call('setSubscribed', { subscribed }),
    /** With an `eventId`, a repeat of the same call records nothing (for at-least-once senders). */
    recordSystemEvent: (name: string, data?: Record<string, SimpleValue>, eventId?: string) =>
      call('recordSystemEvent', { name, data, ...(eventId ? { eventId } : {}) }),
    delete: () => call('delete'),
  };
}
