import { contactActorClient } from '../../actors/contact/client.ts';
import type { Filter } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contacts, eventKey } from '../contacts/collection.ts';
import { splitCallData, type CallData } from '../contacts/schema.ts';
import { getContactDoc, resolveContact } from '../contacts/service.ts';
import { AppError, invalid, notFound } from '../errors.ts';
import type { Attempt } from '../idempotency.ts';
import { newId } from '../ids.ts';
import { statsBuckets, type StatsInterval } from './buckets.ts';
import { eventView, events, isSystemEventName } from './collection.ts';
import { decodeTimeCursor, encodeTimeCursor, olderThan } from '../time-cursor.ts';

export interface TrackInput {
  email: string;
  event: string;
  subscribed?: boolean;
  data?: CallData;
}

/**
 * POST /v1/track: find or create the contact, record the event, publish it to workflows. The
 * event's id is the attempt's seed, so the take-over of a call a crash cut off after its event was
 * recorded finds that event instead of recording a second one.
 */
export async function track(p: Platform, projectId: string, input: TrackInput, attempt: Attempt = { seed: newId(), resumed: false }) {
  if (isSystemEventName(input.event)) {
    throw invalid('event', `"${input.event}" is a reserved system event name and cannot be tracked`, 'reserved_name');
  }
  const { persistent, transient } = splitCallData(input.data);
  const eventId = attempt.seed;
  const once = attempt.resumed ? { once: true } : {};
  // A contact deleted between lookup and turn is created afresh on the second try.
  for (let tries = 0; ; tries++) {
    const { id, doc } = await resolveContact(p, projectId, input.email, input.subscribed ?? true);
    try {
      await contactActorClient(p, id, doc).track({
        subscribed: input.subscribed,
        data: persistent,
        transient,
        event: { id: eventId, name: input.event, ...once },
      });
      return { contact: id, event: eventId, timestamp: new Date().toISOString() };
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'NOT_FOUND' && tries === 0)) throw err;
    }
  }
}

/** The spec's "newest first": by the event's time, ties by id. */
const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;

export interface EventPageQuery {
  limit: number;
  cursor?: string;
}

/** GET /events: the project's events newest first, `name` an exact filter, a page at a time. */
export function listEvents(p: Platform, projectId: string, query: EventPageQuery & { name?: string }) {
  const filter: Filter = { projectId };
  if (query.name !== undefined) filter.name = query.name;
  return pageOfEvents(p, { ...filter, ...startAfter(query.cursor) }, query.limit);
}

/** GET /events/contact/:id: one contact's events newest first, `name` an exact filter, a page at a time. */
export async function contactEvents(p: Platform, projectId: string, contactId: string, query: EventPageQuery & { name?: string }) {
  const after = startAfter(query.cursor); // a bad cursor is a 422 whether or not the contact exists
  await getContactDoc(p, projectId, contactId);
  const filter: Filter = { projectId, contactId };
  if (query.name !== undefined) filter.name = query.name;
  return pageOfEvents(p, { ...filter, ...after }, query.limit);
}

const startAfter = (cursor: string | undefined): Filter => (cursor === undefined ? {} : olderThan(decodeTimeCursor(cursor)));

/** One page, and where the next one starts (null on the last page). One more is read to know. */
async function pageOfEvents(p: Platform, filter: Filter, limit: number) {
  const docs = await events(p.store).find(filter, { sort: NEWEST_FIRST, limit: limit + 1 });
  const hasMore = docs.length > limit;
  const page = docs.slice(0, limit);
  const last = page[page.length - 1];
  return {
    events: page.map(eventView),
    nextCursor: hasMore ? encodeTimeCursor({ createdAt: last.createdAt, id: last._id }) : null,
    hasMore,
  };
}

/** Distinct names, most frequent first. */
export async function eventNames(p: Platform, projectId: string): Promise<string[]> {
  const rows = await events(p.store).aggregate<{ _id: string; count: number }>([
    { $match: { projectId } },
    { $group: { _id: '$name', count: { $sum: 1 } } },
    { $sort: { count: -1, _id: 1 } },
  ]);
  return rows.map((r) => r._id);
}

