import { contactActorClient } from '../../actors/contact/client.ts';
import { syncContactSegments } from '../../actors/segment-sweep/sync.ts';
import { DuplicateKeyError, type Filter } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contacts, toContact } from '../contacts/collection.ts';
import { dataFieldTypes, type DataFieldTypes } from '../contacts/data-types.ts';
import { resolveContact } from '../contacts/service.ts';
import { AppError, invalid, notFound } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { memberId, segmentMembers, segments, slugOf, type SegmentDoc, type SegmentMemberDoc } from './collection.ts';
import { compileCondition, conditionWarnings, type FilterCondition } from './filter.ts';
import { conditionQuery } from './query.ts';
import { clearPresence, currentMemberIds, dropPresence, forgetTrackedSegments, seedPresence } from './membership.ts';
import type { CreateSegmentInput, PatchSegmentInput, Segment, SegmentContactsQuery } from './schema.ts';
import { belowIdCursor, pageOf } from '../paging.ts';

/** Loads a segment of this project; another project's id is simply not found. */
export async function getSegmentDoc(p: Platform, projectId: string, id: string): Promise<SegmentDoc> {
  const doc = await segments(p.store).findOne({ _id: id, projectId });
  if (!doc) throw notFound('Segment');
  return doc;
}

/**
 * The store filter selecting a segment's contacts: one indexed query on `contacts`. Data key
 * types are read now, so a key that changed type since the segment was saved compiles leniently
 * (see CompileOptions.strictTypes) instead of failing.
 */
export async function segmentContactFilter(
  p: Platform,
  segment: SegmentDoc,
  types?: DataFieldTypes,
  now = new Date(),
): Promise<Filter> {
  const known = types ?? (await dataFieldTypes(p.store, segment.projectId));
  return { projectId: segment.projectId, ...(await conditionQuery(p.store, segment.projectId, segment.condition, now, known)) };
}

/** Current member count: one count on `contacts` (DYNAMIC) or on `segment_members` (STATIC). */
async function memberCount(p: Platform, segment: SegmentDoc, types?: DataFieldTypes): Promise<number> {
  if (segment.type === 'STATIC') return segmentMembers(p.store).countDocuments({ projectId: segment.projectId, segmentId: segment._id });
  return contacts(p.store).countDocuments(await segmentContactFilter(p, segment, types));
}

const toSegment = (doc: SegmentDoc, count: number, warnings: Segment['warnings'] = []): Segment => ({
  id: doc._id,
  name: doc.name,
  slug: doc.slug,
  type: doc.type,
  description: doc.description ?? null,
  condition: doc.condition ?? null,
  memberCount: count,
  trackMembership: doc.trackMembership,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
  warnings,
});

/** The segment as the API shows it: its member count now, and how it reads mixed-type data keys. */
async function segmentView(p: Platform, doc: SegmentDoc): Promise<Segment> {
  if (doc.type === 'STATIC') return toSegment(doc, await memberCount(p, doc));
  const types = await dataFieldTypes(p.store, doc.projectId);
  return toSegment(doc, await memberCount(p, doc, types), conditionWarnings(doc.condition, { now: new Date(), types }));
}

/** Checks a condition against the project's current data key types: a 422 names each bad filter. */
async function checkCondition(p: Platform, projectId: string, condition: unknown): Promise<FilterCondition> {
  compileCondition(condition, { now: new Date(), types: await dataFieldTypes(p.store, projectId) });
  return condition as FilterCondition;
}

/**
 * POST /segments/count: how many contacts of the project a condition selects now, as a DYNAMIC
 * segment with it would count them (same checks, same query), without saving anything: the
 * dashboard's live count while a condition is edited.
 */
export async function countCondition(p: Platform, projectId: string, condition: unknown): Promise<{ count: number; warnings: Segment['warnings'] }> {
  const types = await dataFieldTypes(p.store, projectId);
  const now = new Date();
  compileCondition(condition, { now, types });
  const filter = { projectId, ...(await conditionQuery(p.store, projectId, condition, now, types)) };
  return { count: await contacts(p.store).countDocuments(filter), warnings: conditionWarnings(condition, { now, types }) };
}

