import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { DeliveryRecords } from '../../apps/mailer/delivery-records.ts';
import { contacts } from '../../domain/contacts/collection.ts';
import { resolveContact } from '../../domain/contacts/service.ts';
import { events, type EventDoc } from '../../domain/events/collection.ts';
import type { EmailResult } from '../../domain/mail/results.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contactPlatform, embeddedPlatform, openStore } from '../harness/store.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function platform(): Promise<Platform> {
  const { p, stop } = await contactPlatform();
  cleanups.push(stop);
  return p;
}

const delivery = (emailId: string, contactId: string): EmailResult => ({
  emailId,
  projectId: 'p1',
  contactId,
  event: 'email.delivery',
  sentAt: '2026-01-01T00:00:00.000Z',
  at: '2026-01-01T00:00:01.000Z',
});

/** Counts the inserts of events, each a call of `insertNew`; with `fail`, the first throws. */
function watchInserts(p: Platform, fail = false): { calls: EventDoc[][] } {
  const collection = events(p.store);
  const insertNew = collection.insertNew.bind(collection);
  const seen = { calls: [] as EventDoc[][] };
  collection.insertNew = async (docs) => {
    seen.calls.push(docs);
    if (fail && seen.calls.length === 1) throw new Error('store unreachable');
    return insertNew(docs);
  };
  return seen;
}

// Deliveries that come in one event-loop turn are written together; each caller's promise
// resolves once its own are written.
it("records the deliveries of one moment in one group, each on its contact", async () => {
  const p = await platform();
  const ids = [];
  for (const name of ['a', 'b', 'c', 'd', 'e']) ids.push((await resolveContact(p, 'p1', `${name}@example.com`, true)).id);
  const inserts = watchInserts(p);
  const records = new DeliveryRecords(p);

  await Promise.all(ids.map((id, i) => records.record(delivery(`m${i}`, id))));

  expect(inserts.calls.map((docs) => docs.length)).toEqual([10]);
  for (const [i, id] of ids.entries()) {
    expect((await events(p.store).find({ contactId: id })).map((e) => e._id).sort()).toEqual([`m${i}:email.delivery`, `m${i}:email.sent`]);
    expect((await contacts(p.store).findOne({ _id: id }))!.eventStats!['email%2Edelivery'].count).toBe(1);
  }
});

// A group whose write fails fails every delivery in it (the mailer then queues each result), and
// the deliveries that came meanwhile are written as the next group.
it('a failed group rejects its deliveries and the next group is written', async () => {
  const p = await platform();
  const ada = (await resolveContact(p, 'p1', 'ada@example.com', true)).id;
  const bob = (await resolveContact(p, 'p1', 'bob@example.com', true)).id;
  const inserts = watchInserts(p, true);
  const records = new DeliveryRecords(p);

  const first = records.record(delivery('m1', ada));
  const firstSettled = first.catch((err: Error) => err.message);
  await new Promise((resolve) => setImmediate(resolve)); // the first group is being written
  const second = records.record(delivery('m2', bob));

  expect(await firstSettled).toBe('store unreachable');
  await second;
  expect(inserts.calls.length).toBe(2);
  expect(await events(p.store).countDocuments({ contactId: ada })).toBe(0);
  expect(await events(p.store).countDocuments({ contactId: bob })).toBe(2);
});

// A contact deleted since its email was sent: its events are taken back (system-events.ts), and
// the others of its group stand and are counted once.
it('a group with a contact that is gone counts the others and leaves none of its events', async () => {
  const p = await platform();
  const ada = (await resolveContact(p, 'p1', 'ada@example.com', true)).id;
  const bob = (await resolveContact(p, 'p1', 'bob@example.com', true)).id;
  const records = new DeliveryRecords(p);

  await Promise.all([records.record(delivery('m1', ada)), records.record(delivery('m2', 'c-deleted')), records.record(delivery('m3', bob))]);

  expect(await events(p.store).countDocuments({ contactId: 'c-deleted' })).toBe(0);
  for (const id of [ada, bob]) {
    expect(await events(p.store).countDocuments({ contactId: id })).toBe(2);
    expect((await contacts(p.store).findOne({ _id: id }))!.eventStats!['email%2Edelivery'].count).toBe(1);
  }
});

// A crash between a group's insert of events and its contacts' counts (a real process, killed by
// SIGKILL right after the insert answered): the two are one unit of the embedded store, so the
// crash leaves neither, and the group recorded again (the mailer's redelivery finds the email
// SENDING with its commit record and carries the result again) counts each event once. Were the
// insert committed alone, the repeat would find its events there and count nothing: one short.
it('a crash between the insert of a group and its counts leaves the counts neither short nor over', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-group-crash-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  let store = await openStore(dir);
  const ids: string[] = [];
  for (const name of ['ada', 'bob']) ids.push((await resolveContact(embeddedPlatform(store), 'p1', `${name}@example.com`, true)).id);
  await store.close();
  const results = ids.map((id, i) => delivery(`m${i}`, id));

  const child = await new Promise<{ signal: NodeJS.Signals | null; stdout: string }>((resolve) => {
    const args = ['--import', './runtime/load-typescript.mjs', 'test/fixtures/delivery-group-crash.ts', dir, JSON.stringify(results)];
    execFile(process.execPath, args, (err, stdout) => resolve({ signal: (err as { signal?: NodeJS.Signals } | null)?.signal ?? null, stdout }));
  });
  expect(child).toEqual({ signal: 'SIGKILL', stdout: 'inserted 4\n' }); // killed in the middle, after the insert answered

  store = await openStore(dir);
  cleanups.unshift(() => store.close()); // before the directory goes
  const p = embeddedPlatform(store);
  const records = new DeliveryRecords(p);
  await Promise.all(results.map((result) => records.record(result)));
  for (const id of ids) {
    expect(await events(p.store).countDocuments({ contactId: id })).toBe(2);
    const stats = (await contacts(p.store).findOne({ _id: id }))!.eventStats ?? {};
    expect([stats['email%2Esent']?.count, stats['email%2Edelivery']?.count]).toEqual([1, 1]);
  }
});
