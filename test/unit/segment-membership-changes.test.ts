// membershipChanges / applyPresence / seedPresence against the embedded store: which changes one
// contact's document makes, their deterministic event ids, and silent seeding.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import type { ContactDoc } from '../../domain/contacts/collection.ts';
import type { SegmentDoc } from '../../domain/segments/collection.ts';
import {
  applyPresence,
  clearPresence,
  isMembershipEventName,
  membershipChanges,
  seedPresence,
  segmentPresence,
  trackedSegments,
  forgetTrackedSegments,
} from '../../domain/segments/membership.ts';
import type { Platform } from '../../runtime/platform.ts';

let dir: string;
let store: SqliteStore;
const platform = () => ({ store }) as unknown as Platform;

beforeEach(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-membership-'));
  store = await openStore(dir);
});
afterEach(async () => {
  await store.close().catch(() => undefined);
  await fs.promises.rm(dir, { recursive: true, force: true });
});

const NOW = new Date('2030-01-01T12:00:00.000Z');
const segment = (over: Partial<SegmentDoc> = {}): SegmentDoc => ({
  _id: 'seg1',
  projectId: 'p1',
  name: 'Pro Plan',
  slug: 'pro-plan',
  type: 'DYNAMIC',
  description: null,
  condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
  trackMembership: true,
  createdAt: NOW.toISOString(),
  updatedAt: NOW.toISOString(),
  ...over,
});
const contact = (data: Record<string, string>, over: Partial<ContactDoc> = {}): ContactDoc => ({
  _id: 'c1',
  projectId: 'p1',
  email: 'a@example.com',
  subscribed: true,
  data,
  createdAt: NOW.toISOString(),
  updatedAt: NOW.toISOString(),
  ...over,
});
const types = { plan: 'string' as const };

describe('membershipChanges', () => {
  it('enters, stays, leaves and re-enters with distinct deterministic ids', async () => {
    const s = segment();
    const entry = await membershipChanges(store, contact({ plan: 'pro' }), [s], NOW, types);
    expect(entry).toHaveLength(1);
    expect(entry[0]).toMatchObject({ kind: 'entry', name: 'segment.pro-plan.entry', eventId: 'seg1:c1:entry:1', data: { segmentId: 'seg1' } });
    // Not written yet: asking again gives the same change (a repeat records the same id).
    expect((await membershipChanges(store, contact({ plan: 'pro' }), [s], NOW, types))[0].eventId).toBe('seg1:c1:entry:1');
    await applyPresence(store, entry[0]);

    expect(await membershipChanges(store, contact({ plan: 'pro' }), [s], NOW, types)).toEqual([]);
    const exit = await membershipChanges(store, contact({ plan: 'free' }), [s], NOW, types);
    expect(exit[0]).toMatchObject({ kind: 'exit', name: 'segment.pro-plan.exit', eventId: 'seg1:c1:exit:1' });
    await applyPresence(store, exit[0]);

    const again = await membershipChanges(store, contact({ plan: 'pro' }), [s], NOW, types);
    expect(again[0].eventId).toBe('seg1:c1:entry:2');
  });

  it('a contact that never matched has nothing to leave', async () => {
    expect(await membershipChanges(store, contact({ plan: 'free' }), [segment()], NOW, types)).toEqual([]);
  });

  it('never counts a contact of another project in', async () => {
    expect(await membershipChanges(store, contact({ plan: 'pro' }, { projectId: 'p2' }), [segment()], NOW, types)).toEqual([]);
  });

  it('decides time-based filters at the given instant', async () => {
    const s = segment({
      slug: 'idle',
      condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.seen', operator: 'olderThan', value: 1, unit: 'minutes' }] }] },
    });
    const c = contact({ seen: new Date(NOW.getTime() - 55_000).toISOString() });
    expect(await membershipChanges(store, c, [s], NOW, { seen: 'date' })).toEqual([]);
    const later = new Date(NOW.getTime() + 10_000);
    expect((await membershipChanges(store, c, [s], later, { seen: 'date' }))[0]).toMatchObject({ kind: 'entry', name: 'segment.idle.entry' });
  });

  it('reads STATIC membership from segment_members', async () => {
    const s = segment({ _id: 'st', slug: 'beta', type: 'STATIC', condition: null });
    expect(await membershipChanges(store, contact({}), [s], NOW, types)).toEqual([]);
    await store.collection('segment_members').insertOne({ _id: 'st/c1', projectId: 'p1', segmentId: 'st', contactId: 'c1', addedAt: NOW.toISOString() });
    expect((await membershipChanges(store, contact({}), [s], NOW, types))[0]).toMatchObject({ kind: 'entry', eventId: 'st:c1:entry:1' });
  });
});

describe('seedPresence and clearPresence', () => {
  it('makes the set exactly the given members, silently, keeping counters', async () => {
    const s = segment();
    const [entry] = await membershipChanges(store, contact({ plan: 'pro' }), [s], NOW, types);
    await applyPresence(store, entry);

    await seedPresence(platform(), s, ['c2', 'c3']);
    const rows = await segmentPresence(store).find({ segmentId: 'seg1' }, { sort: { _id: 1 } });
    expect(rows.map((r) => [r.contactId, r.member, r.entries])).toEqual([
      ['c1', false, 1],
      ['c2', true, 0],
      ['c3', true, 0],
    ]);
    // c1 is out without an exit; its next entry is still a new id.
    expect((await membershipChanges(store, contact({ plan: 'pro' }), [s], NOW, types))[0].eventId).toBe('seg1:c1:entry:2');

    await clearPresence(platform(), 'seg1');
    expect(await segmentPresence(store).countDocuments({ segmentId: 'seg1', member: true })).toBe(0);
  });
});

describe('helpers', () => {
  it('recognises membership event names', () => {
    expect(isMembershipEventName('segment.vip.entry')).toBe(true);
    expect(isMembershipEventName('Segment.a.b.EXIT')).toBe(true);
    expect(isMembershipEventName('segment.vip.entry-form')).toBe(false);
    expect(isMembershipEventName('email.open')).toBe(false);
  });

  it('caches the tracked segments of a project until forgotten', async () => {
    await store.collection<SegmentDoc>('segments').insertOne(segment());
    expect((await trackedSegments(store, 'p1')).map((s) => s._id)).toEqual(['seg1']);
    await store.collection<SegmentDoc>('segments').insertOne(segment({ _id: 'seg2', slug: 'two' }));
    expect(await trackedSegments(store, 'p1')).toHaveLength(1);
    forgetTrackedSegments(store, 'p1');
    expect(await trackedSegments(store, 'p1')).toHaveLength(2);
  });
});