const slugTaken = (slug: string) =>
  new AppError('CONFLICT', `A segment with the slug "${slug}" already exists in this project`, {
    suggestion: 'Choose another name: the slug is the name lower-cased with spaces as hyphens.',
  });

export async function createSegment(p: Platform, projectId: string, input: CreateSegmentInput): Promise<Segment> {
  let condition: FilterCondition | null = null;
  if (input.type === 'STATIC') {
    if (input.condition !== undefined) throw invalid('condition', 'A STATIC segment has members, not a condition', 'not_allowed');
  } else {
    if (input.condition === undefined) throw invalid('condition', 'A DYNAMIC segment needs a condition', 'required');
    condition = await checkCondition(p, projectId, input.condition);
  }
  const at = nowIso();
  const doc: SegmentDoc = {
    _id: newId(),
    projectId,
    name: input.name,
    slug: slugOf(input.name),
    type: input.type,
    description: input.description ?? null,
    condition,
    trackMembership: input.trackMembership,
    createdAt: at,
    updatedAt: at,
  };
  // Counted (its view) before it is saved: a condition the store fails to count is never saved (it would
  // fail every list of the project's segments after).
  const view = await segmentView(p, doc);
  // Tracking starts with the current members present and no entry events (seeded before the
  // segment is visible as tracked, so neither the sweep nor a contact's turn sees it unseeded).
  if (doc.trackMembership) await seedPresence(p, doc, await currentMemberIds(p, doc, (s) => segmentContactFilter(p, s)));
  try {
    await segments(p.store).insertOne(doc);
  } catch (err) {
    if (doc.trackMembership) await dropPresence(p, doc._id);
    if (err instanceof DuplicateKeyError) throw slugTaken(doc.slug);
    throw err;
  }
  if (doc.trackMembership) forgetTrackedSegments(p.store, projectId);
  return view;
}

export async function getSegment(p: Platform, projectId: string, id: string): Promise<Segment> {
  return segmentView(p, await getSegmentDoc(p, projectId, id));
}

/**
 * Newest first, each with its current member count (a count per segment, so a page counts only its
 * own). Without `limit` every segment, as the spec shows the list; with it a page, and the cursor of
 * the next (the last id of this one). The `{projectId}` index serves it (SQLite's ends with the id,
 * so the page walks it in order; FerretDB pushes the `projectId` equality down).
 */
export async function listSegments(p: Platform, projectId: string, page: { limit?: number; cursor?: string } = {}) {
  const docs = await segments(p.store).find(
    { projectId, ...belowIdCursor(page.cursor) },
    { sort: { _id: -1 }, ...(page.limit === undefined ? {} : { limit: page.limit + 1 }) },
  );
  const hasMore = page.limit !== undefined && docs.length > page.limit;
  const shown = hasMore ? docs.slice(0, page.limit) : docs;
  const types = shown.some((d) => d.type === 'DYNAMIC') ? await dataFieldTypes(p.store, projectId) : {};
  const items = await Promise.all(
    shown.map(async (doc) => {
      const { id, name, type, memberCount: count, trackMembership, createdAt } = toSegment(doc, await memberCount(p, doc, types));
      return { id, name, type, memberCount: count, trackMembership, createdAt };
    }),
  );
  return { segments: items, nextCursor: hasMore ? shown[shown.length - 1]._id : null, hasMore };
}

