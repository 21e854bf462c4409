import { contactActorClient } from '../../actors/contact/client.ts';
import { DuplicateKeyError, type Filter } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { notFound } from '../errors.ts';
import { belowIdCursor } from '../paging.ts';
import { newId, nowIso } from '../ids.ts';
import { contacts, toContact, type ContactDoc } from './collection.ts';
import type { Contact, ContactData } from './schema.ts';

/**
 * Finds the contact with this email in the project, creating it when absent. Atomic on
 * (project, email) through the store's unique index: of two concurrent first sightings, one
 * inserts and the other reads the winner's id.
 */
export async function resolveContact(
  p: Platform,
  projectId: string,
  email: string,
  subscribedIfNew: boolean,
  /**
   * The id a new contact gets, planned before a crash could cut the work off: a repeat finds the
   * contact with that id and knows it created it (`created: true` again).
   */
  idIfNew: string = newId(),
): Promise<{ id: string; created: boolean; doc: ContactDoc }> {
  const collection = contacts(p.store);
  const existing = await collection.findOne({ projectId, email });
  if (existing) return { id: existing._id, created: existing._id === idIfNew, doc: existing };
  const at = nowIso();
  const doc: ContactDoc = { _id: idIfNew, projectId, email, subscribed: subscribedIfNew, data: {}, createdAt: at, updatedAt: at, version: 0 };
  try {
    await collection.insertOne(doc);
    return { id: doc._id, created: true, doc };
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    const winner = await collection.findOne({ projectId, email });
    if (!winner) throw err;
    return { id: winner._id, created: winner._id === idIfNew, doc: winner };
  }
}

export interface UpsertInput {
  email: string;
  subscribed?: boolean;
  data?: ContactData;
}

/** POST /contacts: create (subscribed by default) or merge into the existing contact. */
export async function upsertContact(p: Platform, projectId: string, input: UpsertInput) {
  const { id, created, doc } = await resolveContact(p, projectId, input.email, input.subscribed ?? true);
  const { contact } = await contactActorClient(p, id, doc).upsert({ subscribed: input.subscribed, data: input.data });
  if (!contact) throw notFound('Contact');
  return { contact, created };
}

/** Loads a contact of this project; another project's id is simply not found. */
export async function getContactDoc(p: Platform, projectId: string, id: string): Promise<ContactDoc> {
  // By _id alone, then the project: FerretDB uses its primary key only for a bare _id filter.
  const doc = await contacts(p.store).findOne({ _id: id });
  if (doc?.projectId !== projectId) throw notFound('Contact');
  return doc;
}

export async function getContact(p: Platform, projectId: string, id: string): Promise<Contact> {
  return toContact(await getContactDoc(p, projectId, id));
}

export async function patchContact(
  p: Platform,
  projectId: string,
  id: string,
  input: { email?: string; subscribed?: boolean; data?: ContactData },
): Promise<Contact> {
  const doc = await getContactDoc(p, projectId, id);
  const { contact } = await contactActorClient(p, id, doc).patch(input);
  if (!contact) throw notFound('Contact');
  return contact;
}

export async function deleteContact(p: Platform, projectId: string, id: string): Promise<void> {
  await getContactDoc(p, projectId, id);
  await contactActorClient(p, id).delete();
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Newest first; the cursor is the last id of the page (ids are time-ordered). */
export async function listContacts(p: Platform, projectId: string, query: { limit: number; cursor?: string; search?: string; subscribed?: boolean }) {
  const filter: Filter = { projectId };
  if (query.subscribed !== undefined) filter.subscribed = query.subscribed;
  if (query.search) filter.email = { $regex: escapeRegex(query.search.toLowerCase()), $options: 'i' };
  const page = await contacts(p.store).find({ ...filter, ...belowIdCursor(query.cursor) }, {
    sort: { _id: -1 },
    limit: query.limit + 1,
  });
  const hasMore = page.length > query.limit;
  const items = page.slice(0, query.limit);
  return {
    contacts: items.map(toContact),
    cursor: hasMore ? items[items.length - 1]._id : null,
    hasMore,
    ...(query.cursor === undefined ? { total: await contacts(p.store).countDocuments(filter) } : {}),
  };
}

