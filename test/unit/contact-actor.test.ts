import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { contactActor } from '../../actors/contact/actor.ts';
import { contactActorClient } from '../../actors/contact/client.ts';
import { contacts } from '../../domain/contacts/collection.ts';
import { resolveContact } from '../../domain/contacts/service.ts';
import { events, eventsIn, EVENTS_TOPIC, type RecordedEvents } from '../../domain/events/collection.ts';
import { webhooks, type WebhookDoc } from '../../domain/webhooks/collection.ts';
import { workflowSteps, type StepDoc } from '../../domain/workflows/collection.ts';
import type { Platform } from '../../runtime/platform.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

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
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-contact-'));
  const store = await openStore(dir);
  const p = embeddedPlatform(store);
  p.actors.register(contactActor(p));
  if (heard) {
    await webhooks(store).insertOne({ ...WEBHOOK, events: patterns });
    p.pubsub.subscribe<RecordedEvents>(EVENTS_TOPIC, async (message) => void heard.push(message));
  }
  await p.actors.start();
  await p.pubsub.start();
  cleanups.push(async () => {
    await p.pubsub.stop();
    await p.actors.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return p;
}

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

// An email's `email.sent` and its outcome are recorded in one turn; they reach workflows and
// webhooks as one `events.recorded` message (one queue record and one handler run, not two).
it("a turn's recorded events are published as one message, in their order", async () => {
  const messages: RecordedEvents[] = [];
  const p = await platform(messages);
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);

  await contactActorClient(p, id).recordSystemEvents([
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

  await contactActorClient(p, id).recordSystemEvents(result(1));
  await contactActorClient(p, id).track({ event: { id: 'e1', name: 'signed_up' } });
  // Any WAIT_FOR_EVENT step: an execution waits for the name its step had, which may have changed since.
  const wait: StepDoc = { _id: 's1', projectId: 'p1', workflowId: 'wf1', type: 'WAIT_FOR_EVENT', name: 'Wait', position: { x: 0, y: 0 }, config: { eventName: 'other' }, createdAt: '', updatedAt: '' };
  await workflowSteps(p.store).insertOne(wait);
  await contactActorClient(p, id).recordSystemEvents(result(2));

  await expect.poll(() => messages.length).toBe(2);
  expect(messages.map((m) => m.events.map((e) => e.eventId))).toEqual([['m1:email.delivery'], ['m2:email.sent', 'm2:email.delivery']]);
  // Recorded all the same, whoever hears of them.
  expect((await events(p.store).find({ contactId: id })).map((e) => e.name).sort()).toEqual(['email.delivery', 'email.delivery', 'email.sent', 'email.sent', 'signed_up']);
});

// An email's result comes again after a crash or a redelivery: recorded once and counted once.
// (Its two writes are an update that adds to the counts, then an insert of the events where their
// ids are new; a repeat takes its counts back.) It is published again, with the times it was
// recorded with: a crash may have come between the insert and the publish.
it("an email's result recorded twice is recorded and counted once, and published again as it was", async () => {
  const messages: RecordedEvents[] = [];
  const p = await platform(messages);
  const { id } = await resolveContact(p, 'p1', 'ada@example.com', true);
  const result = [
    { name: 'email.sent', data: { emailId: 'm1' }, eventId: 'm1:email.sent', at: '2026-01-01T00:00:00.000Z' },
    { name: 'email.delivery', data: { emailId: 'm1' }, eventId: 'm1:email.delivery', at: '2026-01-01T00:00:01.000Z' },
  ];

  const first = await contactActorClient(p, id).recordSystemEvents(result);
  // Half of it recorded already (a crash between two results of one email), then all of it.
  const second = await contactActorClient(p, id).recordSystemEvents([result[1], { name: 'email.open', data: { emailId: 'm1' }, eventId: 'm1:email.open' }]);
  const third = await contactActorClient(p, id).recordSystemEvents(result);

  expect(first).toEqual({ eventIds: ['m1:email.sent', 'm1:email.delivery'] }); // no contact: nobody reads it
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
  await expect(contactActorClient(p, 'nobody').recordSystemEvents([{ name: 'email.sent', eventId: 'm2:email.sent' }])).rejects.toMatchObject({ code: 'NOT_FOUND' });
  expect(await events(p.store).countDocuments({})).toBe(0);
});