/** PATCH: only given fields change. A condition applies to DYNAMIC segments only (409 otherwise). */
export async function patchSegment(p: Platform, projectId: string, id: string, input: PatchSegmentInput): Promise<Segment> {
  const current = await getSegmentDoc(p, projectId, id);
  const set: Partial<SegmentDoc> = { updatedAt: nowIso() };
  if (input.condition !== undefined) {
    if (current.type === 'STATIC') {
      throw new AppError('INVALID_STATE', 'A STATIC segment has members, not a condition', {
        suggestion: 'Change its members through /segments/:id/members, or create a DYNAMIC segment.',
      });
    }
    set.condition = await checkCondition(p, projectId, input.condition);
  }
  if (input.name !== undefined) Object.assign(set, { name: input.name, slug: slugOf(input.name) });
  if (input.description !== undefined) set.description = input.description;
  if (input.trackMembership !== undefined) set.trackMembership = input.trackMembership;
  // Tracking turned on, or the condition of a tracked segment changed: presence is re-seeded with
  // the (new) members, silently. Turned off: the set is emptied.
  const next = { ...current, ...set };
  // A new condition is counted before it is saved, as on create.
  const viewed = set.condition !== undefined ? await segmentView(p, next) : undefined;
  const tracking = set.trackMembership ?? current.trackMembership;
  if (tracking && (!current.trackMembership || set.condition !== undefined)) {
    await seedPresence(p, next, await currentMemberIds(p, next, (s) => segmentContactFilter(p, s)));
  }
  let updated: SegmentDoc | null;
  try {
    updated = await segments(p.store).findOneAndUpdate({ _id: id, projectId }, { $set: set });
  } catch (err) {
    if (err instanceof DuplicateKeyError) throw slugTaken(set.slug!);
    throw err;
  }
  if (!updated) throw notFound('Segment');
  if (current.trackMembership && !updated.trackMembership) await clearPresence(p, id);
  if (current.trackMembership || updated.trackMembership) forgetTrackedSegments(p.store, projectId);
  return viewed ?? (await segmentView(p, updated));
}

/** 204; campaigns and workflows that name it stop finding it. Static members go with it. */
export async function deleteSegment(p: Platform, projectId: string, id: string): Promise<void> {
  const deleted = await segments(p.store).deleteOne({ _id: id, projectId });
  if (deleted === 0) throw notFound('Segment');
  await segmentMembers(p.store).deleteMany({ projectId, segmentId: id });
  await dropPresence(p, id);
  forgetTrackedSegments(p.store, projectId);
}

/** A tracked STATIC segment's member change: each contact's turn records its entry or exit. */
async function syncTracked(p: Platform, segment: SegmentDoc, contactIds: string[]): Promise<void> {
  if (!segment.trackMembership || contactIds.length === 0) return;
  await inBatches(contactIds, 20, async (cid) => {
    try {
      await syncContactSegments(p, cid, [segment._id]);
    } catch (err) {
      p.log.warn({ err, contactId: cid, segmentId: segment._id }, 'membership not evaluated; the sweep will catch up');
    }
  });
}

/**
 * A page of the contacts currently in the segment, newest contact first. DYNAMIC: one sorted,
 * skipped and limited find on `contacts` (and one count). STATIC: a page of `segment_members`,
 * then those contacts by `_id`. With `total: false` nothing is counted: one more is read to know
 * whether a page follows (the dashboard has the count from GET /segments/:id already).
 */
export async function listSegmentContacts(p: Platform, projectId: string, id: string, query: SegmentContactsQuery) {
  const segment = await getSegmentDoc(p, projectId, id);
  const skip = (query.page - 1) * query.pageSize;
  const limit = query.total ? query.pageSize : query.pageSize + 1;
  const counted = (count: () => Promise<number>) => (query.total ? count() : Promise.resolve(undefined));
  let page: ReturnType<typeof toContact>[];
  let total: number | undefined;
  let read: number;
  if (segment.type === 'DYNAMIC') {
    const filter = await segmentContactFilter(p, segment);
    // The count first: a store that counts elsewhere (the embedded one, on worker threads) reads
    // the page meanwhile.
    const [count, docs] = await Promise.all([
      counted(() => contacts(p.store).countDocuments(filter)),
      contacts(p.store).find(filter, { sort: { _id: -1 }, skip, limit }),
    ]);
    page = docs.map(toContact);
    [total, read] = [count, docs.length];
  } else {
    const members = { projectId, segmentId: id };
    // Member ids are `<segmentId>/<contactId>`, so their order is the contacts' creation order.
    const [rows, count] = await Promise.all([
      segmentMembers(p.store).find(members, { sort: { _id: -1 }, skip, limit, projection: { contactId: 1 } }),
      counted(() => segmentMembers(p.store).countDocuments(members)),
    ]);
    const ids = rows.slice(0, query.pageSize).map((r) => r.contactId);
    const docs = ids.length ? await contacts(p.store).find({ _id: { $in: ids }, projectId }) : [];
    const byId = new Map(docs.map((d) => [d._id, d]));
    page = ids.flatMap((cid) => (byId.has(cid) ? [toContact(byId.get(cid)!)] : []));
    [total, read] = [count, rows.length];
  }
  if (total !== undefined) return { contacts: page, ...pageOf(query, total) };
  return { contacts: page.slice(0, query.pageSize), page: query.page, pageSize: query.pageSize, hasMore: read > query.pageSize };
}

