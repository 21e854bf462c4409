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
}

export const contacts = (store: DocumentStore) => store.collection<ContactDoc>('contacts');

export async function ensureContactIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }, { keys: { projectId: 1 } }]);
  await store.ensureIndexes('data_fields', [{ keys: { projectId: 1 } }]);
}

/**
 * Event names contain dots (`email.open`), which are path separators in a field name, so the
 * summary key escapes `%`, `.` and `$`. The escape is reversible and keeps keys readable.
 */
export const eventKey = (name: string): string => name.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\$/g, '%24');

export const toContact = (doc: ContactDoc): Contact => ({
  id: doc._id,
  email: doc.email,
  subscribed: doc.subscribed,
  data: doc.data,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});