export interface StatsCounts {
  total: number;
  events: { name: string; count: number }[];
}

/**
 * GET /events/stats: counts by name between optional `start` and `end` (both included); with
 * `interval`, the same per period too (`buckets`), and the totals are their sum.
 */
export async function eventStats(p: Platform, projectId: string, range: { start?: string; end?: string; interval?: StatsInterval }) {
  if (range.start && range.end && range.start > range.end) throw invalid('start', 'start must not be after end');
  const { start, end } = range;
  const answer = { start: start ?? null, end: end ?? null };
  if (!range.interval) return { ...answer, ...(await countsByName(p, projectId, { start, end })) };
  const periods = statsBuckets(range, range.interval);
  const buckets = await Promise.all(periods.map(async (b) => ({ ...b, ...(await countsByName(p, projectId, b)) })));
  return { ...answer, ...sumOf(buckets), buckets };
}

/**
 * One store query: the events of the range grouped by name. The `{projectId, createdAt}` index
 * serves the match (MongoDB, and SQLite, which also counts in SQL); FerretDB on PostgreSQL pushes
 * down the `projectId` equality and filters the range itself.
 */
async function countsByName(p: Platform, projectId: string, range: { start?: string; end?: string }): Promise<StatsCounts> {
  const match: Filter = { projectId };
  if (range.start || range.end) {
    match.createdAt = { ...(range.start ? { $gte: range.start } : {}), ...(range.end ? { $lte: range.end } : {}) };
  }
  const rows = await events(p.store).aggregate<{ _id: string; count: number }>([
    { $match: match },
    { $group: { _id: '$name', count: { $sum: 1 } } },
    { $sort: { count: -1, _id: 1 } },
  ]);
  return { total: rows.reduce((sum, r) => sum + r.count, 0), events: rows.map((r) => ({ name: r._id, count: r.count })) };
}

/** The counts of every period together, most frequent first (ties by name), as one range's. */
function sumOf(parts: StatsCounts[]): StatsCounts {
  const byName = new Map<string, number>();
  for (const part of parts) for (const e of part.events) byName.set(e.name, (byName.get(e.name) ?? 0) + e.count);
  const events = [...byName].map(([name, count]) => ({ name, count }));
  events.sort((a, b) => b.count - a.count || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { total: parts.reduce((sum, part) => sum + part.total, 0), events };
}

/**
 * DELETE /events/:eventName: allowed for custom events that no segment filter, workflow
 * trigger or workflow step uses. The contacts' event summaries forget the name too.
 */
export async function deleteEventName(p: Platform, projectId: string, name: string) {
  if (isSystemEventName(name)) throw invalid('eventName', `"${name}" is a system event and cannot be deleted`, 'system_event');
  const usedBy = await eventUsage(p, projectId, name);
  if (usedBy.length > 0) {
    throw new AppError('CONFLICT', `Event "${name}" is in use by ${usedBy.join(', ')}`, {
      suggestion: 'Remove it from those segments and workflows first.',
    });
  }
  const deleted = await events(p.store).deleteMany({ projectId, name });
  if (deleted === 0) throw notFound('Event');
  const key = `eventStats.${eventKey(name)}`;
  await contacts(p.store).updateMany({ projectId, [key]: { $exists: true } }, { $unset: { [key]: '' } });
  return { name, deleted };
}

/** Where an event name is referenced: segment filters, workflow triggers and workflow steps. */
async function eventUsage(p: Platform, projectId: string, name: string): Promise<string[]> {
  const field = `event.${name}`;
  const [segments, workflows, steps] = await Promise.all([
    p.store.collection('segments').find({ projectId, 'condition.groups.filters.field': field }, { limit: 5 }),
    p.store.collection('workflows').find({ projectId, eventName: name }, { limit: 5 }),
    p.store
      .collection('workflow_steps')
      .find({ projectId, $or: [{ 'config.eventName': name }, { 'config.field': field }] }, { limit: 5 }),
  ]);
  return [
    ...segments.map((s) => `segment "${s.name as string}"`),
    ...workflows.map((w) => `workflow "${w.name as string}"`),
    ...steps.map((s) => `workflow step "${s.name as string}"`),
  ];
}
