import type { ContactDoc } from '../../domain/contacts/collection.ts';
import type { ContactData, SimpleValue } from '../../domain/contacts/schema.ts';
import type { Platform } from '../../runtime/platform.ts';
import { CONTACT_ACTOR, knownContact, type ContactResult, type KnownContact } from './actor.ts';

/**
 * Typed calls to one ContactActor; every call is one turn of that contact. `doc`: the contact's
 * document as the caller just read it, which spares the turn reading it again (`KnownContact`).
 */
export function contactActorClient(p: Platform, contactId: string, doc?: ContactDoc): ContactActorClient {
  return new ContactActorClient(p, contactId, doc && knownContact(doc));
}

// A class, not an object of arrow functions: one is made per API call, and under tsx each arrow
// function made costs a defineProperty of its name (bench:track profile).
class ContactActorClient {
  readonly #p: Platform;
  readonly #id: string;
  readonly #known: KnownContact | undefined;

  constructor(p: Platform, contactId: string, known: KnownContact | undefined) {
    this.#p = p;
    this.#id = contactId;
    this.#known = known;
  }

  upsert(input: { subscribed?: boolean; data?: ContactData }) {
    return this.#call('upsert', { ...input, known: this.#known });
  }

  patch(input: { email?: string; subscribed?: boolean; data?: ContactData }) {
    return this.#call('patch', { ...input, known: this.#known });
  }

  track(input: {
    subscribed?: boolean;
    data?: ContactData;
    transient?: Record<string, SimpleValue>;
    /** `once`: when an event with this id is recorded already, the call does nothing. */
    event?: { id: string; name: string; once?: boolean };
  }) {
    return this.#call('track', { ...input, known: this.#known });
  }

  setSubscribed(subscribed: boolean) {
    return this.#call('setSubscribed', { subscribed, known: this.#known });
  }

  /** With an `eventId`, a repeat of the same call records nothing (for at-least-once senders). */
  recordSystemEvent(name: string, data?: Record<string, SimpleValue>, eventId?: string) {
    return this.#call('recordSystemEvent', { name, data, ...(eventId ? { eventId } : {}) });
  }

  delete() {
    return this.#call('delete');
  }

  #call<T = ContactResult>(method: string, input?: unknown): Promise<T> {
    return this.#p.actors.invoke<T>(CONTACT_ACTOR, this.#id, method, input);
  }
}
