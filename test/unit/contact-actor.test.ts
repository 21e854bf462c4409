import { afterEach, expect, it } from 'vitest';
import type { SystemEvent } from '../../actors/contact/behaviour.ts';
import { contactActorClient } from '../../actors/contact/client.ts';
import { recordSystemEvents } from '../../actors/contact/system-events.ts';
import { contacts } from '../../domain/contacts/collection.ts';
import { resolveContact } from '../../domain/contacts/service.ts';
import { segments } from '../../domain/segments/collection.ts';
import { events, eventsIn, EVENTS_TOPIC, type RecordedEvents } from '../../domain/events/collection.ts';
import { webhooks, type WebhookDoc } from '../../domain/webhooks/collection.ts';
import { workflowSteps, type StepDoc } from '../../domain/workflows/collection.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contactPlatform } from '../harness/store.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/**
 * A platform with the contact actor; with `heard`, the `events.recorded` messages are collected
 * there, and project p1 has an endpoint that wants `heard`'s patterns (every event by default):
 * events nothing wants are not published.
 */
async function platform(heard?: RecordedEvents[], patterns = ['*']): Promise<Platform> {
  const { p, stop } = await contactPlatform(async (p) => {
    if (!heard) return;
    await webhooks(p.store).insertOne({ ...WEBHOOK, events: patterns });
    p.pubsub.subscribe<RecordedEvents>(EVENTS_TOPIC, async (message) => void heard.push(message));
  });
  cleanups.push(stop);
  return p;
}

/** An email's result recorded for one contact of project p1, as results.ts records it. */
const record = async (p: Platform, contactId: string, events: SystemEvent[]) => (await recordSystemEvents(p, [{ projectId: 'p1', contactId, events }]))[0];

// A caller hands the turn the document it just read, so the turn need not read it again. Between
// that read and the turn another turn may change the contact: the copy is then stale, and a turn
// that wrote from it would undo the other turn's change.
it('a turn given a copy that another turn made stale decides again on the stored contact', async () => {
  const p = await platform();
  const { id, doc: copy } = await resolveContact(p, 'p1', 'ada@example.com', true);

  await contactActorClient(p, id, copy).upsert({ data: { plan: 'pro' } });
  await contactActorClient(p, id).setSubscribed(false);
  const { contact } = await contactActorClient(p, id, copy).track({ data: { seats: 3 }, event: { id: 'e1', name: 'signed-in' } });

  expect(contact).toMatchObject({ subscribed: false, data: { plan: 'pro', seats: 3 } });
  const stored = await contacts(p.store).findOne({ _id: id });
  expect(stored).toMatchObject({ subscribed: false, data: { plan: 'pro', seats: 3 }, version: 3 });
  expect(Object.keys(stored!.eventStats ?? {}).sort()).toEqual(['contact%2Eunsubscribed', 'signed-in']);
  // The stale attempt wrote nothing: one event per turn, no double count.
  expect(await events(p.store).countDocuments({ contactId: id })).toBe(2);
  expect(stored!.eventStats!['signed-in'].count).toBe(1);
});

// An email's counts are added outside the contact's turns: one that lands between a turn's read of
// the stored contact and its write makes the write find another version. The turn decides again
// (it used to answer 404, as if the contact were gone).
it('a turn whose stored contact gets counts added before its write decides again', async () => {
  const p = await platform();
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);
  const collection = contacts(p.store);
  const updateOne = collection.updateOne.bind(collection);
  let counted = false;
  collection.updateOne = async (filter, update, options) => {
    if (!counted && 'version' in filter) {
      counted = true;
      await record(p, id, [{ name: 'email.sent', data: { emailId: 'm9' }, eventId: 'm9:email.sent' }]);
    }
    return updateOne(filter, update, options);
  };

  const { contact } = await contactActorClient(p, id).track({ data: { plan: 'pro' }, event: { id: 'e9', name: 'upgraded' } });

  expect(counted).toBe(true);
  expect(contact?.data).toEqual({ plan: 'pro' });
  const stored = (await contacts(p.store).findOne({ _id: id }))!;
  expect(stored.data).toEqual({ plan: 'pro' });
  expect(Object.fromEntries(Object.entries(stored.eventStats!).map(([name, stats]) => [name, stats.count]))).toEqual({ 'email%2Esent': 1, upgraded: 1 });
});

