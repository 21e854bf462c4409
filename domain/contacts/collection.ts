import type { Doc, DocumentStore } from '../../ports/store.ts';
import type { Contact, SimpleValue } from './schema.ts';

export interface EventStat {
  count: number;
  first: string;
  last: string;
}

/**
 * The contact projection: the ContactActor's state plus what segments query, so a segment is
 * one indexed query on one collection. `eventStats` is keyed by `eventKey(name)`.
 */
export interface ContactDoc extends Doc {
  projectId: string;
  email: string;
  subscribed: boolean;
  data: Record<string, SimpleValue>;
  createdAt: string;
  updatedAt: string;
  eventStats?: Record<string, EventStat>;
  /** Raised by every write of a turn; a turn given a copy writes only if it is unchanged. */
  version?: number;
}

export const contacts = (store: DocumentStore) => store.collection<ContactDoc>('contacts');

export async function ensureContactIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('contacts', [
    { keys: { projectId: 1, email: 1 }, unique: true },
    { keys: { projectId: 1 } },
    // The Contacts screen's subscribed filter (a page newest first and its count) and a marketing
    // audience's `subscribed: true`: without it they walk every contact of the project. Both stores
    // end it with the id, so a page of it is read in order.
    { keys: { projectId: 1, subscribed: 1 } },
  ]);
  await store.ensureIndexes('data_fields', [{ keys: { projectId: 1 } }]);
}

/**
 * Event names contain dots (`email.open`), which are path separators in a field name, so the
 * summary key escapes `%`, `.` and `$`. The escape is reversible and keeps keys readable.
 */
/** The names Object.prototype has (`__proto__`, `constructor`, `toString`, …). */
const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * The key of an event name in `eventStats`: `%`, `.` and `$` percent-escaped, and the first
 * character of a name Object.prototype has escaped too, since as a key such a name reaches the
 * prototype (`__proto__` made /v1/track a 500; `constructor` was recorded and never counted).
 * No two names give one key: every `%` of a name is escaped itself.
 */
export const eventKey = (name: string): string => {
  const key = name.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\$/g, '%24');
  return PROTOTYPE_NAMES.has(key) ? `%${key.charCodeAt(0).toString(16).toUpperCase()}${key.slice(1)}` : key;
};

export const toContact = (doc: ContactDoc): Contact => ({
  id: doc._id,
  email: doc.email,
  subscribed: doc.subscribed,
  data: doc.data,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});
