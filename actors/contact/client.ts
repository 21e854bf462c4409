import type { ContactData, SimpleValue } from '../../domain/contacts/schema.ts';
import type { Platform } from '../../runtime/platform.ts';
import { CONTACT_ACTOR, type ContactResult } from './actor.ts';

/** Typed calls to one ContactActor; every call is one turn of that contact. */
export function contactActorClient(p: Platform, contactId: string): ContactActorClient {
  return new ContactActorClient(p, contactId);
}

// A class, not an object of arrow functions: one is made per API call, and under tsx each arrow
// function made costs a defineProperty of its name (bench:track profile).
class ContactActorClient {
  readonly #p: Platform;
  readonly #id: string;

  constructor(p: Platform, contactId: string) {
    this.#p = p;
    this.#id = contactId;
  }

  upsert(input: { subscribed?: boolean; data?: ContactData }) {
    return this.#call('upsert', input);
  }

  patch(input: { email?: string; subscribed?: boolean; data?: ContactData }) {
    return this.#call('patch', input);
  }

  track(input: {
    subscribed?: boolean;
    data?: ContactData;
    transient?: Record<string, SimpleValue>;
    /** `once`: when an event with this id is recorded already, the call does nothing. */
    event?: { id: string; name: string; once?: boolean };
  }) {
    return this.#call('track', input);
  }

  setSubscribed(subscribed: boolean) {
    return this.#call('setSubscribed', { subscribed });
  }

  /** With an `eventId`, a repeat of the same call records nothing (for at-least-once senders). */
  recordSystemEvent(name: string, data?: Record<string, SimpleValue>, eventId?: string) {
    return this.#call('recordSystemEvent', { name, data, ...(eventId ? { eventId } : {}) });
  }

  delete() {
    return this.#call('delete');
  }

  #call(method: string, input?: unknown): Promise<ContactResult> {
    return this.#p.actors.invoke<ContactResult>(CONTACT_ACTOR, this.#id, method, input);
  }
}
