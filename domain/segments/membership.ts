// Segment membership events (`trackMembership`): who is in each tracked segment, and the
// `segment.<slug>.entry|exit` events a change of that set records. See docs/decisions.md,
// "Segment membership events".
import type { Doc, DocumentStore } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contacts, type ContactDoc } from '../contacts/collection.ts';
import { dataFieldTypes, type DataFieldTypes } from '../contacts/data-types.ts';
import type { SimpleValue } from '../contacts/schema.ts';
import { nowIso } from '../ids.ts';
import { memberId, segmentMembers, segments, type SegmentDoc } from './collection.ts';
import { conditionMatcher } from './filter.ts';

/**
 * One contact's presence in one tracked segment; `_id` is `<segmentId>/<contactId>`. The row
 * outlives an exit (`member: false`) so its counters keep event ids unique: the n-th entry of a
 * contact into a segment is the event `<segmentId>:<contactId>:entry:<n>`, recorded once even if
 * the turn that records it is repeated.
 */
export interface PresenceDoc extends Doc {
  projectId: string;
  segmentId: string;
  contactId: string;
  member: boolean;
  /** When `member` last changed (or the row was seeded). */
  since: string;
  entries: number;
  exits: number;
}

export const segmentPresence = (store: DocumentStore) => store.collection<PresenceDoc>('segment_presence');

export async function ensurePresenceIndexes(store: DocumentStore): Promise<void> {
  // By segment for the sweep and seeding; by contact for the contact delete cascade.
  await store.ensureIndexes('segment_presence', [{ keys: { segmentId: 1 } }, { keys: { projectId: 1, contactId: 1 } }]);
}

/** The event names of a segment's membership changes (reserved: see isSystemEventName). */
export const entryEventName = (slug: string) => `segment.${slug}.entry`;
export const exitEventName = (slug: string) => `segment.${slug}.exit`;

/** True for a membership event: recording one does not evaluate membership again. */
export const isMembershipEventName = (name: string) => /^segment\..+\.(entry|exit)$/i.test(name);

// ---- the tracked segments of a project, cached briefly per process --------------------------

/** How long a process trusts its list of a project's tracked segments; the sweep covers the gap. */
export const TRACKED_CACHE_MS = 2_000;
const trackedCache = new WeakMap<DocumentStore, Map<string, { at: number; list: Promise<SegmentDoc[]> }>>();

/** The project's segments with `trackMembership`, at most TRACKED_CACHE_MS old. */
export function trackedSegments(store: DocumentStore, projectId: string): Promise<SegmentDoc[]> {
  let byProject = trackedCache.get(store);
  if (!byProject) trackedCache.set(store, (byProject = new Map()));
  const hit = byProject.get(projectId);
  if (hit && Date.now() - hit.at < TRACKED_CACHE_MS) return hit.list;
  const list = segments(store).find({ projectId, trackMembership: true });
  byProject.set(projectId, { at: Date.now(), list });
  list.catch(() => byProject.delete(projectId));
  if (byProject.size > 10_000) byProject.delete(byProject.keys().next().value!);
  return list;
}

/** The project's tracked DYNAMIC segments: those a change of one contact can make it enter or leave. */
export const trackedDynamicSegments = async (store: DocumentStore, projectId: string): Promise<SegmentDoc[]> =>
  (await trackedSegments(store, projectId)).filter((s) => s.type === 'DYNAMIC');

/** Called when this process changes a segment's tracking (other processes wait out the TTL). */
export function forgetTrackedSegments(store: DocumentStore, projectId: string): void {
  trackedCache.get(store)?.delete(projectId);
}

// ---- one contact -----------------------------------------------------------------------------

export interface MembershipChange {
  segment: SegmentDoc;
  kind: 'entry' | 'exit';
  /** Deterministic: a repeat of the same change records nothing twice. */
  eventId: string;
  name: string;
  data: Record<string, SimpleValue>;
  /** The presence row after the change. */
  presence: PresenceDoc;
}

/**
 * Compares one contact with the given tracked segments: DYNAMIC by matching its projection
 * document against the condition (the same compiled filter as the segment query, at `now`),
 * STATIC by its row in `segment_members`. Returns what changed; nothing is written.
 */
