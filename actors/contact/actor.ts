// The ContactActor shell: load state, decide, perform the effects. Nothing else.
import { contacts, toContact, type ContactDoc } from '../../domain/contacts/collection.ts';
import { recordDataTypes } from '../../domain/contacts/data-types.ts';
import type { Contact, SimpleValue } from '../../domain/contacts/schema.ts';
import { AppError } from '../../domain/errors.ts';
import { events as eventsOf, type EventDoc } from '../../domain/events/collection.ts';
import { newId } from '../../domain/ids.ts';
import { anonymiseContactEmails } from '../../domain/mail/anonymise.ts';
import { applyPresence, isMembershipEventName, membershipChanges, trackedDynamicSegments } from '../../domain/segments/membership.ts';
import { segments, type SegmentDoc } from '../../domain/segments/collection.ts';
import type { ActorContext, ActorDefinition } from '../../ports/actors.ts';
import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { decide, type ContactCommand, type ContactState, type Decision } from './behaviour.ts';
import { countEvents, publishRecorded } from './recorded-events.ts';

export const CONTACT_ACTOR = 'ContactActor';

export interface ContactResult {
  contact: Contact | null;
  /** Ids of the events this turn recorded, tracked event first. */
  eventIds: string[];
}

type Ctx = ActorContext<ContactState>;

/**
 * The contact's document as the caller read it just before the call (`resolveContact`,
 * `getContactDoc`): a turn decides on it instead of reading the document again, and its write is
 * conditional on `version`, so a copy that a concurrent turn made stale is caught by the write
 * and the turn is decided again on the stored document. Saves one read per /v1/track.
 */
export interface KnownContact {
  state: ContactState;
  /** null: a document written before contacts had a version. */
  version: number | null;
}

/** Decisions on the stored document a turn makes at most, each after counts changed it under the last. */
const STORED_TRIES = 10;

export function contactActor(p: Platform): ActorDefinition<ContactState> {
  const turn = async (ctx: Ctx, command: ContactCommand, transient: Record<string, SimpleValue> = {}, known?: KnownContact): Promise<ContactResult> => {
    // A system event with a given id that is recorded already: this is a redelivery, do nothing;
    // the same for a tracked event marked `once` (the retry of a call a crash cut off).
    const givenId = command.kind === 'recordSystemEvent' ? command.eventId : command.kind === 'track' && command.event?.once ? command.event.id : undefined;
    if (givenId && (await eventsOf(p.store).findOne({ _id: givenId }, { projection: { _id: 1 } }))) {
      return { contact: toContact({ _id: ctx.id, ...(await load(p, ctx.id)).state }), eventIds: [] };
    }
    const now = new Date();
    const onCopy = known && decideOnCopy(known, command, now);
    const written = onCopy && (await perform(p, ctx, onCopy.known, onCopy.decision, now, transient));
    // No copy, or a stale one: decided on the stored document.
    const { known: { state }, decision, eventIds } = onCopy && written ? { ...onCopy, eventIds: written } : await decideOnStored(p, ctx, command, now, transient);
    // A membership event itself does not evaluate membership again.
    const membershipEvent = command.kind === 'recordSystemEvent' && isMembershipEventName(command.name);
    if (decision.state && decision.effects.length > 0 && !membershipEvent) await syncTracked(p, ctx, state.projectId, now);
    return { contact: decision.state ? toContact({ _id: ctx.id, ...decision.state }) : null, eventIds };
  };

  return {
    type: CONTACT_ACTOR,
    methods: {
      upsert: (ctx, { known, ...input }) => turn(ctx, { kind: 'upsert', ...input }, {}, known),
      patch: (ctx, { known, ...input }) => turn(ctx, { kind: 'patch', ...input }, {}, known),
      track: (ctx, { transient, known, ...input }) => turn(ctx, { kind: 'track', ...input }, transient, known),
      setSubscribed: (ctx, { known, ...input }) => turn(ctx, { kind: 'setSubscribed', ...input }, {}, known),
      recordSystemEvent: (ctx, input) => turn(ctx, { kind: 'recordSystemEvent', ...input }),
      delete: (ctx) => turn(ctx, { kind: 'delete' }),
      /** The sweep and static member changes: re-evaluate these tracked segments for this contact. */
      syncSegments: async (ctx, { segmentIds }: { segmentIds: string[] }) => {
        const { state } = await load(p, ctx.id);
        const tracked = await segments(p.store).find({ _id: { $in: segmentIds }, projectId: state.projectId, trackMembership: true });
        return { eventIds: await syncMembership(p, ctx, new Date(), tracked) };
      },
    },
  };
}

