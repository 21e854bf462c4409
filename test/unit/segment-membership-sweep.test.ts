// The sweep: its interval, and which contacts it asks to re-evaluate (members vs presence).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import { sweepTrackedSegments } from '../../actors/segment-sweep/actor.ts';
import type { SegmentDoc } from '../../domain/segments/collection.ts';
import { segmentPresence } from '../../domain/segments/membership.ts';
import { loadConfig } from '../../runtime/config.ts';
import type { Platform } from '../../runtime/platform.ts';

describe('the sweep interval (Config.segmentSweepSeconds)', () => {
  it('reads SEGMENT_SWEEP_SECONDS: 60 s by default, fractions down to 0.1 s, anything else refused at start', () => {
    expect(loadConfig({}).segmentSweepSeconds).toBe(60);
    expect(loadConfig({ SEGMENT_SWEEP_SECONDS: '2' }).segmentSweepSeconds).toBe(2);
    expect(loadConfig({ SEGMENT_SWEEP_SECONDS: '0.5' }).segmentSweepSeconds).toBe(0.5);
    expect(loadConfig({ SEGMENT_SWEEP_SECONDS: '0.01' }).segmentSweepSeconds).toBe(0.1);
    expect(() => loadConfig({ SEGMENT_SWEEP_SECONDS: 'soon' })).toThrow(/SEGMENT_SWEEP_SECONDS/);
    expect(() => loadConfig({ SEGMENT_SWEEP_SECONDS: '0' })).toThrow(/SEGMENT_SWEEP_SECONDS/);
  });

  it('reads CAMPAIGN_BATCH_SIZE: 500 by default, a whole number of at least 1', () => {
    expect(loadConfig({}).campaignBatchSize).toBe(500);
    expect(loadConfig({ CAMPAIGN_BATCH_SIZE: '5' }).campaignBatchSize).toBe(5);
    expect(() => loadConfig({ CAMPAIGN_BATCH_SIZE: '0' })).toThrow(/CAMPAIGN_BATCH_SIZE/);
    expect(() => loadConfig({ CAMPAIGN_BATCH_SIZE: '2.5' })).toThrow(/CAMPAIGN_BATCH_SIZE/);
  });
});

describe('sweepTrackedSegments', () => {
  let dir: string;
  let store: SqliteStore;
  let calls: { id: string; method: string; input: unknown }[];
  let p: Platform;

  beforeEach(async () => {
    dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-sweep-'));
    store = await openStore(dir);
    calls = [];
    p = {
      store,
      log: pino({ level: 'silent' }),
      actors: { invoke: async (_type: string, id: string, method: string, input: unknown) => void calls.push({ id, method, input }) },
    } as unknown as Platform;
  });
  afterEach(async () => {
    await store.close().catch(() => undefined);
    await fs.promises.rm(dir, { recursive: true, force: true });
  });

  const at = '2030-01-01T00:00:00.000Z';
  const segment = (over: Partial<SegmentDoc>): SegmentDoc => ({
    _id: 's1',
    projectId: 'p1',
    name: 'Pro',
    slug: 'pro',
    type: 'DYNAMIC',
    description: null,
    condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    trackMembership: true,
    createdAt: at,
    updatedAt: at,
    ...over,
  });
  const contact = (id: string, plan: string) => ({ _id: id, projectId: 'p1', email: `${id}@x.example`, subscribed: true, data: { plan }, createdAt: at, updatedAt: at });
  const presence = (contactId: string, member: boolean) => ({
    _id: `s1/${contactId}`,
    projectId: 'p1',
    segmentId: 's1',
    contactId,
    member,
    since: at,
    entries: 1,
    exits: member ? 0 : 1,
  });

  it('asks exactly the contacts whose membership differs from presence, per tracked segment', async () => {
    await store.collection('segments').insertMany([segment({}), segment({ _id: 's2', slug: 'untracked', trackMembership: false })]);
    await store.collection('contacts').insertMany([contact('in-new', 'pro'), contact('in-known', 'pro'), contact('left', 'free'), contact('never', 'free')]);
    await segmentPresence(store).insertMany([presence('in-known', true), presence('left', true), presence('never', false)]);

    const result = await sweepTrackedSegments(p);
    expect(result).toEqual({ segments: 1, contacts: 2 });
    expect(calls.map((c) => c.id).sort()).toEqual(['in-new', 'left']);
    expect(calls.every((c) => c.method === 'syncSegments' && JSON.stringify(c.input) === JSON.stringify({ segmentIds: ['s1'] }))).toBe(true);
  });

  it('compares STATIC segments with segment_members', async () => {
    await store.collection('segments').insertOne(segment({ type: 'STATIC', condition: null }));
    await store.collection('segment_members').insertOne({ _id: 's1/c1', projectId: 'p1', segmentId: 's1', contactId: 'c1', addedAt: at });
    await segmentPresence(store).insertOne(presence('c2', true));
    await sweepTrackedSegments(p);
    expect(calls.map((c) => c.id).sort()).toEqual(['c1', 'c2']);
  });
});