export async function membershipChanges(
  store: DocumentStore,
  contact: ContactDoc,
  tracked: SegmentDoc[],
  now: Date,
  types?: DataFieldTypes,
): Promise<MembershipChange[]> {
  if (tracked.length === 0) return [];
  const ids = tracked.map((s) => memberId(s._id, contact._id));
  const rows = await segmentPresence(store).find({ _id: { $in: ids } });
  const rowById = new Map(rows.map((r) => [r._id, r]));
  const statics = tracked.filter((s) => s.type === 'STATIC');
  const staticRows = statics.length
    ? await segmentMembers(store).find({ _id: { $in: statics.map((s) => memberId(s._id, contact._id)) } }, { projection: { _id: 1 } })
    : [];
  const inStatic = new Set(staticRows.map((r) => r._id));
  const known = tracked.some((s) => s.type === 'DYNAMIC') ? (types ?? (await dataFieldTypes(store, contact.projectId))) : {};

  const changes: MembershipChange[] = [];
  for (const segment of tracked) {
    const id = memberId(segment._id, contact._id);
    const member =
      segment.projectId === contact.projectId &&
      (segment.type === 'STATIC' ? inStatic.has(id) : conditionMatcher(segment.condition, { now, types: known })(contact));
    const row = rowById.get(id);
    if (member === (row?.member ?? false)) continue;
    const kind = member ? 'entry' : 'exit';
    const entries = (row?.entries ?? 0) + (member ? 1 : 0);
    const exits = (row?.exits ?? 0) + (member ? 0 : 1);
    changes.push({
      segment,
      kind,
      eventId: `${segment._id}:${contact._id}:${kind}:${member ? entries : exits}`,
      name: member ? entryEventName(segment.slug) : exitEventName(segment.slug),
      data: { segmentId: segment._id, segmentName: segment.name },
      presence: {
        _id: id,
        projectId: contact.projectId,
        segmentId: segment._id,
        contactId: contact._id,
        member,
        since: now.toISOString(),
        entries,
        exits,
      },
    });
  }
  return changes;
}

/** Writes the presence row of a change, after its event is recorded. */
export async function applyPresence(store: DocumentStore, change: MembershipChange): Promise<void> {
  const { _id, ...fields } = change.presence;
  await segmentPresence(store).updateOne({ _id }, { $set: fields }, { upsert: true });
}

/** The contact projection document the matcher reads (with `eventStats`). */
export const contactDocument = (store: DocumentStore, contactId: string) => contacts(store).findOne({ _id: contactId });

// ---- a whole segment -------------------------------------------------------------------------

/** The ids of the segment's current members: one query on `contacts` or `segment_members`. */
export async function currentMemberIds(
  p: Platform,
  segment: SegmentDoc,
  contactFilter: (segment: SegmentDoc) => Promise<Record<string, unknown>>,
): Promise<string[]> {
  if (segment.type === 'STATIC') {
    const rows = await segmentMembers(p.store).find({ projectId: segment.projectId, segmentId: segment._id }, { projection: { contactId: 1 } });
    return rows.map((r) => r.contactId);
  }
  const rows = await contacts(p.store).find(await contactFilter(segment), { projection: { _id: 1 } });
  return rows.map((r) => r._id);
}

/** The ids of the contacts `segment_presence` holds as members of the segment. */
export async function presentIds(p: Platform, segmentId: string): Promise<string[]> {
  const rows = await segmentPresence(p.store).find({ segmentId, member: true }, { projection: { contactId: 1 } });
  return rows.map((r) => r.contactId);
}

const chunks = <T>(items: T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
};

/**
 * Makes `segment_presence` hold exactly the segment's current members, recording no events:
 * when tracking starts (create, or turned on) and when the condition changes, the contacts
 * already in the segment did not just enter it. Counters are kept, so event ids stay unique.
 */
export async function seedPresence(p: Platform, segment: SegmentDoc, memberIds: string[]): Promise<void> {
  const presence = segmentPresence(p.store);
  const at = nowIso();
  const rows = await presence.find({ segmentId: segment._id }, { projection: { contactId: 1, member: 1 } });
  const wanted = new Set(memberIds);
  const byContact = new Map(rows.map((r) => [r.contactId, r]));
  const leaving = rows.filter((r) => r.member && !wanted.has(r.contactId)).map((r) => r._id);
  const returning = memberIds.filter((cid) => byContact.has(cid) && !byContact.get(cid)!.member).map((cid) => memberId(segment._id, cid));
  const fresh = memberIds.filter((cid) => !byContact.has(cid));
  for (const ids of chunks(leaving, 500)) await presence.updateMany({ _id: { $in: ids } }, { $set: { member: false, since: at } });
  for (const ids of chunks(returning, 500)) await presence.updateMany({ _id: { $in: ids } }, { $set: { member: true, since: at } });
  for (const ids of chunks(fresh, 500)) {
    const docs = ids.map(
      (contactId): PresenceDoc => ({
        _id: memberId(segment._id, contactId),
        projectId: segment.projectId,
        segmentId: segment._id,
        contactId,
        member: true,
        since: at,
        entries: 0,
        exits: 0,
      }),
    );
    try {
      await presence.insertMany(docs);
    } catch {
      // A contact's turn wrote its row first: set the rest one by one.
      for (const { _id, ...fields } of docs) {
        await presence.updateOne({ _id }, { $set: { member: true, since: at }, $setOnInsert: { projectId: fields.projectId, segmentId: fields.segmentId, contactId: fields.contactId, entries: 0, exits: 0 } }, { upsert: true });
      }
    }
  }
}

/** Tracking turned off: the set is emptied (rows stay, as members: false, for their counters). */
export async function clearPresence(p: Platform, segmentId: string): Promise<void> {
  await segmentPresence(p.store).updateMany({ segmentId, member: true }, { $set: { member: false, since: nowIso() } });
}

/** The segment is deleted: its rows go. */
export async function dropPresence(p: Platform, segmentId: string): Promise<void> {
  await segmentPresence(p.store).deleteMany({ segmentId });
}