// The same for the entry event of a tracked segment, which the turn writes after its own change:
// an email's counts that land just before it do not leave the entry to the next sweep (up to
// SEGMENT_SWEEP_SECONDS later).
it("a tracked segment's entry is recorded when an email's counts change the contact just before it", async () => {
  const p = await platform();
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);
  const at = new Date().toISOString();
  const condition = { logic: 'AND' as const, groups: [{ filters: [{ field: 'data.plan', operator: 'equals' as const, value: 'pro' }] }] };
  await segments(p.store).insertOne({ _id: 's1', projectId: 'p1', name: 'Pro', slug: 'pro', type: 'DYNAMIC', description: null, condition, trackMembership: true, createdAt: at, updatedAt: at });
  const collection = contacts(p.store);
  const updateOne = collection.updateOne.bind(collection);
  let counted = false;
  collection.updateOne = async (filter, update, options) => {
    if (!counted && 'version' in filter && JSON.stringify(update).includes('segment%2Epro%2Eentry')) {
      counted = true;
      await record(p, id, [{ name: 'email.sent', data: { emailId: 'm8' }, eventId: 'm8:email.sent' }]);
    }
    return updateOne(filter, update, options);
  };

  await contactActorClient(p, id).upsert({ data: { plan: 'pro' } });

  expect(counted).toBe(true);
  expect((await events(p.store).find({ contactId: id })).map((e) => e.name).sort()).toEqual(['email.sent', 'segment.pro.entry']);
  expect((await contacts(p.store).findOne({ _id: id }))!.eventStats!['segment%2Epro%2Eentry'].count).toBe(1);
});

it('a copy that changes nothing is checked against the stored contact, not trusted', async () => {
  const p = await platform();
  const { id, doc: copy } = await resolveContact(p, 'p1', 'ada@example.com', true);
  await contactActorClient(p, id).setSubscribed(false);

  // On the copy (subscribed) this would change nothing; on the stored contact it resubscribes.
  const { contact } = await contactActorClient(p, id, copy).setSubscribed(true);

  expect(contact?.subscribed).toBe(true);
  expect(await contacts(p.store).findOne({ _id: id })).toMatchObject({ subscribed: true });
});

it('a contact written before versions existed takes a turn on a copy, and gets a version', async () => {
  const p = await platform();
  const at = new Date().toISOString();
  await contacts(p.store).insertOne({ _id: 'c1', projectId: 'p1', email: 'old@example.com', subscribed: true, data: {}, createdAt: at, updatedAt: at });
  const copy = (await contacts(p.store).findOne({ _id: 'c1' }))!;

  await contactActorClient(p, 'c1', copy).upsert({ data: { a: 1 } });
  const { contact } = await contactActorClient(p, 'c1', copy).upsert({ data: { b: 2 } });

  expect(contact?.data).toEqual({ a: 1, b: 2 });
  expect(await contacts(p.store).findOne({ _id: 'c1' })).toMatchObject({ data: { a: 1, b: 2 }, version: 2 });
});

// An email's `email.sent` and its outcome are recorded together; they reach workflows and
// webhooks as one `events.recorded` message (one queue record and one handler run, not two).
it("a contact's recorded events are published as one message, in their order", async () => {
  const messages: RecordedEvents[] = [];
  const p = await platform(messages);
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);

  await record(p, id, [
    { name: 'email.sent', data: { emailId: 'm1' }, eventId: 'm1:email.sent', at: '2026-01-01T00:00:00.000Z' },
    { name: 'email.delivery', data: { emailId: 'm1' }, eventId: 'm1:email.delivery' },
  ]);

  await expect.poll(() => messages.length).toBe(1);
  const [message] = messages;
  expect(message.events.map((e) => [e.eventId, e.name, e.contactId])).toEqual([
    ['m1:email.sent', 'email.sent', id],
    ['m1:email.delivery', 'email.delivery', id],
  ]);
  // A message of one event, as published before they were grouped, is read as a list of one.
  expect(eventsIn(message.events[0])).toEqual([message.events[0]]);
  expect(eventsIn(message)).toBe(message.events);
});