async function getStaticSegment(p: Platform, projectId: string, id: string): Promise<SegmentDoc> {
  const segment = await getSegmentDoc(p, projectId, id);
  if (segment.type !== 'STATIC') {
    throw new AppError('INVALID_STATE', 'Members can be added to and removed from STATIC segments only', {
      suggestion: 'A DYNAMIC segment’s members follow its condition; change the condition instead.',
    });
  }
  return segment;
}

/** Runs `work` over `items` with at most `width` at a time, keeping the order of results. */
async function inBatches<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return out;
}

/**
 * POST /segments/:id/members: adds contacts by email; an unknown email becomes a new contact
 * (subscribed, as with POST /contacts). Repeated emails count once.
 */
export async function addSegmentMembers(p: Platform, projectId: string, id: string, emails: string[]) {
  const segment = await getStaticSegment(p, projectId, id);
  const unique = [...new Set(emails)];
  const known = await contacts(p.store).find({ projectId, email: { $in: unique } }, { projection: { email: 1 } });
  const idByEmail = new Map(known.map((c) => [c.email, c._id]));
  let created = 0;
  await inBatches(
    unique.filter((email) => !idByEmail.has(email)),
    20,
    async (email) => {
      const contact = await resolveContact(p, projectId, email, true);
      // The contact's actor adopts it in its first turn, as after POST /contacts.
      if (contact.created) {
        await contactActorClient(p, contact.id).upsert({});
        created++;
      }
      idByEmail.set(email, contact.id);
    },
  );

  const contactIds = unique.map((email) => idByEmail.get(email)!);
  const members = segmentMembers(p.store);
  const existing = await members.find({ _id: { $in: contactIds.map((cid) => memberId(id, cid)) } }, { projection: { _id: 1 } });
  const already = new Set(existing.map((m) => m._id));
  const at = nowIso();
  const fresh: SegmentMemberDoc[] = contactIds
    .filter((cid) => !already.has(memberId(id, cid)))
    .map((contactId) => ({ _id: memberId(id, contactId), projectId, segmentId: id, contactId, addedAt: at }));
  let added = fresh.length;
  try {
    await members.insertMany(fresh);
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    // A concurrent add got some of them first: add the rest one by one and count what we added.
    added = 0;
    for (const doc of fresh) {
      const { _id, ...fields } = doc;
      const result = await members.updateOne({ _id }, { $setOnInsert: { _id, ...fields } }, { upsert: true });
      if (result.upsertedId) added++;
    }
  }
  await syncTracked(p, segment, contactIds);
  return { added, created, alreadyMembers: unique.length - added };
}

/** DELETE /segments/:id/members: removes contacts by email; unknown emails count as not members. */
export async function removeSegmentMembers(p: Platform, projectId: string, id: string, emails: string[]) {
  const segment = await getStaticSegment(p, projectId, id);
  const unique = [...new Set(emails)];
  const found = await contacts(p.store).find({ projectId, email: { $in: unique } }, { projection: { _id: 1 } });
  const removed = found.length
    ? await segmentMembers(p.store).deleteMany({ _id: { $in: found.map((c) => memberId(id, c._id)) } })
    : 0;
  await syncTracked(p, segment, found.map((c) => c._id));
  return { removed, notMembers: unique.length - removed };
}
