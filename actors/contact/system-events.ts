/**
 * System events that only add to their contacts' counts (an email's `email.sent` and outcome),
 * recorded for many contacts at once and outside the contacts' turns: a campaign's mailer records
 * its deliveries in groups (apps/mailer/delivery-records.ts), where a turn per email was a quarter
 * of a relay-signed email's CPU (bench/results/campaign-profile.md, session 13).
 *
 * No turn is needed: `$inc`, `$min` and `$max` apply to any version of the document, and the
 * version they raise makes a turn that read the contact before them decide again. What a turn
 * did give is order against the contact's deletion, kept here by the order of the writes:
 * 1. the events are inserted where their ids are new (a repeat, a redelivered result, is neither
 *    inserted nor counted again);
 * 2. then each contact's counts are added, by `_id`: a contact no update finds is gone, and its
 *    new events are deleted again. A DELETE that ran between the two writes deletes the contact's
 *    events once more after the contact (actor.ts, deleteEverything), so whichever comes last
 *    removes them;
 * 3. then they are published, repeats too: a crash between the insert and the publish then loses
 *    no workflow or webhook, and the handlers do nothing twice.
 * On the embedded store 1 and 2 are one unit, committed together or not at all, so a crash
 * between them leaves neither and the repeat records and counts them once. Distributed (MongoDB:
 * no transaction across documents) it leaves the counts one short (the repeat is not counted);
 * the turn's order (counts first) left them one over.
 */
import { contacts } from '../../domain/contacts/collection.ts';
import { events as eventsOf, type EventDoc } from '../../domain/events/collection.ts';
import { newId } from '../../domain/ids.ts';
import { trackedDynamicSegments } from '../../domain/segments/membership.ts';
import { inUnit } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { syncContactSegments } from '../segment-sweep/sync.ts';
import { systemRecorded, type SystemEvent } from './behaviour.ts';
import { countEvents, publishRecorded } from './recorded-events.ts';

/** One contact's system events, with its project (the caller's record of it, the email's). */
export interface SystemEventsFor {
  projectId: string;
  contactId: string;
  events: SystemEvent[];
}

/** What was recorded for one of them: nothing when the contact is gone; else the ids that were new. */
export interface SystemEventsRecorded {
  gone: boolean;
  eventIds: string[];
}

/** Records each contact's events (see above); the answers are in the order of `batch`. */
export async function recordSystemEvents(p: Platform, batch: SystemEventsFor[], now = new Date()): Promise<SystemEventsRecorded[]> {
  const at = now.toISOString();
  const planned = batch.map(({ projectId, contactId, events }) =>
    systemRecorded(events).map((e): EventDoc => ({ _id: e.id ?? newId(), projectId, contactId, name: e.name, data: e.data, system: true, createdAt: e.at ?? at })),
  );
  const { fresh, found } = await inUnit(p.store, () => insertAndCount(p, batch, planned));
  await publishRecorded(p, planned.filter((_, i) => found[i]));
  await syncTracked(p, batch.filter((_, i) => found[i] && fresh[i].length > 0));
  return batch.map((_, i) => ({ gone: !found[i], eventIds: found[i] ? fresh[i].map((doc) => doc._id) : [] }));
}

/** Steps 1 and 2 above: which of each contact's events are new, and whether the contact is there. */
async function insertAndCount(p: Platform, batch: SystemEventsFor[], planned: EventDoc[][]): Promise<{ fresh: EventDoc[][]; found: boolean[] }> {
  const inserted = new Set(await eventsOf(p.store).insertNew(planned.flat()));
  const fresh = planned.map((docs) => docs.filter((doc) => inserted.has(doc._id)));
  // Each contact's counts, by id (one index lookup each, in MongoDB and FerretDB alike); a
  // contact with only repeats is looked up instead, so that a crash between its insert and its
  // count (the contact deleted meanwhile) leaves no events behind either.
  const found = await Promise.all(
    batch.map(({ contactId }, i) =>
      fresh[i].length > 0
        ? contacts(p.store).updateOne({ _id: contactId }, countEvents({ $inc: { version: 1 } }, fresh[i])).then((r) => r.matched > 0)
        : contacts(p.store).findOne({ _id: contactId }, { projection: { _id: 1 } }).then((doc) => doc !== null),
    ),
  );
  // By id, one at a time: rare, and FerretDB would scan every event for an `$in`.
  const orphans = planned.flatMap((docs, i) => (found[i] ? [] : docs.map((doc) => doc._id)));
  await Promise.all(orphans.map((_id) => eventsOf(p.store).deleteOne({ _id })));
  return { fresh, found };
}

/**
 * Segment membership (trackMembership) of contacts whose counts changed: a turn each, at once, in
 * projects with tracked DYNAMIC segments (a cached read). A failure is logged: the counts are
 * recorded, and the sweep catches up.
 */
async function syncTracked(p: Platform, changed: SystemEventsFor[]): Promise<void> {
  await Promise.all(
    changed.map(async ({ projectId, contactId }) => {
      try {
        const tracked = await trackedDynamicSegments(p.store, projectId);
        if (tracked.length > 0) await syncContactSegments(p, contactId, tracked.map((s) => s._id));
      } catch (err) {
        p.log.warn({ err, contactId }, 'segment membership not evaluated; the sweep will catch up');
      }
    }),
  );
}