/**
 * The contact's state is its document: born in the store (the atomic claim on project+email) and
 * written by this actor's turns only (but for the counts of system events, which system-events.ts
 * adds by `$inc` outside them, raising the version), so no second copy is kept in the actor state
 * store. One write less per turn, and no copy to fall behind the document if a turn stops between
 * the two (in distributed mode they are two stores). Turns of one contact never overlap, so the
 * document read at the start of a turn is the one the turn changes, but for those counts; a copy
 * the caller read before the turn (`KnownContact`) is checked by the write instead.
 */
async function load(p: Platform, id: string): Promise<KnownContact> {
  const doc = await contacts(p.store).findOne({ _id: id });
  if (!doc) throw new AppError('NOT_FOUND', 'Contact not found');
  return knownContact(doc);
}

export function knownContact(doc: ContactDoc): KnownContact {
  const { _id, eventStats, version, ...state } = doc;
  return { state, version: version ?? null };
}

/** A decision written: the contact it was made on, the decision, and the ids of the events it recorded. */
interface Written {
  known: KnownContact;
  decision: Decision;
  eventIds: string[];
}

/**
 * Decides on the stored contact and writes the decision. Turns of one contact never overlap, so
 * only the counts of system events (system-events.ts) can change it between this read and the
 * write, which is conditional on the version read: a write that finds them changed decides again.
 * `load` throws once the contact is gone.
 */
async function decideOnStored(p: Platform, ctx: Ctx, command: ContactCommand, now: Date, transient: Record<string, SimpleValue>): Promise<Written> {
  for (let tries = 0; tries < STORED_TRIES; tries++) {
    const known = await load(p, ctx.id);
    const decision = decide(known.state, command, now);
    const eventIds = await perform(p, ctx, known, decision, now, transient);
    if (eventIds) return { known, decision, eventIds };
  }
  throw new Error(`contact ${ctx.id} changed under ${STORED_TRIES} decisions in a row`);
}

/**
 * A decision on the caller's copy, or undefined when it must be made on the stored document: a
 * decision that writes nothing has no write to check the copy with, and a refusal (too many data
 * keys) may come from a stale copy.
 */
function decideOnCopy(known: KnownContact, command: ContactCommand, now: Date): { known: KnownContact; decision: Decision } | undefined {
  try {
    const decision = decide(known.state, command, now);
    return decision.effects.length > 0 && decision.effects[0].kind !== 'deleteEverything' ? { known, decision } : undefined;
  } catch {
    return undefined;
  }
}