const WEBHOOK: WebhookDoc = {
  _id: 'w1',
  projectId: 'p1',
  url: 'https://hooks.example/in',
  description: null,
  events: ['*'],
  enabled: true,
  secret: 'whsec_dGVzdA==',
  disabledReason: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
};

// Events that no workflow and no endpoint of the project could act on are not published: a
// campaign's email.sent and email.delivery were a queue record and a handler run each otherwise.
it('publishes only the events an endpoint or a workflow of the project could act on', async () => {
  const messages: RecordedEvents[] = [];
  const p = await platform(messages, ['email.delivery']);
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);
  const result = (n: number) => [
    { name: 'email.sent', data: { emailId: `m${n}` }, eventId: `m${n}:email.sent` },
    { name: 'email.delivery', data: { emailId: `m${n}` }, eventId: `m${n}:email.delivery` },
  ];

  await record(p, id, result(1));
  await contactActorClient(p, id).track({ event: { id: 'e1', name: 'signed_up' } });
  // Any WAIT_FOR_EVENT step: an execution waits for the name its step had, which may have changed since.
  const wait: StepDoc = { _id: 's1', projectId: 'p1', workflowId: 'wf1', type: 'WAIT_FOR_EVENT', name: 'Wait', position: { x: 0, y: 0 }, config: { eventName: 'other' }, createdAt: '', updatedAt: '' };
  await workflowSteps(p.store).insertOne(wait);
  await record(p, id, result(2));

  await expect.poll(() => messages.length).toBe(2);
  expect(messages.map((m) => m.events.map((e) => e.eventId))).toEqual([['m1:email.delivery'], ['m2:email.sent', 'm2:email.delivery']]);
  // Recorded all the same, whoever hears of them.
  expect((await events(p.store).find({ contactId: id })).map((e) => e.name).sort()).toEqual(['email.delivery', 'email.delivery', 'email.sent', 'email.sent', 'signed_up']);
});

// An email's result comes again after a crash or a redelivery: recorded once and counted once.
// (Its two writes are an insert of the events where their ids are new, then an update that adds
// the new ones to the counts.) It is published again, with the times it was recorded with: a
// crash may have come between the insert and the publish.
it("an email's result recorded twice is recorded and counted once, and published again as it was", async () => {
  const messages: RecordedEvents[] = [];
  const p = await platform(messages);
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);
  const result = [
    { name: 'email.sent', data: { emailId: 'm1' }, eventId: 'm1:email.sent', at: '2026-01-01T00:00:00.000Z' },
    { name: 'email.delivery', data: { emailId: 'm1' }, eventId: 'm1:email.delivery', at: '2026-01-01T00:00:01.000Z' },
  ];

  const first = await record(p, id, result);
  // Half of it recorded already (a crash between two results of one email), then all of it.
  const second = await record(p, id, [result[1], { name: 'email.open', data: { emailId: 'm1' }, eventId: 'm1:email.open' }]);
  const third = await record(p, id, result);

  expect(first).toEqual({ gone: false, eventIds: ['m1:email.sent', 'm1:email.delivery'] });
  expect(second.eventIds).toEqual(['m1:email.open']);
  expect(third.eventIds).toEqual([]);
  const stats = (await contacts(p.store).findOne({ _id: id }))!.eventStats!;
  expect(stats['email%2Esent']).toEqual({ count: 1, first: '2026-01-01T00:00:00.000Z', last: '2026-01-01T00:00:00.000Z' });
  expect(stats['email%2Edelivery']).toEqual({ count: 1, first: '2026-01-01T00:00:01.000Z', last: '2026-01-01T00:00:01.000Z' });
  expect(stats['email%2Eopen'].count).toBe(1);
  expect((await events(p.store).find({ contactId: id })).map((e) => e._id).sort()).toEqual(['m1:email.delivery', 'm1:email.open', 'm1:email.sent']);
  await expect.poll(() => messages.length).toBe(3);
  expect(messages.map((m) => m.events.map((e) => e.eventId))).toEqual([
    ['m1:email.sent', 'm1:email.delivery'],
    ['m1:email.delivery', 'm1:email.open'],
    ['m1:email.sent', 'm1:email.delivery'],
  ]);
  expect(messages[2].events.map((e) => e.createdAt)).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z']);
});

