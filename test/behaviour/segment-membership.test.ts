// Segment membership events (trackMembership): `segment.<slug>.entry|exit` recorded on the
// contact when it enters or leaves a tracked segment, through its own changes (PATCH, /v1/track),
// static member changes, and the periodic sweep for time-based conditions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, type EventRecord, sleep } from '../harness/client.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';

let instance: Instance;
let project: ProjectAccess;
const WAIT = byMode({ embedded: 10_000, distributed: 30_000 });
let seq = 0;
const address = (tag: string) => `${tag}-${++seq}-${Date.now()}@members.example`;
const one = (field: string, operator: string, value?: unknown, unit?: string) => ({
  logic: 'AND',
  groups: [{ filters: [{ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) }] }],
});

beforeAll(async () => {
  instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0', SEGMENT_SWEEP_SECONDS: '1' } });
  project = await newProject(instance, 'Membership');
});
afterAll(async () => {
  await instance?.dispose();
});

async function createSegment(body: Record<string, unknown>) {
  const res = await project.api.post('/segments', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; slug: string; memberCount: number };
}

async function createContact(email: string, data: Record<string, unknown> = {}) {
  const res = await project.api.post('/contacts', { email, data });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id as string;
}

async function patchContact(id: string, data: Record<string, unknown>) {
  const res = await project.api.patch(`/contacts/${id}`, { data });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function eventsOf(contactId: string): Promise<EventRecord[]> {
  const res = await project.api.get(`/events/contact/${contactId}?limit=100`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

const named = async (contactId: string, name: string) => (await eventsOf(contactId)).filter((e) => e.name === name);

/** Waits until the contact has `count` events of that name. */
const waitFor = (contactId: string, name: string, count = 1) =>
  eventually(
    async () => {
      const found = await named(contactId, name);
      return found.length >= count ? found : undefined;
    },
    WAIT,
    `${count} × ${name}`,
  );

/** Two sweeps and more: anything a sweep would add has been added by then. */
const settle = () => sleep(2_500);

describe('a tracked DYNAMIC segment', () => {
  it('records entry when a PATCH makes the contact match and exit when it stops matching', async () => {
    const segment = await createSegment({ name: 'Pro Plan', condition: one('data.plan', 'equals', 'pro'), trackMembership: true });
    expect(segment.slug).toBe('pro-plan');
    const id = await createContact(address('patch'), { plan: 'free' });

    await patchContact(id, { plan: 'pro' });
    const [entry] = await waitFor(id, 'segment.pro-plan.entry');
    expect(entry).toMatchObject({ contactId: id, system: true, data: { segmentId: segment.id, segmentName: 'Pro Plan' } });

    await patchContact(id, { plan: 'free' });
    const [exit] = await waitFor(id, 'segment.pro-plan.exit');
    expect(exit).toMatchObject({ contactId: id, system: true, data: { segmentId: segment.id } });

    // Re-entry is a new event; nothing is recorded twice, however many sweeps run.
    await patchContact(id, { plan: 'pro' });
    const entries = await waitFor(id, 'segment.pro-plan.entry', 2);
    await settle();
    expect((await named(id, 'segment.pro-plan.entry')).map((e) => e.id).sort()).toEqual(entries.map((e) => e.id).sort());
    expect(new Set(entries.map((e) => e.id)).size).toBe(2);
    expect(await named(id, 'segment.pro-plan.exit')).toHaveLength(1);
  });

  it('records entry when /v1/track brings the matching data or event', async () => {
    await createSegment({ name: 'Enterprise', condition: one('data.tier', 'equals', 'enterprise'), trackMembership: true });
    await createSegment({ name: 'Buyers', condition: one('event.purchase', 'triggered'), trackMembership: true });
    const email = address('track');
    const res = await project.api.post('/v1/track', { email, event: 'purchase', data: { tier: 'enterprise' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const contactId = res.body.data.contact as string;
    await waitFor(contactId, 'segment.enterprise.entry');
    await waitFor(contactId, 'segment.buyers.entry');
    // The membership events are system events and published like all events; the tracked one comes first in the reply.
    const purchase = (await named(contactId, 'purchase'))[0];
    expect(purchase.id).toBe(res.body.data.event);
  });

  it('records nothing for an untracked segment', async () => {
    await createSegment({ name: 'Untracked Gold', condition: one('data.metal', 'equals', 'gold') });
    const id = await createContact(address('untracked'), { metal: 'silver' });
    await patchContact(id, { metal: 'gold' });
    await settle();
    await patchContact(id, { metal: 'silver' });
    await settle();
    expect((await eventsOf(id)).filter((e) => e.name.startsWith('segment.'))).toEqual([]);
  });

  it('does not fire entry for contacts already in the segment when tracking starts', async () => {
    const id = await createContact(address('seeded'), { colour: 'blue' });
    const segment = await createSegment({ name: 'Blue', condition: one('data.colour', 'equals', 'blue'), trackMembership: true });
    expect(segment.memberCount).toBe(1);
    await settle();
    expect(await named(id, 'segment.blue.entry')).toEqual([]);
    // Leaving is still seen.
    await patchContact(id, { colour: 'red' });
    await waitFor(id, 'segment.blue.exit');
  });

  it('turned on by PATCH seeds silently; turned off records nothing more', async () => {
    const inside = await createContact(address('on'), { size: 'xl' });
    const segment = await createSegment({ name: 'Extra Large', condition: one('data.size', 'equals', 'xl') });
    const on = await project.api.patch(`/segments/${segment.id}`, { trackMembership: true });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    const joiner = await createContact(address('on'), { size: 's' });
    await patchContact(joiner, { size: 'xl' });
    await waitFor(joiner, 'segment.extra-large.entry');
    await settle();
    expect(await named(inside, 'segment.extra-large.entry')).toEqual([]);

    const off = await project.api.patch(`/segments/${segment.id}`, { trackMembership: false });
    expect(off.status).toBe(200);
    await sleep(2_500); // other processes' caches of tracked segments expire
    await patchContact(joiner, { size: 's' });
    await patchContact(inside, { size: 's' });
    await settle();
    expect(await named(joiner, 'segment.extra-large.exit')).toEqual([]);
    expect(await named(inside, 'segment.extra-large.exit')).toEqual([]);
  });
});

describe('time-based conditions', () => {
  it('records entry through the sweep when time alone makes the contact match', async () => {
    // `seen olderThan 1 minute`, for a contact seen 55 s ago: it enters within ~5 s without changing.
    const id = await createContact(address('time'), { seen: new Date(Date.now() - 55_000).toISOString() });
    await createSegment({ name: 'Idle', condition: one('data.seen', 'olderThan', 1, 'minutes'), trackMembership: true });
    expect(await named(id, 'segment.idle.entry')).toEqual([]);
    await waitFor(id, 'segment.idle.entry');
    await settle();
    expect(await named(id, 'segment.idle.entry')).toHaveLength(1);
    // Seen again now: it leaves at once (its own change).
    await patchContact(id, { seen: new Date().toISOString() });
    await waitFor(id, 'segment.idle.exit');
  }, 60_000);
});

describe('a tracked STATIC segment', () => {
  it('records entry when a member is added and exit when removed', async () => {
    const segment = await createSegment({ name: 'Beta Testers', type: 'STATIC', trackMembership: true });
    const known = address('static');
    const knownId = await createContact(known);
    const fresh = address('static-new');
    const added = await project.api.post(`/segments/${segment.id}/members`, { emails: [known, fresh] });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.data).toMatchObject({ added: 2, created: 1 });
    await waitFor(knownId, 'segment.beta-testers.entry');
    const page = (await project.api.get(`/segments/${segment.id}/contacts`)).body.data.contacts as { id: string; email: string }[];
    const freshId = page.find((c) => c.email === fresh)?.id;
    expect(freshId).toBeDefined();
    await waitFor(freshId!, 'segment.beta-testers.entry');

    const removed = await project.api.delete(`/segments/${segment.id}/members`, { emails: [known] });
    expect(removed.status).toBe(200);
    await waitFor(knownId, 'segment.beta-testers.exit');
    await settle();
    expect(await named(knownId, 'segment.beta-testers.entry')).toHaveLength(1);
    expect(await named(knownId, 'segment.beta-testers.exit')).toHaveLength(1);
  });

  it('records nothing for an untracked static segment', async () => {
    const segment = await createSegment({ name: 'Quiet List', type: 'STATIC' });
    const email = address('quiet');
    const id = await createContact(email);
    expect((await project.api.post(`/segments/${segment.id}/members`, { emails: [email] })).status).toBe(200);
    await settle();
    expect((await eventsOf(id)).filter((e) => e.name.startsWith('segment.'))).toEqual([]);
  });
});

describe('reserved names', () => {
  it('still refuses /v1/track of a membership event name', async () => {
    await createSegment({ name: 'Reserved', condition: one('data.plan', 'equals', 'reserved'), trackMembership: true });
    for (const event of ['segment.reserved.entry', 'segment.reserved.exit']) {
      const res = await project.api.post('/v1/track', { email: address('reserved'), event });
      expect(res.status).toBe(422);
      expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain('event');
    }
  });
});

describe('deleting', () => {
  it('a deleted tracked segment records nothing more', async () => {
    const segment = await createSegment({ name: 'Doomed', condition: one('data.fate', 'equals', 'doom'), trackMembership: true });
    const id = await createContact(address('doomed'), { fate: 'hope' });
    await patchContact(id, { fate: 'doom' });
    await waitFor(id, 'segment.doomed.entry');
    expect((await project.api.delete(`/segments/${segment.id}`)).status).toBe(204);
    await sleep(2_500);
    await patchContact(id, { fate: 'hope' });
    await settle();
    expect(await named(id, 'segment.doomed.exit')).toEqual([]);
  });
});