async function perform(
  p: Platform,
  ctx: Ctx,
  { state: before, version }: KnownContact,
  decision: Decision,
  now: Date,
  transient: Record<string, SimpleValue>,
): Promise<string[] | undefined> {
  const at = now.toISOString();
  const recorded: EventDoc[] = [];
  const update: Record<string, Record<string, unknown>> = {};

  for (const effect of decision.effects) {
    if (effect.kind === 'deleteEverything') {
      await deleteEverything(p, ctx, before.projectId);
      return [];
    }
    if (effect.kind === 'saveProjection') {
      const { email, subscribed, data, updatedAt } = effect.contact;
      update.$set = { email, subscribed, data, updatedAt };
    }
    if (effect.kind === 'recordEvent') {
      const { event } = effect;
      const when = event.at ?? at;
      recorded.push({
        _id: event.id ?? newId(),
        projectId: before.projectId,
        contactId: ctx.id,
        name: event.name,
        data: event.data,
        system: event.system,
        createdAt: when,
      });
    }
  }
  if (!decision.state) return [];
  countEvents(update, recorded);

  if (Object.keys(update).length > 0) {
    (update.$inc ??= {}).version = 1;
    try {
      const result = await contacts(p.store).updateOne({ _id: ctx.id, version: version ?? { $exists: false } }, update);
      if (result.matched === 0) return undefined; // gone, or changed since `version` was read
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw new AppError('CONFLICT', 'Another contact in this project has that email');
      throw err;
    }
    if (recorded.length > 0) await eventsOf(p.store).insertMany(recorded);
    await recordDataTypes(p.store, before.projectId, decision.state.data);
  }

  await publishRecorded(p, [recorded], transient);
  return recorded.map((e) => e._id);
}

/** Segment membership (trackMembership): the changed contact against its project's tracked DYNAMIC segments, in this turn. */
async function syncTracked(p: Platform, ctx: Ctx, projectId: string, now: Date): Promise<void> {
  const tracked = await trackedDynamicSegments(p.store, projectId).catch(() => []);
  await syncMembership(p, ctx, now, tracked);
}

/**
 * Records `segment.<slug>.entry|exit` for each tracked segment whose membership of this contact
 * changed, then updates `segment_presence`. Event ids are deterministic, so a repeat after a
 * failure between the two writes records nothing twice. A failure is logged, not thrown: the
 * turn's own change is done, and the sweep catches up.
 */
async function syncMembership(p: Platform, ctx: Ctx, now: Date, tracked: SegmentDoc[]): Promise<string[]> {
  if (tracked.length === 0) return [];
  const ids: string[] = [];
  try {
    const doc = await contacts(p.store).findOne({ _id: ctx.id });
    if (!doc) return [];
    let current = knownContact(doc);
    for (const change of await membershipChanges(p.store, doc, tracked, now)) {
      if (!(await eventsOf(p.store).findOne({ _id: change.eventId }, { projection: { _id: 1 } }))) {
        const command: ContactCommand = { kind: 'recordSystemEvent', name: change.name, data: change.data, eventId: change.eventId };
        const decision = decide(current.state, command, now);
        const recorded = await perform(p, ctx, current, decision, now, {});
        // Written on the copy read above, or (an email's counts changed it since) on the stored one.
        const written = recorded ? { known: current, decision, eventIds: recorded } : await decideOnStored(p, ctx, command, now, {});
        ids.push(...written.eventIds);
        current = { state: written.decision.state ?? written.known.state, version: (written.known.version ?? 0) + 1 };
      }
      await applyPresence(p.store, change);
    }
  } catch (err) {
    p.log.warn({ err, contactId: ctx.id }, 'segment membership not evaluated; the sweep will catch up');
  }
  return ids;
}

/** DELETE /contacts/:id: the contact with its events and segment memberships; its emails stay, anonymised. */
async function deleteEverything(p: Platform, ctx: Ctx, projectId: string): Promise<void> {
  const owned = { projectId, contactId: ctx.id };
  await anonymiseContactEmails(p, projectId, ctx.id); // before the events: it reads the complaints
  await eventsOf(p.store).deleteMany(owned);
  await p.store.collection('segment_members').deleteMany(owned);
  await p.store.collection('segment_presence').deleteMany(owned);
  await contacts(p.store).deleteOne({ _id: ctx.id });
  // Again: system events recorded outside this turn (system-events.ts) and inserted since the
  // first pass found the contact when they counted, so they were left for this pass to delete.
  await eventsOf(p.store).deleteMany(owned);
  await ctx.deleteState(); // the copy of the document that earlier versions kept in the actor state store
}

export type { ContactDoc };