it('a result for a contact deleted meanwhile records nothing', async () => {
  const p = await platform();
  expect(await record(p, 'nobody', [{ name: 'email.sent', eventId: 'm2:email.sent' }])).toEqual({ gone: true, eventIds: [] });
  expect(await events(p.store).countDocuments({})).toBe(0);
});

// The mailer records its deliveries in groups: each contact's events, counts and message as if
// alone, and a contact deleted meanwhile keeps nothing without failing the others.
it("records a group of contacts' results, each on its own contact", async () => {
  const messages: RecordedEvents[] = [];
  const p = await platform(messages);
  const ada = (await resolveContact(p, 'p1', 'ada@example.com', true)).id;
  const bob = (await resolveContact(p, 'p1', 'bob@example.com', true)).id;
  const sent = (emailId: string): SystemEvent[] => [
    { name: 'email.sent', data: { emailId }, eventId: `${emailId}:email.sent`, at: '2026-01-01T00:00:00.000Z' },
    { name: 'email.delivery', data: { emailId }, eventId: `${emailId}:email.delivery`, at: '2026-01-01T00:00:01.000Z' },
  ];

  const answers = await recordSystemEvents(p, [
    { projectId: 'p1', contactId: ada, events: sent('m1') },
    { projectId: 'p1', contactId: 'gone', events: sent('m2') },
    { projectId: 'p1', contactId: bob, events: sent('m3') },
    { projectId: 'p1', contactId: ada, events: sent('m4') },
  ]);

  expect(answers).toEqual([
    { gone: false, eventIds: ['m1:email.sent', 'm1:email.delivery'] },
    { gone: true, eventIds: [] },
    { gone: false, eventIds: ['m3:email.sent', 'm3:email.delivery'] },
    { gone: false, eventIds: ['m4:email.sent', 'm4:email.delivery'] },
  ]);
  expect((await contacts(p.store).findOne({ _id: ada }))!.eventStats!['email%2Esent'].count).toBe(2);
  expect((await contacts(p.store).findOne({ _id: bob }))!.eventStats!['email%2Esent'].count).toBe(1);
  expect(await events(p.store).countDocuments({ contactId: 'gone' })).toBe(0);
  expect(await events(p.store).countDocuments({})).toBe(6);
  await expect.poll(() => messages.length).toBe(3);
  expect(messages.map((m) => [...new Set(m.events.map((e) => e.contactId))])).toEqual([[ada], [bob], [ada]]);
});

// A crash between the insert of a result's events and its count, and the contact deleted
// meanwhile: the redelivered result finds its events there (repeats, not counted) and its contact
// gone, and deletes them.
it("a repeat for a contact deleted since its events were inserted deletes them", async () => {
  const p = await platform();
  const event = { _id: 'm5:email.sent', projectId: 'p1', contactId: 'gone', name: 'email.sent', data: {}, system: true, createdAt: '2026-01-01T00:00:00.000Z' };
  await events(p.store).insertOne(event);

  expect(await record(p, 'gone', [{ name: 'email.sent', eventId: 'm5:email.sent', at: event.createdAt }])).toEqual({ gone: true, eventIds: [] });
  expect(await events(p.store).countDocuments({})).toBe(0);
});

// Results are recorded outside the contact's turns, so one can insert its events while the
// contact's DELETE runs, after the DELETE has deleted the events once: the DELETE deletes them
// again after the contact, and a result that counts after that finds the contact gone.
it('a DELETE removes events a result inserted while it ran', async () => {
  const p = await platform();
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);
  await record(p, id, [{ name: 'email.sent', eventId: 'm6:email.sent' }]);
  // Between the DELETE's first pass over the events and its delete of the contact.
  const presence = p.store.collection('segment_presence');
  const deleteMany = presence.deleteMany.bind(presence);
  presence.deleteMany = async (filter) => {
    await events(p.store).insertOne({ _id: 'm7:email.sent', projectId: 'p1', contactId: id, name: 'email.sent', data: {}, system: true, createdAt: new Date().toISOString() });
    return deleteMany(filter);
  };

  await contactActorClient(p, id).delete();

  expect(await events(p.store).find({ contactId: id })).toEqual([]);
  expect(await contacts(p.store).findOne({ _id: id })).toBeNull();
});
